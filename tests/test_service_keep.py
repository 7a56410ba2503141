"""The score keeper (``/keep``) through its forms: a whole game kept deal by deal is stored as its sheet;
the address resumes it; corrections rescore; bad input is a 4xx with a clear message."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from backalley.replay import replay
from backalley.service.keep import MAX_FIELD
from tests.helpers import AUTH, TOKEN, make_client
from tests.keep_games import assert_same_game, sheet_game, start_fields, tricks_fields
from tests.service_games import XSS

BUTTON = re.compile(r'<button type="submit" name="bid" value="([^"]*)">')


@pytest.fixture
def client(tmp_path: Path) -> Any:
    with make_client(tmp_path / "keep.duckdb") as c:
        yield c


def start(c: TestClient, sheet: dict[str, Any], **extra: Any) -> str:
    """Start the sheet's game; its keeper key."""
    r = c.post("/keep", data={**start_fields(sheet), "token": TOKEN, **extra}, follow_redirects=False)
    assert r.status_code == 303, r.text
    return str(r.headers["location"]).removeprefix("/keep/")


def enter(c: TestClient, key: str, sheet: dict[str, Any], upto: int | None = None) -> str:
    """Enter the sheet's deals through the forms (each bid offered as a button first); the last page."""
    text = c.get(f"/keep/{key}").text
    for i, deal in enumerate(sheet["deals"][:upto]):
        assert f'data-deal="{deal["number"]}"' in text and f'data-dealer="{deal["dealer"]}"' in text
        for k, b in enumerate(deal["bids"]):
            assert str(b["bid"]) in BUTTON.findall(text), (i, k, b)
            r = c.post(f"/keep/{key}/bid", data={"at": i, "position": k, "bid": str(b["bid"])})
            assert r.status_code == 200, r.text
            text = r.text
        if "tricks_won" in deal:
            assert ("rainbows" not in deal) or 'name="rainbow"' in text  # asked where the ruleset gives one
            r = c.post(f"/keep/{key}/tricks", data={"at": i, **tricks_fields(deal)})
            assert r.status_code == 200, r.text
            text = r.text
    return text


def stored_record(c: TestClient, game_id: str) -> dict[str, Any]:
    r = c.get(f"/api/v1/games/{game_id}/raw", headers=AUTH)
    assert r.status_code == 200, r.text
    return dict(json.loads(r.content))


@pytest.mark.parametrize(
    ("ruleset", "options", "seed"),
    [("standard", (), 5), ("standard", ("no_partnerships",), 6), ("bab-online", (), 7), ("pereulok", (), 8)],
)
def test_a_whole_game_kept_deal_by_deal_is_stored_as_its_sheet(
    client: TestClient, ruleset: str, options: tuple[str, ...], seed: int
) -> None:
    sheet = sheet_game(seed, ruleset, options)
    key = start(client, sheet)
    page = enter(client, key, sheet)
    assert 'id="over"' in page and "Store the game" in page and "Every deal of the game is entered" in page
    after = client.post(f"/keep/{key}/bid", data={"at": len(sheet["deals"]), "position": 0, "bid": "pass"})
    assert after.status_code == 409 and "Every deal of the game is entered" in after.text
    final = replay(sheet).final_score
    assert final is not None
    assert re.findall(r'<th class="n total">(-?\d+)</th>', page) == [str(p) for p in final]
    r = client.post(f"/keep/{key}/store")
    assert r.status_code == 200 and 'id="stored"' in r.text
    assert_same_game(stored_record(client, sheet["game_id"]), sheet)
    again = client.post(f"/keep/{key}/bid", data={"at": 0, "position": 0, "bid": "pass"})
    assert again.status_code == 409 and "was stored as" in again.text


def test_the_address_resumes_the_game_on_another_phone(client: TestClient, tmp_path: Path) -> None:
    sheet = sheet_game(11)
    key = start(client, sheet)
    enter(client, key, sheet, upto=3)
    client.close()
    with make_client(tmp_path / "keep.duckdb") as other:  # the service run again; no cookie, no token
        text = other.get(f"/keep/{key}").text
        assert f'data-deal="{sheet["deals"][3]["number"]}"' in text and text.count('class="fix"') == 3
        rest = {**sheet, "deals": sheet["deals"][3:]}
        for i, deal in enumerate(rest["deals"]):
            for k, b in enumerate(deal["bids"]):
                other.post(f"/keep/{key}/bid", data={"at": i + 3, "position": k, "bid": str(b["bid"])})
            if "tricks_won" in deal:
                other.post(f"/keep/{key}/tricks", data={"at": i + 3, **tricks_fields(deal)})
        assert other.post(f"/keep/{key}/store").status_code == 200
        assert_same_game(stored_record(other, sheet["game_id"]), sheet)


def test_storing_an_incomplete_game_and_its_report(client: TestClient) -> None:
    sheet = sheet_game(12)
    key = start(client, sheet)
    assert client.post(f"/keep/{key}/store").status_code == 409  # nothing entered yet
    page = enter(client, key, sheet, upto=4)
    assert "Store now as an incomplete game" in page
    assert client.post(f"/keep/{key}/store").status_code == 200
    stored = stored_record(client, sheet["game_id"])
    assert len(stored["deals"]) == 4
    r = replay(stored)
    assert r.valid and not r.complete
    assert client.get(f"/api/v1/games/{sheet['game_id']}", headers=AUTH).status_code == 200


def test_correcting_an_earlier_deal_rescores_every_deal_after_it(client: TestClient) -> None:
    sheet = sheet_game(13)
    key = start(client, sheet)
    enter(client, key, sheet, upto=6)
    first = next(i for i, d in enumerate(sheet["deals"]) if "tricks_won" in d)
    deal = sheet["deals"][first]
    won = dict(deal["tricks_won"])
    give, take = ("N", "E") if won["E"] else ("E", "N")
    won[give], won[take] = won[give] + won[take], 0
    fields = {f"bid{k}": str(b["bid"]) for k, b in enumerate(deal["bids"])}
    assert client.get(f"/keep/{key}/deals/{first + 1}").status_code == 200
    r = client.post(f"/keep/{key}/deals/{first + 1}", data={**fields, **{s: str(t) for s, t in won.items()}})
    assert r.status_code == 200, r.text
    fixed = {**sheet, "deals": [*sheet["deals"][:first], {**deal, "tricks_won": won}, *sheet["deals"][first + 1 : 6]]}
    totals = replay(fixed).final_score
    assert totals is not None
    assert re.findall(r'<th class="n total">(-?\d+)</th>', r.text) == [str(p) for p in totals]
    assert totals != replay({**sheet, "deals": sheet["deals"][:6]}).final_score


@pytest.mark.parametrize(
    ("ruleset", "bids", "offered"),
    [
        ("pereulok", [], ["pass", *map(str, range(1, 14))]),
        ("pereulok", ["3"], ["pass", *map(str, range(4, 14))]),
        ("pereulok", ["3", "6"], ["pass"]),  # W's side declared already (E): only a pass
        ("bab-online", ["board"], ["pass", *map(str, range(1, 13)), "board2"]),
        ("bab-online", ["board", "board2", "board3", "board4"][:3], ["pass", *map(str, range(1, 13)), "board4"]),
        ("standard", ["board", "board"], ["pass", *map(str, range(1, 13)), "board"]),
    ],
)
def test_only_the_bids_the_ruleset_allows_are_offered(
    client: TestClient, ruleset: str, bids: list[str], offered: list[str]
) -> None:
    key = start(client, sheet_game(27, ruleset), first_dealer="N")
    text = client.get(f"/keep/{key}").text
    for k, word in enumerate(bids):
        text = client.post(f"/keep/{key}/bid", data={"at": 0, "position": k, "bid": word}).text
    assert BUTTON.findall(text) == offered
    if offered == ["pass"]:
        refused = client.post(f"/keep/{key}/bid", data={"at": 0, "position": len(bids), "bid": "7"})
        assert refused.status_code == 400 and "the legal bids: pass" in refused.text


def test_a_form_sent_twice_enters_nothing_twice(client: TestClient) -> None:
    key = start(client, sheet_game(23), first_dealer="N")
    assert client.post(f"/keep/{key}/bid", data={"at": 0, "position": 0, "bid": "3"}).status_code == 200
    again = client.post(f"/keep/{key}/bid", data={"at": 0, "position": 0, "bid": "3"})
    assert again.status_code == 409 and "moved on since" in again.text
    assert "Bids: " in again.text and again.text.count(" 3") >= 1
    assert client.get(f"/keep/{key}").headers["cache-control"] == "no-store"


def test_a_game_id_taken_by_a_stored_game_is_not_stored_again(client: TestClient) -> None:
    sheet = sheet_game(24)
    first, second = start(client, sheet), start(client, sheet)
    enter(client, first, sheet, upto=1)
    enter(client, second, sheet, upto=2)
    assert client.post(f"/keep/{first}/store").status_code == 200
    r = client.post(f"/keep/{second}/store")
    assert r.status_code == 409 and "was not stored (conflict)" in r.text, r.text
    assert len(stored_record(client, sheet["game_id"])["deals"]) == 1
    assert 'id="store"' in client.get(f"/keep/{second}").text  # still kept: nothing lost


def test_a_bid_entered_by_mistake_is_bid_again(client: TestClient) -> None:
    sheet = sheet_game(14)
    key = start(client, sheet)
    client.post(f"/keep/{key}/bid", data={"at": 0, "position": 0, "bid": "pass"})
    r = client.post(f"/keep/{key}/restart", data={"at": 0})
    assert r.status_code == 200 and "Bids:" not in r.text
    assert 'value="0"' in r.text  # position 0 again


@pytest.mark.parametrize(
    ("path", "data", "status", "said"),
    [
        ("bid", {"at": 0, "position": 0, "bid": "0"}, 400, "the legal bids: pass, 1,"),
        ("bid", {"at": 0, "position": 0, "bid": "13"}, 400, "is not a bid"),
        ("bid", {"at": 0, "position": 0, "bid": "board2"}, 400, "is not a bid"),
        ("bid", {"at": 0, "position": 0, "bid": "9" * 5000}, 400, "is not a bid"),
        ("bid", {"at": 0, "position": 0, "bid": XSS}, 400, "is not a bid"),
        ("bid", {"at": 0, "position": 3, "bid": "pass"}, 409, "reload the page"),
        ("bid", {"at": 7, "position": 0, "bid": "pass"}, 409, "reload the page"),
        ("bid", {"at": "x", "position": 0, "bid": "pass"}, 400, "not a number"),
        ("bid", {"at": "9" * 400, "position": 0, "bid": "pass"}, 400, "not a number"),
        ("tricks", {"at": 0, "N": "13", "E": "0", "S": "0", "W": "0"}, 409, "after the four bids"),
    ],
)
def test_bad_input_is_refused_with_a_clear_message(
    client: TestClient, path: str, data: dict[str, Any], status: int, said: str
) -> None:
    key = start(client, sheet_game(15), first_dealer="N")
    r = client.post(f"/keep/{key}/{path}", data=data)
    assert r.status_code == status, r.text
    assert said in r.text.replace("&#39;", "'") and "Traceback" not in r.text
    assert XSS not in r.text
    page = client.get(f"/keep/{key}").text
    assert "Bids:" not in page  # nothing was entered


def bid_all(c: TestClient, key: str, at: int, words: list[str]) -> None:
    for k, w in enumerate(words):
        assert c.post(f"/keep/{key}/bid", data={"at": at, "position": k, "bid": w}).status_code == 200


def enter_first_deal(c: TestClient, key: str) -> None:
    """Deal 1 (13 cards, N deals): bids 3, pass, 2, pass, and tricks N 5, E 3, S 2, W 3."""
    bid_all(c, key, 0, ["3", "pass", "2", "pass"])
    assert c.post(f"/keep/{key}/tricks", data={"at": 0, "N": "5", "E": "3", "S": "2", "W": "3"}).status_code == 200


def a_bid_deal_then_a_pass_out(c: TestClient) -> str:
    """A game whose deal 1 is bid and played (:func:`enter_first_deal`) and deal 2 passed out; its key."""
    key = start(c, sheet_game(18), first_dealer="N")
    enter_first_deal(c, key)
    bid_all(c, key, 1, ["pass", "pass", "pass", "pass"])
    return key


#: A correction's four bids, all passes.
PASSED = {"bid0": "pass", "bid1": "pass", "bid2": "pass", "bid3": "pass"}


@pytest.mark.parametrize(
    ("tricks", "said"),
    [
        ({"N": "4", "E": "4", "S": "4", "W": "4"}, "do not add up: N 4 + E 4 + S 4 + W 4 = 16; deal 1 has 13"),
        ({"N": "13", "E": "0", "S": "0", "W": ""}, "W's tricks: a whole number 0 to 13"),
        ({"N": "1" + "0" * 30, "E": "0", "S": "0", "W": "0"}, "N's tricks: a whole number 0 to 13"),
        ({"N": "-1", "E": "14", "S": "0", "W": "0"}, "N's tricks"),
        ({"N": "14", "E": "-1", "S": "0", "W": "0"}, "N's tricks"),
    ],
)
def test_tricks_that_do_not_add_up_are_refused(client: TestClient, tricks: dict[str, str], said: str) -> None:
    key = start(client, sheet_game(16), first_dealer="N")
    bid_all(client, key, 0, ["3", "pass", "2", "pass"])
    r = client.post(f"/keep/{key}/tricks", data={"at": 0, **tricks})
    assert r.status_code == 400 and said in r.text.replace("&#39;", "'"), r.text
    assert 'class="tricks"' in r.text  # asked again


@pytest.mark.parametrize(
    ("ruleset", "rainbow", "said"),
    [
        ("standard", ["N"], "no hand of deal 1 (13 cards) earns a rainbow in standard"),
        ("bab-online", ["N"], "no hand of deal 1 (12 cards) earns a rainbow in bab-online"),
        ("bab-online", [], ""),
    ],
)
def test_a_rainbow_is_marked_only_where_the_ruleset_gives_one(
    client: TestClient, ruleset: str, rainbow: list[str], said: str
) -> None:
    sheet = sheet_game(25, ruleset)
    key = start(client, sheet, first_dealer="N")
    bid_all(client, key, 0, ["3", "pass", "2", "pass"])
    assert "Dealt a rainbow" not in client.get(f"/keep/{key}").text
    r = client.post(f"/keep/{key}/tricks", data={"at": 0, "N": "5", "E": "3", "S": "2", "W": "2", "rainbow": rainbow})
    assert r.status_code == (400 if said else 200) and said in r.text, r.text


@pytest.mark.parametrize("deal", ["0", "2", "99999999999999999999", "x", "-1"])
def test_a_deal_out_of_range_is_not_found(client: TestClient, deal: str) -> None:
    key = start(client, sheet_game(17), first_dealer="N")
    enter_first_deal(client, key)
    ok = client.get(f"/keep/{key}/deals/1")
    assert ok.status_code == 200 and "Correct deal 1" in ok.text
    for r in (client.get(f"/keep/{key}/deals/{deal}"), client.post(f"/keep/{key}/deals/{deal}", data={})):
        assert r.status_code == 404 and "no entered deal" in r.text, r.text


def test_a_correction_that_is_not_legal_is_refused(client: TestClient) -> None:
    key = a_bid_deal_then_a_pass_out(client)
    bids = {"bid0": "3", "bid1": "pass", "bid2": "2", "bid3": "pass"}
    r = client.post(f"/keep/{key}/deals/1", data={**bids, "N": "5", "E": "3", "S": "2", "W": "4"})
    assert r.status_code == 400 and "do not add up" in r.text
    r = client.post(f"/keep/{key}/deals/1", data={**bids, "bid0": "0", "N": "5", "E": "3", "S": "2", "W": "3"})
    assert r.status_code == 400 and "the legal bids" in r.text
    r = client.post(f"/keep/{key}/deals/1", data=PASSED)
    assert r.status_code == 409 and "only the last deal" in r.text
    r = client.post(f"/keep/{key}/deals/2", data={**bids, "N": "5", "E": "3", "S": "2", "W": "2"})
    assert r.status_code == 200 and r.text.count('class="fix"') == 2


def test_the_last_deal_is_taken_back_and_entered_again(client: TestClient) -> None:
    sheet = sheet_game(13)
    key = start(client, sheet)
    text = enter(client, key, sheet, upto=3)
    assert 'id="take-back"' in text and text.count('class="fix"') == 3
    r = client.post(f"/keep/{key}/take-back", data={"entered": 3})
    assert r.status_code == 200 and r.text.count('class="fix"') == 2
    assert f'data-deal="{sheet["deals"][2]["number"]}"' in r.text
    last = sheet["deals"][2]
    for k, b in enumerate(last["bids"]):
        client.post(f"/keep/{key}/bid", data={"at": 2, "position": k, "bid": str(b["bid"])})
    if "tricks_won" in last:
        client.post(f"/keep/{key}/tricks", data={"at": 2, **tricks_fields(last)})
    text = client.get(f"/keep/{key}").text
    totals = replay({**sheet, "deals": sheet["deals"][:3]}).final_score
    assert totals is not None
    assert re.findall(r'<th class="n total">(-?\d+)</th>', text) == [str(p) for p in totals]


def test_taking_back_lets_an_earlier_deal_become_a_pass_out(client: TestClient) -> None:
    key = a_bid_deal_then_a_pass_out(client)
    r = client.post(f"/keep/{key}/deals/1", data=PASSED)
    assert r.status_code == 409 and "take back the deals after it first" in r.text
    assert client.post(f"/keep/{key}/take-back", data={"entered": 2}).status_code == 200
    r = client.post(f"/keep/{key}/deals/1", data=PASSED)
    assert r.status_code == 200 and r.text.count('class="fix"') == 1


@pytest.mark.parametrize(
    ("bids", "entered", "said"),
    [
        ([], 0, "nothing to take back"),
        (["3"], 1, "bid it again first, then take back deal 1"),
        ([], 2, "reload the page"),
        ([], "x", "not a number"),
    ],
)
def test_a_take_back_that_cannot_be_done_changes_nothing(
    client: TestClient, bids: list[str], entered: Any, said: str
) -> None:
    key = start(client, sheet_game(18), first_dealer="N")
    if entered != 0:
        enter_first_deal(client, key)
    for k, b in enumerate(bids):
        client.post(f"/keep/{key}/bid", data={"at": 1, "position": k, "bid": b})
    before = client.get(f"/keep/{key}").text
    r = client.post(f"/keep/{key}/take-back", data={"entered": entered})
    assert r.status_code in (400, 409) and said in r.text, r.text
    assert client.get(f"/keep/{key}").text == before


def test_a_stored_game_takes_nothing_back(client: TestClient) -> None:
    sheet = sheet_game(13)
    key = start(client, sheet)
    enter(client, key, sheet, upto=2)
    assert client.post(f"/keep/{key}/store").status_code == 200
    r = client.post(f"/keep/{key}/take-back", data={"entered": 2})
    assert r.status_code == 409 and "was stored" in r.text
    assert 'id="take-back"' not in r.text


@pytest.mark.parametrize("key", ["A" * 24, "short", "..%2F..%2Fetc%2Fpasswd", "A" * 5000, "%00" * 24])
def test_a_forged_address_is_not_found(client: TestClient, key: str) -> None:
    key_of_a_game = start(client, sheet_game(22))
    assert key_of_a_game != key
    for r in (client.get(f"/keep/{key}"), client.post(f"/keep/{key}/bid", data={"at": 0, "position": 0})):
        assert r.status_code == 404, r.text
        assert "no game is kept at this address" in r.text or "nothing at /keep/" in r.text  # (a path with /)


@pytest.mark.parametrize(
    ("fields", "status", "said"),
    [
        ({"token": ""}, 401, "needs an API token"),
        ({"token": "nope"}, 401, "needs an API token"),
        ({"ruleset": "poker"}, 400, "unknown ruleset"),
        ({"options": ["wild"]}, 400, "not wild"),
        ({"first_dealer": "X"}, 400, "the first dealer is one of N, E, S, W"),
        ({"E": "Ann", "N": "Ann"}, 400, "sits in two seats"),
        ({"W": ""}, 400, "/players/W"),
        ({"game_id": "no spaces please"}, 400, "/game_id"),
        ({"W": "x" * (MAX_FIELD + 5)}, 400, "/players/W"),
    ],
)
def test_a_start_with_bad_fields_is_refused(client: TestClient, fields: dict[str, Any], status: int, said: str) -> None:
    data = {**start_fields(sheet_game(19)), "token": TOKEN, **fields}
    r = client.post("/keep", data=data, follow_redirects=False)
    assert r.status_code == status and said in r.text.replace("&#39;", "'"), r.text
    assert "Traceback" not in r.text


def test_player_names_are_text_never_markup(client: TestClient) -> None:
    sheet = sheet_game(20)
    sheet["players"] = {"N": XSS, "E": "{{7*7}}", "S": "<b>S</b>", "W": "W"}
    key = start(client, sheet)
    text = client.get(f"/keep/{key}").text
    assert XSS not in text and "&lt;script&gt;" in text and "{{7*7}}" in text and "<b>S</b>" not in text


def test_private_mode_starts_with_the_sign_in_cookie_and_the_link_writes(tmp_path: Path) -> None:
    sheet = sheet_game(21)
    with make_client(tmp_path / "p.duckdb", private=True) as c:
        assert c.get("/keep").status_code == 401
        c.post("/login", data={"token": TOKEN, "next": "/keep"})
        form = c.get("/keep")
        assert form.status_code == 200 and 'name="token"' not in form.text
        r = c.post("/keep", data=start_fields(sheet), follow_redirects=False)
        assert r.status_code == 303
        key = str(r.headers["location"]).removeprefix("/keep/")
    with make_client(tmp_path / "p.duckdb", private=True) as phone:  # no cookie: the link is enough
        page = enter(phone, key, sheet, upto=2)
        assert page.count('class="fix"') == 2
        assert phone.get(f"/keep/{key}").headers["referrer-policy"] == "no-referrer"
        assert phone.get("/keep").status_code == 401


def test_a_signed_in_browser_finds_the_games_being_kept(client: TestClient) -> None:
    sheet = sheet_game(26)
    key, stored = start(client, sheet), start(client, {**sheet, "game_id": "done-already"})
    enter(client, stored, sheet, upto=1)
    client.post(f"/keep/{stored}/store")
    assert key not in client.get("/keep").text  # not signed in: no list
    client.post("/login", data={"token": TOKEN, "next": "/keep"})
    listed = client.get("/keep").text
    assert f'href="/keep/{key}"' in listed and stored not in listed
    client.cookies.clear()  # the signed-in cookie goes, a forged one comes
    client.cookies.set("backalley_token", "forged")
    assert key not in client.get("/keep").text


def test_a_kept_game_holds_a_bounded_number_of_dealings(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    from backalley.service import keeper

    monkeypatch.setattr(keeper, "MAX_DEALINGS", 2)
    key = start(client, sheet_game(28), first_dealer="N")
    for at in (0, 1):
        bid_all(client, key, at, ["pass"] * 4)
    page = client.get(f"/keep/{key}").text
    assert "A kept game holds at most 2 dealings: store it below" in page and 'class="bids"' not in page
    r = client.post(f"/keep/{key}/bid", data={"at": 2, "position": 0, "bid": "pass"})
    assert r.status_code == 409 and "at most 2 dealings" in r.text


def test_a_change_the_server_cannot_write_is_refused_and_the_game_kept(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = start(client, sheet_game(29), first_dealer="N")

    def full(self: Path, data: bytes) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_bytes", full)
    r = client.post(f"/keep/{key}/bid", data={"at": 0, "position": 0, "bid": "3"})
    assert r.status_code == 507 and "could not keep this change (No space left on device)" in r.text
    monkeypatch.undo()
    assert "Bids:" not in client.get(f"/keep/{key}").text
    assert client.post(f"/keep/{key}/bid", data={"at": 0, "position": 0, "bid": "3"}).status_code == 200

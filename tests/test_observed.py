"""Records of games watched on bab-online (backalley.records.observed).

The fixtures are 30 games played by bab-online's own server code (tests/tools/bab_online_games.js,
tests/fixtures/README.md): what its spectator received, and bab-online's own final scores.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backalley.records.observed import Transcriber, Written, bid, card, players, read_entry, transcribe
from backalley.validate import check
from tests.helpers import json_values

FIXTURES = Path(__file__).parent / "fixtures" / "bab-online"
SCORES = json.loads((FIXTURES / "scores.json").read_text(encoding="utf-8"))
GAMES = sorted(SCORES["games"])


def lines(name: str) -> list[str]:
    with gzip.open(FIXTURES / name, "rt", encoding="utf-8") as f:
        return f.read().splitlines()


def events(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in lines(name)]


def texts(evs: list[dict[str, Any]]) -> list[str]:
    return [json.dumps(e) for e in evs]


def one(evs: list[dict[str, Any]]) -> Written:
    written = transcribe(texts(evs))
    assert len(written) == 1, written
    return written[0]


def codes(rec: dict[str, Any]) -> set[str]:
    return {v.code for v in check(json.dumps(rec).encode()).violations}


def where(evs: list[dict[str, Any]], event: str, k: int) -> int:
    """The index of the ``k``-th (0-based) ``event`` in ``evs``."""
    return [i for i, e in enumerate(evs) if e["event"] == event][k]


FULL = one(events("game-01.jsonl.gz"))


def test_the_fixtures_are_30_games_of_bab_onlines_server_with_its_scores() -> None:
    assert len(GAMES) == 30 == len(set(g["game_id"] for g in SCORES["games"].values()))
    assert SCORES["source"].startswith("github.com/dannytakahashi/bab-online@")
    kinds = {e["event"] for name in GAMES[:3] for e in events(name)}
    assert {"gameStart", "bidReceived", "cardPlayed", "handComplete", "gameEnd", "destroyHands"} <= kinds


@pytest.mark.parametrize("name", GAMES)
def test_every_fixture_game_is_a_valid_complete_record_with_bab_onlines_final_score(name: str) -> None:
    w = one(events(name))
    assert w.record is not None and w.notes == []
    r = check(json.dumps(w.record).encode())
    assert r.valid and r.complete, [(v.code, v.message) for v in r.violations]
    expected = SCORES["games"][name]
    assert w.record["game_id"] == expected["game_id"]
    assert w.record["final_score"] == {"NS": expected["team1"], "EW": expected["team2"]}
    assert r.final_score == (expected["team1"], expected["team2"])


def test_a_redeal_is_written_without_hands_and_every_played_deal_with_them() -> None:
    redeals = [d for name in GAMES[:5] for d in one(events(name)).record["deals"] if not d["tricks"]]  # type: ignore[index]
    assert redeals and all("hands" not in d and {b["bid"] for b in d["bids"]} == {"pass"} for d in redeals)
    assert all("hands" in d for d in FULL.record["deals"] if d["tricks"])  # type: ignore[index]


def test_notation() -> None:
    assert [card({"suit": "hearts", "rank": "10"}), card({"suit": "joker", "rank": "HI"})] == ["TH", "BJ"]
    assert card({"suit": "joker", "rank": "LO"}) == "LJ"
    assert [bid("0"), bid("12"), bid("B"), bid("4b"), bid(3)] == ["pass", 12, "board", "board4", 3]
    for bad in ("5B", "", None, True, "123", -1):
        with pytest.raises(ValueError):
            bid(bad)
    with pytest.raises(ValueError):
        card({"suit": "stars", "rank": "A"})
    assert players({1: "🤖 Mary", 2: "ann", 3: "🤖 Mary", 4: "bo"}) == {
        "N": "🤖 Mary (N)", "E": "ann", "S": "🤖 Mary (S)", "W": "bo"
    }  # fmt: skip


# --- bad input: never a traceback; the game as far as it was seen whole, or nothing and why ------


def test_unknown_events_and_odd_payloads_of_ignored_events_change_nothing() -> None:
    evs = events("game-01.jsonl.gz")
    noisy: list[dict[str, Any]] = []
    for e in evs:
        noisy += [e, {"event": "chatMessage", "data": None}, {"event": 7, "data": [1]}, {"event": "updateTurn"}]
    assert one(noisy).record == FULL.record


def test_a_missing_field_ends_the_record_at_the_dealing_before() -> None:
    evs = events("game-01.jsonl.gz")
    k = where(evs, "cardPlayed", 60)
    evs[k] = {"event": "cardPlayed", "data": {k: v for k, v in evs[k]["data"].items() if k != "card"}}
    w = one(evs)
    assert w.record is not None and 0 < w.deals < FULL.deals
    assert w.record["deals"] == FULL.record["deals"][: w.deals]  # type: ignore[index]
    assert "final_score" not in w.record and any("no card" in n for n in w.notes), w.notes
    assert codes(w.record) == {"INCOMPLETE"}


def test_a_card_played_twice_ends_the_record_at_the_dealing_before() -> None:
    evs = events("game-01.jsonl.gz")
    first, again = where(evs, "cardPlayed", 0), where(evs, "cardPlayed", 5)
    evs[again] = {"event": "cardPlayed", "data": {**evs[again]["data"], "card": evs[first]["data"]["card"]}}
    w = one(evs)
    assert w.record is None and any("played twice" in n for n in w.notes), w.notes


def test_game_end_without_the_deals() -> None:
    evs = events("game-01.jsonl.gz")
    end = next(e for e in evs if e["event"] == "gameEnd")
    nothing = one([e for e in evs if e["event"] in ("positionUpdate",)] + [end])
    assert nothing.record is None and nothing.notes
    early = one([*evs[: where(evs, "handComplete", 2) + 1], end])
    assert early.record is not None and early.deals >= 3 and "final_score" not in early.record
    assert codes(early.record) == {"INCOMPLETE"}
    assert any("final score left out" in n for n in early.notes)


@pytest.mark.parametrize("step", [1, 37, 211])
def test_a_transcript_cut_anywhere_gives_the_whole_dealings_before_the_cut(step: int) -> None:
    text = lines("game-02.jsonl.gz")
    full = one([json.loads(t) for t in text]).record
    assert full is not None
    for k in range(0, len(text), step if step > 1 else 1 + len(text) // 150):
        written = transcribe([*text[:k], text[k][: len(text[k]) // 2]])  # (the last line torn in two)
        assert len(written) <= 1
        if written and written[0].record is not None:
            rec = written[0].record
            assert rec["deals"] == full["deals"][: len(rec["deals"])] and "final_score" not in rec
            assert codes(rec) <= {"INCOMPLETE"}


def test_a_line_that_is_not_an_event_is_a_gap() -> None:
    text = lines("game-01.jsonl.gz")
    k = where([json.loads(t) for t in text], "cardPlayed", 100)
    w = transcribe([*text[:k], "{not json", *text[k:]])[0]
    assert w.record is not None and 0 < w.deals < FULL.deals
    assert any(f"line {k + 1} is not an event" in n for n in w.notes), w.notes


def test_a_disconnect_between_dealings_loses_nothing_when_the_next_dealing_fits() -> None:
    evs = events("game-01.jsonl.gz")
    k = where(evs, "handComplete", 4) + 1
    w = one([*evs[:k], {"event": "disconnect", "data": None}, *evs[k:]])
    assert w.record == FULL.record and w.notes == []


def test_a_disconnect_that_lost_a_dealing_ends_the_record_before_it() -> None:
    evs = events("game-01.jsonl.gz")
    a, b = where(evs, "handComplete", 4) + 1, where(evs, "handComplete", 5) + 1
    w = one([*evs[:a], {"event": "disconnect", "data": None}, *evs[b:]])
    assert w.record is not None and "final_score" not in w.record
    assert w.record["deals"] == FULL.record["deals"][: w.deals] and any("missed" in n for n in w.notes)  # type: ignore[index]
    middle = where(evs, "cardPlayed", 100)
    cut = one([*evs[:middle], {"event": "disconnect", "data": None}, *evs[middle + 3 :]])
    assert cut.record is not None and cut.record["deals"] == FULL.record["deals"][: cut.deals]  # type: ignore[index]
    assert any("not seen whole: the connection was lost" in n for n in cut.notes), cut.notes


def test_a_game_joined_after_it_began_is_written_from_the_first_dealing_seen() -> None:
    evs = events("game-01.jsonl.gz")
    k = where(evs, "handComplete", 3) + 1
    start = next(i for i in range(k, len(evs)) if evs[i]["event"] == "gameStart")
    w = one(evs[start:])
    assert w.record is not None and w.record["deals"] == FULL.record["deals"][-w.deals :]  # type: ignore[index]
    assert "final_score" not in w.record and w.record["players"] == FULL.record["players"]  # type: ignore[index]
    assert any("joined at deal" in n for n in w.notes)
    assert codes(w.record) == {"INCOMPLETE", "DEAL_NUMBER"}  # (a record that starts late: deal 1 is missing)


def test_a_join_during_the_first_bidding_sees_the_first_dealing_whole() -> None:
    """The snapshot a spectator gets on joining says the bids made so far: the dealing is whole."""
    evs = events("game-01.jsonl.gz")
    start = where(evs, "gameStart", 0)
    second = where(evs, "bidReceived", 1)
    data = evs[start]["data"]
    names = {p["position"]: p["username"] for p in data["playerInfo"]}
    snapshot = {
        "gameId": data["gameId"], "players": [{"position": p, "username": n} for p, n in names.items()],
        "trump": data["trump"], "currentHand": data["currentHand"], "dealer": data["dealer"], "phase": "bidding",
        "bidding": True, "playerBids": evs[second]["data"]["bidArray"], "score": {"team1": 0, "team2": 0},
    }  # fmt: skip
    w = one([{"event": "spectatorJoined", "data": snapshot}, *evs[second + 1 :]])
    assert w.record == {**FULL.record, "players": w.record["players"]} and w.notes == []  # type: ignore[dict-item, index]


def test_two_games_in_one_transcript_and_a_game_left_without_its_end() -> None:
    a, b = events("game-01.jsonl.gz"), events("game-02.jsonl.gz")
    cut = where(a, "handComplete", 6) + 1
    written = transcribe(texts([*a[:cut], *b]))
    assert [w.game_id for w in written] == [SCORES["games"][g]["game_id"] for g in GAMES[:2]]
    assert written[0].record is not None and written[0].record["deals"] == FULL.record["deals"][: written[0].deals]  # type: ignore[index]
    assert any("another game started" in n for n in written[0].notes)
    assert written[1].record is not None and "final_score" in written[1].record


def test_the_transcriber_takes_any_value_without_raising() -> None:
    t = Transcriber()
    for event in ("gameStart", "bidReceived", "cardPlayed", "handComplete", "gameEnd", "destroyHands", "rainbow"):
        for data in (None, 3, "x", [], {}, {"gameId": 5}, {"position": 9, "bid": "Z", "card": {}}, {"score": None}):
            assert isinstance(t.feed(event, data), list)
    assert all(isinstance(w, Written) for w in t.close())


def test_the_harness_plays_the_committed_fixtures_again(tmp_path: Path) -> None:
    """The fixtures are reproducible: bab-online's server code plays the same first games again."""
    from tests.helpers import bab_online_games

    out = bab_online_games(tmp_path, 3, SCORES["seed"])
    for name in GAMES[:3]:
        assert (out / name).read_bytes() == (FIXTURES / name).read_bytes(), name
    assert json.loads((out / "scores.json").read_text())["games"] == {g: SCORES["games"][g] for g in GAMES[:3]}


def short(name: str) -> list[dict[str, Any]]:
    """The first three dealings of a game and its end: quick to edit and replay."""
    evs = events(name)
    return [*evs[: where(evs, "handComplete", 2) + 1], evs[-1]]


SHORT = short("game-04.jsonl.gz")
EDITS = st.one_of(
    st.tuples(st.just("drop"), st.integers(0, 10**6)),
    st.tuples(st.just("twice"), st.integers(0, 10**6)),
    st.tuples(st.just("swap"), st.integers(0, 10**6)),
    st.tuples(st.just("field"), st.integers(0, 10**6), st.text(max_size=12), json_values()),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(EDITS, max_size=4))
def test_an_edited_stream_never_raises_and_writes_only_well_formed_records(edits: list[Any]) -> None:
    """Events dropped, repeated, swapped or given odd values: no exception, no record that is not a record."""
    evs = json.loads(json.dumps(SHORT))
    for edit in edits:
        k = edit[1] % len(evs)
        if edit[0] == "drop":
            del evs[k]
        elif edit[0] == "twice":
            evs.insert(k, evs[k])
        elif edit[0] == "swap" and k + 1 < len(evs):
            evs[k], evs[k + 1] = evs[k + 1], evs[k]
        elif edit[0] == "field":
            data = evs[k]["data"]
            name = edit[2] if not isinstance(data, dict) or not data or edit[2] else sorted(data)[k % len(data)]
            evs[k] = {**evs[k], "data": {**data, name: edit[3]} if isinstance(data, dict) else edit[3]}
    for w in transcribe(texts(evs)):
        if w.record is not None:
            assert "SCHEMA" not in codes(w.record), (w.notes, edits)
        else:
            assert w.notes


def test_an_id_or_names_a_record_cannot_have_and_a_bad_time_are_never_written() -> None:
    evs = short("game-04.jsonl.gz")
    odd_id = [{**e, "data": {**e["data"], "gameId": "a b/c"}} if e["event"] == "gameStart" else e for e in evs]
    w = one(odd_id)
    assert w.record is None and "is not one a record can have: nothing written" in w.notes[-1]
    start = where(evs, "gameStart", 0)
    info = [{**p, "username": "x" * 65} if p["position"] == 2 else p for p in evs[start]["data"]["playerInfo"]]
    long_name = [*evs[:start], {**evs[start], "data": {**evs[start]["data"], "playerInfo": info}}, *evs[start + 1 :]]
    w = one([e for e in long_name if e["event"] != "positionUpdate"])
    assert w.record is None and "are not four a record can have" in w.notes[-1]
    timed = [{**e, "at": "yesterday"} if e["event"] == "gameStart" else e for e in evs]
    w = one(timed)
    assert w.record is not None and "played_at" not in w.record
    timed = [{**e, "at": "2026-03-16T20:00:00.123Z"} for e in evs]
    assert one(timed).record["played_at"] == "2026-03-16T20:00:00.123Z"  # type: ignore[index]


def test_a_transcript_line_is_an_entry_only_as_an_object_with_an_event() -> None:
    assert read_entry('{"event": "gameStart", "data": {}}') == {"event": "gameStart", "data": {}}
    assert read_entry('{"data": {}}') is None
    assert read_entry('["event"]') is None
    assert read_entry('{"event": ') is None

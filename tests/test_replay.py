"""The validator's violation codes (docs/record-format.md) on hand-made records.

A small valid base record (deals 1..10 played legally by the engine, then the
example deal 11 of docs/record-format.md) is mutated one fault at a time; each test asserts
the exact code, path, deal, trick and seat that docs/record-format.md specifies.  Records
go through :func:`backalley.validate.check` as bytes, as the CLI does.
"""

from __future__ import annotations

import copy
import functools
import json
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backalley.cards import CARD_NAMES, cards_of, lowest
from backalley.engine import DealState
from backalley.replay import CODES, Replay, replay
from backalley.validate import check
from tests.spec_examples import record_example_deal

N, E, S, W = 0, 1, 2, 3
D11 = "/deals/10"  # deal 11 is the 11th dealing of the base record

REPORT_KEYS = {"source", "line", "game_id", "valid", "complete", "sheet", "violations", "deals", "final_score"}
VIOLATION_KEYS = {"code", "severity", "message", "path", "deal", "trick", "seat"}


# --- building records ---------------------------------------------------------------------------


def engine_deal(number: int, dealer: int, rng: random.Random, bids: list[Any] | None = None) -> dict[str, Any]:
    """A legally played dealing (lowest legal card each time) as a deal object with stock and result."""
    deck = list(range(54))
    rng.shuffle(deck)
    state = DealState.from_deck(number, dealer, deck)
    if bids is None:
        bids = [1, 1, 1, 1] if state.n > 1 else ["board", "pass", "pass", "pass"]
    for b in bids:
        state.bid(b)
    while not state.finished:
        state.play(lowest(state.legal_plays()))
    return state.to_record()


@functools.cache
def _filler(first_dealer: int, count: int, seed: int) -> tuple[str, ...]:
    rng = random.Random(seed)
    return tuple(json.dumps(engine_deal(k, (first_dealer + k - 1) % 4, rng)) for k in range(1, count + 1))


def filler(count: int = 10, first_dealer: int = S, seed: int = 7) -> list[dict[str, Any]]:
    """Deals 1..count, legally played; with the default, deal 11 is N's to deal."""
    return [json.loads(d) for d in _filler(first_dealer, count, seed)]


def stock_for(hands: dict[str, list[str]], trump_card: str, second: str | None = None) -> list[str]:
    """The full stock of a dealing: the undealt cards, ``trump_card`` on top (then ``second``)."""
    dealt = {card for h in hands.values() for card in h}
    top = [trump_card] + ([second] if second else [])
    return top + [x for x in CARD_NAMES if x not in dealt and x not in top]


def bids(*pairs: tuple[str, Any]) -> list[dict[str, Any]]:
    return [{"seat": s, "bid": b} for s, b in pairs]


def example_deal() -> dict[str, Any]:
    """The example deal of docs/record-format.md (deal 11, dealer N, trump hearts, W claims board)."""
    return record_example_deal()


def no_trump_deal() -> dict[str, Any]:
    """Deal 11 with the Big Blooper turned: W discards the Little Blooper and draws JC (stock[1])."""
    hands = {
        "N": ["2H", "KS", "9D"],
        "E": ["4C", "7S", "QD"],
        "S": ["AS", "3H", "8C"],
        "W": ["LJ", "AH", "KD"],
    }
    return {
        "number": 11,
        "dealer": "N",
        "hands": hands,
        "trump_card": "BJ",
        "stock": stock_for(hands, "BJ", "JC"),
        "joker_swap": {"seat": "W", "drawn": "JC"},
        "bids": bids(("E", "pass"), ("S", 1), ("W", "board"), ("N", 2)),
        "tricks": [
            {"leader": "W", "cards": ["AH", "2H", "4C", "3H"]},
            {"leader": "W", "cards": ["KD", "9D", "QD", "AS"]},
            {"leader": "W", "cards": ["JC", "KS", "7S", "8C"]},
        ],
        "result": {"tricks": {"NS": 0, "EW": 3}, "points": {"NS": -15, "EW": 30}},
    }


def make_record(deals: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "format_version": 1,
        "game_id": "g1",
        "ruleset": "standard",
        "players": {"N": "Ann", "E": "Bo", "S": "Cy", "W": "Di"},
        "deals": deals,
    }
    rec.update(extra)
    return rec


def base(deal11: dict[str, Any] | None = None) -> dict[str, Any]:
    """Deals 1..10 and the given deal 11 (default: the docs/record-format.md example)."""
    return make_record([*filler(), example_deal() if deal11 is None else deal11])


def run(rec: Any) -> Replay:
    return check(json.dumps(rec).encode())


def errors(rec: Any) -> list[tuple[str, str, int | None, int | None, str | None]]:
    """``(code, path, deal, trick, seat)`` of every error, in reported order."""
    return [(v.code, v.path, v.deal, v.trick, v.seat) for v in run(rec).violations if v.severity == "error"]


def dup_unseated(errs: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """The errors with the seat of DUPLICATE_CARD blanked (its seat is checked once, in its own test)."""
    return [(*e[:4], None) if e[0] == "DUPLICATE_CARD" else e for e in errs]


def schema_paths(rec: Any) -> list[str]:
    r = run(rec)
    assert {v.code for v in r.violations} == {"SCHEMA"}, r.violations
    return [v.path for v in r.violations]


# --- the base records are valid ------------------------------------------------------------------


def test_base_record_is_valid_and_incomplete() -> None:
    r = run(base())
    assert r.valid and not r.complete
    assert [(v.code, v.severity, v.path, v.deal, v.trick, v.seat) for v in r.violations] == [
        ("INCOMPLETE", "warning", "/deals", None, None, None)
    ]
    assert r.violations[0].message == "11 scored deals of 25"
    assert r.deals[10].tricks == (0, 3) and r.deals[10].points == (-15, 30)


def test_no_trump_deal_with_joker_swap_is_valid() -> None:
    assert errors(base(no_trump_deal())) == []


def test_full_game_is_complete() -> None:
    rec = make_record(filler(25, first_dealer=E, seed=3))
    r = run(rec)
    assert r.violations == []
    assert r.valid and r.complete and r.scored_deals == 25


def test_empty_deals_is_valid_and_incomplete() -> None:
    r = run(make_record([]))
    assert r.valid and not r.complete
    assert [(v.code, v.message) for v in r.violations] == [("INCOMPLETE", "0 scored deals of 25")]
    assert r.report("x.json", None)["deals"] == []
    assert r.report("x.json", None)["final_score"] == {"NS": 0, "EW": 0}


# --- JSON -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"   ",
        b"{",
        b'{"a": 1,}',
        b"{'a': 1}",
        b'{"a": NaN}',
        b'{"a": Infinity}',
        b'{"a": -Infinity}',
        b'{"a": "x\x01y"}',
        b"\xff\xfe{}",
        b"[" * 100_000 + b"]" * 100_000,
    ],
)
def test_json_error(raw: bytes) -> None:
    r = check(raw)
    assert [(v.code, v.path, v.deal, v.trick, v.seat, v.severity) for v in r.violations] == [
        ("JSON", "", None, None, None, "error")
    ]
    rep = r.report("bad.json", None)
    assert rep["deals"] == [] and rep["final_score"] is None and rep["game_id"] is None
    assert rep["valid"] is False and rep["complete"] is False


def test_duplicate_keys_last_one_counts() -> None:
    text = json.dumps(base())
    assert text.startswith('{"format_version": 1, "game_id": "g1"')
    raw = text.replace('"game_id": "g1"', '"game_id": 5, "game_id": "g1"', 1).encode()
    r = check(raw)
    assert r.valid and r.game_id == "g1"
    raw = text.replace('"game_id": "g1"', '"game_id": "g1", "game_id": 5', 1).encode()
    assert [v.path for v in check(raw).violations] == ["/game_id"]


def test_huge_integer_is_json() -> None:
    rec = base()
    rec["deals"][10]["bids"][3]["bid"] = 10**30
    assert ("BID_RANGE", f"{D11}/bids/3/bid", 11, None, "N") in errors(rec)


# --- SCHEMA ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [[], [base()], "record", 3, 2.5, True, None])
def test_schema_non_object(value: Any) -> None:
    r = run(value)
    assert [(v.code, v.path) for v in r.violations] == [("SCHEMA", "")]
    rep = r.report("x.jsonl", 3)
    assert rep["line"] == 3 and rep["game_id"] is None and rep["deals"] == [] and rep["final_score"] is None


@pytest.mark.parametrize("bad", ["2", 2.0, 3.0, True, False, None, "Pass", "BOARD", [2], {"n": 2}])
def test_schema_bid_strict(bad: Any) -> None:
    rec = base()
    rec["deals"][10]["bids"][1]["bid"] = bad
    assert schema_paths(rec) == [f"{D11}/bids/1/bid"]  # one violation, however many union branches fail


@pytest.mark.parametrize(
    ("where", "value"),
    [
        (("format_version",), True),
        (("format_version",), 1.0),
        (("format_version",), "1"),
        (("format_version",), 2),
        (("deals", 10, "number"), True),
        (("deals", 10, "number"), 11.0),
        (("deals", 10, "number"), "11"),
        (("deals", 10, "result", "tricks", "NS"), 0.0),
        (("deals", 10, "result", "points", "EW"), True),
    ],
)
def test_schema_strict_integers(where: tuple[Any, ...], value: Any) -> None:
    rec = base()
    target: Any = rec
    for key in where[:-1]:
        target = target[key]
    target[where[-1]] = value
    assert schema_paths(rec) == ["/" + "/".join(str(p) for p in where)]


def test_schema_final_score_strict() -> None:
    rec = base()
    rec["final_score"] = {"NS": 1.0, "EW": 0}
    assert schema_paths(rec) == ["/final_score/NS"]


@pytest.mark.parametrize(
    "where",
    [
        (),
        ("players",),
        ("deals", 10),
        ("deals", 10, "hands"),
        ("deals", 10, "bids", 0),
        ("deals", 10, "tricks", 1),
        ("deals", 10, "result"),
        ("deals", 10, "result", "tricks"),
        ("deals", 10, "result", "points"),
        ("final_score",),
        ("deals", 10, "joker_swap"),
    ],
)
def test_schema_unknown_field_at_every_level(where: tuple[Any, ...]) -> None:
    rec = base(no_trump_deal()) if "joker_swap" in where else base()
    rec["final_score"] = {"NS": 0, "EW": 0}
    target: Any = rec
    for key in where:
        target = target[key]
    target["colour"] = "red"
    assert schema_paths(rec) == ["/" + "/".join(str(p) for p in (*where, "colour"))]


def test_schema_player_in_two_seats() -> None:
    rec = base()
    rec["players"]["W"] = "Ann"
    paths = schema_paths(rec)
    assert len(paths) == 1 and paths[0].startswith("/players")


@pytest.mark.parametrize(
    ("pid", "ok"),
    [
        ("Eve", True),
        ("Анна", True),
        ("アン", True),
        ("x" * 64, True),
        ("", False),
        ("x" * 65, False),
        ("A\x00n", False),
        ("A\nn", False),
        ("A\x7fn", False),
        ("A\x85n", False),
    ],
)
def test_schema_player_id(pid: str, ok: bool) -> None:
    rec = base()
    rec["players"]["E"] = pid
    if ok:
        assert errors(rec) == []
    else:
        assert schema_paths(rec) == ["/players/E"]


@pytest.mark.parametrize(
    ("gid", "ok"), [("g1", True), ("a.b_c:d-E9", True), ("x" * 128, True), ("", False), ("x" * 129, False)]
)
def test_schema_game_id(gid: str, ok: bool) -> None:
    rec = base()
    rec["game_id"] = gid
    r = run(rec)
    assert r.game_id == gid
    if ok:
        assert r.valid
    else:
        assert [v.path for v in r.violations] == ["/game_id"]


def test_game_id_in_report() -> None:
    rec = base()
    rec["game_id"] = "bad id!"  # ill-formed, yet a string: reported as is
    rep = run(rec).report("g.json", None)
    assert rep["game_id"] == "bad id!"
    assert [v["code"] for v in rep["violations"]] == ["SCHEMA"]
    assert rep["deals"] == [] and rep["final_score"] is None
    rec["game_id"] = 17  # not a string
    rep = run(rec).report("g.json", None)
    assert rep["game_id"] is None
    del rec["game_id"]
    rep = run(rec).report("g.json", None)
    assert rep["game_id"] is None
    assert [v["path"] for v in rep["violations"]] == ["/game_id"]


def test_schema_ruleset() -> None:
    rec = base()
    rec["ruleset"] = "pereulok"
    assert schema_paths(rec) == ["/ruleset"]


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("2026-01-31T19:05:00Z", True),
        ("2026-01-31T19:05:00.123+01:00", True),
        ("2026-01-31T19:05:00-05:30", True),
        ("2016-12-31T23:59:60Z", True),  # RFC 3339 section 5.6 allows a leap second
        ("2026-01-31T19:05:00", False),
        ("2026-01-31 19:05:00Z", False),
        ("2026-01-31", False),
        ("2026-02-30T19:05:00Z", False),
        (1234567890, False),
    ],
)
def test_schema_played_at(value: Any, ok: bool) -> None:
    rec = base()
    rec["played_at"] = value
    if ok:
        assert errors(rec) == []
    else:
        assert schema_paths(rec) == ["/played_at"]


def test_schema_event_length() -> None:
    rec = base()
    rec["event"] = "club night " * 11  # 121 characters
    assert errors(rec) == []
    rec["event"] = "x" * 129
    assert schema_paths(rec) == ["/event"]


def test_schema_deal_number_range() -> None:
    for bad in (0, 26, -1):
        rec = base()
        rec["deals"][10]["number"] = bad
        assert schema_paths(rec) == [f"{D11}/number"]


def test_schema_three_bids() -> None:
    rec = base()
    del rec["deals"][10]["bids"][3]
    assert schema_paths(rec) == [f"{D11}/bids"]


def test_schema_five_bids() -> None:
    rec = base()
    rec["deals"][10]["bids"].append({"seat": "N", "bid": "pass"})
    assert schema_paths(rec) == [f"{D11}/bids"]


def test_schema_trick_of_five_cards() -> None:
    rec = base()
    rec["deals"][10]["tricks"][0]["cards"].append("2C")
    assert schema_paths(rec) == [f"{D11}/tricks/0/cards"]
    rec = base()
    rec["deals"][10]["tricks"][0]["cards"].pop()
    assert schema_paths(rec) == [f"{D11}/tricks/0/cards"]


@pytest.mark.parametrize("bad", ["th", "10H", "1H", "Th", "HT", "bj", "Bj", "JK", "", " 2H", "2H ", 22, None])
def test_schema_card_notation(bad: Any) -> None:
    for where in (("hands", "N", 0), ("trump_card",), ("tricks", 2, "cards", 3)):
        rec = base()
        target: Any = rec["deals"][10]
        for key in where[:-1]:
            target = target[key]
        target[where[-1]] = bad
        assert schema_paths(rec) == [D11 + "/" + "/".join(str(p) for p in where)]


@pytest.mark.parametrize("bad", ["n", "X", "NS", "", 0, None])
def test_schema_seats(bad: Any) -> None:
    rec = base()
    rec["deals"][10]["dealer"] = bad
    rec["deals"][10]["tricks"][1]["leader"] = bad
    rec["deals"][10]["bids"][2]["seat"] = bad
    assert sorted(schema_paths(rec)) == sorted([f"{D11}/dealer", f"{D11}/bids/2/seat", f"{D11}/tricks/1/leader"])


@pytest.mark.parametrize("field", ["number", "dealer", "hands", "trump_card", "bids", "tricks"])
def test_schema_missing_deal_field(field: str) -> None:
    rec = base()
    del rec["deals"][0][field]
    assert schema_paths(rec) == [f"/deals/0/{field}"]


@pytest.mark.parametrize("field", ["format_version", "game_id", "ruleset", "players", "deals"])
def test_schema_missing_top_field(field: str) -> None:
    rec = base()
    del rec[field]
    assert schema_paths(rec) == [f"/{field}"]


def test_schema_missing_nested_fields() -> None:
    rec = base()
    del rec["deals"][10]["hands"]["W"]
    del rec["deals"][10]["bids"][0]["bid"]
    del rec["deals"][10]["tricks"][2]["leader"]
    del rec["players"]["S"]
    assert sorted(schema_paths(rec)) == sorted(
        ["/players/S", f"{D11}/hands/W", f"{D11}/bids/0/bid", f"{D11}/tricks/2/leader"]
    )


@pytest.mark.parametrize(
    "where",
    [
        ("played_at",),
        ("event",),
        ("final_score",),
        ("deals", 10, "stock"),
        ("deals", 10, "joker_swap"),
        ("deals", 10, "result"),
    ],
)
def test_schema_null_for_optional_field(where: tuple[Any, ...]) -> None:
    rec = base()
    target: Any = rec
    for key in where[:-1]:
        target = target[key]
    target[where[-1]] = None
    assert schema_paths(rec) == ["/" + "/".join(str(p) for p in where)]


def test_optional_fields_may_be_omitted() -> None:
    rec = base()
    for d in rec["deals"]:
        d.pop("stock", None)
        d.pop("result", None)
    rec.pop("played_at", None)
    assert errors(rec) == []


def test_schema_wrong_container_types() -> None:
    rec = base()
    rec["deals"][10]["tricks"] = {"leader": "W"}
    rec["deals"][9]["hands"]["N"] = "2H 3H"
    assert sorted(schema_paths(rec)) == sorted([f"{D11}/tricks", "/deals/9/hands/N"])


def test_schema_stops_other_checks() -> None:
    rec = base()
    rec["deals"][10]["tricks"][0]["cards"][1] = "KS"  # would be a BIG_BLOOPER
    rec["deals"][10]["dealer"] = "E"  # would be DEALER and BID_ORDER
    rec["event"] = 5
    r = run(rec)
    assert [(v.code, v.path) for v in r.violations] == [("SCHEMA", "/event")]
    assert r.deals == [] and r.final_score is None


def test_schema_several_errors_one_each() -> None:
    rec = base()
    rec["deals"][10]["bids"][1]["bid"] = "2"
    rec["deals"][3]["number"] = 26
    rec["extra"] = 1
    assert sorted(schema_paths(rec)) == sorted([f"{D11}/bids/1/bid", "/deals/3/number", "/extra"])


# --- DEAL_NUMBER and DEALER ---------------------------------------------------------------------


def test_deal_number_first_must_be_1() -> None:
    rng = random.Random(5)
    rec = make_record([engine_deal(2, N, rng)])
    assert errors(rec) == [("DEAL_NUMBER", "/deals/0/number", 1, None, None)]


def test_deal_number_skipped() -> None:
    rng = random.Random(5)
    rec = make_record([engine_deal(1, N, rng), engine_deal(3, E, rng)])
    assert errors(rec) == [("DEAL_NUMBER", "/deals/1/number", 2, None, None)]


def test_deal_number_repeated_without_pass_out() -> None:
    rng = random.Random(5)
    rec = make_record([engine_deal(1, N, rng), engine_deal(1, E, rng)])
    assert errors(rec) == [("DEAL_NUMBER", "/deals/1/number", 2, None, None)]


def test_deal_number_must_repeat_after_pass_out() -> None:
    rng = random.Random(5)
    passed = engine_deal(1, N, rng, ["pass"] * 4)
    assert errors(make_record([passed, engine_deal(1, E, rng)])) == []
    assert errors(make_record([passed, engine_deal(2, E, rng)])) == [("DEAL_NUMBER", "/deals/1/number", 2, None, None)]
    # two pass-outs in a row, then the deal
    rec = make_record([passed, engine_deal(1, E, rng, ["pass"] * 4), engine_deal(1, S, rng), engine_deal(2, W, rng)])
    r = run(rec)
    assert r.valid and r.scored_deals == 2


def test_deal_number_more_than_25_scored_deals() -> None:
    deals = filler(25, first_dealer=E, seed=3)  # deal 25 is dealt by E
    rec = make_record([*deals, engine_deal(25, S, random.Random(26))])
    assert errors(rec) == [("DEAL_NUMBER", "/deals/25/number", 26, None, None)]
    assert all(v.code != "INCOMPLETE" for v in run(rec).violations)


def test_dealer() -> None:
    rng = random.Random(6)
    rec = make_record([engine_deal(1, N, rng), engine_deal(2, S, rng), engine_deal(3, W, rng)])
    # deal 2 should be E's; the dealer is at fault; deal 3 follows the recorded S
    assert errors(rec) == [("DEALER", "/deals/1/dealer", 2, None, "S")]


def test_first_dealer_is_free() -> None:
    for dealer in range(4):
        assert errors(make_record([engine_deal(1, dealer, random.Random(dealer))])) == []


# --- HAND_SIZE, DUPLICATE_CARD, STOCK ------------------------------------------------------------


def test_hand_size() -> None:
    d = example_deal()
    d["hands"]["E"].append("2C")
    d["hands"]["W"] = ["BJ", "AH", "KD", "3C", "5C"]
    assert errors(base(d)) == [
        ("HAND_SIZE", f"{D11}/hands/E", 11, None, "E"),
        ("HAND_SIZE", f"{D11}/hands/W", 11, None, "W"),
    ]


def test_hand_size_uses_recorded_number() -> None:
    d = example_deal()
    d["hands"]["S"].pop()  # S holds 2 cards: AS 3H; S's 8C in trick 2 is then not in S's hand
    assert errors(base(d)) == [
        ("HAND_SIZE", f"{D11}/hands/S", 11, None, "S"),
        ("NOT_IN_HAND", f"{D11}/tricks/1/cards/3", 11, 2, "S"),
    ]


def test_duplicate_card_between_hands() -> None:
    d = example_deal()
    d["hands"]["E"][0] = "KS"  # N holds KS too; E plays it instead of 4C
    d["tricks"][0]["cards"][2] = "KS"
    assert dup_unseated(errors(base(d))) == [("DUPLICATE_CARD", f"{D11}/hands/E/0", 11, None, None)]


def test_duplicate_card_seat_is_null() -> None:
    # docs/record-format.md, "Violations": the seat is the seat whose action is at fault, and null for a
    # fault of the deal or the record (the seat column of DUPLICATE_CARD): a card dealt twice is a fault
    # of the deal, and its holders took no action.
    d = example_deal()
    d["hands"]["E"][0] = "KS"
    d["tricks"][0]["cards"][2] = "KS"
    assert [v.seat for v in run(base(d)).violations if v.code == "DUPLICATE_CARD"] == [None]


def test_duplicate_card_within_a_hand_and_with_trump_card() -> None:
    d = example_deal()
    d["hands"]["W"] = ["BJ", "BJ", "KD"]  # W's AH replaced by a second BJ ...
    d["tricks"][1]["cards"][0] = "AH"  # ... so AH is not in W's hand
    d["trump_card"] = "KD"  # and the trump card is dealt to W
    got = dup_unseated(errors(base(d)))
    assert got[:2] == [
        ("DUPLICATE_CARD", f"{D11}/hands/W/1", 11, None, None),
        ("DUPLICATE_CARD", f"{D11}/trump_card", 11, None, None),
    ]


def test_duplicate_card_scan_order_and_one_per_later_occurrence() -> None:
    d = example_deal()
    d["hands"]["S"][2] = "2H"  # second 2H (after N's)
    d["hands"]["W"][2] = "2H"  # third 2H
    d["stock"] = stock_for(d["hands"], "5H")
    d["stock"].append("2H")  # a fourth, at the end of the stock (which is then too long)
    last = len(d["stock"]) - 1
    got = [e for e in dup_unseated(errors(base(d))) if e[0] in ("DUPLICATE_CARD", "STOCK")]
    assert got == [
        ("DUPLICATE_CARD", f"{D11}/hands/S/2", 11, None, None),
        ("DUPLICATE_CARD", f"{D11}/hands/W/2", 11, None, None),
        ("DUPLICATE_CARD", f"{D11}/stock/{last}", 11, None, None),
        ("STOCK", f"{D11}/stock", 11, None, None),
    ]


def test_stock_top_is_trump_card_counted_once() -> None:
    d = example_deal()
    d["stock"] = stock_for(d["hands"], "5H")
    assert len(d["stock"]) == 42
    assert errors(base(d)) == []


def test_stock_wrong_size() -> None:
    d = example_deal()
    d["stock"] = stock_for(d["hands"], "5H")[:-1]
    assert errors(base(d)) == [("STOCK", f"{D11}/stock", 11, None, None)]
    d["stock"] = []
    assert errors(base(d)) == [("STOCK", f"{D11}/stock", 11, None, None)]


def test_stock_top_not_trump_card() -> None:
    d = example_deal()
    stock = stock_for(d["hands"], "5H")
    stock[0], stock[1] = stock[1], stock[0]  # the trump card is second: it appears twice, and the top is wrong
    d["stock"] = stock
    assert errors(base(d)) == [
        ("DUPLICATE_CARD", f"{D11}/stock/1", 11, None, None),
        ("STOCK", f"{D11}/stock", 11, None, None),
    ]
    # the trump card moved to the bottom of the stock: a wrong top, and the trump card twice
    d["stock"] = [*stock_for(d["hands"], "5H")[1:], "5H"]
    assert errors(base(d)) == [
        ("DUPLICATE_CARD", f"{D11}/stock/41", 11, None, None),
        ("STOCK", f"{D11}/stock", 11, None, None),
    ]


def test_stock_cards_dealt_or_missing_are_duplicates() -> None:
    d = example_deal()
    stock = stock_for(d["hands"], "5H")
    stock[5] = "KS"  # KS was dealt to N
    d["stock"] = stock
    assert errors(base(d)) == [("DUPLICATE_CARD", f"{D11}/stock/5", 11, None, None)]


# --- JOKER_SWAP -----------------------------------------------------------------------------------


def test_joker_swap_missing() -> None:
    d = no_trump_deal()
    del d["joker_swap"]
    # with the stock given, stock[1] (JC) joins the holder's hand: the play stays legal
    assert errors(base(d)) == [("JOKER_SWAP", f"{D11}/joker_swap", 11, None, "W")]


def test_joker_swap_missing_without_stock() -> None:
    d = no_trump_deal()
    del d["joker_swap"]
    del d["stock"]
    assert errors(base(d)) == [
        ("JOKER_SWAP", f"{D11}/joker_swap", 11, None, "W"),
        ("NOT_IN_HAND", f"{D11}/tricks/2/cards/0", 11, 3, "W"),
    ]


def test_joker_swap_unneeded_trump_deal() -> None:
    d = example_deal()
    d["joker_swap"] = {"seat": "E", "drawn": "2C"}
    # ignored for play
    assert errors(base(d)) == [("JOKER_SWAP", f"{D11}/joker_swap", 11, None, "E")]


def test_joker_swap_unneeded_other_joker_in_stock() -> None:
    d = no_trump_deal()
    d["hands"]["W"] = ["JC", "AH", "KD"]
    d["stock"] = stock_for(d["hands"], "BJ", "LJ")
    d["joker_swap"] = {"seat": "W", "drawn": "LJ"}
    assert errors(base(d)) == [("JOKER_SWAP", f"{D11}/joker_swap", 11, None, "W")]
    del d["joker_swap"]
    assert errors(base(d)) == []


def test_joker_swap_wrong_seat() -> None:
    d = no_trump_deal()
    d["joker_swap"] = {"seat": "N", "drawn": "JC"}
    # the drawn card joins the recorded seat's hand: W lacks JC; N then holds a club when JC is led
    assert errors(base(d)) == [
        ("JOKER_SWAP", f"{D11}/joker_swap", 11, None, "N"),
        ("NOT_IN_HAND", f"{D11}/tricks/2/cards/0", 11, 3, "W"),
        ("REVOKE", f"{D11}/tricks/2/cards/1", 11, 3, "N"),
    ]


def test_joker_swap_draws_dealt_card() -> None:
    d = no_trump_deal()
    d["joker_swap"] = {"seat": "W", "drawn": "QD"}  # dealt to E
    # W's hand becomes QD AH KD (the drawn card joins it), so W's JC is not in it;
    # the drawn card is not counted again in the duplicate check
    assert errors(base(d)) == [
        ("JOKER_SWAP", f"{D11}/joker_swap", 11, None, "W"),
        ("NOT_IN_HAND", f"{D11}/tricks/2/cards/0", 11, 3, "W"),
    ]


def test_joker_swap_draws_turned_card() -> None:
    d = no_trump_deal()
    d["joker_swap"] = {"seat": "W", "drawn": "BJ"}
    assert errors(base(d)) == [
        ("JOKER_SWAP", f"{D11}/joker_swap", 11, None, "W"),
        ("NOT_IN_HAND", f"{D11}/tricks/2/cards/0", 11, 3, "W"),
    ]


def test_joker_swap_draws_not_next_stock_card() -> None:
    d = no_trump_deal()
    d["joker_swap"] = {"seat": "W", "drawn": "QC"}
    d["tricks"][2]["cards"][0] = "QC"  # W leads the card it drew
    assert errors(base(d)) == [("JOKER_SWAP", f"{D11}/joker_swap", 11, None, "W")]
    # without the stock nobody can tell which card was next
    del d["stock"]
    assert errors(base(d)) == []


def test_joker_swap_in_pass_out() -> None:
    d = no_trump_deal()
    del d["joker_swap"]
    del d["result"]
    d["bids"] = bids(("E", "pass"), ("S", "pass"), ("W", "pass"), ("N", "pass"))
    d["tricks"] = []
    assert errors(base(d)) == [("JOKER_SWAP", f"{D11}/joker_swap", 11, None, "W")]


# --- BID_ORDER, BID_RANGE ------------------------------------------------------------------------


def test_bid_order_wrong_start() -> None:
    d = example_deal()
    d["bids"] = bids(("S", 1), ("E", "pass"), ("W", "board"), ("N", 2))
    assert errors(base(d)) == [("BID_ORDER", f"{D11}/bids", 11, None, None)]


def test_bid_order_seat_twice() -> None:
    d = example_deal()
    d["bids"] = bids(("E", "pass"), ("S", 1), ("W", "board"), ("W", 2))
    got = errors(base(d))
    assert got[0] == ("BID_ORDER", f"{D11}/bids", 11, None, None)
    assert [e[0] for e in got] == ["BID_ORDER", "RESULT_MISMATCH"]  # NS now bid 1, not 3: NS -5, not -15
    msg = next(v.message for v in run(base(d)).violations if v.code == "RESULT_MISMATCH")
    # Scores named by side, negative with a minus sign: never joined by hyphens ("-15--5" read as a range).
    assert "points (NS −15, EW " in msg and "points (NS −5, EW " in msg and "--" not in msg, msg


def test_final_score_mismatch_names_each_side() -> None:
    rec = base()
    rec["final_score"] = {"NS": 240, "EW": -118}
    [msg] = [v.message for v in run(rec).violations if v.code == "FINAL_SCORE_MISMATCH"]
    assert msg.startswith("recorded final score NS 240, EW −118; the deals add up to NS "), msg


def test_bid_range() -> None:
    d = example_deal()
    d["bids"][3]["bid"] = 3  # N, 3 cards: 1..2
    d["bids"][1]["bid"] = 0  # S: 0 is not a bid
    assert errors(base(d)) == [
        ("BID_RANGE", f"{D11}/bids/1/bid", 11, None, "S"),
        ("BID_RANGE", f"{D11}/bids/3/bid", 11, None, "N"),
    ]
    # bids count at face value: NS contract 0 + 3 = 3, set: -15, as recorded
    assert run(base(d)).deals[10].points == (-15, 30)


def test_bid_range_face_value() -> None:
    d = example_deal()
    d["bids"][3]["bid"] = 5
    r = run(base(d))
    assert r.deals[10].points == (-30, 30)  # NS contract 1 + 5 = 6, set: -30
    assert [e[0] for e in errors(base(d))] == ["BID_RANGE", "RESULT_MISMATCH"]


def test_bid_range_one_card() -> None:
    rng = random.Random(13)
    deals = filler(12)
    d13 = engine_deal(13, (S + 12) % 4, rng)
    d13["bids"][0]["bid"] = 1
    del d13["result"]
    rec = make_record([*deals, d13])
    got = errors(rec)
    assert got[0] == ("BID_RANGE", "/deals/12/bids/0/bid", 13, None, d13["bids"][0]["seat"])


def test_no_opening_leader_with_zero_bids() -> None:
    d = example_deal()
    for b in d["bids"]:
        b["bid"] = 0
    # not a pass-out (only "pass" is); no opening leader, so trick 1's leader is not checked;
    # W's Big Blooper lead is then a trump lead by a player who did not claim board
    assert errors(base(d)) == [
        ("BID_RANGE", f"{D11}/bids/0/bid", 11, None, "E"),
        ("BID_RANGE", f"{D11}/bids/1/bid", 11, None, "S"),
        ("BID_RANGE", f"{D11}/bids/2/bid", 11, None, "W"),
        ("BID_RANGE", f"{D11}/bids/3/bid", 11, None, "N"),
        ("TRUMP_LEAD", f"{D11}/tricks/0/cards/0", 11, 1, "W"),
        ("RESULT_MISMATCH", f"{D11}/result", 11, None, None),
    ]
    assert run(base(d)).deals[10].points == (0, 3)  # contracts of 0 score a point a trick


# --- PASS_OUT, TRICK_COUNT ----------------------------------------------------------------------


def test_pass_out_with_tricks() -> None:
    d = example_deal()
    d["bids"] = bids(("E", "pass"), ("S", "pass"), ("W", "pass"), ("N", "pass"))
    del d["result"]
    d["tricks"][0]["leader"] = "N"  # not replayed: no LEADER, TRUMP_LEAD, ...
    r = run(base(d))
    assert errors(base(d)) == [("PASS_OUT", f"{D11}/tricks", 11, None, None)]
    assert r.deals[10].tricks == (0, 0) and r.deals[10].points == (0, 0)
    assert r.scored_deals == 10


def test_no_tricks_after_bidding() -> None:
    d = example_deal()
    d["tricks"] = []
    del d["result"]
    assert errors(base(d)) == [("PASS_OUT", f"{D11}/tricks", 11, None, None)]  # not also TRICK_COUNT


def test_pass_out_recorded_result() -> None:
    d = example_deal()
    d["bids"] = bids(("E", "pass"), ("S", "pass"), ("W", "pass"), ("N", "pass"))
    d["tricks"] = []
    d["result"] = {"tricks": {"NS": 0, "EW": 0}, "points": {"NS": 0, "EW": 0}}
    assert errors(base(d)) == []
    d["result"]["points"]["EW"] = 1
    assert errors(base(d)) == [("RESULT_MISMATCH", f"{D11}/result", 11, None, None)]


def test_trick_count() -> None:
    d = example_deal()
    d["tricks"].pop()
    del d["result"]
    assert errors(base(d)) == [("TRICK_COUNT", f"{D11}/tricks", 11, None, None)]
    d = example_deal()
    d["tricks"].append({"leader": "W", "cards": ["2C", "3C", "4C", "5C"]})
    del d["result"]
    got = errors(base(d))
    assert got[0] == ("TRICK_COUNT", f"{D11}/tricks", 11, None, None)
    assert {e[0] for e in got[1:]} == {"NOT_IN_HAND"}  # the extra trick is replayed too


# --- LEADER and the plays ----------------------------------------------------------------------


def test_leader_opening() -> None:
    d = example_deal()
    d["tricks"][0] = {"leader": "N", "cards": ["2H", "4C", "3H", "BJ"]}
    # LEADER first, then N's trump lead (N neither claimed board nor holds only trumps)
    assert errors(base(d)) == [
        ("LEADER", f"{D11}/tricks/0/leader", 11, 1, "N"),
        ("TRUMP_LEAD", f"{D11}/tricks/0/cards/0", 11, 1, "N"),
    ]


def test_leader_later_trick() -> None:
    d = example_deal()
    d["tricks"][2] = {"leader": "S", "cards": ["AS", "KD", "KS", "QD"]}  # W won trick 2
    assert errors(base(d)) == [
        ("LEADER", f"{D11}/tricks/2/leader", 11, 3, "S"),
        ("RESULT_MISMATCH", f"{D11}/result", 11, None, None),  # S's AS takes the trick
    ]


def test_leader_follows_recorded_winner() -> None:
    d = example_deal()
    d["tricks"][1] = {"leader": "N", "cards": ["KS", "7S", "AS", "AH"]}
    d["tricks"][2] = {"leader": "W", "cards": ["KD", "9D", "QD", "8C"]}
    # N should not lead trick 2; W's AH (trump) wins, so W leading trick 3 is right
    assert errors(base(d)) == [("LEADER", f"{D11}/tricks/1/leader", 11, 2, "N")]


def test_not_in_hand() -> None:
    d = example_deal()
    d["tricks"][0]["cards"][1] = "KH"
    # N's KH is not in N's hand; N keeps 2H, so N's 9D on the AH lead is a revoke
    assert errors(base(d)) == [
        ("NOT_IN_HAND", f"{D11}/tricks/0/cards/1", 11, 1, "N"),
        ("REVOKE", f"{D11}/tricks/1/cards/1", 11, 2, "N"),
    ]


def test_not_in_hand_first_one_code_per_play() -> None:
    d = example_deal()
    d["tricks"][2]["cards"][2] = "7S"  # E played 7S already; E holds QD (a revoke too)
    assert errors(base(d)) == [("NOT_IN_HAND", f"{D11}/tricks/2/cards/2", 11, 3, "E")]


def test_not_in_hand_card_of_another_player() -> None:
    d = example_deal()
    d["tricks"][0]["cards"][0] = "AS"  # S's card, led by W
    got = errors(base(d))
    assert got[0] == ("NOT_IN_HAND", f"{D11}/tricks/0/cards/0", 11, 1, "W")


def test_revoke() -> None:
    d = example_deal()
    d["tricks"][1] = {"leader": "W", "cards": ["KD", "KS", "QD", "AS"]}
    d["tricks"][2] = {"leader": "W", "cards": ["AH", "9D", "7S", "8C"]}
    assert errors(base(d)) == [("REVOKE", f"{D11}/tricks/1/cards/1", 11, 2, "N")]


def test_revoke_joker_must_follow_trump_lead() -> None:
    d = example_deal()
    # E holds LJ instead of 4C; W (board) leads AH: E must follow trump with LJ, its only trump
    d["hands"]["E"] = ["LJ", "7S", "QD"]
    d["tricks"] = [
        {"leader": "W", "cards": ["AH", "2H", "7S", "3H"]},
        {"leader": "W", "cards": ["BJ", "9D", "LJ", "8C"]},
        {"leader": "W", "cards": ["KD", "KS", "QD", "AS"]},
    ]
    assert errors(base(d)) == [("REVOKE", f"{D11}/tricks/0/cards/2", 11, 1, "E")]


def test_trump_lead() -> None:
    d = example_deal()
    d["bids"] = bids(("E", "pass"), ("S", 1), ("W", 2), ("N", 1))  # W leads as highest bidder, no board
    del d["result"]
    # trick 1: W leads BJ while unbroken, holding KD; trick 2's AH lead comes after trumps were played
    assert errors(base(d)) == [("TRUMP_LEAD", f"{D11}/tricks/0/cards/0", 11, 1, "W")]


def test_trump_lead_all_trumps_allowed() -> None:
    d = example_deal()
    d["hands"]["W"] = ["BJ", "AH", "6H"]
    d["bids"] = bids(("E", "pass"), ("S", 1), ("W", 2), ("N", 1))
    d["tricks"][2] = {"leader": "W", "cards": ["6H", "KS", "QD", "AS"]}
    d["result"] = {"tricks": {"NS": 0, "EW": 3}, "points": {"NS": -10, "EW": 11}}
    assert errors(base(d)) == []


def test_trump_lead_partner_of_board_claimer() -> None:
    d = example_deal()
    # E claims board instead of W: E should lead; W, E's partner, leads the Big Blooper unbroken
    d["bids"] = bids(("E", "board"), ("S", 1), ("W", "pass"), ("N", 2))
    del d["result"]
    assert errors(base(d)) == [
        ("LEADER", f"{D11}/tricks/0/leader", 11, 1, "W"),
        ("TRUMP_LEAD", f"{D11}/tricks/0/cards/0", 11, 1, "W"),
    ]


def test_trump_lead_no_trump_deal_never() -> None:
    d = no_trump_deal()
    d["bids"] = bids(("E", "pass"), ("S", 1), ("W", 2), ("N", 1))
    del d["result"]
    assert errors(base(d)) == []


def test_big_blooper() -> None:
    d = example_deal()
    d["tricks"][0]["cards"][1] = "9D"  # N must play its highest trump, 2H
    d["tricks"][1]["cards"][1] = "2H"
    assert errors(base(d)) == [("BIG_BLOOPER", f"{D11}/tricks/0/cards/1", 11, 1, "N")]


def test_big_blooper_lower_trump() -> None:
    d = example_deal()
    d["hands"]["N"] = ["2H", "KH", "9D"]  # KS -> KH
    d["tricks"][0]["cards"][1] = "2H"  # N must play KH
    d["tricks"][1]["cards"][1] = "KH"
    d["tricks"][2]["cards"][1] = "9D"
    del d["result"]
    assert errors(base(d)) == [("BIG_BLOOPER", f"{D11}/tricks/0/cards/1", 11, 1, "N")]


def little_blooper_deal() -> dict[str, Any]:
    d = example_deal()
    d["hands"]["N"] = ["2H", "6H", "9D"]
    d["hands"]["W"] = ["LJ", "AH", "KD"]
    d["tricks"] = [
        {"leader": "W", "cards": ["LJ", "2H", "4C", "3H"]},
        {"leader": "W", "cards": ["AH", "6H", "7S", "8C"]},
        {"leader": "W", "cards": ["KD", "9D", "QD", "AS"]},
    ]
    return d


def test_little_blooper() -> None:
    d = little_blooper_deal()
    assert errors(base(d)) == []
    d["tricks"][0]["cards"][1] = "6H"  # N must play its lowest trump, 2H
    d["tricks"][1]["cards"][1] = "2H"
    assert errors(base(d)) == [("LITTLE_BLOOPER", f"{D11}/tricks/0/cards/1", 11, 1, "N")]


def test_blooper_without_trump_any_card() -> None:
    d = example_deal()
    d["tricks"][0]["cards"][2] = "QD"  # E has no trump: any card
    d["tricks"][2]["cards"][2] = "4C"  # and then E, void in diamonds, plays 4C
    assert errors(base(d)) == []


def test_result_mismatch() -> None:
    d = example_deal()
    d["result"]["points"]["NS"] = -14
    assert errors(base(d)) == [("RESULT_MISMATCH", f"{D11}/result", 11, None, None)]
    d = example_deal()
    d["result"]["tricks"] = {"NS": 1, "EW": 2}
    assert errors(base(d)) == [("RESULT_MISMATCH", f"{D11}/result", 11, None, None)]


def test_final_score() -> None:
    rec = base()
    ns = sum(d["result"]["points"]["NS"] for d in rec["deals"])
    ew = sum(d["result"]["points"]["EW"] for d in rec["deals"])
    rec["final_score"] = {"NS": ns, "EW": ew}
    r = run(rec)
    assert r.valid and r.final_score == (ns, ew)
    rec["final_score"] = {"NS": ns, "EW": ew + 1}
    r = run(rec)
    assert [(v.code, v.path, v.deal, v.trick, v.seat) for v in r.violations] == [
        ("FINAL_SCORE_MISMATCH", "/final_score", None, None, None),
        ("INCOMPLETE", "/deals", None, None, None),
    ]
    assert r.final_score == (ns, ew)  # the recomputed figures


def test_final_score_is_sum_of_recomputed_points() -> None:
    d = example_deal()
    d["result"]["points"]["NS"] = 0  # a wrong deal result; the final score adds the recomputed points
    rec = base(d)
    ns = sum(x["result"]["points"]["NS"] for x in rec["deals"][:10]) - 15
    ew = sum(x["result"]["points"]["EW"] for x in rec["deals"][:10]) + 30
    rec["final_score"] = {"NS": ns, "EW": ew}
    assert errors(rec) == [("RESULT_MISMATCH", f"{D11}/result", 11, None, None)]


def test_incomplete_warning_record_valid() -> None:
    r = run(base())
    assert r.valid
    rep = r.report("g.json", None)
    assert rep["valid"] is True and rep["complete"] is False
    assert rep["violations"] == [
        {
            "code": "INCOMPLETE",
            "severity": "warning",
            "message": "11 scored deals of 25",
            "path": "/deals",
            "deal": None,
            "trick": None,
            "seat": None,
        }
    ]


# --- every violation, in order -------------------------------------------------------------------


def test_every_violation_reported_in_order() -> None:
    rec = base()
    rec["deals"][10]["tricks"][0]["cards"][1] = "9D"  # BIG_BLOOPER, deal 11 trick 1
    rec["deals"][10]["tricks"][1]["cards"][1] = "2H"
    rec["deals"][10]["bids"][3]["bid"] = 7  # BID_RANGE, deal 11
    rec["deals"][10]["result"]["tricks"]["NS"] = 1  # RESULT_MISMATCH, deal 11
    rec["deals"][2]["hands"]["N"].append(rec["deals"][2]["hands"]["N"][0])  # HAND_SIZE + DUPLICATE, deal 3
    rec["final_score"] = {"NS": 0, "EW": 0}
    got = dup_unseated([(v.code, v.path, v.deal, v.trick, v.seat) for v in run(rec).violations])
    assert got == [
        ("HAND_SIZE", "/deals/2/hands/N", 3, None, "N"),
        ("DUPLICATE_CARD", f"/deals/2/hands/N/{len(rec['deals'][2]['hands']['N']) - 1}", 3, None, None),
        ("BID_RANGE", f"{D11}/bids/3/bid", 11, None, "N"),
        ("BIG_BLOOPER", f"{D11}/tricks/0/cards/1", 11, 1, "N"),
        ("RESULT_MISMATCH", f"{D11}/result", 11, None, None),
        ("FINAL_SCORE_MISMATCH", "/final_score", None, None, None),
        ("INCOMPLETE", "/deals", None, None, None),
    ]


def test_deal_checks_in_code_table_order() -> None:
    d = no_trump_deal()
    d["number"] = 12  # DEAL_NUMBER; hand size is then 2: HAND_SIZE x4; TRICK_COUNT; BID_RANGE (N's 2)
    d["dealer"] = "E"  # DEALER; bids then out of order: BID_ORDER
    d["stock"] = d["stock"][:-1]  # STOCK (size wrong for either number)
    del d["joker_swap"]  # JOKER_SWAP
    del d["result"]
    got = [e[0] for e in errors(base(d))]
    assert list(dict.fromkeys(got)) == [c for c in CODES if c in got]
    assert got == [
        "DEAL_NUMBER",
        "DEALER",
        "HAND_SIZE",
        "HAND_SIZE",
        "HAND_SIZE",
        "HAND_SIZE",
        "STOCK",
        "JOKER_SWAP",
        "BID_ORDER",
        "BID_RANGE",
        "TRICK_COUNT",
    ]


def test_bad_play_counts_as_played() -> None:
    d = example_deal()
    # N plays KS (in hand) on the Big Blooper: BIG_BLOOPER; KS is then gone, so N's later KS is NOT_IN_HAND
    d["tricks"][0]["cards"][1] = "KS"
    d["tricks"][1]["cards"][1] = "2H"
    d["tricks"][2]["cards"][1] = "KS"
    assert errors(base(d)) == [
        ("BIG_BLOOPER", f"{D11}/tricks/0/cards/1", 11, 1, "N"),
        ("NOT_IN_HAND", f"{D11}/tricks/2/cards/1", 11, 3, "N"),
    ]


# --- the report -----------------------------------------------------------------------------------


def test_report_shape() -> None:
    for rec in (base(), {"game_id": "x"}, [1]):
        rep = run(rec).report("a/b.json", None)
        assert set(rep) == REPORT_KEYS
        for v in rep["violations"]:
            assert set(v) == VIOLATION_KEYS
        json.dumps(rep)
    rep = check(b"nope").report("a/b.jsonl", 4)
    assert set(rep) == REPORT_KEYS and rep["line"] == 4 and rep["source"] == "a/b.jsonl"


def _example_report_record() -> dict[str, Any]:
    """Three deals giving exactly the example report of docs/record-format.md ("The JSON Lines report")."""

    def search(number: int, dealer: int, bid_list: list[Any], want: tuple[int, int]) -> dict[str, Any]:
        rng = random.Random(number)
        for _ in range(5000):
            deck = list(range(54))
            rng.shuffle(deck)
            state = DealState.from_deck(number, dealer, deck)
            for b in bid_list:
                state.bid(b)
            while not state.finished:
                state.play(rng.choice(list(cards_of(state.legal_plays()))))
            if tuple(state.won) == want:
                return state.to_record()
        raise AssertionError("no deal found")

    # deal 1, dealer W: N 4, E 3, S 3, W 3 -> NS 7, EW 6; NS took 7, EW 6
    d1 = search(1, W, [4, 3, 3, 3], (7, 6))
    # deal 2, dealer N: E 2, S 3, W 2, N 3 -> NS 6, EW 4; NS took 5, EW 7
    d2 = search(2, N, [2, 3, 2, 3], (5, 7))
    # deal 3, dealer E: S pass, W 2, N board, E pass; N leads AD and then ten trumps; S revokes with 4C
    spades_low = ["6S", "4S", "3S", "2S"]
    north = ["AD", "BJ", "LJ", "AS", "KS", "QS", "JS", "TS", "9S", "8S", "7S"]
    others = [x for x in CARD_NAMES if x not in north and x not in spades_low and x != "5S"]
    others.remove("2D")
    others.remove("4C")
    south = ["2D", "4C", *others[:9]]
    east = others[9:20]
    west = others[20:31]
    stock = ["5S", *spades_low, *others[31:]]
    assert len(stock) == 10 and len(others) == 36
    hands = {"N": north, "E": east, "S": south, "W": west}
    rest = {k: list(v) for k, v in hands.items()}
    tricks = []
    for k, lead in enumerate(["AD", "BJ", "LJ", "AS", "KS", "QS", "JS", "TS", "9S", "8S", "7S"]):
        cards = [lead]
        rest["N"].remove(lead)
        for seat in "ESW":
            if k == 0 and seat == "S":
                card = "4C"
            else:
                diamonds = [x for x in rest[seat] if x.endswith("D")]
                card = diamonds[0] if k == 0 and diamonds else rest[seat][-1]
            rest[seat].remove(card)
            cards.append(card)
        tricks.append({"leader": "N", "cards": cards})
    d3 = {
        "number": 3,
        "dealer": "E",
        "hands": hands,
        "trump_card": "5S",
        "stock": stock,
        "bids": bids(("S", "pass"), ("W", 2), ("N", "board"), ("E", "pass")),
        "tricks": tricks,
        "result": {"tricks": {"NS": 11, "EW": 0}, "points": {"NS": 110, "EW": -10}},
    }
    return make_record([d1, d2, d3], final_score={"NS": 115, "EW": 43})


def test_record_md_example_report() -> None:
    rec = _example_report_record()
    rep = run(rec).report("games/g1.json", None)
    assert rep == {
        "source": "games/g1.json",
        "line": None,
        "game_id": "g1",
        "valid": False,
        "complete": False,
        "sheet": False,
        "violations": [
            {
                "code": "REVOKE",
                "severity": "error",
                "message": "S did not follow suit with 4C",
                "path": "/deals/2/tricks/0/cards/2",
                "deal": 3,
                "trick": 1,
                "seat": "S",
            },
            {
                "code": "INCOMPLETE",
                "severity": "warning",
                "message": "3 scored deals of 25",
                "path": "/deals",
                "deal": None,
                "trick": None,
                "seat": None,
            },
        ],
        "deals": [
            {"tricks": {"NS": 7, "EW": 6}, "points": {"NS": 35, "EW": 30}},
            {"tricks": {"NS": 5, "EW": 7}, "points": {"NS": -30, "EW": 23}},
            {"tricks": {"NS": 11, "EW": 0}, "points": {"NS": 110, "EW": -10}},
        ],
        "final_score": {"NS": 115, "EW": 43},
    }


# --- never raises ------------------------------------------------------------------------------------

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
    | st.sampled_from(["N", "E", "S", "W", "pass", "board", "2H", "BJ", "LJ", "standard", "NS", "EW"])
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_replay_never_raises_on_any_json(value: Any) -> None:
    r = replay(value)
    rep = r.report("x.json", None)
    assert set(rep) == REPORT_KEYS
    json.dumps(rep)
    if not isinstance(value, dict):
        assert [(v.code, v.path) for v in r.violations] == [("SCHEMA", "")]


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_check_never_raises_on_any_bytes(raw: bytes) -> None:
    r = check(raw)
    assert r.violations and set(r.report("x", None)) == REPORT_KEYS


CARDS = st.sampled_from(CARD_NAMES)
SEATS = st.sampled_from(["N", "E", "S", "W"])
BIDS = st.sampled_from(["pass", "board"]) | st.integers(min_value=-3, max_value=15)


def _locations(obj: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _locations(v, (*path, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += _locations(v, (*path, i))
    return out


def _domain(path: tuple[Any, ...], old: Any) -> st.SearchStrategy[Any]:
    """A value that keeps the record schema-valid at ``path`` (so the replay proper runs)."""
    last = path[-1] if path else None
    if isinstance(old, str) and (old in CARD_NAMES):
        return CARDS
    if last in ("dealer", "leader", "seat"):
        return SEATS
    if last == "bid":
        return BIDS
    if last == "number":
        return st.integers(min_value=1, max_value=25)
    if isinstance(old, int) and not isinstance(old, bool):
        return st.integers(min_value=-200, max_value=200)
    return st.just(old)


@functools.cache
def _valid_small_record() -> str:
    return json.dumps(make_record([*filler(), no_trump_deal()], final_score={"NS": 0, "EW": 0}))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_replay_never_raises_on_mutated_record(data: st.DataObject) -> None:
    rec = json.loads(_valid_small_record())
    for _ in range(data.draw(st.integers(min_value=1, max_value=6))):
        locs = _locations(rec)
        path = data.draw(st.sampled_from(locs[1:]))
        parent: Any = rec
        for key in path[:-1]:
            parent = parent[key]
        old = parent[path[-1]]
        action = data.draw(st.sampled_from(["domain", "domain", "domain", "delete", "json", "dup"]))
        if action == "domain":
            parent[path[-1]] = data.draw(_domain(path, old))
        elif action == "delete":
            if isinstance(parent, dict):
                del parent[path[-1]]
            else:
                parent.pop(path[-1])
        elif action == "dup" and isinstance(parent, list):
            parent.append(copy.deepcopy(old))
        else:
            parent[path[-1]] = data.draw(json_values)
    r = run(rec)
    rep = r.report("m.json", None)
    assert set(rep) == REPORT_KEYS
    json.dumps(rep)
    for v in r.violations:
        assert v.code in CODES
        assert v.path == "" or v.path.startswith("/")


def test_deal_checks_hand_size_before_duplicate_card() -> None:
    # deal checks come in the order of the code table of docs/record-format.md: every HAND_SIZE before any DUPLICATE_CARD
    d = example_deal()
    d["hands"]["E"][0] = "KS"  # a second KS (N holds one): DUPLICATE_CARD at E's hand
    d["tricks"][0]["cards"][2] = "KS"
    d["hands"]["W"].append("5C")  # W holds 4 cards: HAND_SIZE
    got = dup_unseated(errors(base(d)))
    assert got == [
        ("HAND_SIZE", f"{D11}/hands/W", 11, None, "W"),
        ("DUPLICATE_CARD", f"{D11}/hands/E/0", 11, None, None),
    ]


def test_joker_in_no_trump_deal_is_a_suit_of_its_own() -> None:
    d = no_trump_deal()
    # W leads the discarded Little Blooper (not in W's hand); nobody holds a joker, so any card follows,
    # and the joker, alone in its suit, wins the trick
    d["tricks"][0]["cards"][0] = "LJ"
    d["tricks"][1]["cards"][0] = "AH"
    d["tricks"][1]["cards"][1] = "9D"
    d["tricks"][1]["cards"][2] = "QD"
    d["tricks"][1]["cards"][3] = "AS"
    del d["result"]
    got = errors(base(d))
    assert got[0] == ("NOT_IN_HAND", f"{D11}/tricks/0/cards/0", 11, 1, "W")
    r = run(base(d))
    assert r.deals[10].winners[0] == W

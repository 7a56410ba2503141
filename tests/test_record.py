"""The fast decoder (msgspec) and the authoritative models (pydantic) accept exactly the same records.

The validator trusts the fast path only because of this file: every input the
fast decoder accepts must pass pydantic, and every input pydantic accepts must
either pass the fast decoder or still replay (via ``to_fast``) to the same report.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from backalley.records.models import GameRecord, fast_decode, to_fast
from backalley.records.sources import parse
from backalley.replay import replay
from backalley.validate import check
from tests.helpers import drop, json_values, paths_of, random_record, set_path

BASE = random_record(11, deals=3)
BASE["final_score"] = {"NS": 0, "EW": 0}


def pydantic_accepts(value: Any) -> bool:
    try:
        GameRecord.model_validate(value)
    except ValidationError:
        return False
    return True


EDITS: list[tuple[str, Callable[[dict[str, Any]], dict[str, Any]]]] = [
    ("unchanged", lambda r: r),
    ("format_version true", lambda r: set_path(r, ("format_version",), True)),
    ("format_version 1.0", lambda r: set_path(r, ("format_version",), 1.0)),
    ("format_version '1'", lambda r: set_path(r, ("format_version",), "1")),
    ("format_version 2", lambda r: set_path(r, ("format_version",), 2)),
    ("ruleset other", lambda r: set_path(r, ("ruleset",), "pereulok")),
    ("game_id empty", lambda r: set_path(r, ("game_id",), "")),
    ("game_id space", lambda r: set_path(r, ("game_id",), "a b")),
    ("game_id 128", lambda r: set_path(r, ("game_id",), "x" * 128)),
    ("game_id 129", lambda r: set_path(r, ("game_id",), "x" * 129)),
    ("game_id number", lambda r: set_path(r, ("game_id",), 7)),
    ("player dup", lambda r: set_path(r, ("players", "S"), r["players"]["N"])),
    ("player empty", lambda r: set_path(r, ("players", "E"), "")),
    ("player 64", lambda r: set_path(r, ("players", "E"), "é" * 64)),
    ("player 65", lambda r: set_path(r, ("players", "E"), "é" * 65)),
    ("player control", lambda r: set_path(r, ("players", "E"), "a\tb")),
    ("player C1 control", lambda r: set_path(r, ("players", "E"), "a\x85b")),
    ("player any script", lambda r: set_path(r, ("players", "E"), "Иван 李 <b>")),
    ("player extra seat", lambda r: set_path(r, ("players", "X"), "q")),
    ("played_at ok offset", lambda r: set_path(r, ("played_at",), "2026-01-31T19:05:00.5+05:30")),
    ("played_at lower", lambda r: set_path(r, ("played_at",), "2026-01-31t19:05:00z")),
    ("played_at no offset", lambda r: set_path(r, ("played_at",), "2026-01-31T19:05:00")),
    ("played_at bad day", lambda r: set_path(r, ("played_at",), "2026-02-30T19:05:00Z")),
    ("played_at date only", lambda r: set_path(r, ("played_at",), "2026-02-03")),
    ("played_at null", lambda r: set_path(r, ("played_at",), None)),
    ("event 128", lambda r: set_path(r, ("event",), "e" * 128)),
    ("event 129", lambda r: set_path(r, ("event",), "e" * 129)),
    ("event null", lambda r: set_path(r, ("event",), None)),
    ("no event", lambda r: drop(r, ("event",))),
    ("no players", lambda r: drop(r, ("players",))),
    ("unknown top", lambda r: set_path(r, ("extra",), 1)),
    ("unknown deal", lambda r: set_path(r, ("deals", 0, "extra"), 1)),
    ("unknown bid", lambda r: set_path(r, ("deals", 0, "bids", 0, "extra"), 1)),
    ("unknown trick", lambda r: set_path(r, ("deals", 0, "tricks", 0, "extra"), 1)),
    ("unknown result", lambda r: set_path(r, ("deals", 0, "result", "tricks", "X"), 1)),
    ("bid '2'", lambda r: set_path(r, ("deals", 0, "bids", 0, "bid"), "2")),
    ("bid true", lambda r: set_path(r, ("deals", 0, "bids", 0, "bid"), True)),
    ("bid 3.0", lambda r: set_path(r, ("deals", 0, "bids", 0, "bid"), 3.0)),
    ("bid null", lambda r: set_path(r, ("deals", 0, "bids", 0, "bid"), None)),
    ("bid huge", lambda r: set_path(r, ("deals", 0, "bids", 0, "bid"), 10**30)),
    ("bid -1", lambda r: set_path(r, ("deals", 0, "bids", 0, "bid"), -1)),
    ("bid 0", lambda r: set_path(r, ("deals", 0, "bids", 0, "bid"), 0)),
    ("bid PASS", lambda r: set_path(r, ("deals", 0, "bids", 0, "bid"), "PASS")),
    ("bid seat x", lambda r: set_path(r, ("deals", 0, "bids", 0, "seat"), "X")),
    ("three bids", lambda r: set_path(r, ("deals", 0, "bids"), r["deals"][0]["bids"][:3])),
    ("five bids", lambda r: set_path(r, ("deals", 0, "bids"), r["deals"][0]["bids"] + r["deals"][0]["bids"][:1])),
    ("number 0", lambda r: set_path(r, ("deals", 0, "number"), 0)),
    ("number 26", lambda r: set_path(r, ("deals", 0, "number"), 26)),
    ("number true", lambda r: set_path(r, ("deals", 0, "number"), True)),
    ("number 1.0", lambda r: set_path(r, ("deals", 0, "number"), 1.0)),
    ("dealer x", lambda r: set_path(r, ("deals", 0, "dealer"), "n")),
    ("card th", lambda r: set_path(r, ("deals", 0, "hands", "N", 0), "th")),
    ("card 10H", lambda r: set_path(r, ("deals", 0, "hands", "N", 0), "10H")),
    ("card bj", lambda r: set_path(r, ("deals", 0, "trump_card"), "bj")),
    ("card int", lambda r: set_path(r, ("deals", 0, "trump_card"), 5)),
    ("hands list", lambda r: set_path(r, ("deals", 0, "hands"), [])),
    ("stock null", lambda r: set_path(r, ("deals", 0, "stock"), None)),
    ("no stock", lambda r: drop(r, ("deals", 0, "stock"))),
    ("swap null", lambda r: set_path(r, ("deals", 0, "joker_swap"), None)),
    ("swap unneeded", lambda r: set_path(r, ("deals", 0, "joker_swap"), {"seat": "N", "drawn": "2S"})),
    ("swap bad", lambda r: set_path(r, ("deals", 0, "joker_swap"), {"seat": "N"})),
    ("result null", lambda r: set_path(r, ("deals", 0, "result"), None)),
    ("result float", lambda r: set_path(r, ("deals", 0, "result", "points", "NS"), 1.5)),
    ("result huge", lambda r: set_path(r, ("deals", 0, "result", "points", "NS"), 2**70)),
    ("trick 3 cards", lambda r: set_path(r, ("deals", 0, "tricks", 0, "cards"), ["2S", "3S", "4S"])),
    ("trick 5 cards", lambda r: set_path(r, ("deals", 0, "tricks", 0, "cards"), ["2S", "3S", "4S", "5S", "6S"])),
    ("tricks object", lambda r: set_path(r, ("deals", 0, "tricks"), {})),
    ("no tricks key", lambda r: drop(r, ("deals", 0, "tricks"))),
    ("deals empty", lambda r: set_path(r, ("deals",), [])),
    ("final_score null", lambda r: set_path(r, ("final_score",), None)),
    ("final_score string", lambda r: set_path(r, ("final_score", "NS"), "0")),
]


#: Every string field of a record (issue 11, item 4: Python's ``$`` matched before a final newline).
STRING_PATHS: list[tuple[Any, ...]] = [
    ("game_id",),
    ("ruleset",),
    ("players", "N"),
    ("players", "E"),
    ("players", "S"),
    ("players", "W"),
    ("played_at",),
    ("event",),
    ("deals", 0, "dealer"),
    ("deals", 0, "trump_card"),
    ("deals", 0, "hands", "N", 0),
    ("deals", 0, "stock", 0),
    ("deals", 0, "bids", 0, "seat"),
    ("deals", 0, "tricks", 0, "leader"),
    ("deals", 0, "tricks", 0, "cards", 0),
    ("deals", 1, "joker_swap", "seat"),
    ("deals", 1, "joker_swap", "drawn"),
]
#: Control characters at the end (``\n`` and ``\r\n`` above all), inside and at the start of a value.
CONTROL_EDITS: list[tuple[str, Callable[[str], str]]] = [
    ("trailing LF", lambda v: v + "\n"),
    ("trailing CRLF", lambda v: v + "\r\n"),
    ("trailing CR", lambda v: v + "\r"),
    ("embedded LF", lambda v: v[:1] + "\n" + v[1:]),
    ("leading LF", lambda v: "\n" + v),
    ("trailing tab", lambda v: v + "\t"),
    ("embedded tab", lambda v: v[:1] + "\t" + v[1:]),
    ("NUL", lambda v: v + "\x00"),
    ("unit separator", lambda v: v[:1] + "\x1f" + v[1:]),
    ("DEL", lambda v: v + "\x7f"),
    ("C1 NEL", lambda v: v + "\x85"),
    ("line separator", lambda v: v + "\u2028"),
]


def _control_edit(path: tuple[Any, ...], change: Callable[[str], str]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def edit(r: dict[str, Any]) -> dict[str, Any]:
        if path[:3] == ("deals", 1, "joker_swap"):  # a swap to edit (unneeded: a rule error, not a schema one)
            r = set_path(r, ("deals", 1, "joker_swap"), {"seat": "N", "drawn": "2S"})
        node: Any = r
        for key in path:
            node = node[key]
        return set_path(r, path, change(node))

    return edit


EDITS += [
    (f"{'/'.join(map(str, path))} {name}", _control_edit(path, change))
    for path in STRING_PATHS
    for name, change in CONTROL_EDITS
]


@pytest.mark.parametrize(("name", "edit"), EDITS, ids=[name for name, _ in EDITS])
def test_fast_and_full_paths_accept_the_same_records(
    name: str, edit: Callable[[dict[str, Any]], dict[str, Any]]
) -> None:
    rec = edit(BASE)
    raw = json.dumps(rec).encode()
    fast = fast_decode(raw) is not None
    assert fast == pydantic_accepts(rec), name
    # Whatever path it takes, the report is the one the full path gives.
    assert check(raw).report("s", 1) == replay(parse(raw)[0]).report("s", 1)


@pytest.mark.parametrize("path", [("game_id",), ("players", "N"), ("players", "W")])
def test_a_trailing_newline_is_rejected_by_both_paths(path: tuple[Any, ...]) -> None:
    rec = _control_edit(path, lambda v: v + "\n")(BASE)
    assert fast_decode(json.dumps(rec).encode()) is None
    assert not pydantic_accepts(rec)
    assert any(
        v.code == "SCHEMA" and v.path == "/" + "/".join(path) for v in check(json.dumps(rec).encode()).violations
    )


def test_player_ids_are_read_in_nfc_by_both_paths() -> None:
    nfd, composed = "Jose\u0301", "Jos\u00e9"
    rec = set_path(BASE, ("players", "N"), nfd)
    fast = fast_decode(json.dumps(rec).encode())
    assert fast is not None
    seen = [fast.players.N, GameRecord.model_validate(rec).players.N, to_fast(rec).players.N]
    assert seen == [composed] * 3
    # The same player twice, once in each form: one player in two seats, on both paths.
    twice = set_path(rec, ("players", "S"), composed)
    assert fast_decode(json.dumps(twice).encode()) is None
    assert not pydantic_accepts(twice)
    assert [v.path for v in check(json.dumps(twice).encode()).violations] == ["/players"]


def test_duplicate_keys_last_one_counts() -> None:
    raw = json.dumps(BASE).encode().replace(b'"ruleset": "standard"', b'"ruleset": "other", "ruleset": "standard"', 1)
    result = check(raw)
    assert not [v for v in result.violations if v.code == "SCHEMA"]


SMALL = random_record(12, deals=1)
SMALL_PATHS = paths_of(SMALL)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(SMALL_PATHS), json_values())
def test_fast_and_full_paths_agree_on_random_edits(path: tuple[Any, ...], value: Any) -> None:
    rec = set_path(SMALL, path, value)
    raw = json.dumps(rec).encode()
    assert (fast_decode(raw) is not None) == pydantic_accepts(rec)
    assert check(raw).report("s", None) == replay(parse(raw)[0]).report("s", None)


# --- issue 29: integers of any size, and duplicate keys, on both paths ------------------------

MARK = 987654321987


@pytest.mark.parametrize(
    ("path", "code"),
    [
        (("deals", 0, "bids", 1, "bid"), "BID_RANGE"),
        (("deals", 0, "number"), "SCHEMA"),
        (("format_version",), "SCHEMA"),
        (("final_score", "NS"), "FINAL_SCORE_MISMATCH"),
    ],
)
@pytest.mark.parametrize("digits", ["9" * 5000, "-" + "1" * 5000, "2" + "0" * 18, "1" + "0" * 30])
def test_a_huge_integer_is_a_number_on_both_paths(path: tuple[Any, ...], code: str, digits: str) -> None:
    raw = json.dumps(set_path(BASE, path, MARK)).encode().replace(str(MARK).encode(), digits.encode())
    value, error = parse(raw)
    assert error is None  # a number, never "not JSON"
    # The fast decoder never accepts what pydantic refuses; an integer too long for it is left to pydantic.
    fast = fast_decode(raw) is not None
    assert fast == pydantic_accepts(value) if len(digits) <= 19 else not fast or pydantic_accepts(value)
    result = check(raw)
    where = "/" + "/".join(map(str, path))
    assert code in [v.code for v in result.violations if where in (v.path, v.path + "/NS")]
    assert "JSON" not in [v.code for v in result.violations]
    assert result.report("s", 1) == replay(value).report("s", 1)


def duplicated(raw: bytes, key: bytes, first: bytes) -> bytes:
    """``raw`` with ``"key": first`` written before the first ``"key":`` (so the original value is the last)."""
    at = raw.index(b'"' + key + b'":')
    return raw[:at] + b'"' + key + b'": ' + first + b", " + raw[at:]


@pytest.mark.parametrize(
    ("key", "first"),
    [
        (b"game_id", b'"first-id"'),  # top level
        (b"N", b'"Zed"'),  # nested: players
        (b"dealer", b'"E"'),  # nested: the first deal
        (b"seat", b'"W"'),  # nested deeper: the first bid
    ],
)
def test_duplicate_keys_the_last_one_counts_on_both_paths(key: bytes, first: bytes) -> None:
    raw = json.dumps(BASE).encode()
    dup = duplicated(raw, key, first)
    assert dup != raw and dup.count(b'"' + key + b'":') == raw.count(b'"' + key + b'":') + 1
    fast, full = fast_decode(dup), GameRecord.model_validate(parse(dup)[0])
    assert fast is not None
    assert fast == fast_decode(raw) and full == GameRecord.model_validate(BASE)  # the value given last, both paths
    assert check(dup).report("s", 1) == check(raw).report("s", 1) == replay(parse(dup)[0]).report("s", 1)

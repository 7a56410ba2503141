"""Record format 2: the per-ruleset models, the version and option rules, and both decoders.

Both decoders must accept exactly the same format-2 records (the fast one is a
superset struct plus :func:`~backalley.records.models.v2_problems`, which the full path
runs too), and whichever path a record takes, the report is the full path's.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backalley.records.models import fast_decode_any
from backalley.records.sources import parse
from backalley.replay import replay
from backalley.rules import RULESETS, find_ruleset
from backalley.simulate import make_record, player_pool
from backalley.validate import check
from tests.helpers import drop, json_values, passed_out, paths_of, set_path, with_redeal

BAB = make_record("v2-bab", random.Random(3), player_pool(8), 0, rules=find_ruleset("bab-online"))


def small(rec: dict[str, Any]) -> dict[str, Any]:
    """The first deal of ``rec`` (and no final score): quick to check, every field still there."""
    out = {**rec, "deals": rec["deals"][:1]}
    out.pop("final_score", None)
    return out


SMALL = small(BAB)
#: One small record of each format-2 ruleset (and option kind): the fast path has a Struct per ruleset.
SMALLS = {
    "bab-online": SMALL,
    "pereulok": small(make_record("v2-pe", random.Random(4), player_pool(8), 0, rules=find_ruleset("pereulok"))),
    "pereulok+no_partnerships": small(
        make_record("v2-pn", random.Random(5), player_pool(8), 0, rules=find_ruleset("pereulok", ["no_partnerships"]))
    ),
    "standard+short_deck": small(
        make_record("v2-sd", random.Random(6), player_pool(8), 0, rules=find_ruleset("standard", ["short_deck"]))
    ),
    "bab-online redeal without hands": passed_out(SMALL),
}


def schema_paths(rec: Any) -> list[str]:
    return [v.path for v in replay(rec).violations if v.code == "SCHEMA"]


def full_accepts(rec: Any) -> bool:
    return not schema_paths(rec)


EDITS: list[tuple[str, Callable[[dict[str, Any]], dict[str, Any]], str | None]] = [
    ("as is", lambda r: r, None),
    ("plain standard as version 2", lambda r: {**r, "ruleset": "standard", "deals": []}, "/format_version"),
    ("options with bab-online", lambda r: {**r, "options": ["no_jokers"]}, "/options"),
    ("empty options", lambda r: {**r, "options": []}, "/options"),
    ("unknown ruleset", lambda r: {**r, "ruleset": "bridge"}, "/ruleset"),
    ("uppercase ruleset", lambda r: {**r, "ruleset": "BAB-online"}, "/ruleset"),
    ("version 1 naming bab-online", lambda r: {**r, "format_version": 1}, "/ruleset"),
    ("bore written 2B", lambda r: set_path(r, ("deals", 0, "bids", 0, "bid"), "2B"), "/deals/0/bids/0/bid"),
    ("bore written 0", lambda r: set_path(r, ("deals", 0, "bids", 0, "bid"), "0"), "/deals/0/bids/0/bid"),
    ("bore level 3", lambda r: set_path(r, ("deals", 0, "bids", 0, "bid"), "board3"), None),
    ("no trump card", lambda r: drop(r, ("deals", 0, "trump_card")), "/deals/0/trump_card"),
    ("a named trump", lambda r: set_path(r, ("deals", 0, "trump"), "S"), "/deals/0/trump"),
    ("deal 14", lambda r: set_path(r, ("deals", 0, "number"), 14), "/deals/0/number"),
    ("seat-keyed result", lambda r: set_path(r, ("deals", 0, "result", "tricks"), {"N": 1, "E": 1, "S": 1, "W": 1}),
     "/deals/0/result/tricks"),
    ("result keys reordered", lambda r: set_path(r, ("deals", 0, "result", "points"), {"EW": 0, "NS": 0}), None),
    ("final score of seats", lambda r: {**r, "final_score": {"N": 0, "E": 0, "S": 0, "W": 0}}, "/final_score"),
    ("final score mixed", lambda r: {**r, "final_score": {"NS": 0, "E": 0}}, "/final_score"),
    ("version true", lambda r: {**r, "format_version": True}, "/format_version"),
    ("no hands in a deal that was bid", lambda r: drop(r, ("deals", 0, "hands")), "/deals/0/hands"),
    ("hands null", lambda r: set_path(r, ("deals", 0, "hands"), None), "/deals/0/hands"),
    ("no hands, four passes", passed_out, None),
    ("no hands, three passes", lambda r: set_path(passed_out(r), ("deals", 0, "bids", 3, "bid"), 1), "/deals/0/hands"),
    ("no hands, a pass written 0", lambda r: set_path(passed_out(r), ("deals", 0, "bids", 3, "bid"), 0),
     "/deals/0/hands"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "edit", "path"), EDITS, ids=[name for name, _, _ in EDITS])
def test_v2_schema_rules_and_both_decoders(
    name: str, edit: Callable[[dict[str, Any]], dict[str, Any]], path: str | None
) -> None:
    rec = edit(json.loads(json.dumps(SMALL)))
    raw = json.dumps(rec).encode()
    paths = schema_paths(rec)
    assert (paths == []) if path is None else (path in paths), (name, paths)
    assert (fast_decode_any(raw) is not None) == (not paths), name
    assert check(raw).report("s", 1) == replay(parse(raw)[0]).report("s", 1)


#: Edits of the other rulesets' records, each the rule of one per-ruleset field or word.
RULESET_EDITS: list[tuple[str, str, Callable[[dict[str, Any]], dict[str, Any]], str | None]] = [
    ("pereulok", "as is", lambda r: r, None),
    ("pereulok", "a turned card", lambda r: set_path(r, ("deals", 0, "trump_card"), "2S"), "/deals/0/trump_card"),
    ("pereulok", "a joker swap", lambda r: set_path(r, ("deals", 0, "joker_swap"), {"seat": "N", "drawn": "2S"}),
     "/deals/0/joker_swap"),
    ("pereulok", "a board", lambda r: set_path(r, ("deals", 0, "bids", 1, "bid"), "board"), "/deals/0/bids/1/bid"),
    ("pereulok", "deal 3", lambda r: set_path(r, ("deals", 0, "number"), 3), "/deals/0/number"),
    ("pereulok", "no named trump", lambda r: drop(r, ("deals", 0, "trump")), None),
    ("pereulok", "options twice", lambda r: {**r, "options": ["no_jokers", "no_jokers"]}, "/options"),
    ("pereulok", "team result without partners", lambda r: {**r, "options": ["no_partnerships"]},
     "/deals/0/result/tricks"),
    ("pereulok+no_partnerships", "as is", lambda r: r, None),
    ("pereulok+no_partnerships", "seats in the final score", lambda r: {**r, "final_score": {"NS": 0, "EW": 0}},
     "/final_score"),
    ("standard+short_deck", "as is", lambda r: r, None),
    ("standard+short_deck", "a named trump", lambda r: set_path(r, ("deals", 0, "trump"), "S"), "/deals/0/trump"),
    ("standard+short_deck", "a bore", lambda r: set_path(r, ("deals", 0, "bids", 2, "bid"), "board2"),
     "/deals/0/bids/2/bid"),
    ("standard+short_deck", "deal 20 of 19", lambda r: set_path(r, ("deals", 0, "number"), 20), "/deals/0/number"),
    ("standard+short_deck", "deal 20 without the option", lambda r: {**set_path(r, ("deals", 0, "number"), 20),
     "options": ["no_jokers"]}, None),
    ("standard+short_deck", "no options", lambda r: drop(r, ("options",)), "/format_version"),
    ("standard+short_deck", "unknown option", lambda r: {**r, "options": ["jokers_wild"]}, "/options/0"),
    ("standard+short_deck", "named bab-online", lambda r: {**r, "ruleset": "bab-online"}, "/options"),
    ("pereulok", "no hands, four passes", passed_out, None),
    ("pereulok", "no hands in a deal that was bid", lambda r: drop(r, ("deals", 0, "hands")), "/deals/0/hands"),
    ("standard+short_deck", "no hands, four passes", passed_out, None),
    ("standard+short_deck", "no hands in a deal that was bid", lambda r: drop(r, ("deals", 0, "hands")),
     "/deals/0/hands"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("ruleset", "name", "edit", "path"), RULESET_EDITS, ids=[f"{r}: {n}" for r, n, _, _ in RULESET_EDITS]
)
def test_v2_each_rulesets_struct_and_both_decoders(
    ruleset: str, name: str, edit: Callable[[dict[str, Any]], dict[str, Any]], path: str | None
) -> None:
    rec = edit(json.loads(json.dumps(SMALLS[ruleset])))
    raw = json.dumps(rec).encode()
    paths = schema_paths(rec)
    assert (paths == []) if path is None else (path in paths), (name, paths)
    assert (fast_decode_any(raw) is not None) == (not paths), name
    assert check(raw).report("s", 1) == replay(parse(raw)[0]).report("s", 1)


def test_simulated_bab_online_record_takes_the_fast_path() -> None:
    raw = json.dumps(BAB).encode()
    assert fast_decode_any(raw) is not None
    r = check(raw)
    assert r.valid and r.complete


SMALL_PATHS = [(name, path) for name, rec in SMALLS.items() for path in paths_of(rec)]


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(SMALL_PATHS), json_values())
def test_v2_fast_and_full_paths_agree_on_random_edits(where: tuple[str, tuple[Any, ...]], value: Any) -> None:
    rec = set_path(SMALLS[where[0]], where[1], value)
    raw = json.dumps(rec).encode()
    assert (fast_decode_any(raw) is not None) == full_accepts(rec)
    assert check(raw).report("s", None) == replay(parse(raw)[0]).report("s", None)


def test_v2_ids_end_at_the_end_of_the_text_and_players_are_nfc() -> None:
    """The format-1 hardening holds for format 2: `$` is not "before a final newline", ids are NFC."""
    import json
    import unicodedata
    from pathlib import Path

    from backalley.records import models as record

    line = (Path(__file__).parent.parent / "data/sample/rulesets/valid-pereulok.jsonl").read_bytes().splitlines()[0]
    good = json.loads(line)
    assert record.fast_decode_any(line) is not None
    bad = dict(good, game_id=good["game_id"] + "\n")
    assert record.fast_decode_any(json.dumps(bad).encode()) is None
    nfd = dict(good, players=dict(good["players"], W=unicodedata.normalize("NFD", "Gábor")))
    rec = record.fast_decode_any(json.dumps(nfd, ensure_ascii=False).encode())
    assert rec is not None and unicodedata.normalize("NFC", "Gábor") == rec.players.W


@pytest.mark.parametrize("hands", [True, False], ids=["with hands", "without hands"])
def test_a_bab_online_redeal_may_leave_out_its_hands(hands: bool) -> None:
    """A redeal is checked for its number, dealer and bids, whether its hands are written or not."""
    rec = with_redeal(BAB, 4, hands)
    raw = json.dumps(rec).encode()
    assert fast_decode_any(raw) is not None
    r = check(raw)
    assert r.valid and r.complete, r.report("s", 1)
    assert check(raw).report("s", 1) == replay(parse(raw)[0]).report("s", 1)
    wrong_dealer = set_path(rec, ("deals", 4, "dealer"), "ESWN"["NESW".index(rec["deals"][4]["dealer"])])
    codes = {v.code for v in replay(wrong_dealer).violations}
    assert "DEALER" in codes and "HAND_SIZE" not in codes, codes


def test_each_ruleset_struct_has_the_fields_of_its_model() -> None:
    """The per-ruleset Structs (built from the registry) hold the fields of the pydantic models (the JSON
    Schema): the same deal fields, the same of them required, the bid words the ruleset's ``bid_words``."""
    import typing

    import msgspec

    from backalley.records import fast
    from backalley.records.models import MODELS_V2

    assert set(fast.NARROW) == set(MODELS_V2) == set(RULESETS)
    for name, (record, deal) in fast.NARROW.items():
        model = MODELS_V2[name]
        (deal_model,) = typing.get_args(model.model_fields["deals"].annotation)
        fields = [f for f in msgspec.structs.fields(deal) if f.type is not msgspec.UnsetType]
        assert {f.name for f in fields} == set(deal_model.model_fields), name
        assert {f.name for f in fields if f.required} == {
            n for n, f in deal_model.model_fields.items() if f.is_required()
        }, name
        assert find_ruleset(name).bid_words == fast._SHAPES[name].words, name
        options = {f.name: f for f in msgspec.structs.fields(record)}["options"]
        assert (options.type is not msgspec.UnsetType) is ("options" in model.model_fields), name

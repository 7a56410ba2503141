"""Row building (backalley.store.rows): the fast path and the full path give the same rows.

A record the msgspec decoder accepts is replayed from its Structs straight away;
anything else is parsed, checked by pydantic and replayed, and, when it fits the
schema, converted with ``to_fast`` and built by the same row builder.  Both
routes must give identical row data for every record.
"""

from __future__ import annotations

import copy
import gzip
import importlib
import json
import pickle
import random
from array import array
from pathlib import Path
from typing import Any

import duckdb
import pytest
from msgspec import UNSET

from backalley.cards import CARD_NAMES, SEATS
from backalley.records.models import (
    FastSheetDeal,
    FastSheetRecord,
    FastTeamInts,
    fast_decode,
    fast_decode_any,
    to_fast_any,
)
from backalley.records.sources import parse
from backalley.replay import DealOutcome, replay, replay_checked, ruleset_of
from backalley.rules import RULESETS, Ruleset
from backalley.store import rows
from backalley.store.ingest import ingest
from backalley.store.rows import Built, build, build_game, build_schema_invalid, content_hash

ROOT = Path(__file__).resolve().parent.parent
REPLAY = importlib.import_module("backalley.replay")
SAMPLE = ROOT / "data" / "sample"


def slow_build(raw: bytes) -> Built | None:
    """Rows by the full route (parse, pydantic, replay, ``to_fast``); ``None`` for a reject."""
    value, error = parse(raw)
    if error is not None or not isinstance(value, dict) or not isinstance(value.get("game_id"), str):
        return None
    r = replay(value)
    sha = content_hash(raw)
    if any(v.code == "SCHEMA" and v.path == "/game_id" for v in r.violations):
        return None
    if any(v.code == "SCHEMA" for v in r.violations):
        return build_schema_invalid(value, r, sha)
    return build_game(to_fast_any(value), r, sha)


def sample_lines() -> list[bytes]:
    """Every committed sample, those of the other rulesets (format 2) included."""
    lines = [line for p in sorted(SAMPLE.rglob("*.jsonl")) for line in p.read_bytes().splitlines() if line.strip()]
    return [*lines, (SAMPLE / "worked-example.json").read_bytes()]


def variants() -> list[bytes]:
    """Faulty and odd variants of a valid record: every row builder branch."""
    base = json.loads(next(line for line in (SAMPLE / "valid-games.jsonl").read_bytes().splitlines() if line))
    out: list[dict[str, Any]] = []

    def variant(**changes: Any) -> dict[str, Any]:
        rec = copy.deepcopy(base)
        rec["game_id"] = f"variant-{len(out)}"
        for path, value in changes.items():
            node: Any = rec
            keys = [int(k) if k.isdigit() else k for k in path.split("__")]
            for k in keys[:-1]:
                node = node[k]
            if value is None:
                del node[keys[-1]]
            else:
                node[keys[-1]] = value
        out.append(rec)
        return rec

    variant(deals__0__bids__0__bid=2**63)  # a number beyond BIGINT: NULL value, still a number bid
    variant(deals__0__bids__1__bid=2**64 + 5)  # beyond msgspec's ints: the full path
    variant(deals__0__bids__1__bid=-(2**63))
    variant(deals__1__result__points__NS=2**63)
    variant(deals__1__result=None, final_score=None, played_at=None, event=None)
    variant(final_score={"NS": 2**40, "EW": -(2**40)})
    variant(deals__0__bids__0__bid="board", deals__0__bids__2__bid="board")
    variant(deals__2__tricks=[])  # PASS_OUT
    variant(deals__0__tricks__0__cards=["BJ", "LJ", "2S", "3S"])
    variant(deals__0__number=0)  # schema error: games row only
    variant(players={"N": "a", "E": "a", "S": "b", "W": "c"})  # pydantic-only check
    variant(played_at="2026-02-30T10:00:00Z")  # pydantic-only check
    variant(deals=[])
    for rec in out[:]:
        rec2 = copy.deepcopy(rec)
        rec2["game_id"] += "-pretty"
        out.append(rec2)
    raws = [json.dumps(r).encode() for r in out[: len(out) // 2]]
    raws += [json.dumps(r, indent=1).encode() for r in out[len(out) // 2 :]]
    return raws


@pytest.mark.skipif(not SAMPLE.is_dir(), reason="no committed sample data")
@pytest.mark.parametrize("raw", [*sample_lines(), *variants()], ids=lambda r: str(content_hash(r))[:10])
def test_fast_and_full_path_build_the_same_rows(raw: bytes) -> None:
    built = build(raw)
    expected = slow_build(raw)
    if expected is None:
        assert built.reject is not None
        return
    assert built.reject is None
    assert built == expected


@pytest.mark.skipif(not SAMPLE.is_dir(), reason="no committed sample data")
def test_the_fast_path_is_taken_for_the_valid_samples() -> None:
    lines = [line for line in (SAMPLE / "valid-games.jsonl").read_bytes().splitlines() if line.strip()]
    assert lines and all(fast_decode(line) is not None for line in lines)
    assert all(build(line).valid and build(line).cards for line in lines)


@pytest.mark.skipif(not SAMPLE.is_dir(), reason="no committed sample data")
def test_format_2_samples_take_the_fast_path_and_are_stored() -> None:
    lines = [line for p in sorted((SAMPLE / "rulesets").glob("valid-*")) for line in p.read_bytes().splitlines()]
    assert lines and all(fast_decode_any(line) is not None for line in lines)
    for line in lines:
        b = build(line)
        assert b.reject is None and b.valid and b.cards and b.sides
        assert len(b.game_sides) == b.nsides and b.rules.split("+")[0] in ("standard", "pereulok", "bab-online")


@pytest.mark.skipif(not SAMPLE.is_dir(), reason="no committed sample data")
def test_numbers_beyond_bigint_are_stored_as_null(tmp_path: Path) -> None:
    src = tmp_path / "v.jsonl"
    src.write_bytes(b"\n".join(variants()) + b"\n")
    db = tmp_path / "v.duckdb"
    ingest([str(src)], db)
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute(
            "SELECT kind, value FROM bids WHERE game_id = 'variant-0' AND deal = 1 AND position = 1"
        ).fetchall()
        assert rows == [("number", None)]
        points = con.execute("SELECT recorded_points_ns FROM deals WHERE game_id = 'variant-3' AND deal = 2").fetchall()
        assert points == [(None,)]
        low = con.execute("SELECT value FROM bids WHERE game_id = 'variant-2' AND deal = 1 AND position = 2").fetchall()
        assert low == [(-(2**63),)]
    finally:
        con.close()


def plain_pack(values: list[int | None]) -> tuple[bytes, bytes]:
    """The packing every row builder must match: int64s (NULL and out of BIGINT as 0), a null mask or b""."""
    kept = [v if v is not None and -(2**63) <= v < 2**63 else None for v in values]
    data = array("q", [0 if v is None else v for v in kept]).tobytes()
    return data, bytes([v is None for v in kept]) if None in kept else b""


def random_values(rng: random.Random, n: int, nulls: float) -> list[int | None]:
    pool: list[int | None] = [0, 1, 13, -20, True, False, 2**62, -(2**63), 2**63, -(2**63) - 1, 2**80]
    return [None if rng.random() < nulls else rng.choice(pool[:7] if rng.random() < 0.9 else pool) for _ in range(n)]


def test_packing_equals_a_plain_int64_pack() -> None:
    rng = random.Random(12)
    for _ in range(300):
        values = random_values(rng, rng.randrange(0, 60), rng.choice([0.0, 0.05, 0.5, 1.0]))
        assert rows._pack(list(values)) == plain_pack(values), values


def test_bids_packed_deal_by_deal_equal_one_pack_of_the_game() -> None:
    """build_game packs each deal's bids apart (memoised by bidding) and joins them: as one pack of all."""
    rng = random.Random(7)
    for _ in range(300):
        deals = [random_values(rng, 28, rng.choice([0.0, 0.0, 0.3])) for _ in range(rng.randrange(1, 6))]
        joined = rows._joined([rows._part(list(d)) for d in deals])
        assert joined == plain_pack([v for d in deals for v in d]), deals


def test_a_worker_takes_the_content_hash_it_is_given_and_ingest_stores_each_inputs_own(tmp_path: Path) -> None:
    """The ingest hashes each input once (to find content already stored) and hands that hash to the worker
    with the input; without one the worker computes it.  Stored hashes are the inputs' SHA-256 either way."""
    from backalley.records.sources import Item
    from tests.service_games import line, record

    raws = [line(record(f"h-{k}", seed=k)).encode() for k in range(3)]
    item = Item("in.jsonl", 1, raws[0])
    assert rows.build_item(item).sha == content_hash(raws[0])
    assert rows.build_item(item, "given").sha == "given" and rows.build_item(item, "given").game_id == "h-0"
    src = tmp_path / "in.jsonl"
    src.write_bytes(b"\n".join(raws) + b"\n")
    for workers in (1, 2):
        db = tmp_path / f"w{workers}.duckdb"
        ingest([str(src)], db, workers=workers)
        with duckdb.connect(str(db), read_only=True) as con:
            got = dict(con.execute("SELECT game_id, content_hash FROM games").fetchall())
        assert got == {f"h-{k}": content_hash(raw) for k, raw in enumerate(raws)}


def test_a_redeal_without_hands_is_stored_as_one_with_them() -> None:
    """A passed-out deal may leave out its hands (format 2): the same rows as with them, both paths."""
    from backalley.rules import find_ruleset
    from backalley.simulate import make_record, player_pool
    from tests.helpers import with_redeal

    rec = make_record("redeal", random.Random(7), player_pool(8), 0, rules=find_ruleset("bab-online"))
    raws = [json.dumps(with_redeal(rec, 3, hands)).encode() for hands in (True, False)]
    with_hands, without = (build(raw) for raw in raws)
    assert without.reject is None and without.valid and without == slow_build(raws[1])
    assert (without.game, without.deals, without.sides, without.bids, without.cards) == (
        with_hands.game, with_hands.deals, with_hands.sides, with_hands.bids, with_hands.cards,
    )  # fmt: skip


def golden_inputs() -> list[bytes]:
    """The golden generated set (every ruleset, faults of every kind, JSON and schema errors) and the samples."""
    generated = gzip.decompress((ROOT / "tests" / "golden" / "generated.jsonl.gz").read_bytes()).splitlines()
    sheets = (SAMPLE / "sheets" / "sheets.jsonl").read_bytes().splitlines()
    return [raw for raw in [*generated, *sample_lines(), *sheets, *variants()] if raw.strip()]


def read_from_record(rules: Ruleset, d: Any) -> tuple[Any, ...]:
    """What the rows keep of a dealing's own fields, read plainly from the record (the reference for the
    fields the replay notes as it reads them: :meth:`backalley.replay.DealOutcome.opened`)."""
    sheet = isinstance(d, FastSheetDeal)
    swap = UNSET if sheet else d.joker_swap
    tc = UNSET if sheet else d.trump_card
    res = d.result
    recorded: tuple[Any, ...] = ((), ())
    if res is not UNSET:
        recorded = tuple(
            (v.NS, v.EW) if isinstance(v, FastTeamInts) else tuple(v[s] for s in rules.sides)
            for v in (res.tricks, res.points)
        )
    return (
        d.number,
        rules.hand_size(d.number),
        SEATS.index(d.dealer),
        -1 if tc is UNSET else CARD_NAMES.index(tc),
        -1 if swap is UNSET else SEATS.index(swap.seat),
        -1 if swap is UNSET else CARD_NAMES.index(swap.drawn),
        tuple(b.seat for b in d.bids),
        tuple(b.bid for b in d.bids),
        *recorded,
    )


def noted(o: DealOutcome) -> tuple[Any, ...]:
    return (
        o.number, o.hand_size, o.dealer, o.trump_card, o.swap_seat, o.swap_drawn,
        o.bid_seats, o.bid_values, o.recorded_tricks, o.recorded_points,
    )  # fmt: skip


@pytest.mark.skipif(not SAMPLE.is_dir(), reason="no committed sample data")
def test_the_fields_the_replay_notes_are_the_records_own() -> None:
    """The row builder reads a dealing's number, dealer, trump card, swap, bids and recorded result from
    its replay's outcome, not from the record: the replay notes exactly what the record says."""
    seen: set[str] = set()
    deals = swaps = sheets = 0
    for raw in golden_inputs():
        rec = fast_decode_any(raw)
        if rec is None:
            continue
        rules = ruleset_of(rec)
        seen.add(rules.name)
        r = replay_checked(rec)
        for d, o in zip(rec.deals, r.deals, strict=True):
            assert noted(o) == read_from_record(rules, d), (rec.game_id, d.number)
            deals += 1
            swaps += o.swap_seat >= 0
            sheets += isinstance(d, FastSheetDeal)
    assert seen == set(RULESETS) and deals > 1000 and swaps > 10 and sheets > 10


@pytest.mark.skipif(not SAMPLE.is_dir(), reason="no committed sample data")
def test_rows_are_the_same_from_the_c_replay_and_the_python_replay(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every input (valid, faulty, schema-invalid, not JSON) gives the same rows whether the regular tricks and
    cards ran in C or the Python replay did everything (the pure-Python install)."""
    if REPLAY._fastplay is None:
        pytest.skip("the C trick loop is not built (pure-Python install)")
    inputs = golden_inputs()
    fast = [build(raw) for raw in inputs]
    monkeypatch.setattr(REPLAY, "_fastplay", None)
    monkeypatch.setattr(rows, "_fastplay", None)
    slow = [build(raw) for raw in inputs]
    assert {b.reject for b in fast} >= {None, "json", "no_game_id"} and any(b.game and not b.deals for b in fast)
    for i, (a, b) in enumerate(zip(fast, slow, strict=True)):
        assert a == b, f"input {i + 1}"


def replayed_games() -> list[tuple[Any, Any]]:
    """Every golden input that decodes as Structs, with its replay."""
    recs = [rec for raw in golden_inputs() if (rec := fast_decode_any(raw)) is not None]
    return [(rec, replay_checked(rec)) for rec in recs]


@pytest.mark.skipif(not SAMPLE.is_dir(), reason="no committed sample data")
def test_the_c_row_builder_writes_the_python_row_builders_bytes() -> None:
    """``_fastplay.rows`` (the deal and side rows from each bidding's template) gives byte for byte the
    packed columns the Python row builder gives field by field, on every golden game of cards: every
    ruleset and option set, faults, pass-outs, numbers beyond BIGINT."""
    if rows._fastplay is None:
        pytest.skip("the C row builder is not built (pure-Python install)")
    seen: set[str] = set()
    fast_games = sides4 = nulls = 0
    for rec, r in replayed_games():
        rules = ruleset_of(rec)
        python = rows._python_rows(rules, rec.deals, r.deals)
        if isinstance(rec, FastSheetRecord):
            continue
        fast = rows._fast_rows(rules, rec.deals, r.deals)
        assert fast is not None, rec.game_id
        assert fast == python, rec.game_id
        seen.add(rules.label())
        fast_games += 1
        sides4 += len(rules.sides) == 4
        nulls += bool(python[3])
    assert {label.split("+")[0] for label in seen} == set(RULESETS) and len(seen) >= 6
    assert fast_games > 100 and sides4 > 0 and nulls > 0


@pytest.mark.skipif(not SAMPLE.is_dir(), reason="no committed sample data")
def test_the_c_row_builder_leaves_what_it_cannot_write_to_the_python_builder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A side's trick count beyond its template's mask of made contracts, or a value that is not an int, and
    ``_fastplay.rows`` gives up (``None``): build_game then writes the Python builder's rows.  A recorded
    figure beyond BIGINT or missing is NULL both ways."""
    if rows._fastplay is None:
        pytest.skip("the C row builder is not built (pure-Python install)")
    rec, r = next((rec, r) for rec, r in replayed_games() if r.valid and not isinstance(rec, FastSheetRecord))
    rules = ruleset_of(rec)
    played = next(o for o in r.deals if not o.pass_out)
    played.recorded_points = (2**63, None)
    assert rows._fast_rows(rules, rec.deals, r.deals) == rows._python_rows(rules, rec.deals, r.deals)
    for odd in ((70, 0), ("7", 0), (5,)):
        played.tricks = odd
        assert rows._fast_rows(rules, rec.deals, r.deals) is None, odd
    played.tricks = (70, 0)
    fast = build_game(rec, r, "")
    monkeypatch.setattr(rows, "_fastplay", None)
    assert fast == build_game(rec, r, "") and fast.sides


@pytest.mark.skipif(not SAMPLE.is_dir(), reason="no committed sample data")
def test_built_rows_and_inputs_come_back_whole_through_pickle() -> None:
    """What a worker gets and sends back (inputs, and rows with the raw text compressed) pickles to equal
    objects, every field kept: also ``raw_zstd``, which equality leaves out."""
    from dataclasses import astuple

    from backalley.records.sources import Item

    items = [Item("in.jsonl", k, raw) for k, raw in enumerate(golden_inputs(), 1)]
    items += [Item("bad.jsonl", None, b"{", read_error="not JSON"), Item("t.csv", 3, b"a,b", csv=True)]
    built = [rows.build_item(item) for item in items]
    assert any(b.raw_zstd for b in built) and any(b.violations for b in built) and any(b.reject for b in built)
    back = pickle.loads(pickle.dumps((items, built), protocol=pickle.HIGHEST_PROTOCOL))
    assert [astuple(x) for x in back[0]] == [astuple(x) for x in items]
    assert [astuple(b) for b in back[1]] == [astuple(b) for b in built]

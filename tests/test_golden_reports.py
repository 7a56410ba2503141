"""``validate --json`` writes, byte for byte, the reports the replay wrote before it was made faster.

``tests/golden/reports.jsonl.gz`` holds the reports written by the replay as it
was before the speed work of issue 16 (``tests/golden/make_golden.py``), for
every committed sample and for ``tests/golden/generated.jsonl.gz``: simulated
games of every ruleset and option set with injected faults, and random edits
of them (swapped cards, leaders, bids, results, scores, hands).
"""

from __future__ import annotations

import copy
import gzip
import importlib
import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backalley.cards import CARD_NAMES
from backalley.records.models import fast_decode_any
from backalley.records.sources import expand, parse
from backalley.replay import schema_violations
from backalley.validate import check, validate_files

REPLAY = importlib.import_module("backalley.replay")
#: The replay with its optional C trick loop (when built) and without it (pure Python).
PATHS = ["c-loop", "python-loop"]

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "golden"
SAMPLES = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "data" / "sample").rglob("*") if p.is_file())


def reports(path: str, workers: int = 1) -> bytes:
    """``backalley validate --json PATH``'s output: the path the command runs."""
    return b"".join(piece.output for piece in validate_files(expand([path]), workers, json_report=True))


def golden_chunks() -> list[bytes]:
    """The golden file split by input: the samples in order, then the generated set."""
    lines = gzip.decompress((GOLDEN / "reports.jsonl.gz").read_bytes()).splitlines(keepends=True)
    return lines


def use_path(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if path == "python-loop":
        monkeypatch.setattr(REPLAY, "_fastplay", None)
    elif REPLAY._fastplay is None:
        pytest.skip("the C trick loop is not built (pure-Python install)")


@pytest.mark.parametrize("path", PATHS)
def test_samples_and_generated_reports_are_unchanged(
    path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_path(path, monkeypatch)
    monkeypatch.chdir(ROOT)
    got = [reports(p) for p in SAMPLES]
    (tmp_path / "generated.jsonl").write_bytes(gzip.decompress((GOLDEN / "generated.jsonl.gz").read_bytes()))
    monkeypatch.chdir(tmp_path)
    got.append(reports("generated.jsonl"))
    want = golden_chunks()
    lines = b"".join(got).splitlines(keepends=True)
    assert len(lines) == len(want)
    for i, (a, b) in enumerate(zip(lines, want, strict=True)):
        assert a == b, f"report line {i + 1} differs"


def test_generated_set_covers_every_ruleset_and_many_codes() -> None:
    text = gzip.decompress((GOLDEN / "reports.jsonl.gz").read_bytes())
    codes = {v["code"] for line in text.splitlines() for v in json.loads(line)["violations"]}
    assert {"NOT_IN_HAND", "REVOKE", "LEADER", "BIG_BLOOPER", "LOWEST_TRUMP", "BORE_LEVEL", "JSON", "SCHEMA"} <= codes
    inputs = gzip.decompress((GOLDEN / "generated.jsonl.gz").read_bytes())
    for name in (b'"pereulok"', b'"bab-online"', b'"no_partnerships"', b'"short_deck"'):
        assert name in inputs


def test_c_loop_and_python_loop_give_the_same_replay(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every field the store reads (winners, leaders, cards, trump broken), not only the report."""
    if REPLAY._fastplay is None:
        pytest.skip("the C trick loop is not built (pure-Python install)")
    inputs = gzip.decompress((GOLDEN / "generated.jsonl.gz").read_bytes()).splitlines()
    fast = [check(raw) for raw in inputs]
    monkeypatch.setattr(REPLAY, "_fastplay", None)
    slow = [check(raw) for raw in inputs]
    assert sum(len(d.cards) for r in fast for d in r.deals) > 10_000
    for i, (a, b) in enumerate(zip(fast, slow, strict=True)):
        assert a == b, f"generated record {i + 1}"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(CARD_NAMES), max_size=60))
def test_c_mask_and_python_mask_agree(names: list[str]) -> None:
    """``_fastplay.mask`` (bound at import, so the loop switch above does not reach it) equals ``_mask_py``."""
    if REPLAY._fastplay is None:
        pytest.skip("the C extension is not built (pure-Python install)")
    want = REPLAY._mask_py(names)
    assert REPLAY._fastplay.mask(names, REPLAY._NAMES) == want
    assert (want == -1) == (len(set(names)) < len(names))


def deal_reference(
    hands: list[list[Any]], stock: list[Any] | None, trump_card: Any, n: int, deck: int
) -> tuple[int, ...] | None:
    """What ``_fastplay.deal`` answers, written plainly: the cards as ints when none is in doubt."""
    index = {name: i for i, name in enumerate(CARD_NAMES)}
    seen, masks = 0, []
    for held in hands:
        if len(held) != n:
            return None
        m = 0
        for name in held:
            if name not in index or (seen | m) >> index[name] & 1 or not deck >> index[name] & 1:
                return None
            m |= 1 << index[name]
        masks.append(m)
        seen |= m
    tc = -1
    if trump_card is not None:
        if trump_card not in index or seen >> index[trump_card] & 1 or not deck >> index[trump_card] & 1:
            return None
        tc = index[trump_card]
        seen |= 1 << tc
    top, size = [-1, -1], -1
    if stock is not None:
        size = len(stock)
        for i, name in enumerate(stock):
            if name not in index or not deck >> index[name] & 1:
                return None
            c = index[name]
            if i < 2:
                top[i] = c
            if i == 0 and c == tc:
                continue
            if seen >> c & 1:
                return None
            seen |= 1 << c
    return (*masks, tc, top[0], top[1], size)


@settings(max_examples=500, deadline=None)
@given(
    st.permutations(CARD_NAMES),
    st.integers(0, 13),
    st.integers(-1, 14),
    st.sampled_from(["none", "first", "top", "other"]),
    st.sampled_from([(1 << 54) - 1, (1 << 52) - 1, (1 << 54) - 1 - (1 << 0) - (1 << 13)]),
    st.sampled_from(["no", "repeat", "size", "name", "int"]),
    st.integers(0, 60),
)
def test_c_deal_set_up_agrees_with_its_reference(
    cards: list[str], n: int, stock_size: int, trump: str, deck: int, fault: str, at: int
) -> None:
    """``_fastplay.deal`` (the regular deal's cards in C) equals the plain reading, on regular deals and faulty ones."""
    if REPLAY._fastplay is None:
        pytest.skip("the C extension is not built (pure-Python install)")
    hands: list[list[Any]] = [list(cards[k * n : (k + 1) * n]) for k in range(4)]
    rest = cards[4 * n :]
    stock: list[Any] | None = None if stock_size < 0 else list(rest[1 : 1 + stock_size])
    trump_card = {"none": None, "first": rest[0], "top": rest[1] if len(rest) > 1 else None, "other": cards[0]}[trump]
    if trump == "first" and stock is not None:
        stock.insert(0, rest[0])  # the turned card on top of the stock
    flat = [h for h in hands if h]
    if fault != "no" and flat:
        held = flat[at % len(flat)]
        k = at % len(held)
        held[k] = {"repeat": cards[(at + 1) % 54], "name": "1S", "int": 7}.get(fault, held[k])
        if fault == "size":
            held.pop()
    want = deal_reference(hands, stock, trump_card, n, deck)
    assert REPLAY._fastplay.deal(*hands, stock, trump_card, n, deck, REPLAY._NAMES) == want


def test_the_c_deal_set_up_takes_every_deal_of_a_valid_game() -> None:
    """Valid games of every ruleset and option set never leave the C set-up for the checked one."""
    if REPLAY._fastplay is None:
        pytest.skip("the C extension is not built (pure-Python install)")
    inputs = gzip.decompress((GOLDEN / "generated.jsonl.gz").read_bytes()).splitlines()
    valid = [rec for rec in map(fast_decode_any, inputs) if rec is not None and REPLAY.replay_checked(rec).valid]
    assert len({(rec.ruleset, REPLAY.record_options(rec)) for rec in valid}) >= 20
    for rec in valid:
        rules = REPLAY.ruleset_of(rec)
        for d in rec.deals:
            assert REPLAY._regular_cards(rules, d, rules.hand_size(d.number)) is not None, (rec.game_id, d.number)


class PlainTrick:
    """A trick that is not a msgspec Struct: the C loop reads its fields by attribute, not by slot."""

    def __init__(self, leader: str, cards: list[str]) -> None:
        self.leader = leader
        self.cards = cards


def test_c_loop_reads_tricks_of_any_type_alike() -> None:
    inputs = gzip.decompress((GOLDEN / "generated.jsonl.gz").read_bytes()).splitlines()[:60]
    recs = [r for r in map(fast_decode_any, inputs) if r is not None]
    assert len(recs) > 20
    for rec in recs:
        want = REPLAY.replay_checked(rec)
        for d in rec.deals:
            d.tricks = [PlainTrick(t.leader, t.cards) for t in d.tricks]
        assert REPLAY.replay_checked(rec) == want, rec.game_id


def test_replays_survive_pickle_and_copy() -> None:
    """Worker processes send replays back by pickle: every deal's outcome arrives whole (compiled or not)."""
    import pickle

    inputs = gzip.decompress((GOLDEN / "generated.jsonl.gz").read_bytes()).splitlines()
    replays = [check(raw) for raw in inputs[:200]]
    assert sum(len(r.deals) for r in replays) > 100
    for r in replays:
        assert pickle.loads(pickle.dumps(r)) == r
        for d in r.deals:
            assert copy.copy(d) == d


@pytest.mark.parametrize(("source", "line"), [("a.jsonl", 3), ('dir/"quoted" ünï\\code.json', None), ("", 0)])
def test_report_bytes_equal_the_report_dict(source: str, line: int | None) -> None:
    """The report written without dicts (records without violations) is the dict's serialisation, byte for byte."""
    from backalley.validate import report_bytes, report_json

    inputs = gzip.decompress((GOLDEN / "generated.jsonl.gz").read_bytes()).splitlines()
    replays = [check(raw) for raw in inputs]
    assert sum(not r.violations for r in replays) > 20
    for r in replays:
        assert report_bytes(r, source, line) == report_json(r.report(source, line))


#: Edits at the format's edges, for the decoders: (path from a deal, value); ``...`` deletes.
FORMAT_EDITS: list[tuple[tuple[str | int, ...], Any]] = [
    (("number",), 14),
    (("number",), 26),
    (("number",), 0),
    (("trump",), "S"),
    (("trump",), "X"),
    (("trump_card",), ...),
    (("trump_card",), "1S"),
    (("joker_swap",), {"seat": "N", "drawn": "AS"}),
    (("joker_swap",), None),
    (("bids", 0, "bid"), "board2"),
    (("bids", 0, "bid"), "board5"),
    (("bids", 0, "bid"), 2.0),
    (("bids", 0, "bid"), True),
    (("result", "tricks"), {"N": 1, "E": 1, "S": 1, "W": 1}),
    (("result", "points"), {"NS": 1}),
    (("result",), None),
    (("stock",), []),
    (("stock",), ["AS", "ZZ"]),
    (("hands", "N"), "AS"),
    (("tricks", 0, "cards"), ["AS", "KS", "QS"]),
    (("tricks", 0, "leader"), "X"),
    (("extra",), 1),
]


def edited(rec: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    rec = copy.deepcopy(rec)
    if rng.random() < 0.2:
        key = rng.choice(["options", "played_at", "event", "final_score", "format_version", "players"])
        value = rng.choice([None, [], ["short_deck", "short_deck"], "2026-02-30T10:00:00Z", 2, {"NS": 1}, "x" * 129])
        rec[key] = value
        return rec
    deals = rec.get("deals")
    if not isinstance(deals, list) or not deals or not isinstance(deals[0], dict):
        return rec
    path, value = rng.choice(FORMAT_EDITS)
    target: Any = rng.choice(deals)
    for part in path[:-1]:
        try:
            target = target[part]
        except (KeyError, IndexError, TypeError):
            return rec
    if isinstance(target, dict):
        if value is ...:
            target.pop(path[-1], None)
        else:
            target[path[-1]] = value
    elif isinstance(target, list) and isinstance(path[-1], int) and path[-1] < len(target):
        target[path[-1]] = value
    return rec


def test_both_decoders_accept_the_same_generated_records() -> None:
    """The fast decoder accepts a record exactly when pydantic (with the format-2 rules) does."""
    inputs = gzip.decompress((GOLDEN / "generated.jsonl.gz").read_bytes()).splitlines()
    rng = random.Random(16)
    records = [json.loads(raw) for raw in inputs if raw.startswith(b"{") and json_ok(raw)]
    cases = [json.dumps(r).encode() for r in records]
    cases += [json.dumps(edited(r, rng)).encode() for r in records for _ in range(2)]
    accepted = 0
    for raw in cases:
        value, error = parse(raw)
        by_pydantic = error is None and isinstance(value, dict) and not schema_violations(value)
        fast = fast_decode_any(raw) is not None
        assert fast == by_pydantic, raw[:300]
        accepted += fast
    assert 0.2 * len(cases) < accepted < 0.9 * len(cases)


def json_ok(raw: bytes) -> bool:
    try:
        json.loads(raw)
    except ValueError:
        return False
    return True

"""``validate --json`` writes, byte for byte, the reports the replay wrote before it was made faster.

``tests/golden/reports.jsonl.gz`` holds the reports written by the replay as it
was before the speed work of issue 16 (``tests/golden/make_golden.py``), for
every committed sample and for ``tests/golden/generated.jsonl.gz``: simulated
games of every ruleset and option set with injected faults, and random edits
of them (swapped cards, leaders, bids, results, scores, hands).
"""

from __future__ import annotations

import gzip
import importlib
from pathlib import Path

import pytest

from backalley.sources import read
from backalley.validate import check, check_items

REPLAY = importlib.import_module("backalley.replay")
#: The replay with its optional C trick loop (when built) and without it (pure Python).
PATHS = ["c-loop", "python-loop"]

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "golden"
SAMPLES = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "data" / "sample").rglob("*") if p.is_file())


def reports(path: str, workers: int = 1) -> bytes:
    return b"".join(c.report + b"\n" for _, c in check_items(read([path]), workers, json_report=True) if c.report)


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
    import json

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


@pytest.mark.parametrize(("source", "line"), [("a.jsonl", 3), ('dir/"quoted" ünï\\code.json', None), ("", 0)])
def test_report_bytes_equal_the_report_dict(source: str, line: int | None) -> None:
    """The report written without dicts (records without violations) is the dict's serialisation, byte for byte."""
    from backalley.validate import report_bytes, report_json

    inputs = gzip.decompress((GOLDEN / "generated.jsonl.gz").read_bytes()).splitlines()
    replays = [check(raw) for raw in inputs]
    assert sum(not r.violations for r in replays) > 20
    for r in replays:
        assert report_bytes(r, source, line) == report_json(r.report(source, line))

"""``validate --json`` writes, byte for byte, the reports the replay wrote before it was made faster.

``tests/golden/reports.jsonl.gz`` holds the reports written by the replay as it
was before the speed work of issue 16 (``tests/golden/make_golden.py``), for
every committed sample and for ``tests/golden/generated.jsonl.gz``: simulated
games of every ruleset and option set with injected faults, and random edits
of them (swapped cards, leaders, bids, results, scores, hands).
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from backalley.sources import read
from backalley.validate import check_items

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "golden"
SAMPLES = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "data" / "sample").rglob("*") if p.is_file())


def reports(path: str, workers: int = 1) -> bytes:
    return b"".join(c.report + b"\n" for _, c in check_items(read([path]), workers, json_report=True) if c.report)


def golden_chunks() -> list[bytes]:
    """The golden file split by input: the samples in order, then the generated set."""
    lines = gzip.decompress((GOLDEN / "reports.jsonl.gz").read_bytes()).splitlines(keepends=True)
    return lines


def test_samples_and_generated_reports_are_unchanged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
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

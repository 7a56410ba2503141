"""``benchmarks/ingest_timeline.py``: an ingest's run cut into its start, steady part and tail (no timing here)."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def timeline() -> object:
    spec = importlib.util.spec_from_file_location("ingest_timeline", ROOT / "benchmarks" / "ingest_timeline.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MS = 1_000_000  # ns


def test_the_parts_are_cut_where_the_workers_start_and_stop() -> None:
    """The command (pid 1) alone in bins 0-2 and 8-9, its two workers (2, 3) in bins 3-7, the forkserver (4)
    a little in bin 1: start 0.3 s, steady 0.5 s, tail the rest of the wall, each with the CPU in it."""
    tl = timeline()
    bins: dict[int, dict[tuple[int, int], int]] = {}
    for b in range(10):
        into = bins.setdefault(b, {})
        into[(1, 1)] = 90 * MS if b < 3 or b > 7 else 20 * MS
        if 3 <= b <= 7:
            into[(2, 2)] = into[(3, 3)] = 80 * MS
            into[(1, 7)] = 10 * MS  # another thread of the command (DuckDB's)
    bins[1][(4, 4)] = 30 * MS
    parts = tl.phases(1, 1.05, bins)  # type: ignore[attr-defined]
    names = [p[0] for p in parts]
    walls = [round(p[1], 6) for p in parts]
    cpus = [round(p[2], 6) for p in parts]
    assert names == ["start", "steady", "tail"]
    assert walls == [0.3, 0.5, 0.25]
    assert cpus == [0.3, 5 * 0.19, 0.18]


def test_no_worker_means_all_is_start() -> None:
    tl = timeline()
    bins = {b: {(1, 1): 90 * MS} for b in range(5)}
    assert [p[1] for p in tl.phases(1, 0.5, bins)] == [0.5, 0.0, 0.0]  # type: ignore[attr-defined]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_the_run_times_of_this_process_tree_are_read() -> None:
    tl = timeline()
    assert os.getpid() in tl.descendants(os.getpid())  # type: ignore[attr-defined]
    times = tl.run_times({os.getpid()})  # type: ignore[attr-defined]
    assert times[(os.getpid(), os.getpid())] > 0

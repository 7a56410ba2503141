"""When each process of an ingest is busy: the run cut into its start, its steady part and its tail.

    python benchmarks/ingest_timeline.py GAMES.jsonl [--workers 2] [--bin BIN] [--bins]

Runs ``backalley ingest --no-ratings --workers N`` (this build's, or ``--bin``'s) into a
fresh file and reads every thread's run time (``/proc/PID/task/TID/schedstat``, in ns)
of the whole process tree every 10 ms (Linux).  The workers are the processes that
took more than a tenth of the tree's CPU besides the command's own; the run is cut
where they start and stop working:

* start: from the command's start to the workers' first 10 ms of work (imports, the
  database opened, the forkserver and the workers started);
* steady: while the workers work;
* tail: after their last 100 ms bin of work (the writer's last chunks, its commit, the
  final checkpoint, the database closed, the process's exit).

For each part: its wall seconds, the CPU seconds of the tree in it, and the CPUs busy
on average (CPU ÷ wall).  ``--bins`` also prints each 100 ms bin's CPUs busy by process
(the command's own threads apart).  The samples see a thread until it ends: a thread's
last few ms of work may be missed, so the CPU here can be a little under ``getrusage``'s.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: Seconds between samples, and the width of a bin.
SAMPLE, BIN = 0.01, 0.1

Thread = tuple[int, int]  # (pid, tid)


def descendants(pid: int) -> list[int]:
    """``pid`` and every process under it."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        for task in _listdir(f"/proc/{p}/task"):
            with contextlib.suppress(OSError):  # gone meanwhile
                todo += [int(c) for c in Path(f"/proc/{p}/task/{task}/children").read_text().split()]
    return out


def _listdir(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


def run_times(pids: set[int]) -> dict[Thread, int]:
    """Every thread's run time so far, in ns."""
    out: dict[Thread, int] = {}
    for p in pids:
        for task in _listdir(f"/proc/{p}/task"):
            with contextlib.suppress(OSError, ValueError, IndexError):  # gone meanwhile
                out[(p, int(task))] = int(Path(f"/proc/{p}/task/{task}/schedstat").read_text().split()[0])
    return out


def sample(cmd: list[str]) -> tuple[int, float, dict[int, dict[Thread, int]]]:
    """Run ``cmd``; its pid, its wall seconds and each bin's ns of run time by thread."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    seen: set[int] = {proc.pid}
    last: dict[Thread, int] = {}
    bins: dict[int, dict[Thread, int]] = {}
    while proc.poll() is None:
        seen |= set(descendants(proc.pid))
        now = run_times(seen)
        b = int((time.perf_counter() - t0) / BIN)
        into = bins.setdefault(b, {})
        for thread, ns in now.items():
            into[thread] = into.get(thread, 0) + ns - last.get(thread, 0)
            last[thread] = ns
        time.sleep(SAMPLE)
    return proc.pid, time.perf_counter() - t0, bins


def phases(main: int, wall: float, bins: dict[int, dict[Thread, int]]) -> list[tuple[str, float, float]]:
    """(part, wall s, tree CPU s) of the start, the steady part and the tail."""
    by_pid: dict[int, int] = {}
    for into in bins.values():
        for (pid, _), ns in into.items():
            by_pid[pid] = by_pid.get(pid, 0) + ns
    total = sum(by_pid.values())
    workers = {p for p, ns in by_pid.items() if p != main and ns > total / 10}

    def work(b: int, least: float) -> bool:
        return sum(ns for (p, _), ns in bins[b].items() if p in workers) > least

    busy = [b for b in sorted(bins) if work(b, SAMPLE * 1e9 / 2)]
    first, stop = (busy[0] * BIN, (busy[-1] + 1) * BIN) if busy else (wall, wall)

    def cpu(lo: float, hi: float) -> float:
        return sum(ns for b, into in bins.items() if lo <= b * BIN < hi for ns in into.values()) / 1e9

    return [
        ("start", first, cpu(0, first)),
        ("steady", stop - first, cpu(first, stop)),
        ("tail", wall - stop, cpu(stop, 1e9)),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("games_file", type=Path)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--bin", type=Path, default=Path(sys.executable).parent / "backalley", help="a build's backalley")
    ap.add_argument("--bins", action="store_true", help="print every 100 ms bin's CPUs busy by process")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "timeline.duckdb"
        cmd = [str(args.bin), "ingest", "--no-ratings", "--workers", str(args.workers), "--db", str(db)]
        main_pid, wall, bins = sample([*cmd, str(args.games_file)])
    games = sum(1 for line in args.games_file.open("rb") if line.strip())
    print(f"{' '.join(cmd)} {args.games_file}: {wall:.2f} s, {games / wall:.0f} games/s, load {os.getloadavg()[0]:.1f}")
    print("| part | wall s | tree CPU s | CPUs busy |\n|---|---:|---:|---:|")
    for name, w, c in phases(main_pid, wall, bins):
        print(f"| {name} | {w:.2f} | {c:.2f} | {c / w if w > 0 else 0:.2f} |")
    if args.bins:
        pids = sorted({p for into in bins.values() for p, _ in into})
        print("s     " + " ".join(f"{'cmd' if p == main_pid else p:>7}" for p in pids))
        for b in sorted(bins):
            row = [sum(ns for (q, _), ns in bins[b].items() if q == p) / (BIN * 1e9) for p in pids]
            print(f"{b * BIN:5.1f} " + " ".join(f"{x:7.2f}" for x in row))


if __name__ == "__main__":
    main()

"""Benchmark: the scale-out ingest (``ingest --cluster local:N --lake``) with 1 and 2 Dask workers.

    python benchmarks/dask_stage.py FILE.jsonl [--workers 1,2] [--partition-mb 8] [--reps 1]

For each worker count, a ``LocalCluster`` of that many worker processes (one thread
each) is started (its start-up is reported, not counted), then the file is ingested
into a fresh Delta Lake by :func:`backalley.store.lake.ingest`, and the figures are:

* ``games_per_s``: records of the file over the ingest's wall seconds;
* ``task_ms``: the mean seconds of one partition's task on a worker (read, replay,
  rows, decisions and Parquet files), ``task_us_per_game``, and ``task_cpu_ms``, the
  CPU seconds of the task's thread (what the task costs without waiting for a core);
* ``commit_ms``: the mean seconds the client spends committing one partition
  (Delta log entries; the whole decision and appends for a partition decided again),
  ``commit_cpu_ms`` the client process's CPU meanwhile, and
  ``commit_us_per_game``: the serial part, which bounds the speed however many
  workers there are (``1e6 / commit_us_per_game`` games/s).

``benchmarks/run.py`` runs it as the ``dask`` stage on its file of games.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any


def measure(path: Path, workers: int, partition_bytes: int, reps: int) -> dict[str, Any]:
    """One worker count: the median run of ``reps``."""
    import distributed

    from backalley.store import lake

    t0 = time.perf_counter()
    cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0")
    startup = time.perf_counter() - t0
    runs = []
    try:
        with distributed.Client(cluster) as client:
            for _ in range(reps):
                folder = Path(tempfile.mkdtemp(prefix="backalley-lake-"))
                try:
                    t = time.perf_counter()
                    run = lake.ingest([str(path)], str(folder), client, partition_bytes=partition_bytes)
                    runs.append((time.perf_counter() - t, run))
                finally:
                    shutil.rmtree(folder, ignore_errors=True)
    finally:
        cluster.close()
    seconds, run = sorted(runs, key=lambda r: r[0])[len(runs) // 2]
    games = run.summary.records
    parts = run.partitions
    return {
        "workers": workers,
        "games": games,
        "partitions": parts,
        "seconds": round(seconds, 2),
        "games_per_s": round(games / seconds, 1),
        "cluster_start_s": round(startup, 2),
        "task_ms": round(run.task_seconds / parts * 1e3, 1),
        "task_us_per_game": round(run.task_seconds / games * 1e6, 1),
        "commit_ms": round(run.commit_seconds / parts * 1e3, 1),
        "commit_us_per_game": round(run.commit_seconds / games * 1e6, 1),
        "task_cpu_ms": round(run.task_cpu_seconds / parts * 1e3, 1),
        "commit_cpu_ms": round(run.commit_cpu_seconds / parts * 1e3, 1),
        "redecided": run.redecided,
    }


def dask_stage(path: Path, workers: list[int], partition_bytes: int, reps: int = 1) -> list[dict[str, Any]]:
    rows = []
    for n in workers:
        row = measure(path, n, partition_bytes, reps)
        print(line(row), flush=True)
        rows.append(row)
    return rows


def line(row: dict[str, Any]) -> str:
    return (
        f"dask_{row['workers']:<8} {row['games_per_s']:>10,.0f} games/s  {row['partitions']} partitions: "
        f"task {row['task_ms']:.0f} ms ({row['task_us_per_game']:.0f} µs a game), "
        f"commit {row['commit_ms']:.0f} ms ({row['commit_us_per_game']:.0f} µs a game); "
        f"CPU: task {row['task_cpu_ms']:.0f} ms, commit {row['commit_cpu_ms']:.0f} ms; "
        f"cluster start {row['cluster_start_s']:.1f} s"
    )


def markdown(rows: list[dict[str, Any]]) -> str:
    out = [
        "| Dask workers | games/s | partitions | task per partition (read, replay, rows, files): wall / CPU "
        "| commit per partition (client): wall / CPU |",
        "|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        out.append(
            f"| {r['workers']} | {r['games_per_s']:,.0f} | {r['partitions']} | {r['task_ms']:,.0f} / "
            f"{r['task_cpu_ms']:,.0f} ms ({r['task_us_per_game']:.0f} µs a game) | {r['commit_ms']:,.0f} / "
            f"{r['commit_cpu_ms']:,.0f} ms ({r['commit_us_per_game']:.0f} µs a game) |"
        )
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file", type=Path)
    ap.add_argument("--workers", default="1,2", help="comma-separated worker counts (default 1,2)")
    ap.add_argument("--partition-mb", type=float, default=8.0, help="byte range per task, MB (default 8)")
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args()
    rows = dask_stage(
        args.file, [int(w) for w in args.workers.split(",")], int(args.partition_mb * 1024 * 1024), args.reps
    )
    print()
    print(markdown(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

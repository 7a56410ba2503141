"""Benchmark: the store's double-dummy analysis, in one process, in a pool and on Dask (``analyze --cluster``).

    python benchmarks/dask_analyze.py FILE.jsonl [--games 400] [--max-cards 9] [--workers 1,2] [--batch 20]

The first ``--games`` records of the file are ingested into a store once; every run
analyses a fresh copy of it (deals of at most ``--max-cards`` cards a hand), one after
the other on the same machine:

* ``serial``: :func:`backalley.analysis.dd.analyse_store` in this process: the wall
  seconds and this process's CPU seconds, so ``cpu_ms_per_game`` is what the analysis
  costs a game (the search, the rows and the store's inserts);
* ``pool_N``: the same with ``--workers N`` (a process pool);
* the batches' CPU: the CPU seconds of :func:`dd.solve_jobs` (the search and the rows) summed
  over the batches, wherever they ran (none for the pool, whose workers analyse game by game);
* ``local_N``: :func:`backalley.analysis.cluster.analyse_store_on` on a ``LocalCluster``
  of N worker processes, one thread each (its start-up is reported, not counted), in
  batches of ``--batch`` games a task, with the client's CPU seconds (reading the
  records, sending them, inserting the rows).

The figures are games/s and deals solved a second; compare rows of one run only.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from collections.abc import Callable
from itertools import islice
from pathlib import Path
from typing import Any


def build_store(path: Path, games: int, folder: Path) -> Path:
    from backalley.store.ingest import ingest

    records = folder / "games.jsonl"
    with path.open(encoding="utf-8") as src:
        records.write_text("".join(islice(src, games)), encoding="utf-8")
    db = folder / "store.duckdb"
    ingest([str(records)], db)
    return db


def timed(name: str, db: Path, folder: Path, run: Callable[[Path], Any]) -> dict[str, Any]:
    """One run on a fresh copy of the store: wall and this process's CPU seconds."""
    copy = folder / f"{name}.duckdb"
    shutil.copy(db, copy)
    t, cpu = time.perf_counter(), time.process_time()
    summary = run(copy)
    seconds, cpu_seconds = time.perf_counter() - t, time.process_time() - cpu
    copy.unlink()
    return {
        "run": name,
        "games": summary.games,
        "deals": summary.deals,
        "seconds": round(seconds, 2),
        "cpu_seconds": round(cpu_seconds, 2),
        "games_per_s": round(summary.games / seconds, 1),
        "deals_per_s": round(summary.deals / seconds, 1),
        "cpu_ms_per_game": round(cpu_seconds / max(1, summary.games) * 1e3, 2),
        "task_cpu_ms_per_game": round(summary.cpu_seconds / max(1, summary.games) * 1e3, 2),
    }


def on_cluster(workers: int, max_cards: int, batch: int) -> Callable[[Path], Any]:
    def run(db: Path) -> Any:
        from backalley.analysis.cluster import analyse_store_on

        return analyse_store_on(CLIENTS[workers], db, max_cards=max_cards, batch=batch)

    return run


#: The started clusters' clients, by worker count.
CLIENTS: dict[int, Any] = {}


def measure(path: Path, games: int, max_cards: int, workers: list[int], batch: int) -> list[dict[str, Any]]:
    import distributed

    from backalley.analysis.dd import analyse_store

    rows = []
    with tempfile.TemporaryDirectory(prefix="backalley-dd-") as tmp:
        folder = Path(tmp)
        db = build_store(path, games, folder)
        rows.append(timed("serial", db, folder, lambda c: analyse_store(c, max_cards=max_cards)))
        print(line(rows[-1]), flush=True)
        for n in workers:
            if n > 1:
                run = timed(f"pool_{n}", db, folder, lambda c, n=n: analyse_store(c, workers=n, max_cards=max_cards))
                rows.append(run)
                print(line(run), flush=True)
            t0 = time.perf_counter()
            cluster = distributed.LocalCluster(n_workers=n, threads_per_worker=1, dashboard_address=":0")
            startup = time.perf_counter() - t0
            try:
                with distributed.Client(cluster) as client:
                    CLIENTS[n] = client
                    run = timed(f"local_{n}", db, folder, on_cluster(n, max_cards, batch))
            finally:
                CLIENTS.pop(n, None)
                cluster.close()
            rows.append({**run, "cluster_start_s": round(startup, 2)})
            print(line(rows[-1]), flush=True)
    return rows


def line(row: dict[str, Any]) -> str:
    return (
        f"{row['run']:<8} {row['games']} games, {row['deals']} deals in {row['seconds']:.2f} s: "
        f"{row['games_per_s']:,.1f} games/s, {row['deals_per_s']:,.0f} deals/s; "
        f"this process's CPU {row['cpu_seconds']:.2f} s ({row['cpu_ms_per_game']:.1f} ms a game); "
        f"the batches' CPU {row['task_cpu_ms_per_game']:.1f} ms a game"
    )


def markdown(rows: list[dict[str, Any]]) -> str:
    out = [
        "| run | games | deals | wall s | games/s | this process's CPU a game | the batches' CPU a game |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        out.append(
            f"| {r['run']} | {r['games']} | {r['deals']} | {r['seconds']:.2f} | {r['games_per_s']:,.1f} | "
            f"{r['cpu_ms_per_game']:.1f} ms | {r['task_cpu_ms_per_game']:.1f} ms |"
        )
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file", type=Path)
    ap.add_argument("--games", type=int, default=400)
    ap.add_argument("--max-cards", type=int, default=9)
    ap.add_argument("--workers", default="1,2", help="comma-separated worker counts (default 1,2)")
    ap.add_argument("--batch", type=int, default=20, help="games a Dask task (default 20, as analyze --cluster)")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args()
    workers = [int(w) for w in args.workers.split(",")]
    rows = measure(args.file, args.games, args.max_cards, workers, args.batch)
    print()
    print(markdown(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

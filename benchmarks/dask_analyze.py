"""Benchmark: the store's double-dummy analysis, in one process, in a pool and on Dask (``analyze --cluster``).

    python benchmarks/dask_analyze.py FILE.jsonl [--games 400] [--max-cards 9] [--workers 1,2] [--batch 20] [--reps 1]

The first ``--games`` records of the file are ingested into a store once, and the
clusters are started; every run analyses a fresh copy of the store (deals of at most
``--max-cards`` cards a hand), one after the other on the same machine, in ``--reps``
rounds of all the runs (the median of each is kept):

* ``serial``: :func:`backalley.analysis.dd.analyse_store` in this process: the wall
  seconds and this process's CPU seconds, so ``cpu_ms_per_game`` is what the analysis
  costs a game (the search, the rows and the store's inserts);
* ``pool_N``: the same with ``--workers N`` (a process pool);
* the batches' CPU: the CPU seconds of :func:`dd.solve_jobs` (the search and the rows) summed
  over the batches, wherever they ran (none for the pool, whose workers analyse game by game);
* ``local_N``: :func:`backalley.analysis.cluster.analyse_store_on` on a ``LocalCluster``
  of N worker processes, one thread each (its start-up, the workers' import of the analysis
  included, is reported, not counted), in
  batches of ``--batch`` games a task, with the client's CPU seconds (reading the
  records, sending them, inserting the rows).

The figures are games/s and deals solved a second; compare rows of one run only.
"""

from __future__ import annotations

import argparse
import importlib
import json
import shutil
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from functools import partial
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


def measure(
    path: Path, games: int, max_cards: int, workers: list[int], batch: int, reps: int = 1
) -> list[dict[str, Any]]:
    """Every run ``reps`` times, the runs of a round one after the other (the rounds interleaved): the medians."""
    import distributed

    runs: dict[str, Callable[[Path], Any]] = {"serial": partial(_serial, max_cards)}
    starts: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="backalley-dd-") as tmp, ExitStack() as stack:
        folder = Path(tmp)
        db = build_store(path, games, folder)
        for n in workers:
            if n > 1:
                runs[f"pool_{n}"] = partial(_pooled, n, max_cards)
            t0 = time.perf_counter()
            cluster = stack.enter_context(
                distributed.LocalCluster(n_workers=n, threads_per_worker=1, dashboard_address=":0")
            )
            client = stack.enter_context(distributed.Client(cluster))
            client.run(importlib.import_module, "backalley.analysis.dd")  # as this process has it
            starts[f"local_{n}"] = time.perf_counter() - t0
            runs[f"local_{n}"] = partial(_on_cluster, client, max_cards, batch)
        rounds: dict[str, list[dict[str, Any]]] = {name: [] for name in runs}
        for _ in range(reps):
            for name, run in runs.items():
                rounds[name].append(timed(name, db, folder, run))
                print(line(rounds[name][-1]), flush=True)
    rows = []
    for name, done in rounds.items():
        row = sorted(done, key=lambda r: r["seconds"])[len(done) // 2]
        rows.append({**row, "reps": reps, **({"cluster_start_s": round(starts[name], 2)} if name in starts else {})})
    return rows


def _serial(max_cards: int, db: Path) -> Any:
    from backalley.analysis.dd import analyse_store

    return analyse_store(db, max_cards=max_cards)


def _pooled(workers: int, max_cards: int, db: Path) -> Any:
    from backalley.analysis.dd import analyse_store

    return analyse_store(db, workers=workers, max_cards=max_cards)


def _on_cluster(client: Any, max_cards: int, batch: int, db: Path) -> Any:
    from backalley.analysis.cluster import analyse_store_on

    return analyse_store_on(client, db, max_cards=max_cards, batch=batch)


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
    ap.add_argument("--reps", type=int, default=1, help="rounds of every run, interleaved (the median is kept)")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args()
    workers = [int(w) for w in args.workers.split(",")]
    rows = measure(args.file, args.games, args.max_cards, workers, args.batch, args.reps)
    print()
    print(markdown(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

"""The ingest ceiling: each part of an ingest timed alone, and what that allows.

    python benchmarks/ingest_floor.py GAMES.jsonl [--games 10000] [--cpus 2]

Every part of ``backalley ingest`` runs here on its own, in this one process,
on data prepared beforehand, so that each is timed with nothing else around it
(CPU seconds of this process, DuckDB's threads included):

* ``read + hash``: reading the file's records and their SHA-256 (the workers, each
  reading its own spans of the file: :mod:`backalley.store.screen`);
* ``send`` / ``receive``: pickling each input's row data in a worker, and unpickling
  it in the writer (what the process pool costs; the inputs themselves do not travel);
* ``replay + rows``: decode, replay and row data of each record, and its raw text
  compressed (the workers: :func:`backalley.store.rows.build_item`; the zstd part is shown apart);
* ``arrow``: the chunk's Arrow tables (the writer: :func:`backalley.store.tables.game_tables`);
* ``duckdb``: inserting those prebuilt tables into a fresh database file with
  ingest's settings, chunk and transaction sizes, the commits and the final
  checkpoint, and nothing else (the writer).

The ceiling assumes a perfect pipeline: every CPU busy all the time, no waiting,
no coordination.  With ``c`` CPUs, ``games/s <= c / (sum of the parts)``; and
since one process writes, also ``games/s <= 1 / (writer's parts)``.  The
figures go to the terminal and to ``benchmarks/ingest_floor.json``.  Every
game's tables are held in memory at once (about 1.3 GB for 10,000 games).
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    # Imported here, not at module level: worker-free, but keep the habit of the harness
    # (a forkserver child re-imports __main__).
    from datetime import UTC, datetime

    import numpy as np
    import pyarrow as pa

    from backalley.records.sources import expand, read_file
    from backalley.store import ingest as ing
    from backalley.store.database import Store
    from backalley.store.raw import LEVEL as raw_level
    from backalley.store.raw import compress
    from backalley.store.rows import build_item, content_hash, worker_init
    from backalley.store.tables import game_tables

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("games_file", type=Path)
    ap.add_argument("--games", type=int, default=10_000, help="records to use (default 10000)")
    ap.add_argument("--cpus", type=int, default=len(os.sched_getaffinity(0)), help="CPUs for the ceiling")
    ap.add_argument("--chunk", type=int, default=ing.CHUNK, help="records per insert (default: ingest's)")
    ap.add_argument("--transaction", type=int, default=ing.TRANSACTION, help="records per commit (default: ingest's)")
    ap.add_argument("--db", type=Path, default=ROOT / "benchmarks" / "work" / "floor.duckdb")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "ingest_floor.json")
    args = ap.parse_args()
    worker_init()  # the workers' garbage-collector setting

    cpu: dict[str, float] = {}

    def timed(part: str, start: float) -> None:
        cpu[part] = cpu.get(part, 0.0) + time.process_time() - start

    t = time.process_time()
    items = []
    for f in expand([str(args.games_file)]):
        for item in read_file(f):
            content_hash(item.raw)
            items.append(item)
            if len(items) == args.games:
                break
    timed("read + hash", t)
    n = len(items)

    def transfer(objs: list[Any]) -> None:
        """Pickle each object and unpickle it, as the process pool does on its way."""
        t = time.process_time()
        sent = [pickle.dumps(o, pickle.HIGHEST_PROTOCOL) for o in objs]
        timed("send", t)
        t = time.process_time()
        for data in sent:
            pickle.loads(data)
        timed("receive", t)

    t = time.process_time()
    built = [build_item(item) for item in items]
    timed("replay + rows", t)
    t = time.process_time()
    for item in items:  # already done once inside replay + rows: shown apart, not added
        compress(item.raw)
    zstd = (time.process_time() - t) / len(items) * 1e6
    transfer(built)  # and back

    # Only games become rows (a record that is not one goes to rejects, as in ingest).
    games = [(it, b) for it, b in zip(items, built, strict=True) if b.reject is None and b.game_id is not None]
    chunks = [games[i : i + args.chunk] for i in range(0, len(games), args.chunk)]
    del built
    t = time.process_time()
    tables = [game_tables(c, 1 + i * args.chunk) for i, c in enumerate(chunks)]
    timed("arrow", t)
    now = datetime.now(UTC)
    for tb in tables:  # the two columns the writer adds
        k = tb["g_games"].num_rows
        tb["g_games"] = tb["g_games"].append_column("run_id", pa.array(np.ones(k, np.int32)))
        tb["g_games"] = tb["g_games"].append_column("ingested_at", pa.array([now] * k, pa.timestamp("us", tz="UTC")))
    del chunks, items

    args.db.parent.mkdir(parents=True, exist_ok=True)
    for p in (args.db, Path(f"{args.db}.wal")):
        p.unlink(missing_ok=True)
    per_table: dict[str, float] = {}
    with Store.open(args.db) as store:
        con = store.con
        settings = {
            "memory_limit": ing.INGEST_MEMORY_LIMIT,
            "allocator_flush_threshold": ing.ALLOCATOR_FLUSH,
            "checkpoint_threshold": ing.INGEST_CHECKPOINT,
            "threads": "1",
        }
        for name, value in settings.items():
            con.execute(f"SET {name} = '{value}'")
        per_tx = max(1, args.transaction // args.chunk)
        start = time.process_time()
        for i, tb in enumerate(tables):
            if i % per_tx == 0:
                con.begin()
            for name, table in tb.items():
                t = time.process_time()
                store.insert_batch(name, table)
                per_table[name] = per_table.get(name, 0.0) + time.process_time() - t
            if (i + 1) % per_tx == 0 or i + 1 == len(tables):
                t = time.process_time()
                con.commit()
                per_table["(commits)"] = per_table.get("(commits)", 0.0) + time.process_time() - t
        t = time.process_time()
        con.execute("RESET threads")  # as ingest: the workers are done, the checkpoint gets every thread
        con.execute("CHECKPOINT")
        per_table["(final checkpoint)"] = time.process_time() - t
        timed("duckdb", start)

    us = {k: v / n * 1e6 for k, v in cpu.items()}
    writer = us["receive"] + us["arrow"] + us["duckdb"]
    total = sum(us.values())
    out: dict[str, Any] = {
        "games": n,
        "cpus": args.cpus,
        "chunk": args.chunk,
        "transaction": args.transaction,
        "cpu_us_per_game": {k: round(v, 1) for k, v in us.items()},
        "zstd_us_per_game_in_replay": round(zstd, 1),
        "duckdb_us_per_game": {k: round(v / n * 1e6, 1) for k, v in per_table.items()},
        "ceiling_games_per_s": {
            "all_cpus": round(args.cpus / total * 1e6),
            "one_writer": round(1 / writer * 1e6),
        },
    }
    print(f"{n:,} games; CPU per game, each part alone:")
    for k, v in us.items():
        print(f"  {k:<14} {v:7.0f} us")
    print(f"  {'total':<14} {total:7.0f} us   (replay + rows includes zstd level {raw_level}: {zstd:.0f} us)")
    print("  duckdb, by table: " + ", ".join(f"{k} {v}" for k, v in out["duckdb_us_per_game"].items()))
    print(
        f"ceiling: {out['ceiling_games_per_s']['all_cpus']:,} games/s on {args.cpus} CPUs (every CPU busy), "
        f"{out['ceiling_games_per_s']['one_writer']:,} games/s for one writer (the writer's parts alone)"
    )
    args.out.write_text(json.dumps(out, indent=2) + "\n")
    print(f"-> {args.out}")


if __name__ == "__main__":
    main()

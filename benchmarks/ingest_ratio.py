"""Ingest against validation, this build beside another, in interleaved rounds.

    python benchmarks/ingest_ratio.py GAMES.jsonl --baseline OTHER/.venv/bin/backalley [--rounds 3] [--workers 2]

Each round runs, for this build and then the baseline: ``backalley ingest --no-ratings
--workers N`` into a fresh DuckDB file, and ``backalley validate --json --workers N`` on the
same file.  Per run: wall seconds, games/s, CPU of the whole process tree a game (user + system,
start-up included: this process is made a subreaper, so the workers a forkserver started come
back to it when the forkserver ends, and are waited for and counted), peak PSS of the tree and the database file's size; per build and round,
ingest's games/s as a share of validation's.  The rounds are interleaved so that a machine
shared with other work loads both builds alike: compare within a round, and read ratios.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import sys
import tempfile
from pathlib import Path

from run import BIN, cpu_children, run_timed

#: ``prctl`` option (linux/prctl.h): orphaned descendants are reparented to this process.
PR_SET_CHILD_SUBREAPER = 36


def games_in(path: Path) -> int:
    with path.open("rb") as f:
        return sum(1 for line in f if line.strip())


def one(cmd: list[str], games: int) -> dict[str, float]:
    cpu0 = cpu_children()
    wall, _, pss, _ = run_timed(cmd, pin=False)
    while True:  # the orphans (forkserver, workers) reparented here: their CPU counts once waited for
        try:
            os.wait()
        except ChildProcessError:
            break
    cpu = cpu_children() - cpu0
    return {"s": wall, "games_s": games / wall, "cpu_ms_game": cpu / games * 1e3, "pss_mb": pss}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("games_file", type=Path)
    ap.add_argument("--baseline", type=Path, required=True, help="another install's backalley command")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise SystemExit("cannot become a subreaper (Linux only): the tree's CPU would be short")
    games = games_in(args.games_file)
    builds = {"this": str(BIN / "backalley"), "baseline": str(args.baseline)}
    w = str(args.workers)
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(1, args.rounds + 1):
            for name, exe in builds.items():
                db = Path(tmp) / f"{name}-{r}.duckdb"
                ing = one([exe, "ingest", "--no-ratings", "--workers", w, "--db", str(db), str(args.games_file)], games)
                size = db.stat().st_size / 2**20
                val = one([exe, "validate", "--json", "--workers", w, str(args.games_file)], games)
                print(
                    f"round {r} {name:8s} ingest {ing['s']:6.2f} s {ing['games_s']:6.0f} games/s "
                    f"CPU {ing['cpu_ms_game']:.3f} ms/game PSS {ing['pss_mb']:4.0f} MB file {size:5.1f} MB | "
                    f"validate {val['s']:5.2f} s {val['games_s']:6.0f} games/s CPU {val['cpu_ms_game']:.3f} ms/game"
                    f" | ingest ÷ validate {ing['games_s'] / val['games_s']:.2f}",
                    flush=True,
                )
                db.unlink()
                Path(f"{db}.wal").unlink(missing_ok=True)


if __name__ == "__main__":
    sys.exit(main())

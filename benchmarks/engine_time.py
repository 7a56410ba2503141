"""Pure engine time: the replay of complete games already decoded into memory.

    python benchmarks/engine_time.py GAMES.jsonl [--games 2000]

Decodes up to ``--games`` records first (msgspec fast path), then times only
``replay_checked`` over all of them, best of 5 runs.
"""

from __future__ import annotations

import argparse
import importlib
import time
from pathlib import Path

from backalley.record import fast_decode
from backalley.replay import replay_checked
from backalley.validate import tune_gc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("games_file", type=Path)
    ap.add_argument("--games", type=int, default=2000)
    args = ap.parse_args()
    tune_gc()
    recs = [r for line in args.games_file.read_bytes().splitlines()[: args.games] if (r := fast_decode(line))]
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        valid = sum(1 for r in recs if replay_checked(r).valid)
        best = min(best, time.perf_counter() - start)
    compiled = not str(importlib.import_module("backalley.replay").__file__).endswith(".py")
    print(
        f"replay_checked: {best / len(recs) * 1e6:.0f} us per game over {len(recs)} games ({valid} valid), "
        f"best of 5, {'compiled' if compiled else 'pure Python'}"
    )


if __name__ == "__main__":
    main()

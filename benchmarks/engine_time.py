"""Pure engine time: the replay of complete games already decoded into memory.

    python benchmarks/engine_time.py GAMES.jsonl [--games 2000]

Decodes up to ``--games`` records first (msgspec fast path, any record
format), then times only ``replay_checked`` over all of them, best of 5 runs,
and reports microseconds per game and card plays per second.  For a ruleset
other than standard, make the file with ``backalley simulate --ruleset NAME``.
"""

from __future__ import annotations

import argparse
import importlib
import time
from pathlib import Path

from backalley.records.models import fast_decode_any
from backalley.replay import replay_checked, ruleset_of
from backalley.validate import tune_gc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("games_file", type=Path)
    ap.add_argument("--games", type=int, default=2000)
    args = ap.parse_args()
    tune_gc()
    recs = [r for line in args.games_file.read_bytes().splitlines()[: args.games] if (r := fast_decode_any(line))]
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        valid = sum(1 for r in recs if replay_checked(r).valid)
        best = min(best, time.perf_counter() - start)
    compiled = not str(importlib.import_module("backalley.replay").__file__).endswith(".py")
    plays = sum(4 * len(d.tricks) for r in recs for d in r.deals)
    rulesets = sorted({ruleset_of(r).label() for r in recs})
    print(
        f"replay_checked: {best / len(recs) * 1e6:.0f} us per game over {len(recs)} games ({valid} valid), "
        f"{plays / best / 1e6:.2f} M card plays/s, best of 5, {'compiled' if compiled else 'pure Python'}; "
        f"ruleset {', '.join(rulesets)}"
    )


if __name__ == "__main__":
    main()

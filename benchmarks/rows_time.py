"""Row building alone: ``rows.build_game`` over games already decoded and replayed.

    python benchmarks/rows_time.py GAMES.jsonl [--games 300] [--profile]

Decodes and replays up to ``--games`` records first (msgspec fast path), then
times only ``build_game`` over all of them: CPU time (``process_time``), best of
7 runs, in microseconds per game, and the first of those runs apart (the row
builder's memos of biddings and contracts still empty: what a worker meets in a
file of new games).  ``--profile`` prints cProfile's top entries
of one more run instead.  Make the file with ``backalley simulate`` (add
``--ruleset NAME`` for another ruleset).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time
from pathlib import Path

from backalley.records.models import fast_decode_any
from backalley.replay import replay_checked
from backalley.store.rows import build_game
from backalley.validate import tune_gc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("games_file", type=Path)
    ap.add_argument("--games", type=int, default=300)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    tune_gc()
    recs = [r for line in args.games_file.read_bytes().splitlines()[: args.games] if (r := fast_decode_any(line))]
    pairs = [(r, replay_checked(r)) for r in recs]
    if args.profile:
        prof = cProfile.Profile()
        prof.runcall(lambda: [build_game(r, p, "") for r, p in pairs])
        pstats.Stats(prof).sort_stats("tottime").print_stats(15)
        return
    runs = []
    for _ in range(7):
        start = time.process_time()
        for r, p in pairs:
            build_game(r, p, "")
        runs.append(time.process_time() - start)
    first = runs[0] / len(pairs) * 1e6
    runs.sort()
    per = [t / len(pairs) * 1e6 for t in runs]
    print(
        f"build_game: {per[0]:.0f} us CPU per game (best of 7; median {per[3]:.0f}; first run {first:.0f})"
        f" over {len(pairs)} games"
    )


if __name__ == "__main__":
    main()

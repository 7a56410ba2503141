"""Time of the ratings (backalley.analysis.ratings) for 10,000 games on one core.

    python benchmarks/ratings_time.py [--games 10000] [--players 100] [--days 365]

A synthetic history: each game four players drawn from ``--players``, on one of
``--days`` days in order, each side's score its players' hidden skills plus
noise.  Times :func:`ratings_of` (pairs and players, fitted to convergence) in
CPU seconds and prints how many subjects it rated.
"""

from __future__ import annotations

import argparse
import random
import time

from backalley.analysis.ratings import Result, ratings_of


def history(games: int, players: int, days: int, seed: int = 1) -> list[Result]:
    rng = random.Random(seed)
    skill = [rng.gauss(0, 1) for _ in range(players)]
    names = [f"p{k}" for k in range(players)]
    out = []
    for k in range(games):
        a, b, c, d = rng.sample(range(players), 4)
        teams = ((names[a], names[c]), (names[b], names[d]))
        scores = (skill[a] + skill[c] + rng.gauss(0, 1), skill[b] + skill[d] + rng.gauss(0, 1))
        out.append(Result(teams, scores, 1 + k * days // games))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--games", type=int, default=10_000)
    ap.add_argument("--players", type=int, default=100)
    ap.add_argument("--days", type=int, default=365)
    args = ap.parse_args()
    results = history(args.games, args.players, args.days)
    t = time.thread_time()
    rated = ratings_of("standard", "", results)
    print(f"{len(results):,} games, {len(rated):,} ratings in {time.thread_time() - t:.1f} s CPU")


if __name__ == "__main__":
    main()

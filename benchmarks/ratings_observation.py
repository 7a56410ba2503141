"""Which observation makes the better ratings: each game's result, or its luck-adjusted margin?

    python benchmarks/ratings_observation.py [--games 400] [--seed 2026] [--max-cards 9] [--db PATH]

Simulates ``--games`` plain standard games and as many without partnerships, ingests and
analyses them (deals of at most ``--max-cards`` cards a hand), or reads an analysed store
(``--db``).  On the games with an analysed deal, the ratings are fitted on the games before
the cut (docs/metrics.md, "Ratings calibration") twice: with each side's final score as the
observation, and with its luck-adjusted points (points − cards, summed over the game's
analysed deals); both predict the results of the games after the cut.  Prints each one's
held-out log-loss (lower is better; a coin flip's is 0.693).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import duckdb

from backalley.analysis.calibration import compare_observations, luck_margins
from backalley.analysis.dd import analyse_store
from backalley.analysis.ratings import read_results
from backalley.rules import find_ruleset
from backalley.simulate import simulate_games
from backalley.store.ingest import ingest


def build(folder: Path, games: int, seed: int, max_cards: int) -> Path:
    lines = [*simulate_games(games, seed=seed, players=8)]
    lines += simulate_games(games, seed=seed + 1, players=8, rules=find_ruleset("standard", ("no_partnerships",)))
    source = folder / "games.jsonl"
    source.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    db = folder / "store.duckdb"
    ingest([str(source)], db)
    analyse_store(db, workers=1, max_cards=max_cards)
    return db


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--games", type=int, default=400)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--max-cards", type=int, default=9)
    ap.add_argument("--db", type=Path, default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db or build(Path(tmp), args.games, args.seed, args.max_cards)
        with duckdb.connect(str(db), read_only=True) as con:
            results, margins = read_results(con), luck_margins(con)
        print("ruleset+options  kind    games before/after  predictions  log-loss: result  margin")
        for (ruleset, options), games in sorted(results.items()):
            for o in compare_observations(ruleset, options, games, margins):
                label = "+".join([ruleset, *[x for x in options.split(",") if x]])
                print(
                    f"{label:<16} {o.kind:<7} {o.train_games:>6}/{o.test_games:<6}      {o.pairings:>8}"
                    f"          {o.result:.3f}   {o.margin:.3f}"
                )


if __name__ == "__main__":
    main()

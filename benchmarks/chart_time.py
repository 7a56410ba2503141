"""Time per chart: the four charts of player pages, drawn from a real store's frames.

    python benchmarks/chart_time.py STORE.duckdb [--players 20] [--number 20]

Computes the report's metrics once, then times each chart function over the
first ``--players`` players (best of 3 runs of ``--number`` rounds; each call includes
selecting the player's rows, as a page does), and prints
milliseconds per chart.
"""

from __future__ import annotations

import argparse
import timeit
from collections.abc import Callable
from pathlib import Path

from backalley.reporting import charts
from backalley.reporting.metrics import Metrics, compute, open_store


def calls(m: Metrics, players: list[str]) -> dict[str, Callable[[], object]]:
    def each(draw: Callable[[str], object]) -> Callable[[], object]:
        return lambda: [draw(p) for p in players]

    return {
        "calibration": each(lambda p: charts.calibration(m.of("calibration", p), m.pop_calibration, "p-cal")),
        "error_histogram": each(lambda p: charts.error_histogram(m.of("bid_errors", p), "p-err")),
        "board_success": each(lambda p: charts.board_success(m.of("boards_by_hand", p), "p-brd")),
        "score_over_games": each(lambda p: charts.score_over_games(m.of("scores", p), "p-scr")),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("store", type=Path)
    ap.add_argument("--players", type=int, default=20)
    ap.add_argument("--number", type=int, default=20)
    args = ap.parse_args()
    m = compute(open_store(args.store))
    players = m.contracts["player"].to_list()[: args.players]
    for name, run in calls(m, players).items():
        best = min(timeit.repeat(run, number=args.number, repeat=3)) / (args.number * len(players))
        print(f"{name:18s} {best * 1000:8.3f} ms per chart ({len(players)} players)")


if __name__ == "__main__":
    main()

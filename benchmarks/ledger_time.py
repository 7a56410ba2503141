"""Time of the luck ledger (backalley.analysis.ledger) for a store of 10,000 analysed games.

    python benchmarks/ledger_time.py [--games 200] [--rows 500000]

Simulates ``--games`` standard games, ingests them and analyses their deals of at
most 2 cards (the ledger's cost does not depend on how long the solver took),
then times (CPU seconds of this thread; the store's wall time too, DuckDB's threads included): ``store`` (:func:`luck_ledger` on that store, SQL and
all), ``rows`` (the Python part, :func:`side_ledger` and :func:`ledger_frame`,
on the store's side rows repeated to ``--rows``: 10,000 games of 25 deals have
500,000 sides), and ``means`` (the report's means per player, partnership and
everyone, :func:`cluster_means` with its bootstrap by game, on those rows, each
repetition of the store's games a game of its own: 10,000 games).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import duckdb
import polars as pl
from typer.testing import CliRunner

from backalley.analysis.ledger import (
    _COSTS_SQL,
    _SIDES_SQL,
    _with_adjusted,
    cluster_means,
    ledger_frame,
    luck_ledger,
    pair_rows,
    side_ledger,
)
from backalley.cli.app import app
from backalley.simulate import simulate_games


def build(folder: Path, games: int) -> Path:
    runner = CliRunner()
    lines = folder / "games.jsonl"
    lines.write_text("".join(line + "\n" for line in simulate_games(games, seed=7)), encoding="utf-8")
    db = folder / "store.duckdb"
    for args in (["ingest", "--db", str(db), "-w", "1", str(lines)], ["analyze", "--db", str(db), "--max-cards", "2"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
    return db


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--games", type=int, default=200)
    ap.add_argument("--rows", type=int, default=500_000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = build(Path(tmp), args.games)
        with duckdb.connect(str(db), read_only=True) as con:
            t, w = time.thread_time(), time.perf_counter()
            store_rows = luck_ledger(con).height
            store, wall = time.thread_time() - t, time.perf_counter() - w
            rows = con.execute(_SIDES_SQL).fetchall()
            costs = {(g, d, s): int(c) for g, d, s, c in con.execute(_COSTS_SQL).fetchall()}
    many = (rows * (args.rows // len(rows) + 1))[: args.rows]
    t = time.thread_time()
    sides = [side_ledger(r, costs.get((r[0], r[1], r[2][0]), 0)) for r in many]
    frame = ledger_frame(sides)
    python = time.thread_time() - t
    print(f"store: {store_rows:,} ledger rows from {len(rows):,} sides in {store:.2f} s CPU ({wall:.2f} s wall)")
    print(f"rows: {len(many):,} sides ({frame.height:,} ledger rows) in {python:.2f} s CPU")
    games = len({r[0] for r in rows})
    print(means(frame, frame.height // len(many), len(rows), max(1, args.rows // 50 // games)))


def means(frame: pl.DataFrame, width: int, sides: int, copies: int) -> str:
    """The means of :func:`backalley.analysis.ledger.luck_figures` on ``frame`` (``width`` rows a side), timed.
    Repetition r of the store's ``sides`` side rows becomes game copy r mod ``copies``, its deals numbered apart:
    the frame holds ``copies`` × the store's games, their deals spread over them."""
    rep = pl.int_range(0, pl.len()) // (width * sides)
    ledger = _with_adjusted(frame).with_columns(
        game_id=pl.col("game_id") + "#" + (rep % copies).cast(pl.Utf8), deal=pl.col("deal") + 1000 * (rep // copies)
    )
    t = time.thread_time()
    everyone = ledger.unique(["game_id", "deal", "side"], keep="first", maintain_order=True)
    got = [
        cluster_means(ledger, ["ruleset", "options", "player"]),
        cluster_means(pair_rows(ledger), ["ruleset", "options", "pair"]),
        cluster_means(everyone, ["ruleset", "options"]),
    ]
    spent = time.thread_time() - t
    games = ledger["game_id"].n_unique()
    return (
        f"means: {sum(g.height for g in got):,} groups, {games:,} games, {everyone.height:,} sides in {spent:.2f} s CPU"
    )


if __name__ == "__main__":
    main()

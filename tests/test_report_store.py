"""End to end: simulated records → ingest into the real store → reports.

Checks the reports against the store's own ``player_summary`` view and against
each other (deal points add up to the games' final scores).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import backalley.simulate as simulate_mod
import backalley.store.ingest as ingest_mod
from backalley.reporting import compute, write_reports
from backalley.reporting.html import player_file
from backalley.reporting.metrics import open_store


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("e2e")
    games = folder / "games.jsonl"
    lines = list(simulate_mod.simulate_games(40, seed=7, players=8, faults=0.2))
    games.write_text("\n".join([*lines, "{not json"]) + "\n", encoding="utf-8")
    db = folder / "store.duckdb"
    ingest_mod.ingest([str(games)], db)
    return db


def test_figures_agree_with_the_store(store: Path) -> None:
    con = open_store(store)
    try:
        m = compute(con)
        summary = con.sql("SELECT * FROM player_summary").pl()
        statuses = dict(con.sql("SELECT status, count(*) FROM games GROUP BY status").fetchall())
        rejects = con.sql("SELECT count(*) FROM rejects").fetchall()[0][0]
    finally:
        con.close()
    assert m.leaderboard.height > 0
    both = m.leaderboard.join(summary, on="player", suffix="_store")
    assert both.height == m.leaderboard.height
    for col in ("deals", "numeric_bids", "exact_bids", "boards_claimed", "boards_made"):
        assert (both[col] == both[f"{col}_store"]).all(), col
    assert ((both["points_per_deal"] - both["points_per_deal_store"]).abs() < 1e-9).all()
    # A player's deal points add up to their teams' final scores over the same games.
    gap = both.select(
        (pl.col("points_per_deal") * pl.col("deals") - pl.col("mean_score") * pl.col("games")).abs().max()
    )
    assert gap.item() < 1e-6
    got = dict(zip(m.quality_status["status"], m.quality_status["records"], strict=True))
    assert got["rejected"] == rejects >= 1
    for status, n in statuses.items():
        assert got[status] == n
    assert int(m.quality_codes["violations"].sum()) > 0  # the injected faults show up


def test_reports_on_the_store(store: Path, tmp_path: Path) -> None:
    s = write_reports(store, tmp_path)
    con = open_store(store)
    players = {
        r[0]
        for r in con.sql("SELECT DISTINCT unnest([player_n, player_e, player_s, player_w]) FROM games").fetchall()
        if r[0] is not None
    }
    con.close()
    assert {p.name for p in s.player_pages} == {Path(player_file(p)).name for p in players}
    index = (tmp_path / "index.html").read_text(encoding="utf-8")
    before, calibration = index.split('id="ratings-calibration"')
    assert before.count("<svg") == 2 and "Leaderboard" in index
    assert calibration.count("<svg") == 2  # the ratings' calibration: partnerships and players
    md = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert "## Leaderboard" in md and "| invalid |" in md

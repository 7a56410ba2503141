"""The report's double-dummy sections (bid vs makeable, play accuracy), checked against the dd tables.

A small store of simulated standard games is analysed (deals of at most 3 cards a
hand, to stay fast); the expected figures are worked out here in Python from the
raw tables (games, deals, bids, deal_sides, dd_deals, dd_plays), not from the
report's queries.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from pathlib import Path

import duckdb
import polars as pl
import pytest
from typer.testing import CliRunner

from backalley.cli.app import app
from backalley.reporting import compute, write_reports
from backalley.reporting.html import player_slug
from backalley.reporting.metrics import open_store
from backalley.simulate import simulate_games
from tests.helpers import contracts_and_costs

runner = CliRunner()
MAX_CARDS = 3
SEATS = ("N", "E", "S", "W")
MARKUP = "<b>Ada</b>"


def _ingested(folder: Path, analyse: bool) -> Path:
    games = folder / "games.jsonl"
    lines = "".join(line + "\n" for line in simulate_games(3, seed=15, players=6))
    games.write_text(lines.replace('"Ada"', f'"{MARKUP}"'), encoding="utf-8")  # a player id that is HTML
    db = folder / "store.duckdb"
    result = runner.invoke(app, ["ingest", "--db", str(db), str(games)])
    assert result.exit_code == 0, result.output
    if analyse:
        result = runner.invoke(app, ["analyze", "--db", str(db), "--max-cards", str(MAX_CARDS)])
        assert result.exit_code == 0, result.output
    return db


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _ingested(tmp_path_factory.mktemp("dd"), analyse=True)


def _expected(db: Path) -> tuple[dict[str, dict[str, float]], dict[str, float]]:
    """Per player and for everyone: the bid-vs-makeable and play-accuracy sums over analysed deals."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        seats = {
            g: dict(zip(SEATS, ps, strict=True))
            for g, *ps in con.execute(
                "SELECT game_id, player_n, player_e, player_s, player_w FROM games WHERE valid"
            ).fetchall()
        }
        dd = {
            (g, d): (n, {"NS": ns, "EW": ew})
            for g, d, n, ns, ew in con.execute(
                "SELECT game_id, deal, hand_size, dd_ns, dd_ew FROM dd_deals WHERE analysed"
            ).fetchall()
        }
        sides, kinds, plays = contracts_and_costs(con)
    finally:
        con.close()
    per: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    pop: dict[str, float] = defaultdict(float)
    for (g, d), (n, value) in dd.items():
        if g not in seats:
            continue
        for seat, player in seats[g].items():
            team = "NS" if seat in "NS" else "EW"
            kind, contract = sides[(g, d, team)]
            first_of_side = seat in ("N", "E")
            p = per[player]
            p["deals"] += 1
            if kind == "number":
                diff = contract - value[team]
                for bucket in (p, pop) if first_of_side else (p,):
                    bucket["contracts"] += 1
                    bucket["diff"] += diff
                    bucket["over" if diff > 0 else "exact" if diff == 0 else "under"] += 1
            if kinds[(g, d, seat)] == "board":
                p["boards"] += 1
                p["makeable"] += value[team] == n
    for g, d, seat, cost in plays:
        if g in seats and (g, d) in dd:
            p = per[seats[g][seat]]
            p["plays"] += 1
            p["lost"] += cost
            p["free"] += cost == 0
            pop["plays"] += 1
            pop["lost"] += cost
            pop["free"] += cost == 0
    pop["deals"] = len([k for k in dd if k[0] in seats]) * 4
    return per, pop


def test_figures_match_the_dd_tables(db: Path) -> None:
    per, pop = _expected(db)
    assert pop["contracts"] > 0 and pop["plays"] > 0  # the store has analysed deals
    con = open_store(db)
    try:
        m = compute(con)
    finally:
        con.close()
    assert m.analysed
    for player, e in per.items():
        bids = m.of("dd_bids", player).filter(pl.col("hand_size").is_null()).row(0, named=True)
        plays = m.of("dd_plays", player).filter(pl.col("hand_size").is_null()).row(0, named=True)
        assert bids["contracts"] == e["contracts"]
        assert (bids["over"], bids["exact"], bids["under"]) == (e["over"], e["exact"], e["under"])
        if e["contracts"]:
            assert bids["mean_diff"] == pytest.approx(e["diff"] / e["contracts"])
        assert (bids["boards"], bids["boards_makeable"]) == (e["boards"], e["makeable"])
        assert (plays["deals"], plays["lost"], plays["plays"], plays["free"]) == (
            e["deals"],
            e["lost"],
            e["plays"],
            e["free"],
        )
        assert plays["lost_per_deal"] == pytest.approx(e["lost"] / e["deals"])
    total = m.pop_dd_bids.filter(pl.col("hand_size").is_null()).row(0, named=True)
    assert total["contracts"] == pop["contracts"]
    assert total["mean_diff"] == pytest.approx(pop["diff"] / pop["contracts"])
    assert (total["over"], total["exact"], total["under"]) == (pop["over"], pop["exact"], pop["under"])
    everyone = m.pop_dd_plays.filter(pl.col("hand_size").is_null()).row(0, named=True)
    assert (everyone["deals"], everyone["lost"], everyone["free"]) == (pop["deals"], pop["lost"], pop["free"])
    sizes = m.pop_dd_plays.filter(pl.col("hand_size").is_not_null())
    assert set(sizes["hand_size"].to_list()) <= set(range(1, MAX_CARDS + 1))
    assert int(sizes["deals"].sum()) == everyone["deals"] and int(sizes["lost"].sum()) == everyone["lost"]


def test_means_carry_a_normal_interval(db: Path, tmp_path: Path) -> None:
    """Tricks lost per deal for all players: mean ± 1.96·s/√n over the losses of each player and deal."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        losses = [
            float(r[0])
            for r in con.execute(
                "SELECT coalesce(sum(p.cost), 0) FROM dd_deals d CROSS JOIN (VALUES ('N'), ('E'), ('S'), ('W')) s(seat)"
                " LEFT JOIN dd_plays p ON p.game_id = d.game_id AND p.deal = d.deal AND p.seat = s.seat"
                " WHERE d.analysed GROUP BY d.game_id, d.deal, s.seat"
            ).fetchall()
        ]
    finally:
        con.close()
    mean, half = statistics.fmean(losses), 1.959963984540054 * statistics.stdev(losses) / math.sqrt(len(losses))
    write_reports(db, tmp_path, workers=1)
    summary = (tmp_path / "summary.md").read_text(encoding="utf-8")
    low = max(0.0, mean - half)  # tricks lost cannot be negative: the interval stops at 0
    shown = f"| all | {len(losses)} | {mean:.2f} (95% CI {low:.2f} to {mean + half:.2f}) |".replace("-", "−")
    assert shown in summary


def _player_page(out: Path, player: str) -> str:
    return (out / "players" / f"{player_slug(player)}.html").read_text(encoding="utf-8")


def test_report_shows_the_sections(db: Path, tmp_path: Path) -> None:
    write_reports(db, tmp_path, workers=1)
    index = (tmp_path / "index.html").read_text(encoding="utf-8")
    summary = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert 'id="bid-vs-makeable"' in index and 'id="play-accuracy"' in index
    players = index.split('id="play-accuracy"')[1]
    assert MARKUP not in index and "&lt;b&gt;Ada&lt;/b&gt;" in players  # the id is escaped, in the new tables too
    assert "## Bid vs makeable" in summary and "## Play accuracy" in summary
    per, _ = _expected(db)
    player, e = next(iter(sorted(per.items())))
    page = _player_page(tmp_path, player)
    assert 'id="play-accuracy"' in page
    assert f"{e['lost'] / e['deals']:.2f}" in page.split('id="play-accuracy"')[1]


def test_sections_absent_without_analysis(tmp_path: Path) -> None:
    db = _ingested(tmp_path, analyse=False)
    con = open_store(db)
    try:
        m = compute(con)
    finally:
        con.close()
    assert not m.analysed and m.pop_dd_plays.height == 0
    out = tmp_path / "out"
    write_reports(db, out, workers=1)
    index = (out / "index.html").read_text(encoding="utf-8")
    assert "bid-vs-makeable" not in index and "play-accuracy" not in index
    assert "Bid vs makeable" not in (out / "summary.md").read_text(encoding="utf-8")
    page = next((out / "players").glob("*.html")).read_text(encoding="utf-8")
    assert "play-accuracy" not in page


def test_sections_say_what_double_dummy_means_and_which_deals_were_analysed(db: Path, tmp_path: Path) -> None:
    """Plain words: what double dummy means, the hand sizes analysed and, per size, the deals left out."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        sizes = dict(
            con.execute(
                "SELECT hand_size, count(*) FROM deals WHERE game_id IN (SELECT game_id FROM games"
                " WHERE status = 'valid') AND NOT coalesce(pass_out, false) GROUP BY hand_size"
            ).fetchall()
        )
    finally:
        con.close()
    left = sum(n for size, n in sizes.items() if size > MAX_CARDS)
    write_reports(db, tmp_path, workers=1)
    for page in (tmp_path / "index.html", *sorted((tmp_path / "players").glob("*.html"))[:1]):
        text = page.read_text(encoding="utf-8")
        assert "if everyone saw all four hands" in text, page
        assert f"Hand sizes analysed: 1–{MAX_CARDS} cards." in text, page
        assert f"Deals of {MAX_CARDS + 1}–{max(sizes)} cards not analysed: {left:,}" in text, page
        assert "run backalley analyze to add them" in text


def test_tricks_lost_never_has_an_interval_below_zero() -> None:
    from backalley.reporting.dd_sections import mean_cell, mean_text

    assert mean_text(0.05, 0.5, 10, floor=0.0) == "0.05 (95% CI 0.00 to 0.36)"
    assert "−" not in mean_cell(0.05, 0.5, 10, floor=0.0)
    assert "−0.26" in mean_text(0.05, 0.5, 10)  # a signed quantity keeps its interval

"""The report's double-dummy figures of games without partnerships: each seat's own value.

Simulated games of ``standard`` with ``no_partnerships`` and plain ``standard`` games
share a store, analysed for deals of at most 3 cards a hand.  The expected figures
are worked out here from the raw tables (games, deal_sides, bids, dd_deal_sides,
dd_plays); a seat's contract is judged against its own seat's value.
"""

from __future__ import annotations

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
from backalley.rules import find_ruleset
from backalley.simulate import simulate_games
from tests.helpers import contracts_and_costs

runner = CliRunner()
SEATS = ("N", "E", "S", "W")
SOLO = "no_partnerships"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("dd_sides")
    games = folder / "games.jsonl"
    solo = simulate_games(3, seed=21, players=6, rules=find_ruleset("standard", (SOLO,)))
    plain = simulate_games(2, seed=22, players=6)
    games.write_text("".join(line + "\n" for line in [*solo, *plain]), encoding="utf-8")
    path = folder / "store.duckdb"
    assert runner.invoke(app, ["ingest", "--db", str(path), "-w", "1", str(games)]).exit_code == 0
    result = runner.invoke(app, ["analyze", "--db", str(path), "--max-cards", "3"])
    assert result.exit_code == 0, result.output
    return path


def _expected(db: Path, options: str) -> tuple[dict[str, dict[str, float]], dict[str, float]]:
    """Per player and for everyone, over the analysed deals of the games with ``options``: the sums behind
    bid vs makeable and play accuracy, each seat's contract against its own side's value."""
    with duckdb.connect(str(db), read_only=True) as con:
        seats = {
            g: dict(zip(SEATS, ps, strict=True))
            for g, *ps in con.execute(
                "SELECT game_id, player_n, player_e, player_s, player_w FROM games WHERE valid AND options = ?",
                [options],
            ).fetchall()
        }
        values: dict[tuple[str, int], dict[str, int]] = defaultdict(dict)
        for g, d, side, dd in con.execute("SELECT game_id, deal, side, dd FROM dd_deal_sides").fetchall():
            values[g, d][side] = dd
        sizes = dict(((g, d), n) for g, d, n in con.execute("SELECT game_id, deal, hand_size FROM dd_deals").fetchall())
        sides, kinds, plays = contracts_and_costs(con)
    per: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    pop: dict[str, float] = defaultdict(float)
    for (g, d), value in values.items():
        if g not in seats:
            continue
        for seat, player in seats[g].items():
            side = seat if options == SOLO else "NS" if seat in "NS" else "EW"
            kind, contract = sides[g, d, side]
            p = per[player]
            p["deals"] += 1
            if kind == "number":
                diff = contract - value[side]
                for bucket in (p, pop) if side[0] == seat else (p,):  # everyone: once per side
                    bucket["contracts"] += 1
                    bucket["diff"] += diff
                    bucket["over" if diff > 0 else "exact" if diff == 0 else "under"] += 1
            if kinds[g, d, seat] == "board":
                p["boards"] += 1
                p["makeable"] += value[side] == sizes[g, d]
    for g, _, seat, cost in plays:
        if g in seats:
            for bucket in (per[seats[g][seat]], pop):
                bucket["plays"] += 1
                bucket["lost"] += cost
                bucket["free"] += cost == 0
    pop["deals"] = 4 * sum(1 for g, _ in values if g in seats)
    return per, pop


def _check(bids: dict[str, float], plays: dict[str, float], e: dict[str, float]) -> None:
    assert bids["contracts"] == e["contracts"]
    assert (bids["over"], bids["exact"], bids["under"]) == (e["over"], e["exact"], e["under"])
    if e["contracts"]:
        assert bids["mean_diff"] == pytest.approx(e["diff"] / e["contracts"])
    assert (plays["deals"], plays["lost"], plays["plays"], plays["free"]) == (
        e["deals"],
        e["lost"],
        e["plays"],
        e["free"],
    )


def test_a_seat_is_judged_against_its_own_value(db: Path) -> None:
    per, pop = _expected(db, SOLO)
    assert pop["contracts"] > 0 and pop["plays"] > 0 and pop["over"] + pop["under"] > 0
    con = open_store(db)
    try:
        m = compute(con)
    finally:
        con.close()
    mine = pl.col("hand_size").is_null() & (pl.col("options") == SOLO)
    for player, e in per.items():
        bids = m.of("ruleset_dd_bids", player).filter(mine).row(0, named=True)
        plays = m.of("ruleset_dd_plays", player).filter(mine).row(0, named=True)
        _check(bids, plays, e)
        assert (bids["boards"], bids["boards_makeable"]) == (e["boards"], e["makeable"])
    total = m.pop_ruleset_dd_bids.filter(mine).row(0, named=True)
    everyone = m.pop_ruleset_dd_plays.filter(mine).row(0, named=True)
    _check(total, everyone, pop)
    sizes = m.pop_ruleset_dd_plays.filter(pl.col("hand_size").is_not_null())
    assert int(sizes["deals"].sum()) == everyone["deals"]
    # The plain standard games keep figures of their own: nothing of the other games in them.
    _, plain_pop = _expected(db, "")
    total = m.pop_dd_bids.filter(pl.col("hand_size").is_null()).row(0, named=True)
    everyone = m.pop_dd_plays.filter(pl.col("hand_size").is_null()).row(0, named=True)
    _check(total, everyone, plain_pop)
    assert set(m.ruleset_dd_bids["options"]) == {SOLO}


def test_the_ruleset_section_shows_them(db: Path, tmp_path: Path) -> None:
    write_reports(db, tmp_path, workers=1)
    index = (tmp_path / "index.html").read_text(encoding="utf-8")
    anchor = "ruleset-standard-no-partnerships-"
    section = index.split('id="ruleset-standard-no-partnerships"')[1]
    assert f'id="{anchor}bid-vs-makeable"' in section and f'id="{anchor}play-accuracy"' in section
    assert 'id="bid-vs-makeable"' in index  # the plain standard games' own sections
    per, pop = _expected(db, SOLO)
    player, e = next(iter(sorted(per.items())))
    page = (tmp_path / "players" / f"{player_slug(player)}.html").read_text(encoding="utf-8")
    assert f"{e['lost'] / e['deals']:.2f}" in page.split(f'id="{anchor}play-accuracy"')[1]
    summary = (tmp_path / "summary.md").read_text(encoding="utf-8").split("## Bid vs makeable by ruleset")[1]
    assert f"| standard + no\\_partnerships | {pop['contracts']:.0f} | " in summary
    assert f"| standard + no\\_partnerships | {pop['deals']:.0f} | " in summary.split("## Play accuracy by ruleset")[1]

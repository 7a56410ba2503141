"""The luck ledger (backalley.analysis.ledger): actual − E[par] = cards + bidding + play on every analysed deal.

A store holds simulated games of every registered ruleset (and standard without
partnerships) and one score sheet, analysed for deals of at most 3 cards a hand.
Every figure is checked against the raw tables it comes from.
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from backalley.analysis import ledger as ledger_mod
from backalley.analysis.ledger import (
    BOOTSTRAP,
    BOOTSTRAP_CAP,
    BOOTSTRAP_MIN,
    BOOTSTRAP_SEED,
    LEDGER_COLUMNS,
    MIN_EXPECTED,
    PARTS,
    LedgerError,
    bootstrap_bounds,
    cluster_means,
    cumulative_games,
    expected_pars,
    ledger_frame,
    luck_ledger,
    read_sides,
    resamples,
    sheet_games,
    stored_contract,
)
from backalley.cli.app import app
from backalley.reporting import write_reports
from backalley.reporting.html import player_slug
from backalley.reporting.luck import luck_cells
from backalley.rules import Contract, Ruleset, find_ruleset
from backalley.rules.par import par, side_contracts
from backalley.simulate import as_sheet, make_record, player_pool, simulate_games

runner = CliRunner()
RULESETS = (("standard", ()), ("standard", ("no_partnerships",)), ("bab-online", ()))


def _ingest(path: Path, lines: list[str], *analyze: str) -> None:
    games_file = path.with_suffix(f".{len(lines)}.jsonl")
    games_file.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    assert runner.invoke(app, ["ingest", "--db", str(path), "-w", "1", str(games_file)]).exit_code == 0
    result = runner.invoke(app, ["analyze", "--db", str(path), *analyze])
    assert result.exit_code == 0, result.output


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """pereulok's two deals of 13 cards analysed whole; the others' deals of at most 3 cards."""
    path = tmp_path_factory.mktemp("ledger") / "store.duckdb"
    _ingest(path, list(simulate_games(1, seed=39, players=6, rules=find_ruleset("pereulok"))))
    lines = []
    for k, (name, options) in enumerate(RULESETS):
        games = 16 if (name, options) == ("standard", ()) else 2
        lines += simulate_games(games, seed=40 + k, players=6, rules=find_ruleset(name, options))
    lines.append(json.dumps(as_sheet(make_record("paper-1", random.Random(5), player_pool(6), 5))))
    _ingest(path, lines, "--max-cards", "3")
    return path


@pytest.fixture(scope="module")
def ledger(db: Path) -> pl.DataFrame:
    with duckdb.connect(str(db), read_only=True) as con:
        return luck_ledger(con)


def test_the_identity_holds_on_every_row(ledger: pl.DataFrame) -> None:
    assert set(ledger["ruleset"]) == {"standard", "pereulok", "bab-online"}
    for r in ledger.iter_rows(named=True):
        assert r["actual"] - r["expected_par"] == pytest.approx(r["cards"] + r["bidding"] + r["play"])
        assert r["play"] == r["play_own"] + r["play_opponents"]
        assert r["cards"] == pytest.approx(r["par"] - r["expected_par"])
    assert (ledger["bidding"] < 0).any()


def _multiplier(rules: Ruleset, c: Contract) -> int:
    """A contract's multiplier as the store keeps it (a standard board's value is its multiplier)."""
    return c.value if c.board and not rules.levelled_boards else c.mult


def test_bidding_gives_away_unless_the_other_side_opened_a_multiplier(db: Path, ledger: pl.DataFrame) -> None:
    """bidding ≤ 0, but for a multiplier only the other side's calls allow (pereulok's ×2…×4, a third board)."""
    with duckdb.connect(str(db), read_only=True) as con:
        mults = {
            (g, d, s): m
            for g, d, s, m in con.execute("SELECT game_id, deal, side, multiplier FROM deal_sides").fetchall()
        }
    gifts = 0
    for r in ledger.iter_rows(named=True):
        if r["bidding"] > 0:
            rules = find_ruleset(r["ruleset"], tuple(o for o in r["options"].split(",") if o))
            alone = side_contracts(rules, r["hand_size"], rules.sides.index(r["side"]))
            assert mults[r["game_id"], r["deal"], r["side"]] > max(_multiplier(rules, c) for c in alone)
            gifts += 1
    assert gifts < len(ledger) / 10


def _raw(db: Path) -> tuple[dict[tuple[str, int, str], tuple[int, ...]], dict[tuple[str, int, str], int]]:
    """Per (game, deal, side): dd, hand size, tricks, points; and per (game, deal, seat) its cards' costs."""
    with duckdb.connect(str(db), read_only=True) as con:
        sides = {
            (g, d, s): (dd, n, t, p)
            for g, d, s, dd, n, t, p in con.execute(
                "SELECT x.game_id, x.deal, x.side, x.dd, a.hand_size, s.tricks, s.points FROM dd_deal_sides x "
                "JOIN dd_deals a USING (game_id, deal) JOIN deal_sides s USING (game_id, deal, side) WHERE a.analysed"
            ).fetchall()
        }
        costs = {
            (g, d, s): c
            for g, d, s, c in con.execute("SELECT game_id, deal, seat, sum(cost) FROM dd_plays GROUP BY ALL").fetchall()
        }
    return sides, costs


def test_figures_come_from_the_raw_tables(db: Path, ledger: pl.DataFrame) -> None:
    sides, costs = _raw(db)
    assert len(ledger.unique(["game_id", "deal", "side"])) == len(sides)
    for r in ledger.iter_rows(named=True):
        dd, n, tricks, points = sides[r["game_id"], r["deal"], r["side"]]
        rules = find_ruleset(r["ruleset"], tuple(o for o in r["options"].split(",") if o))
        assert r["actual"] == points and r["hand_size"] == n
        bonus = r["par"] - par(rules, dd, n, rules.sides.index(r["side"]))
        assert bonus >= 0 and (bonus == 0 or rules.rainbow)
        if len(rules.sides) == 2:  # partnerships: the other side's card costs are tricks this side gained
            own = sum(costs.get((r["game_id"], r["deal"], seat), 0) for seat in r["side"])
            theirs = sum(c for (g, d, seat), c in costs.items() if (g, d) == (r["game_id"], r["deal"]))
            assert tricks == dd - own + (theirs - own)


def test_expected_par_is_the_group_mean_or_the_fallback(db: Path, ledger: pl.DataFrame) -> None:
    with duckdb.connect(str(db), read_only=True) as con:
        sides = read_sides(con)
    groups: dict[tuple[str, str, int, int], list[int]] = defaultdict(list)
    for s in sides:
        groups[s.group].append(s.par)
    got = expected_pars(sides)
    assert any(len(v) >= MIN_EXPECTED for v in groups.values())
    assert any(len(v) < MIN_EXPECTED for v in groups.values())
    for key, pars in groups.items():
        mean, count = got[key]
        if len(pars) >= MIN_EXPECTED:
            assert (mean, count) == (pytest.approx(sum(pars) / len(pars)), len(pars))
        else:
            pooled = [p for k, v in groups.items() if k[:3] == key[:3] for p in v]
            assert (mean, count) == (pytest.approx(sum(pooled) / len(pooled)), len(pooled))


def test_one_row_per_player_of_the_side(ledger: pl.DataFrame) -> None:
    per_side = ledger.group_by(["game_id", "deal", "side"]).agg(pl.len().alias("n"), pl.col("options").first())
    for r in per_side.iter_rows(named=True):
        assert r["n"] == (1 if "no_partnerships" in r["options"] else 2)
    assert set(ledger["position"]) <= {1, 2, 3, 4}


def test_sheets_are_left_out_and_counted(db: Path, ledger: pl.DataFrame) -> None:
    with duckdb.connect(str(db), read_only=True) as con:
        assert sheet_games(con) == 1
    assert "paper-1" not in set(ledger["game_id"])


def test_a_bad_stored_contract_is_a_clear_error() -> None:
    rules = find_ruleset("standard")
    with pytest.raises(LedgerError, match="unknown contract kind"):
        stored_contract(rules, "grand slam", 3, 1)
    with pytest.raises(LedgerError, match="without a value"):
        stored_contract(rules, "number", None, 1)


def test_no_analysed_deal_is_an_empty_ledger() -> None:
    got = ledger_frame([])
    assert got.columns == list(LEDGER_COLUMNS) and got.is_empty()
    assert got.schema["cards"] == pl.Float64 and got.schema["deal"] == pl.Int64


def test_cluster_means_count_a_game_once() -> None:
    """Two games of 2 and 1 deals: the mean per deal, and the interval from the games' sums."""
    frame = pl.DataFrame(
        {"game_id": ["a", "a", "b", "c"], "who": ["x"] * 4, **{p: [4.0, 2.0, 9.0, -3.0] for p in PARTS}}
    )
    got = cluster_means(frame, ["who"]).row(0, named=True)
    sums, sizes = [6.0, 9.0, -3.0], [2, 1, 1]
    mean = sum(sums) / 4
    ss = sum((s - mean * n) ** 2 for s, n in zip(sums, sizes, strict=True))
    assert (got["deals"], got["games"]) == (4, 3)
    assert got["cards"] == pytest.approx(mean)
    assert got["cards_half"] == pytest.approx(1.959963984540054 * (3 / 2 * ss) ** 0.5 / 4)
    one = cluster_means(frame.filter(pl.col("game_id") == "a"), ["who"]).row(0, named=True)
    assert one["play"] == pytest.approx(3.0) and one["play_half"] is None
    assert one["play_low"] is None and one["play_high"] is None


def test_the_bootstrap_resamples_games_with_replacement() -> None:
    """The vectorized bounds equal a plain resampling, game by game, with the same draws."""
    rng = np.random.default_rng(1)
    sums, sizes = rng.normal(0, 5, size=(30, 2)), rng.integers(1, 6, size=30).astype(float)
    got = bootstrap_bounds(sums, sizes)
    draws = np.random.default_rng(BOOTSTRAP_SEED).integers(0, 30, size=(BOOTSTRAP, 30))
    means = np.array([[sums[d, k].sum() / sizes[d].sum() for k in range(2)] for d in draws])
    assert got == pytest.approx(np.percentile(means, [2.5, 97.5], axis=0))
    assert (got[0] < sums.sum(0) / sizes.sum()).all() and (got[1] > sums.sum(0) / sizes.sum()).all()
    assert np.isnan(bootstrap_bounds(sums[:1], sizes[:1])).all()


def test_the_bootstrap_draws_in_blocks_the_same_resamples(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(2)
    sums, sizes = rng.normal(0, 5, size=(41, 3)), rng.integers(1, 6, size=41).astype(float)
    whole = bootstrap_bounds(sums, sizes)
    monkeypatch.setattr(ledger_mod, "BOOTSTRAP_BLOCK", 41 * 7)  # 7 resamples a block, the last one shorter
    assert (bootstrap_bounds(sums, sizes) == whole).all()


def test_the_bootstrap_is_bounded_in_cost() -> None:
    assert resamples(2) == resamples(BOOTSTRAP_CAP // BOOTSTRAP) == BOOTSTRAP
    assert resamples(10_000) == BOOTSTRAP_CAP // 10_000 < BOOTSTRAP
    assert resamples(10**8) == BOOTSTRAP_MIN


def test_the_bootstrap_agrees_with_the_cluster_interval_on_many_games() -> None:
    rng = random.Random(4)
    rows = [(f"g{g}", "x", rng.gauss(1.0, 10.0)) for g in range(400) for _ in range(rng.randint(1, 8))]
    frame = pl.DataFrame(
        {"game_id": [r[0] for r in rows], "who": [r[1] for r in rows], **{p: [r[2] for r in rows] for p in PARTS}}
    )
    got = cluster_means(frame, ["who"]).row(0, named=True)
    assert got["cards_low"] < got["cards"] < got["cards_high"]
    assert (got["cards_high"] - got["cards_low"]) / 2 == pytest.approx(got["cards_half"], rel=0.15)


def test_each_group_is_bootstrapped_from_its_own_games() -> None:
    frame = pl.DataFrame(
        {
            "game_id": ["a", "b", "c", "a", "d", "e", "f"],
            "who": ["y", "y", "y", "x", "x", "x", "x"],
            **{p: [1.0, 5.0, -2.0, 3.0, 0.0, 7.0, 2.0] for p in PARTS},
        }
    )
    got = {r["who"]: r for r in cluster_means(frame, ["who"]).iter_rows(named=True)}
    for who, sums in (("x", [3.0, 0.0, 7.0, 2.0]), ("y", [1.0, 5.0, -2.0])):
        want = bootstrap_bounds(np.array([[v] * len(PARTS) for v in sums]), np.ones(len(sums)))
        assert (got[who]["play_low"], got[who]["play_high"]) == pytest.approx((want[0][0], want[1][0]))
    assert cluster_means(frame, ["who"]).equals(cluster_means(frame.reverse(), ["who"]))  # reproducible


def test_the_report_shows_the_bootstrap_interval_under_the_mean() -> None:
    row = {"deals": 9, "games": 3, **{p: 1.0 for p in PARTS}, **{f"{p}_half": 0.5 for p in PARTS}}
    row |= {"cards_low": 0.25, "cards_high": 2.5, "actual_low": None, "actual_high": None}
    cells = [str(c) for c in luck_cells(row)]
    cards, actual = cells[2 + PARTS.index("cards")], cells[2 + PARTS.index("actual")]
    assert '<span class="ci">+0.25 to +2.50</span>' in cards  # asymmetric: not the ± half-width
    assert 'class="ci"' not in actual


def test_the_report_shows_the_ledger(db: Path, ledger: pl.DataFrame, tmp_path: Path) -> None:
    summary = write_reports(db, tmp_path / "report", workers=1)
    index = (tmp_path / "report" / "index.html").read_text(encoding="utf-8")
    assert 'id="luck-ledger"' in index
    assert "Score-sheet games left out (they hold no cards, so no double-dummy value): 1." in index
    name = "Ada"
    page = next(p for p in summary.player_pages if p.name.startswith(player_slug(name)[:3]))
    text = page.read_text(encoding="utf-8")
    assert 'id="luck-ledger"' in text
    mine = ledger.filter((pl.col("player") == name) & (pl.col("ruleset") == "standard") & (pl.col("options") == ""))
    cards = mine["cards"].mean()
    assert isinstance(cards, float)
    shown = f"{cards:+.2f}".replace("-", "−")
    assert f'<span class="rate">{shown}</span>' in text
    assert f"{mine.height:,}" in text


def test_cumulative_games_end_at_the_players_totals(ledger: pl.DataFrame) -> None:
    played = pl.DataFrame({"game_id": ledger["game_id"].unique().sort(descending=True)}).with_row_index("played_at")
    got = cumulative_games(ledger, played)
    for (ruleset, options, player), part in got.group_by(["ruleset", "options", "player"]):
        mine = ledger.filter(
            (pl.col("ruleset") == ruleset) & (pl.col("options") == options) & (pl.col("player") == player)
        )
        assert part["game"].sort().to_list() == list(range(1, mine["game_id"].n_unique() + 1))
        last = part.sort("game").row(-1, named=True)
        for p in ("cards", "bidding", "play"):
            assert last[p] == pytest.approx(mine[p].sum())
        # in the order played: the latest-sorted game id was played first
        first = part.sort("game").row(0, named=True)
        assert first["game_id"] == mine["game_id"].max()


def test_the_player_page_charts_the_ledger(db: Path, tmp_path: Path) -> None:
    summary = write_reports(db, tmp_path / "report", workers=1)
    text = next(p for p in summary.player_pages if p.name.startswith("ada")).read_text(encoding="utf-8")
    assert '<title id="luck-' in text and "Cards, bidding and play: standard" in text


def test_the_columns_are_documented() -> None:
    text = (Path(__file__).resolve().parent.parent / "docs" / "database.md").read_text(encoding="utf-8")
    listed = text.split("### The luck ledger", 1)[1].split("`game_id, deal,", 1)[1].split("`", 1)[0]
    assert ["game_id", "deal", *[c.strip() for c in listed.split(",") if c.strip()]] == list(LEDGER_COLUMNS)


def test_query_computes_the_luck_ledger_when_the_sql_names_it(db: Path, ledger: pl.DataFrame, tmp_path: Path) -> None:
    """``backalley query`` registers the computed ledger for SQL that names it (docs/database.md)."""
    sql = "SELECT game_id, deal, side, player, cards, bidding, play FROM luck_ledger ORDER BY ALL"
    out = tmp_path / "ledger.csv"
    result = runner.invoke(app, ["query", "--db", str(db), "--format", "csv", "--out", str(out), sql])
    assert result.exit_code == 0, result.output
    got = pl.read_csv(out, schema_overrides={"game_id": pl.String})
    want = ledger.select("game_id", "deal", "side", "player", "cards", "bidding", "play").sort(pl.all())
    assert got.height == want.height > 0
    assert got.to_dicts() == want.to_dicts()


def test_only_sql_naming_the_ledger_as_a_word_computes_it() -> None:
    from backalley.analysis.relations import named_in

    assert named_in("select * from LUCK_LEDGER") == ["luck_ledger"]
    assert named_in("select * from my_luck_ledger_copy") == []
    assert named_in("select 1") == []

"""The ratings in the report: the leaderboard's column, the ratings' tables, identifiability, and their calibration."""

from __future__ import annotations

import math
import random
from datetime import date
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from backalley.analysis.calibration import (
    BINS,
    PREDICTORS,
    bins,
    by_margin,
    calibrate,
    compare_observations,
    fit_scale,
    log_loss,
    luck_margins,
    pairings,
    split,
    store_calibration,
)
from backalley.analysis.ledger import luck_ledger
from backalley.analysis.ratings import MIN_PARTNERS, RatingError, Result, read_results, stored_ratings
from backalley.cli.app import app
from backalley.reporting import charts, compute, write_reports
from backalley.reporting.html import LEADERBOARD_HEADERS
from backalley.reporting.metrics import open_store
from backalley.reporting.ratings import unidentified
from backalley.rules import find_ruleset
from backalley.simulate import simulate_games

runner = CliRunner()
SKILLS = {"Ada": 3.0, "Bo": 2.0, "Cy": 1.0, "Di": 0.0, "Ed": -1.0, "Flo": -2.0}


def _ingest(folder: Path, lines: list[str]) -> Path:
    games = folder / "games.jsonl"
    games.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    db = folder / "store.duckdb"
    result = runner.invoke(app, ["ingest", "--db", str(db), "-w", "1", str(games)])
    assert result.exit_code == 0, result.output
    return db


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    lines = [*simulate_games(48, seed=21, players=6)]
    lines += simulate_games(24, seed=22, players=6, rules=find_ruleset("standard", ("no_partnerships",)))
    return _ingest(tmp_path_factory.mktemp("rated"), lines)


@pytest.fixture(scope="module")
def few(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two games of four players: every player has at most two partners, every rating is provisional."""
    return _ingest(tmp_path_factory.mktemp("few"), [*simulate_games(2, seed=23, players=4)])


def _population(games: int, seed: int) -> list[Result]:
    rng = random.Random(seed)
    out = []
    for k in range(games):
        a, b, c, d = rng.sample(list(SKILLS), 4)
        teams = ((a, c), (b, d))
        scores = tuple(10 * (sum(SKILLS[p] for p in t) + rng.gauss(0, 1.5)) for t in teams)
        out.append(Result(teams, scores, 1 + k // 10, 10))
    return out


def test_the_leaderboard_has_each_players_stored_conservative_rating(db: Path) -> None:
    con = open_store(db)
    m = compute(con)
    stored = {r.subject: r for r in stored_ratings(con) if (r.ruleset, r.options, r.kind) == ("standard", "", "player")}
    con.close()
    assert "rating (μ − 3σ)" in LEADERBOARD_HEADERS
    lb = {r["player"]: r for r in m.leaderboard.iter_rows(named=True)}
    assert set(lb) == set(stored)
    for name, r in stored.items():
        assert lb[name]["rating_games"] == r.games
        assert lb[name]["rating"] == (pytest.approx(r.mu - 3 * r.sigma) if r.identifiable else None)
    assert all(r.identifiable for r in stored.values())  # six players, 48 games: every player had 3 partners


def test_the_pages_show_the_ratings_and_their_calibration(db: Path, tmp_path: Path) -> None:
    summary = write_reports(db, tmp_path / "out", workers=1)
    index = summary.index.read_text(encoding="utf-8")
    assert 'id="leaderboard-by-rating"' in index and 'id="ratings"' in index
    assert "standard: partnerships" in index and "standard + no_partnerships: players" in index
    calibration = index.split('id="ratings-calibration"')[1]
    assert "log-loss: coin flip" in calibration and "0.693" in calibration
    assert calibration.count("<svg") == 3  # pairs and players of standard, players of no_partnerships
    md = (tmp_path / "out" / "summary.md").read_text(encoding="utf-8")
    assert "| rating (μ − 3σ) |" in md and " games) |" in md
    page = next(p for p in summary.player_pages if "Ada" in p.read_text(encoding="utf-8").split("<h1")[1][:200])
    text = page.read_text(encoding="utf-8")
    assert 'id="ratings"' in text and "Ada &amp; " in text
    with duckdb.connect(str(db), read_only=True) as con:
        ada = next(r for r in stored_ratings(con) if (r.options, r.kind, r.subject) == ("", "player", "Ada"))
    value = f"{ada.conservative:.2f}".replace("-", "−") + (" ?" if ada.provisional else "")
    assert f'rating (μ − 3σ)</div><div class="value">{value}</div><div class="sub">{ada.games} games</div>' in text


def test_a_player_with_few_partners_is_not_rated_alone_and_the_page_says_why(few: Path, tmp_path: Path) -> None:
    with duckdb.connect(str(few), read_only=True) as con:
        rated = stored_ratings(con)
    players = [r for r in rated if r.kind == "player"]
    assert players and all(r.partners < MIN_PARTNERS and not r.identifiable for r in players)
    assert all(r.provisional for r in rated)
    summary = write_reports(few, tmp_path / "out", workers=1)
    index = summary.index.read_text(encoding="utf-8")
    for r in players:
        assert unidentified(r.partners) in index
    assert " ?</td>" in index  # a provisional partnership's rating
    shown = [p.read_text(encoding="utf-8") for p in summary.player_pages]
    assert all(any(unidentified(r.partners) in t for t in shown) for r in players)
    assert "Ratings calibration" not in index  # two games: too few to hold any out


def test_a_rated_store_is_calibrated_against_the_coin_flip(db: Path) -> None:
    with duckdb.connect(str(db), read_only=True) as con:
        found = store_calibration(con, 5_000)
        results = read_results(con)
    assert [(c.options, c.kind) for c in found] == [("", "pair"), ("", "player"), ("no_partnerships", "player")]
    for c in found:
        games = results[c.ruleset, c.options]
        assert c.train_games + c.test_games == len(games)
        assert c.pairings == c.test_games * (1 if c.options == "" else 6)
        assert c.log_loss["coin flip"] == pytest.approx(math.log(2))
        assert all(0 < c.log_loss[p] < 5 for p in PREDICTORS)
        assert sum(b.n for b in c.bins) == 2 * c.pairings
        assert c.cut is not None and c.cut.toordinal() == next(r.day for r in games[c.train_games :])
        assert all(r.day is not None and r.day < c.cut.toordinal() for r in games[: c.train_games])


def test_hidden_skills_are_predicted_better_than_a_coin_flip() -> None:
    (pairs, players) = calibrate("standard", "", _population(400, 5))
    assert (pairs.kind, players.kind) == ("pair", "player")
    assert players.log_loss["ratings"] < 0.6 < math.log(2) == pytest.approx(players.log_loss["coin flip"])
    assert players.log_loss["points per deal"] < 0.6
    assert players.cut == date.fromordinal(31) and players.train_games == 300


def test_the_split_falls_back_to_the_order_without_dates() -> None:
    undated = [Result((("a",), ("b",)), (1.0, 0.0), None)] * 8
    train, test, cut = split(undated)
    assert (len(train), len(test), cut) == (6, 2, None)
    one_day = [Result((("a",), ("b",)), (1.0, 0.0), 5)] * 8
    assert split(one_day)[2] is None and len(split(one_day)[0]) == 6


def test_pairings_outcomes_and_log_loss() -> None:
    game = Result((("a",), ("b",), ("c",), ("d",)), (3.0, 1.0, 3.0, 0.0), 1)
    got = pairings(game, pairs=False)
    assert [(x[0], x[1], x[2]) for x in got[:3]] == [
        (("a",), ("b",), 1.0),
        (("a",), ("c",), 0.5),
        (("a",), ("d",), 1.0),
    ]
    assert len(got) == 6
    assert log_loss([0.5, 0.5], [1.0, 0.0]) == pytest.approx(math.log(2))
    assert log_loss([0.9], [1.0]) == pytest.approx(-math.log(0.9))
    assert log_loss([1.0], [0.0]) < 20  # clipped: finite


def test_the_points_scale_is_recovered_and_bins_count_both_sides() -> None:
    rng = random.Random(9)
    xs = [rng.uniform(-5, 5) for _ in range(4000)]
    ys = [1.0 if rng.random() < 1 / (1 + math.exp(-0.8 * x)) else 0.0 for x in xs]
    assert fit_scale(xs, ys) == pytest.approx(0.8, abs=0.1)
    assert fit_scale([1.0, 2.0], [1.0, 1.0]) == 10.0  # separable: the bound
    got = bins([0.95, 0.05], [1.0, 0.0])
    assert len(got) == 2 <= BINS and [(b.n, b.observed) for b in got] == [(2, 0.0), (2, 1.0)]


def test_the_calibration_chart() -> None:
    svg = charts.win_calibration([(0.25, 0.2, 10), (0.75, 0.8, 10)], "cal-x", "Calibration: <x>")
    assert svg is not None and svg.startswith("<svg") and "Calibration: &lt;x&gt;" in svg
    assert charts.win_calibration([], "cal-y", "none") is None


@pytest.fixture(scope="module")
def analysed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = _ingest(tmp_path_factory.mktemp("analysed"), [*simulate_games(20, seed=24, players=6)])
    assert runner.invoke(app, ["analyze", "--db", str(db), "--max-cards", "2"]).exit_code == 0
    return db


def test_luck_margins_sum_each_sides_points_less_its_cards(analysed: Path) -> None:
    with duckdb.connect(str(analysed), read_only=True) as con:
        margins = luck_margins(con)
        rows = con.execute(
            "SELECT game_id, side, points FROM deal_sides s WHERE EXISTS (SELECT 1 FROM dd_deals d"
            " WHERE d.game_id = s.game_id AND d.deal = s.deal AND d.analysed)"
        ).fetchall()
        ledger = luck_ledger(con).unique(["game_id", "deal", "side"])
        results = read_results(con)["standard", ""]
    points: dict[tuple[str, str], float] = {}
    for game_id, side, p in rows:
        points[game_id, side] = points.get((game_id, side), 0.0) + p
    cards = {(g, s): 0.0 for g, s in points}
    for g, s, c in ledger.select("game_id", "side", "cards").iter_rows():
        cards[g, s] += c
    assert {(g, s) for g in margins for s in margins[g]} == set(points)
    for (g, s), p in points.items():
        assert margins[g][s] == pytest.approx(p - cards[g, s])
    adjusted = by_margin(results, margins)
    assert len(adjusted) == len(margins) and all(
        r.scores == tuple(margins[r.game_id][s] for s in r.sides) for r in adjusted
    )
    assert by_margin(results, {}) == []


def test_result_and_margin_as_the_observation_are_compared_on_the_same_games(analysed: Path) -> None:
    with duckdb.connect(str(analysed), read_only=True) as con:
        margins, results = luck_margins(con), read_results(con)["standard", ""]
    found = compare_observations("standard", "", results, margins)
    assert [o.kind for o in found] == ["pair", "player"]
    for o in found:
        assert o.train_games + o.test_games == len(by_margin(results, margins)) and o.pairings == o.test_games
        assert 0 < o.result < 5 and 0 < o.margin < 5
    assert compare_observations("standard", "", results, {}) == []


def test_a_calibration_that_cannot_be_fitted_is_said_in_its_place(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from backalley.reporting import metrics

    def broken(con: object, latest: int) -> list[object]:
        raise RatingError("TrueSkill Through Time could not fit 48 games: math domain error")

    monkeypatch.setattr(metrics, "store_calibration", broken)
    summary = write_reports(db, tmp_path / "out", workers=1)
    section = summary.index.read_text(encoding="utf-8").split('id="ratings-calibration"')[1].split("<h2")[0]
    assert "The calibration could not be computed: TrueSkill Through Time could not fit 48 games" in section
    assert "<svg" not in section

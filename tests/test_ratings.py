"""Ratings (backalley.analysis.ratings): TrueSkill Through Time per ruleset and options, pairs and players."""

from __future__ import annotations

import gzip
import math
import random
import shutil
from pathlib import Path

import duckdb
import pytest
import trueskillthroughtime as ttt  # type: ignore[import-untyped]
from typer.testing import CliRunner

from backalley.analysis import ratings as ratings_mod
from backalley.analysis.ratings import (
    MIN_PARTNERS,
    PROVISIONAL_SIGMA,
    RATING_COLUMNS,
    RatingError,
    Result,
    games_stamp,
    pair_name,
    ratings_current,
    ratings_of,
    read_results,
    refresh_if_stale,
    store_ratings,
    stored_ratings,
    stored_stamps,
)
from backalley.cli.app import app
from backalley.rules import find_ruleset
from backalley.simulate import simulate_games
from backalley.store.database import Store

FIXTURES = Path(__file__).parent / "fixtures"

runner = CliRunner()
#: Hidden skills of a population: each side's score is its players' skills plus noise.
SKILLS = {"Ada": 3.0, "Bo": 2.0, "Cy": 1.0, "Di": 0.0, "Ed": -1.0, "Flo": -2.0}


def _population(games: int, seed: int) -> list[Result]:
    rng = random.Random(seed)
    names = list(SKILLS)
    out = []
    for k in range(games):
        a, b, c, d = rng.sample(names, 4)
        teams = ((a, c), (b, d))
        scores = tuple(sum(SKILLS[p] for p in t) + rng.gauss(0, 1.5) for t in teams)
        out.append(Result(teams, scores, 1 + k // 10))
    return out


def test_ratings_recover_the_hidden_order() -> None:
    got = {r.subject: r for r in ratings_of("standard", "", _population(300, 3)) if r.kind == "player"}
    assert set(got) == set(SKILLS)
    by_mu = sorted(got, key=lambda p: -got[p].mu)
    assert by_mu == list(SKILLS)
    best, worst = got["Ada"], got["Flo"]
    assert best.mu - 2 * best.sigma > worst.mu + 2 * worst.sigma  # the intervals say so
    assert all(r.identifiable and not r.provisional for r in got.values())


def test_pairs_are_units_named_in_sorted_order() -> None:
    rated = ratings_of("standard", "", _population(200, 4))
    pairs = {r.subject for r in rated if r.kind == "pair"}
    assert pairs and all(s == pair_name(tuple(s.split(" & "))) for s in pairs)
    assert pair_name(("Zed", "Ada")) == "Ada & Zed"
    strong = next(r for r in rated if r.subject == "Ada & Bo")
    weak = next(r for r in rated if r.subject == "Ed & Flo")
    assert strong.mu > weak.mu


def test_few_games_are_provisional_and_few_partners_not_identifiable() -> None:
    rated = ratings_of("standard", "", [Result((("A", "B"), ("C", "D")), (10.0, 3.0), None)])
    assert all(r.provisional == (r.sigma > PROVISIONAL_SIGMA) for r in rated)
    assert all(r.provisional for r in rated)
    players = [r for r in rated if r.kind == "player"]
    assert all(r.partners == 1 < MIN_PARTNERS and not r.identifiable for r in players)
    a = next(r for r in players if r.subject == "A")
    c = next(r for r in players if r.subject == "C")
    assert a.mu > c.mu and a.conservative == pytest.approx(a.mu - 3 * a.sigma)


def test_a_draw_is_a_draw() -> None:
    rated = ratings_of("standard", "", [Result((("A", "B"), ("C", "D")), (5.0, 5.0), 1)] * 3)
    mus = {r.subject: r.mu for r in rated if r.kind == "player"}
    assert mus["A"] == pytest.approx(mus["C"], abs=1e-6)


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("ratings")
    lines = [*simulate_games(6, seed=5, players=6)]
    lines += simulate_games(3, seed=6, players=6, rules=find_ruleset("standard", ("no_partnerships",)))
    games = folder / "games.jsonl"
    games.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    path = folder / "store.duckdb"
    assert runner.invoke(app, ["ingest", "--db", str(path), "-w", "1", str(games)]).exit_code == 0
    return path


def test_the_store_is_rated_per_ruleset_and_options(db: Path) -> None:
    with duckdb.connect(str(db), read_only=True) as con:
        results = read_results(con)
        rated = store_ratings(con)
        counts = dict(
            con.execute("SELECT options, count(*) FROM games WHERE valid AND complete GROUP BY options").fetchall()
        )
    assert {k: len(v) for k, v in results.items()} == {("standard", o): n for o, n in counts.items()}
    solo = [r for r in rated if r.options == "no_partnerships"]
    assert solo and all(r.kind == "player" and r.identifiable for r in solo)
    assert all(len(t) == 1 for r in results["standard", "no_partnerships"] for t in r.teams)
    plain = [r for r in rated if r.options == ""]
    assert {r.kind for r in plain} == {"pair", "player"}
    for r in plain:
        teams = [t for g in results["standard", ""] for t in g.teams]
        n = sum(pair_name(t) == r.subject if r.kind == "pair" else r.subject in t for t in teams)
        assert r.games == n


def test_cli_prints_the_ratings(db: Path, tmp_path: Path) -> None:
    result = runner.invoke(app, ["ratings", "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert "standard: partnerships (μ ± σ; ? provisional)" in result.output
    assert "standard+no_partnerships: players" in result.output
    missing = runner.invoke(app, ["ratings", "--db", str(tmp_path / "none.duckdb")])
    assert missing.exit_code == 2 and "no database at" in missing.output


def _copy(db: Path, tmp_path: Path) -> Path:
    """A copy of the module's rated store, for a test to change."""
    copy = tmp_path / "copy.duckdb"
    copy.write_bytes(db.read_bytes())
    return copy


def _table(db: Path) -> list[tuple[object, ...]]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(f"SELECT {', '.join(RATING_COLUMNS)} FROM ratings ORDER BY ALL").fetchall()


def _fitted(db: Path) -> list[tuple[object, ...]]:
    with duckdb.connect(str(db), read_only=True) as con:
        return sorted(tuple(getattr(r, c) for c in RATING_COLUMNS) for r in store_ratings(con))


def test_ingest_stores_the_ratings(db: Path) -> None:
    rows = _table(db)
    assert rows and rows == _fitted(db)
    kinds = {(r[1], r[2]) for r in rows}
    assert kinds == {("", "pair"), ("", "player"), ("no_partnerships", "player")}
    pairs = [r for r in rows if r[2] == "pair"]
    assert all(r[3] == pair_name(tuple(str(r[3]).split(" & "))) and r[8] == 0 for r in pairs)
    assert all(r[7] == (float(str(r[5])) > PROVISIONAL_SIGMA) for r in rows)


def test_ingest_refreshes_the_ratings_when_games_change(db: Path, tmp_path: Path) -> None:
    copy = _copy(db, tmp_path)
    with duckdb.connect(str(copy)) as con:
        con.execute("UPDATE ratings SET mu = 99 WHERE options = ''")  # the group of the games stored below
    more = tmp_path / "more.jsonl"
    more.write_text("".join(line + "\n" for line in simulate_games(2, seed=7, players=6)), encoding="utf-8")
    same = runner.invoke(app, ["ingest", "--db", str(copy), "-w", "1", str(more)])
    assert same.exit_code == 0 and "ratings refreshed: " in same.output
    assert _table(copy) == _fitted(copy) and all(r[4] != 99 for r in _table(copy))
    with duckdb.connect(str(copy)) as con:
        con.execute("UPDATE ratings SET mu = 99")
    again = runner.invoke(app, ["ingest", "--db", str(copy), "-w", "1", str(more)])  # duplicates only: kept
    assert again.exit_code == 0 and "ratings refreshed" not in again.output
    assert {r[4] for r in _table(copy)} == {99}
    with duckdb.connect(str(copy)) as con:
        con.execute("DELETE FROM ratings")
        con.execute("DELETE FROM meta WHERE key = 'ratings_stamp'")  # as a store just upgraded to version 9
    runner.invoke(app, ["ingest", "--db", str(copy), "-w", "1", str(more)])  # not fitted to these games: filled
    assert _table(copy) == _fitted(copy)
    with duckdb.connect(str(copy), read_only=True) as con:
        assert ratings_current(con)


def test_the_ratings_command_refreshes_the_table(db: Path, tmp_path: Path) -> None:
    copy = _copy(db, tmp_path)
    with duckdb.connect(str(copy)) as con:
        con.execute("DELETE FROM ratings")
    assert runner.invoke(app, ["ratings", "--db", str(copy)]).exit_code == 0
    assert _table(copy) == _table(db)


def test_a_version_8_store_gains_an_empty_ratings_table_filled_at_the_next_refresh(tmp_path: Path) -> None:
    db = tmp_path / "v8.duckdb"
    with gzip.open(FIXTURES / "store-v8.duckdb.gz", "rb") as src, db.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    with duckdb.connect(str(db), read_only=True) as con:
        before = con.execute("SELECT game_id, status, score_ns, score_ew FROM games ORDER BY game_id").fetchall()
    with Store.open(db) as s:
        assert s.schema_version() == 9 and not ratings_current(s.con)
        assert s.con.execute("SELECT count(*) FROM ratings").fetchall() == [(0,)]
        assert (
            s.con.execute("SELECT game_id, status, score_ns, score_ew FROM games ORDER BY game_id").fetchall() == before
        )
        assert stored_ratings(s.con) == []
    result = runner.invoke(app, ["ratings", "--db", str(db)])
    assert result.exit_code == 0, result.output
    rows = _table(db)
    assert rows == _fitted(db) and {r[0] for r in rows} == {"standard", "pereulok", "bab-online"}
    with duckdb.connect(str(db), read_only=True) as con:
        assert ratings_current(con)
        assert con.execute("SELECT value FROM meta WHERE key = 'ratings_stamp'").fetchall() == [(games_stamp(con),)]


def test_a_rare_draws_narrow_interval_stays_finite() -> None:
    # Values met fitting 4,000 simulated games with one draw: the library's 1 − w rounds below 0 there.
    mu, sigma, margin = 0.18158572489991553, 1.4692068458546814, 0.002658719161634155
    _, w = ttt.v_w(mu, sigma, margin, True)
    assert 1 - w < 0
    got_mu, got_sigma = ratings_mod._trunc(mu, sigma, margin, True)
    assert abs(got_mu) < margin and got_sigma == pytest.approx(margin / math.sqrt(3))
    assert ratings_mod._trunc(0.0, 1.0, 0.1, False)[1] == pytest.approx(math.sqrt(1 - ttt.v_w(0.0, 1.0, 0.1, False)[1]))


def test_a_fit_that_fails_is_said_not_a_traceback(db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise ValueError("math domain error")

    monkeypatch.setattr(ttt.History, "convergence", broken)
    with pytest.raises(RatingError, match="could not fit"):
        ratings_of("standard", "", [Result((("A", "B"), ("C", "D")), (1.0, 0.0), 1)])
    copy = _copy(db, tmp_path)
    result = runner.invoke(app, ["ratings", "--db", str(copy)])
    assert result.exit_code == 2 and "could not fit" in result.output and "Traceback" not in result.output
    more = tmp_path / "more.jsonl"
    more.write_text("".join(line + "\n" for line in simulate_games(1, seed=8, players=6)), encoding="utf-8")
    stored = runner.invoke(app, ["ingest", "--db", str(copy), "-w", "1", str(more)])
    assert stored.exit_code == 0 and "ratings not refreshed: TrueSkill Through Time could not fit" in stored.output


def test_ingest_without_ratings_leaves_them(db: Path, tmp_path: Path) -> None:
    copy = _copy(db, tmp_path)
    with duckdb.connect(str(copy)) as con:
        con.execute("DELETE FROM ratings")
    more = tmp_path / "more.jsonl"
    more.write_text("".join(line + "\n" for line in simulate_games(1, seed=9, players=6)), encoding="utf-8")
    result = runner.invoke(app, ["ingest", "--db", str(copy), "-w", "1", "--no-ratings", str(more)])
    assert result.exit_code == 0 and "ratings refreshed" not in result.output and _table(copy) == []


def _count_fits(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Make every fit of a group's ratings log its ruleset and options."""
    calls: list[tuple[str, str]] = []
    real = ratings_mod.ratings_of

    def logged(ruleset: str, options: str, results: list[Result]) -> list[ratings_mod.Rating]:
        calls.append((ruleset, options))
        return real(ruleset, options, results)

    monkeypatch.setattr(ratings_mod, "ratings_of", logged)
    return calls


def _group_rows(db: Path, options: str) -> list[tuple[object, ...]]:
    return [r for r in _table(db) if r[1] == options]


def test_an_ingest_refits_only_the_groups_whose_games_changed(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = _copy(db, tmp_path)
    with duckdb.connect(str(copy)) as con:
        con.execute("UPDATE ratings SET mu = 99")  # a row refitted loses it
        solo_stamp = stored_stamps(con)["standard|no_partnerships"]
    calls = _count_fits(monkeypatch)
    more = tmp_path / "more.jsonl"
    more.write_text("".join(line + "\n" for line in simulate_games(2, seed=17, players=6)), encoding="utf-8")
    result = runner.invoke(app, ["ingest", "--db", str(copy), "-w", "1", str(more)])
    assert result.exit_code == 0 and "ratings refreshed: " in result.output
    assert calls == [("standard", "")]
    solo = _group_rows(copy, "no_partnerships")
    assert solo and {r[4] for r in solo} == {99}  # the other group's rows are left as they were
    assert _group_rows(copy, "") == [r for r in _fitted(copy) if r[1] == ""]
    with duckdb.connect(str(copy), read_only=True) as con:
        assert ratings_current(con) and stored_stamps(con)["standard|no_partnerships"] == solo_stamp


def test_a_replaced_game_makes_its_group_stale(db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy = _copy(db, tmp_path)
    rules = find_ruleset("standard", ("no_partnerships",))
    line = next(iter(simulate_games(3, seed=6, players=6, rules=rules)))
    changed = tmp_path / "changed.jsonl"
    changed.write_text("{ " + line[1:] + "\n", encoding="utf-8")  # the same game, other bytes
    calls = _count_fits(monkeypatch)
    result = runner.invoke(app, ["ingest", "--db", str(copy), "-w", "1", "--replace", str(changed)])
    assert result.exit_code == 0, result.output
    assert calls == [("standard", "no_partnerships")]
    assert _table(copy) == _fitted(copy)


def test_the_rows_of_a_group_without_games_are_dropped(db: Path, tmp_path: Path) -> None:
    copy = _copy(db, tmp_path)
    with duckdb.connect(str(copy)) as con:
        con.execute("INSERT INTO ratings VALUES ('pereulok', '', 'player', 'Gone', 1, 1, 3, false, 0)")
        stamps = {**stored_stamps(con), "pereulok|": "3 games, latest ingested at then"}
        con.execute("UPDATE meta SET value = ? WHERE key = 'ratings_stamp'", [ratings_mod.json.dumps(stamps)])
        assert not ratings_current(con)
        assert refresh_if_stale(con) == []  # nothing refitted, the gone group dropped
        assert ratings_current(con) and stored_stamps(con) == ratings_mod.json.loads(games_stamp(con))
    assert _table(copy) == _table(db)


def test_a_stamp_of_an_older_form_refits_every_group(db: Path, tmp_path: Path) -> None:
    copy = _copy(db, tmp_path)
    with duckdb.connect(str(copy)) as con:
        con.execute("UPDATE meta SET value = '9 games, latest ingested at then' WHERE key = 'ratings_stamp'")
        assert stored_stamps(con) == {} and not ratings_current(con)
        rows = refresh_if_stale(con)
        assert rows is not None and {r.options for r in rows} == {"", "no_partnerships"}
        assert refresh_if_stale(con) is None

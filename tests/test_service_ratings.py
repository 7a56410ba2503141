"""The service's ratings: refreshed in the background after uploads, given by ``GET /api/v1/players/{id}``,
shown on the players' pages with the luck ledger."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import duckdb
import pytest
from typer.testing import CliRunner

from backalley.analysis import ratings as ratings_mod
from backalley.analysis.ratings import MIN_PARTNERS, RATING_COLUMNS, ratings_current, store_ratings
from backalley.cli.app import app
from backalley.rules import find_ruleset
from backalley.simulate import simulate_games
from tests.helpers import AUTH, NDJSON, make_client

runner = CliRunner()


def _body(games: int, seed: int, players: int) -> bytes:
    return "".join(line + "\n" for line in simulate_games(games, seed=seed, players=players)).encode()


def _stored(cur: duckdb.DuckDBPyConnection) -> list[tuple[object, ...]]:
    return sorted(cur.execute(f"SELECT {', '.join(RATING_COLUMNS)} FROM ratings").fetchall())


def _refreshed(svc: Any, timeout: float = 60.0) -> None:
    """Wait until the figures recomputed in the background hold every write (the ratings are refreshed first):
    asking for them starts the recomputation once the last one has rested long enough."""
    deadline = time.monotonic() + timeout
    while svc.figures_behind() or svc._refreshing:
        assert time.monotonic() < deadline
        svc.metrics()
        time.sleep(0.05)


def test_uploads_refresh_the_ratings_and_the_api_gives_them(tmp_path: Path) -> None:
    with make_client(tmp_path / "s.duckdb", metrics_max_age=0) as client:
        svc = client.app.state.service  # type: ignore[attr-defined]
        svc.metrics()
        with svc.reader() as cur:
            assert _stored(cur) == []  # nothing stored: nothing rated
        assert client.post("/api/v1/games", content=_body(12, 31, 6), headers={**NDJSON, **AUTH}).status_code == 200
        _refreshed(svc)  # the figures recomputed after the upload: the ratings first
        with svc.reader() as cur:
            stored = _stored(cur)
            fitted = sorted(tuple(getattr(r, c) for c in RATING_COLUMNS) for r in store_ratings(cur))
            name = str(cur.execute("SELECT player_n FROM games LIMIT 1").fetchall()[0][0])
        assert stored and stored == fitted
        got = client.get(f"/api/v1/players/{name}").json()["ratings"]
        own = [r for r in got if r["kind"] == "player"]
        pairs = [r for r in got if r["kind"] == "pair"]
        assert len(own) == 1 and own[0]["subject"] == name and pairs
        assert all(name in r["subject"].split(" & ") and r["identifiable"] for r in pairs)
        mine = next(r for r in stored if r[2] == "player" and r[3] == name)
        assert own[0]["games"] == mine[6] and own[0]["partners"] == mine[8]
        if own[0]["identifiable"]:
            assert own[0]["conservative"] == own[0]["mu"] - 3 * own[0]["sigma"] and own[0]["why_not"] is None
        else:
            assert own[0]["mu"] is None and f"{MIN_PARTNERS} needed" in own[0]["why_not"]
        page = client.get(f"/players/{name}").text
        assert 'id="ratings"' in page and 'id="luck-ledger"' not in page  # no analysed deal: no ledger


def test_a_player_with_too_few_partners_has_no_rating_in_the_api(tmp_path: Path) -> None:
    with make_client(tmp_path / "s.duckdb", metrics_max_age=0) as client:
        svc = client.app.state.service  # type: ignore[attr-defined]
        assert client.post("/api/v1/games", content=_body(1, 32, 4), headers={**NDJSON, **AUTH}).status_code == 200
        _refreshed(svc)
        with svc.reader() as cur:
            name = str(cur.execute("SELECT player_n FROM games LIMIT 1").fetchall()[0][0])
        got = client.get(f"/api/v1/players/{name}").json()["ratings"]
        own = next(r for r in got if r["kind"] == "player")
        assert own["identifiable"] is False and own["mu"] is None and own["conservative"] is None
        assert own["why_not"] == f"1 distinct partners, {MIN_PARTNERS} needed" and own["provisional"]
        assert "not identifiable: 1 partner, 3 needed" in client.get(f"/players/{name}").text


def test_a_store_without_ratings_gets_them_when_the_service_starts_and_pages_show_the_ledger(tmp_path: Path) -> None:
    games, db = tmp_path / "games.jsonl", tmp_path / "s.duckdb"
    games.write_bytes(_body(6, 33, 6))
    assert runner.invoke(app, ["ingest", "--db", str(db), "-w", "1", str(games)]).exit_code == 0
    assert runner.invoke(app, ["analyze", "--db", str(db), "--max-cards", "2"]).exit_code == 0
    with duckdb.connect(str(db)) as con:
        con.execute("DELETE FROM ratings")
        con.execute("DELETE FROM meta WHERE key = 'ratings_stamp'")  # as a store just upgraded to version 9
        name = str(con.execute("SELECT player_n FROM games LIMIT 1").fetchall()[0][0])
    with make_client(db) as client:
        svc = client.app.state.service  # type: ignore[attr-defined]
        svc.metrics()
        with svc.reader() as cur:
            assert _stored(cur) == sorted(tuple(getattr(r, c) for c in RATING_COLUMNS) for r in store_ratings(cur))
            assert _stored(cur)
        page = client.get(f"/players/{name}").text
    ledger = page.split('id="luck-ledger"')[1]
    assert "luck-adjusted points / deal" in ledger and "Cards, bidding and play" in ledger and 'id="ratings"' in page


def test_uploads_the_service_stopped_before_rating_are_rated_when_it_starts_again(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    with make_client(db, metrics_max_age=3600) as client:
        svc = client.app.state.service  # type: ignore[attr-defined]
        svc.metrics()  # the figures (and ratings) of the empty store; the next wait an hour
        assert client.post("/api/v1/games", content=_body(6, 34, 6), headers={**NDJSON, **AUTH}).status_code == 200
    with duckdb.connect(str(db), read_only=True) as con:
        assert _stored(con) == [] and not ratings_current(con)
    with make_client(db) as client:
        svc = client.app.state.service  # type: ignore[attr-defined]
        svc.metrics()
        with svc.reader() as cur:
            assert ratings_current(cur) and _stored(cur)


def test_the_background_refit_refits_only_the_groups_whose_games_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[str, str]] = []
    real = ratings_mod.ratings_of

    def logged(ruleset: str, options: str, results: list[ratings_mod.Result]) -> list[ratings_mod.Rating]:
        calls.append((ruleset, options))
        return real(ruleset, options, results)

    monkeypatch.setattr(ratings_mod, "ratings_of", logged)
    solo = find_ruleset("standard", ("no_partnerships",))
    with make_client(tmp_path / "s.duckdb", metrics_max_age=0) as client:
        svc = client.app.state.service  # type: ignore[attr-defined]
        svc.metrics()
        assert client.post("/api/v1/games", content=_body(4, 35, 6), headers={**NDJSON, **AUTH}).status_code == 200
        _refreshed(svc)
        assert calls == [("standard", "")]
        body = "".join(line + "\n" for line in simulate_games(3, seed=36, players=6, rules=solo)).encode()
        assert client.post("/api/v1/games", content=body, headers={**NDJSON, **AUTH}).status_code == 200
        _refreshed(svc)
        assert calls == [("standard", ""), ("standard", "no_partnerships")]
        with svc.reader() as cur:
            assert ratings_current(cur)
            assert _stored(cur) == sorted(tuple(getattr(r, c) for c in RATING_COLUMNS) for r in store_ratings(cur))

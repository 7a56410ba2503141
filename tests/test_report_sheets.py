"""Score sheets in the report: counted in every figure that needs no card, left out (and said so) of
the double-dummy figures and of the trump breakdown when a sheet does not say its trump."""

from __future__ import annotations

import json
import random
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from backalley.cli.app import app
from backalley.reporting import write_reports
from backalley.reporting.dd_sections import sheets_left_out
from backalley.simulate import as_sheet, make_record, player_pool, simulate_games

RUN = CliRunner()


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("sheets-report")
    games = folder / "games.jsonl"
    games.write_text("".join(line + "\n" for line in simulate_games(2, seed=21, players=6)), encoding="utf-8")
    sheets = []
    for k in range(2):
        sheet = as_sheet(make_record(f"table-{k}", random.Random(k), player_pool(6), k))
        for d in sheet["deals"]:
            d.pop("trump", None)  # a table that does not write the trump down
        sheets.append(json.dumps(sheet))
    (folder / "sheets.jsonl").write_text("\n".join(sheets) + "\n", encoding="utf-8")
    db = folder / "store.duckdb"
    assert RUN.invoke(app, ["ingest", "--db", str(db), str(games), str(folder / "sheets.jsonl")]).exit_code == 0
    assert RUN.invoke(app, ["analyze", "--db", str(db), "--max-cards", "3"]).exit_code == 0
    return db


def test_sheets_count_where_no_card_is_needed_and_are_left_out_of_double_dummy(store: Path, tmp_path: Path) -> None:
    with duckdb.connect(str(store), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM games WHERE sheet AND status = 'valid'").fetchone() == (2,)
        assert con.execute(
            "SELECT count(*) FROM dd_deals WHERE game_id IN (SELECT game_id FROM games WHERE sheet)"
        ).fetchone() == (0,)
        in_figures = con.execute(
            "SELECT count(DISTINCT game_id) FROM player_deals WHERE game_id LIKE 'table-%'"
        ).fetchone()
    assert in_figures == (2,)  # the view the figures read holds the sheets' deals
    write_reports(store, tmp_path, workers=1)
    index = (tmp_path / "index.html").read_text(encoding="utf-8")
    assert sheets_left_out(2) in index.split('id="bid-vs-makeable"')[1]
    page = next(p for p in (tmp_path / "players").glob("*.html"))
    assert "score sheets that do not say the trump" in page.read_text(encoding="utf-8")


def test_without_sheets_nothing_is_said(tmp_path: Path) -> None:
    games = tmp_path / "games.jsonl"
    games.write_text("".join(line + "\n" for line in simulate_games(2, seed=22, players=6)), encoding="utf-8")
    db = tmp_path / "s.duckdb"
    assert RUN.invoke(app, ["ingest", "--db", str(db), str(games)]).exit_code == 0
    assert RUN.invoke(app, ["analyze", "--db", str(db), "--max-cards", "3"]).exit_code == 0
    write_reports(db, tmp_path / "out", workers=1)
    assert "score sheet" not in (tmp_path / "out" / "index.html").read_text(encoding="utf-8")

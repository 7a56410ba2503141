"""Score sheets end to end: validate, ingest, show and the `sheet` commands from the command line,
and uploads of CSV through the API and the upload page."""

from __future__ import annotations

import json
import random
from pathlib import Path

import duckdb
from typer.testing import CliRunner

from backalley.cli.app import app
from backalley.records.sheets import sheet_csv
from backalley.simulate import as_sheet, make_record, player_pool
from tests.helpers import AUTH, TOKEN, make_client

RUN = CliRunner()


def sheet_text(game_id: str, seed: int) -> str:
    rec = make_record(game_id, random.Random(seed), player_pool(8), seed)
    return sheet_csv(as_sheet(rec))


def two_games(tmp_path: Path, broken: bool = True) -> Path:
    first = sheet_text("kitchen-1", 1)
    second = sheet_text("kitchen-2", 2).partition("\n")[2]
    if broken:  # a player's tricks written as a word, on the second game's fifth row
        lines = second.splitlines(keepends=True)
        cells = lines[4].split(",")
        cells[6] = "five"
        lines[4] = ",".join(cells)
        second = "".join(lines)
    f = tmp_path / "Table.CSV"
    f.write_text(first + second, encoding="utf-8")
    return f


def test_validate_reads_a_csv_file_game_by_game(tmp_path: Path) -> None:
    f = two_games(tmp_path)
    result = RUN.invoke(app, ["validate", "--json", str(f)])
    assert result.exit_code == 1, result.output
    reports = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["game_id"], r["valid"], r["sheet"]) for r in reports] == [
        ("kitchen-1", True, True),
        ("kitchen-2", False, True),
    ]
    assert reports[0]["line"] == 2 and reports[1]["line"] > 100
    (v,) = reports[1]["violations"]
    first_row = reports[1]["line"]
    assert v["code"] == "SCHEMA" and f"line {first_row + 4}: tricks 'five'" in v["message"]
    assert "Traceback" not in result.output


def test_validate_finds_csv_files_in_a_folder(tmp_path: Path) -> None:
    two_games(tmp_path, broken=False)
    result = RUN.invoke(app, ["validate", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "2 records: 2 valid" in result.output


def test_ingest_and_show_a_sheet(tmp_path: Path) -> None:
    f = two_games(tmp_path)
    db = tmp_path / "s.duckdb"
    result = RUN.invoke(app, ["ingest", "--db", str(db), str(f)])
    assert result.exit_code == 1, result.output  # one game is invalid (and stored)
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT game_id, sheet, status FROM games ORDER BY 1").fetchall() == [
            ("kitchen-1", True, "valid"),
            ("kitchen-2", True, "invalid"),
        ]
        raw = con.execute("SELECT source, line FROM games WHERE game_id = 'kitchen-1'").fetchone()
        assert raw == (str(f), 2)
    raw_text = RUN.invoke(app, ["raw", "--db", str(db), "kitchen-1"])
    assert raw_text.exit_code == 0 and raw_text.stdout == sheet_text("kitchen-1", 1)
    shown = RUN.invoke(app, ["show", "--db", str(db), "kitchen-1"])
    assert shown.exit_code == 0, shown.output
    assert "Score sheet kitchen-1" in shown.output and "without cards" in shown.output


def test_sheet_template_and_print(tmp_path: Path) -> None:
    result = RUN.invoke(app, ["sheet", "template", "--ruleset", "standard", "--options", "short_deck"])
    assert result.exit_code == 0
    assert len(result.stdout.splitlines()) == 1 + 4 * 19
    bad = RUN.invoke(app, ["sheet", "template", "--ruleset", "bridge"])
    assert bad.exit_code == 2 and "bridge" in bad.output and "Traceback" not in bad.output
    folder = RUN.invoke(app, ["sheet", "print", "-o", str(tmp_path)])
    assert folder.exit_code == 2 and "is a folder" in folder.output


def test_simulate_sheet_as_csv_validates(tmp_path: Path) -> None:
    out = tmp_path / "sim.csv"
    result = RUN.invoke(app, ["simulate", "--games", "3", "--sheet", "-o", str(out), "--ruleset", "bab-online"])
    assert result.exit_code == 0, result.output
    checked = RUN.invoke(app, ["validate", str(out)])
    assert checked.exit_code == 0 and "3 records: 3 valid" in checked.output


def test_the_api_takes_text_csv_and_the_page_a_csv_file(tmp_path: Path) -> None:
    body = (sheet_text("net-1", 3) + sheet_text("net-2", 4).partition("\n")[2]).encode()
    with make_client(tmp_path / "api.duckdb") as client:
        r = client.post("/api/v1/games", content=body, headers={"content-type": "text/csv", **AUTH})
        assert r.status_code == 200, r.text
        out = r.json()
        assert out["fates"]["stored"] == 2
        assert [x["report"]["sheet"] for x in out["results"]] == [True, True]
        page = client.post("/upload", data={"token": TOKEN}, files={"file": ("club.csv", body, "text/csv")})
        assert page.status_code == 200 and "net-1" in page.text
        game = client.get("/api/v1/games/net-1", headers=AUTH)
        assert game.status_code == 200

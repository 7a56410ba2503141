"""End-to-end tests of the ``backalley`` command line (validate, schema, help)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from backalley.cli.app import app
from tests.helpers import random_record

runner = CliRunner()
REPORT_KEYS = {"source", "line", "game_id", "valid", "complete", "sheet", "violations", "deals", "final_score"}
VIOLATION_KEYS = {"code", "severity", "message", "path", "deal", "trick", "seat"}


@pytest.fixture
def games(tmp_path: Path) -> Path:
    """A folder with a valid complete game, an invalid one, a bad line and a nested .json file."""
    good = random_record(21)
    bad = random_record(22)
    bad["game_id"] = "bad-1"
    bad["deals"][0]["result"]["points"]["NS"] += 1  # RESULT_MISMATCH in deal 1
    (tmp_path / "sub").mkdir()
    lines = [json.dumps(good), "", "{not json", json.dumps(bad), "[1, 2]"]
    (tmp_path / "games.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "sub" / "one.json").write_text(json.dumps(random_record(23, deals=2)), encoding="utf-8")
    (tmp_path / "notes.txt").write_text("not a record, not read inside a folder", encoding="utf-8")
    return tmp_path


def run_json(*args: str) -> tuple[int, list[dict[str, Any]]]:
    result = runner.invoke(app, ["validate", "--json", *args])
    return result.exit_code, [json.loads(line) for line in result.stdout.splitlines()]


def test_validate_json_report_has_the_shape_of_record_md(games: Path) -> None:
    code, reports = run_json(str(games))
    assert code == 1
    for r in reports:
        assert set(r) == REPORT_KEYS
        for v in r["violations"]:
            assert set(v) == VIOLATION_KEYS
    # sorted order inside the folder: games.jsonl before sub/one.json; the blank line is skipped
    assert [(Path(r["source"]).name, r["line"]) for r in reports] == [
        ("games.jsonl", 1),
        ("games.jsonl", 3),
        ("games.jsonl", 4),
        ("games.jsonl", 5),
        ("one.json", None),
    ]
    assert reports[0]["source"] == str(games / "games.jsonl")
    good, not_json, bad, array, partial = reports
    assert good["valid"] and good["complete"] and good["violations"] == []
    assert len(good["deals"]) >= 25 and good["final_score"] is not None
    assert not_json["violations"][0]["code"] == "JSON" and not_json["game_id"] is None
    assert not_json["deals"] == [] and not_json["final_score"] is None
    assert [v["code"] for v in bad["violations"]] == ["RESULT_MISMATCH"]
    assert bad["violations"][0]["path"] == "/deals/0/result" and bad["violations"][0]["deal"] == 1
    assert array["violations"] == [
        {
            "code": "SCHEMA",
            "severity": "error",
            "message": array["violations"][0]["message"],
            "path": "",
            "deal": None,
            "trick": None,
            "seat": None,
        }
    ]
    assert partial["valid"] and not partial["complete"]
    assert [v["code"] for v in partial["violations"]] == ["INCOMPLETE"]
    assert partial["violations"][0]["severity"] == "warning"


def test_validate_exit_0_when_all_valid(tmp_path: Path) -> None:
    f = tmp_path / "g.json"
    f.write_text(json.dumps(random_record(24, deals=3)), encoding="utf-8")
    result = runner.invoke(app, ["validate", str(f)])
    assert result.exit_code == 0, result.stdout
    assert "incomplete" in result.stdout and "1 records: 0 valid, 1 incomplete, 0 invalid" in result.stdout


def test_validate_human_output_names_every_violation(games: Path) -> None:
    result = runner.invoke(app, ["validate", str(games / "games.jsonl")])
    assert result.exit_code == 1
    out = result.stdout
    assert "invalid" in out and "bad-1" in out
    assert "RESULT_MISMATCH (deal 1)" in out and "/deals/0/result" in out
    assert "JSON" in out and f"{games / 'games.jsonl'}:3" in out
    assert "4 records: 1 valid, 0 incomplete, 3 invalid" in out


def test_validate_human_output_numbers_deals_from_1_beside_their_pointers() -> None:
    """A pointer counts deals from 0 (``/deals/6``), every line from 1: the line says "deal 7" beside it."""
    from backalley.cli.app import deal_of_pointer

    assert [deal_of_pointer(p) for p in ("/deals/6/number", "/deals/24", "/deals", "/final_score", None)] == [
        7,
        25,
        None,
        None,
        None,
    ]


def test_validate_missing_path_is_a_usage_error_before_any_output(games: Path) -> None:
    result = runner.invoke(app, ["validate", "--json", str(games), str(games / "missing.jsonl")])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "missing.jsonl" in result.stderr and "no such file" in result.stderr


def test_validate_unknown_option_is_a_usage_error(games: Path) -> None:
    assert runner.invoke(app, ["validate", "--bogus", str(games)]).exit_code == 2


def test_validate_with_workers_gives_the_same_report(games: Path) -> None:
    code1, one = run_json(str(games))
    code2, two = run_json("--workers", "2", str(games))
    assert (code1, one) == (code2, two)


def test_schema_command_prints_the_committed_schema() -> None:
    result = runner.invoke(app, ["schema"])
    assert result.exit_code == 0
    committed = Path(__file__).resolve().parent.parent / "schemas" / "game-record.v1.schema.json"
    assert result.stdout == committed.read_text(encoding="utf-8")


def test_every_command_has_help_text() -> None:
    import typer.main

    group = typer.main.get_command(app)
    names = sorted(group.commands)  # type: ignore[attr-defined]
    assert {"validate", "schema", "simulate"} <= set(names)
    for name in names:
        cmd = group.commands[name]  # type: ignore[attr-defined]
        assert cmd.help and cmd.help.strip(), f"`backalley {name}` has no help text"
        result = runner.invoke(app, [name, "--help"])
        assert result.exit_code == 0 and "Usage" in result.stdout


def test_python_dash_m_backalley_runs(tmp_path: Path) -> None:
    f = tmp_path / "g.json"
    f.write_text("{}", encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "backalley", "validate", "--json", str(f)], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 1
    report = json.loads(proc.stdout)
    assert report["source"] == str(f) and report["violations"][0]["code"] == "SCHEMA"

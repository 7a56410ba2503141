"""Inputs through the CLI: stdin, extensions in any case, one source however named, nothing skipped silently."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from backalley.cli.app import app
from tests.store_games import game_lines

runner = CliRunner()
ROOT = Path(__file__).resolve().parent.parent


def reports(*args: str, stdin: bytes | None = None) -> tuple[int, list[dict[str, Any]], str]:
    result = runner.invoke(app, ["validate", "--json", *args], input=stdin)
    return result.exit_code, [json.loads(line) for line in result.stdout.splitlines()], result.stderr


def ingest(db: Path, *args: str, stdin: bytes | None = None) -> tuple[int, dict[str, Any], str]:
    result = runner.invoke(app, ["ingest", "--json", "--db", str(db), "-w", "1", *args], input=stdin)
    summary = json.loads(result.stdout) if result.stdout.strip() else {}
    return result.exit_code, summary, result.stderr


def rejects(db: Path) -> list[dict[str, Any]]:
    sql = "SELECT source, line, reason, message FROM rejects ORDER BY source, line"
    result = runner.invoke(app, ["query", sql, "--db", str(db), "-F", "json"])
    assert result.exit_code == 0, result.output
    return list(json.loads(result.stdout))


@pytest.fixture
def two_games() -> list[str]:
    return game_lines(2, seed=31, deals=2)


def test_stdin_for_validate_and_ingest(tmp_path: Path, two_games: list[str]) -> None:
    data = ("\n".join(two_games) + "\n{broken\n").encode()
    code, got, _ = reports("-", stdin=data)
    assert code == 1
    assert [(r["source"], r["line"], r["valid"]) for r in got] == [("-", 1, True), ("-", 2, True), ("-", 3, False)]
    code, summary, _ = ingest(tmp_path / "s.duckdb", "-", stdin=data)
    assert code == 1 and (summary["inserted"], summary["rejected"]) == (2, 1)
    assert rejects(tmp_path / "s.duckdb")[0]["source"] == "-"


def test_extensions_in_any_case(tmp_path: Path, two_games: list[str]) -> None:
    (tmp_path / "A.JSON").write_text(two_games[0], encoding="utf-8")
    (tmp_path / "b.JsonL").write_text(two_games[1] + "\n" + two_games[0] + "\n", encoding="utf-8")
    (tmp_path / "c.txt").write_text("{not read", encoding="utf-8")
    code, got, _ = reports(str(tmp_path))
    assert code == 0
    assert [(Path(r["source"]).name, r["line"]) for r in got] == [("A.JSON", None), ("b.JsonL", 1), ("b.JsonL", 2)]


def test_one_folder_named_three_ways_is_one_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, two_games: list[str]
) -> None:
    folder = tmp_path / "x"
    folder.mkdir()
    (folder / "g.jsonl").write_text(two_games[0] + "\n{bad\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    code, got, _ = reports("x", "./x", str(folder), "x/g.jsonl")
    assert code == 1 and len(got) == 2
    code, summary, _ = ingest(tmp_path / "s.duckdb", "x", "./x", str(folder))
    assert summary["records"] == 2 and summary["rejected"] == 1
    assert len(rejects(tmp_path / "s.duckdb")) == 1


def test_a_utf8_bom_is_not_a_json_error(tmp_path: Path, two_games: list[str]) -> None:
    bom = b"\xef\xbb\xbf"
    (tmp_path / "one.json").write_bytes(bom + two_games[0].encode())
    (tmp_path / "many.jsonl").write_bytes(bom + "\n".join(two_games).encode() + b"\n")
    code, got, _ = reports(str(tmp_path))
    assert code == 0 and len(got) == 3 and all(r["valid"] for r in got)
    code, got, _ = reports("-", stdin=bom + two_games[1].encode() + b"\n")
    assert code == 0 and got[0]["valid"]


def test_fifos_and_devices_named_json_are_reported_not_read(tmp_path: Path, two_games: list[str]) -> None:
    (tmp_path / "good.json").write_text(two_games[0], encoding="utf-8")
    os.mkfifo(tmp_path / "pipe.jsonl")  # nobody writes: reading it would hang
    (tmp_path / "dev.json").symlink_to("/dev/zero")  # reading it would never end
    (tmp_path / "gone.json").symlink_to(tmp_path / "missing.json")
    code, got, err = reports(str(tmp_path))
    assert code == 1
    by_name = {Path(r["source"]).name: r for r in got}
    assert set(by_name) == {"good.json", "pipe.jsonl", "dev.json", "gone.json"}
    assert by_name["good.json"]["valid"]
    for name in ("pipe.jsonl", "dev.json", "gone.json"):
        assert by_name[name]["violations"][0]["code"] == "JSON"
        assert name in err
    code, summary, err = ingest(tmp_path / "s.duckdb", str(tmp_path))
    assert (summary["inserted"], summary["rejected"]) == (1, 3)
    assert {Path(r["source"]).name for r in rejects(tmp_path / "s.duckdb")} == {"pipe.jsonl", "dev.json", "gone.json"}


def test_symlinked_folders_are_followed_once(tmp_path: Path, two_games: list[str]) -> None:
    real = tmp_path / "real"
    (real / "sub").mkdir(parents=True)
    (real / "sub" / "g.json").write_text(two_games[0], encoding="utf-8")
    (real / "sub" / "loop").symlink_to(real)  # a loop back to the top
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "h.json").write_text(two_games[1], encoding="utf-8")
    (real / "linked").symlink_to(elsewhere)
    code, got, _ = reports(str(real))
    assert code == 0
    assert sorted(Path(r["source"]).name for r in got) == ["g.json", "h.json"]


def test_an_unreadable_subfolder_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, two_games: list[str]
) -> None:
    (tmp_path / "locked").mkdir()
    (tmp_path / "locked" / "g.json").write_text(two_games[0], encoding="utf-8")
    (tmp_path / "ok.json").write_text(two_games[1], encoding="utf-8")
    real_scandir = os.scandir

    def scandir(path: Any) -> Any:  # a folder without permission (the tests may run as root)
        if Path(path).name == "locked":
            raise PermissionError(13, "Permission denied")
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    code, got, err = reports(str(tmp_path))
    assert code == 1
    locked = next(r for r in got if Path(r["source"]).name == "locked")
    assert locked["violations"][0]["code"] == "JSON" and "Permission denied" in locked["violations"][0]["message"]
    assert "locked" in err and "Permission denied" in err
    code, summary, _ = ingest(tmp_path / "s.duckdb", str(tmp_path))
    assert (summary["inserted"], summary["rejected"]) == (1, 1)


@pytest.mark.skipif(sys.platform != "linux", reason="file names as arbitrary bytes: Linux file systems")
def test_non_utf8_file_names_are_shown_with_replacement_characters(tmp_path: Path, two_games: list[str]) -> None:
    folder = os.fsencode(tmp_path / "in")
    os.mkdir(folder)
    name = folder + b"/caf\xe9.jsonl"  # Latin-1 "café"
    with open(name, "wb") as fh:
        fh.write(two_games[0].encode() + b"\n{bad\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "pipeline")}
    cmd = [sys.executable, "-m", "backalley"]
    result = subprocess.run([*cmd, "validate", "--json", folder], capture_output=True, env=env, check=False)
    assert result.returncode == 1, result.stderr
    sources = [json.loads(line)["source"] for line in result.stdout.splitlines()]
    assert sources == [str(tmp_path / "in" / "caf\ufffd.jsonl")] * 2
    db = tmp_path / "s.duckdb"
    result = subprocess.run(
        [*cmd, "ingest", "--json", "--db", str(db), folder], capture_output=True, env=env, check=False
    )
    assert result.returncode == 1 and b"Traceback" not in result.stderr, result.stderr
    assert json.loads(result.stdout)["inserted"] == 1
    assert rejects(db)[0]["source"] == str(tmp_path / "in" / "caf\ufffd.jsonl")


@pytest.mark.parametrize("command", ["validate", "ingest"])
def test_no_records_is_said(tmp_path: Path, command: str) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("not a record", encoding="utf-8")
    blank = tmp_path / "blank.jsonl"
    blank.write_text("\n   \n", encoding="utf-8")
    for path in (empty, blank):
        args = [command, str(path)] + (["--db", str(tmp_path / "s.duckdb")] if command == "ingest" else [])
        result = runner.invoke(app, args)
        assert result.exit_code == 2, result.output
        assert "no records" in result.stderr and path.name in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1

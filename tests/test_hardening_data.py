"""Issue 29 (hardening, round 3), the data findings: nothing a command writes lands on the database,
its WAL or its lake; nothing wrongly accepted; no crash on huge numbers; bounded reports.

Each test names the finding it covers and uses the input the issue names.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import duckdb
import pytest
from typer.testing import CliRunner

from backalley.cli import app
from tests.store_games import game_lines

runner = CliRunner()


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """A store of 3 games whose meta names an attached lake folder (as `backalley attach` records it)."""
    f = write_lines(tmp_path / "games.jsonl", game_lines(3, seed=5, deals=2))
    db = tmp_path / "s.duckdb"
    result = runner.invoke(app, ["ingest", str(f), "--db", str(db), "--workers", "1"])
    assert result.exit_code == 0, result.output
    lake = tmp_path / "lake"
    (lake / "g_games").mkdir(parents=True)
    (lake / "g_games" / "part-0.parquet").write_bytes(b"PAR1 data")
    with duckdb.connect(str(db)) as con:
        con.execute("INSERT INTO meta VALUES ('lake', ?)", [str(lake) + "/"])
    return db


def files_under(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def game_id(db: Path) -> str:
    with duckdb.connect(str(db), read_only=True) as con:
        return str(con.execute("SELECT min(game_id) FROM g_games").fetchall()[0][0])


def protected_targets(db: Path) -> list[Path]:
    """The database, its WAL (made to exist), a link to the database, a file inside the lake."""
    wal = db.with_name(db.name + ".wal")
    wal.write_bytes(b"wal")
    link = db.parent / "link.duckdb"
    link.symlink_to(db)
    return [db, wal, link, db.parent / "." / db.name, db.parent / "lake" / "g_games" / "part-0.parquet"]


def assert_refused(result: Any) -> None:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and len(result.stderr.strip().splitlines()) == 1
    assert "database" in result.stderr or "lake" in result.stderr


def test_raw_output_never_overwrites_the_database_its_wal_or_its_lake(store: Path) -> None:
    before, lake = store.read_bytes(), files_under(store.parent / "lake")
    gid = game_id(store)
    for target in protected_targets(store):
        for force in ([], ["--force"]):
            assert_refused(runner.invoke(app, ["raw", gid, "--db", str(store), "-o", str(target), *force]))
    assert store.read_bytes() == before and files_under(store.parent / "lake") == lake
    assert store.with_name(store.name + ".wal").read_bytes() == b"wal"


def test_query_out_never_writes_into_the_lake(store: Path) -> None:
    lake = files_under(store.parent / "lake")
    for target in protected_targets(store):
        result = runner.invoke(
            app, ["query", "SELECT 1", "-F", "csv", "-o", str(target), "--force", "--db", str(store)]
        )
        assert_refused(result)
    assert files_under(store.parent / "lake") == lake


@pytest.mark.parametrize("where", ["lake/new", "lake/g_games/new", "lake", "."])
def test_export_never_writes_into_or_over_the_lake_or_the_database(store: Path, where: str) -> None:
    before, lake = store.read_bytes(), files_under(store.parent / "lake")
    out = store.parent / where
    result = runner.invoke(app, ["export", str(out), "--db", str(store), "--force"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    if where.startswith("lake/"):
        assert "is inside the lake attached to the database" in result.stderr
    assert store.read_bytes() == before and files_under(store.parent / "lake") == lake


def test_report_out_never_writes_into_the_lake_or_over_the_database(store: Path, tmp_path: Path) -> None:
    before, lake = store.read_bytes(), files_under(store.parent / "lake")
    for out in (store.parent / "lake", store.parent / "lake" / "g_games" / "pages"):
        assert_refused(runner.invoke(app, ["report", "--db", str(store), "--out", str(out)]))
    named = tmp_path / "pages"
    named.mkdir()
    db = named / "summary.md"  # a database whose name is one of the report's files
    os.link(store, db)
    assert_refused(runner.invoke(app, ["report", "--db", str(db), "--out", str(named)]))
    assert store.read_bytes() == before and files_under(store.parent / "lake") == lake
    ok = runner.invoke(app, ["report", "--db", str(store), "--out", str(store.parent)])  # beside the database: fine
    assert ok.exit_code == 0, ok.output
    assert store.read_bytes() == before


def test_simulate_out_never_overwrites_the_database(
    store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BACKALLEY_DB", str(store))
    before = store.read_bytes()
    for target in protected_targets(store):
        assert_refused(runner.invoke(app, ["simulate", "--games", "1", "--workers", "1", "--out", str(target)]))
    assert store.read_bytes() == before
    ok = runner.invoke(app, ["simulate", "--games", "1", "--workers", "1", "--out", str(tmp_path / "g.jsonl")])
    assert ok.exit_code == 0, ok.output
    assert json.loads((tmp_path / "g.jsonl").read_text(encoding="utf-8"))["game_id"]

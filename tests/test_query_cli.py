"""``backalley query``: every output format over every column type, parameters, --out, limits, the read-only wall."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from backalley.cli.app import app
from tests.helpers import make_inputs, snapshot

runner = CliRunner()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A database holding the mixed input set of test_store (rejects with BLOBs, an ingest run, games)."""
    make_inputs(tmp_path / "in")
    path = tmp_path / "s.duckdb"
    result = runner.invoke(app, ["ingest", str(tmp_path / "in"), "--db", str(path), "--workers", "1"])
    assert result.exit_code == 1, result.output
    return path


FORMATS = ["csv", "json", "ndjson", "parquet", "table"]
JOIN = (
    "SELECT g.game_id, d.game_id, d.deal FROM games g JOIN deals d ON d.game_id = g.game_id ORDER BY g.game_id, d.deal"
)


def run(db: Path, tmp_path: Path, sql: str, fmt: str, *extra: str) -> tuple[int, str, str]:
    """Exit code, the result text (parquet: read back as JSON lines) and stderr."""
    args = ["query", sql, "--db", str(db), "--format", fmt, *extra]
    if fmt == "parquet":
        out = tmp_path / f"r{len(list(tmp_path.iterdir()))}.parquet"
        result = runner.invoke(app, [*args, "--out", str(out)])
        rows = pq.read_table(out).to_pylist() if result.exit_code == 0 else []
        text = "".join(json.dumps(r, default=str) + "\n" for r in rows)
        return result.exit_code, text, result.stderr
    result = runner.invoke(app, args)
    return result.exit_code, result.stdout, result.stderr


def rows_of(fmt: str, text: str) -> list[list[str]] | list[dict[str, object]]:
    if fmt == "csv":
        return list(csv.reader(io.StringIO(text)))
    if fmt == "json":
        return list(json.loads(text))
    return [json.loads(line) for line in text.splitlines()]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("table", ["ingest_runs", "rejects", "games", "violations"])
def test_every_table_in_every_format(db: Path, tmp_path: Path, fmt: str, table: str) -> None:
    """Lists (ingest_runs.paths), BLOBs (rejects.raw_bytes), timestamps: written by DuckDB's writers."""
    code, text, err = run(db, tmp_path, f"SELECT * FROM {table}", fmt)
    assert code == 0, err
    assert "Traceback" not in err and "panicked" not in err
    if fmt == "table":
        assert "rows)" in text
        return
    rows = rows_of(fmt, text)
    count = runner.invoke(app, ["query", f"SELECT count(*) AS n FROM {table}", "--db", str(db), "-F", "csv"])
    n = int(count.stdout.splitlines()[1])
    assert len(rows) == n + (1 if fmt == "csv" else 0)


def test_list_and_blob_values(db: Path, tmp_path: Path) -> None:
    code, text, _ = run(db, tmp_path, "SELECT paths FROM ingest_runs", "csv")
    assert code == 0 and text.splitlines()[1].startswith("[") and "in" in text
    code, text, _ = run(db, tmp_path, "SELECT raw_bytes FROM rejects WHERE raw_bytes IS NOT NULL", "json")
    assert code == 0 and "\\\\xFF" in text  # the BLOB's bytes, escaped as DuckDB does
    code, text, _ = run(
        db, tmp_path, "SELECT [1, 2] AS l, {'a': 1} AS s, TIMESTAMP '2026-01-02 03:04:05' AS t", "ndjson"
    )
    assert json.loads(text) == {"l": [1, 2], "s": {"a": 1}, "t": "2026-01-02 03:04:05"}


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_join_with_two_game_id_columns(db: Path, tmp_path: Path, fmt: str) -> None:
    code, text, err = run(db, tmp_path, JOIN, fmt)
    assert code == 0, err
    if fmt == "table":
        header = text.splitlines()[1]
        assert header.count("game_id") == 2
        return
    rows = rows_of(fmt, text)
    if fmt == "csv":
        assert rows[0] == ["game_id", "game_id_1", "deal"]
        assert all(r[0] == r[1] for r in rows[1:])
    else:
        assert all(r["game_id"] == r["game_id_1"] for r in rows)  # type: ignore[index, call-overload]
    assert len(rows) > 8


def test_named_parameters(db: Path) -> None:
    sql = "SELECT game_id FROM games WHERE game_id = $id OR scored_deals > $n::INTEGER ORDER BY game_id"
    result = runner.invoke(app, ["query", sql, "-p", "id", "inv-1", "--param", "n", "20", "-F", "csv", "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == ["game_id", "full00000", "inv-1"]
    literal = runner.invoke(
        app, ["query", "SELECT $x AS x", "-p", "x", "[/]; DROP TABLE games", "-F", "csv", "--db", str(db)]
    )
    assert literal.stdout.splitlines() == ["x", "[/]; DROP TABLE games"]
    missing = runner.invoke(app, ["query", sql, "-p", "id", "x", "--db", str(db)])
    assert missing.exit_code == 2 and "$n" in missing.stderr
    unused = runner.invoke(app, ["query", "SELECT 1", "-p", "zz", "1", "--db", str(db)])
    assert unused.exit_code == 2 and "$zz" in unused.stderr
    twice = runner.invoke(app, ["query", "SELECT $a", "-p", "a", "1", "-p", "a", "2", "--db", str(db)])
    assert twice.exit_code == 2 and "twice" in twice.stderr


def test_out_refuses_to_overwrite_without_force(db: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.csv"
    out.write_text("precious\n", encoding="utf-8")
    refused = runner.invoke(app, ["query", "SELECT 1 AS x", "-F", "csv", "-o", str(out), "--db", str(db)])
    assert refused.exit_code == 2 and "already exists" in refused.stderr and "--force" in refused.stderr
    assert out.read_text(encoding="utf-8") == "precious\n"
    forced = runner.invoke(app, ["query", "SELECT 1 AS x", "-F", "csv", "-o", str(out), "--force", "--db", str(db)])
    assert forced.exit_code == 0 and out.read_text(encoding="utf-8") == "x\n1\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".partial")] == []


def test_out_never_overwrites_the_database_or_its_wal(db: Path, tmp_path: Path) -> None:
    before = snapshot(db)
    raw = db.read_bytes()
    wal = db.with_name(db.name + ".wal")
    wal.write_bytes(b"wal")
    link = tmp_path / "link.duckdb"
    link.symlink_to(db)
    for target in (db, wal, link, tmp_path / "." / db.name):
        for force in ([], ["--force"]):
            result = runner.invoke(app, ["query", "SELECT 1", "-F", "csv", "-o", str(target), *force, "--db", str(db)])
            assert result.exit_code == 2, (target, force)
            assert "database" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert db.read_bytes() == raw and wal.read_bytes() == b"wal"
    wal.unlink()
    assert snapshot(db) == before


def test_out_into_a_folder_or_missing_folder(db: Path, tmp_path: Path) -> None:
    for target in (tmp_path, tmp_path / "no" / "r.csv"):
        result = runner.invoke(app, ["query", "SELECT 1", "-F", "csv", "-o", str(target), "--db", str(db)])
        assert result.exit_code == 2 and "Traceback" not in result.output


def test_timeout_interrupts_with_one_line(db: Path) -> None:
    sql = "SELECT count(*) FROM range(1000000000) a, range(1000000000) b"
    result = runner.invoke(app, ["query", sql, "--timeout", "0.5", "--db", str(db)])
    assert result.exit_code == 2
    assert "interrupted" in result.stderr and "--timeout" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_memory_cap(db: Path) -> None:
    sql = "SELECT list(range) FROM range(50000000)"  # one list of 50M: far beyond 10MB
    result = runner.invoke(app, ["query", sql, "--memory-limit", "10MB", "--db", str(db)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "--memory-limit" in result.stderr
    bad = runner.invoke(app, ["query", "SELECT 1", "--memory-limit", "lots", "--db", str(db)])
    assert bad.exit_code == 2 and "--memory-limit" in bad.stderr


@pytest.mark.parametrize(
    "sql",
    [
        "EXPLAIN ANALYZE CREATE TEMP TABLE t AS SELECT 1",
        "EXPLAIN ANALYZE CHECKPOINT",
        "EXPLAIN ANALYZE LOAD httpfs",
        "EXPLAIN ANALYZE SET threads = 1",
        "EXPLAIN ANALYZE COPY games TO 'stolen.csv'",
        "EXPLAIN (ANALYZE, FORMAT json) COPY games TO 'stolen.csv'",
        "explain   analyze\n create temp table t as select 1",
        "EXPLAIN CREATE TABLE t (a INTEGER)",
        "PRAGMA enable_profiling",
        "SELECT 1; EXPLAIN ANALYZE CHECKPOINT",
    ],
)
def test_explain_cannot_smuggle_a_write(db: Path, sql: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    before = snapshot(db)
    result = runner.invoke(app, ["query", sql, "--db", str(db)])
    assert result.exit_code == 2
    assert "read-only" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert snapshot(db) == before
    assert not (tmp_path / "stolen.csv").exists()


def test_explain_of_a_read_still_works(db: Path) -> None:
    for sql in (
        "EXPLAIN SELECT * FROM games",
        "EXPLAIN ANALYZE SELECT count(*) FROM games",
        "PRAGMA table_info('games')",
    ):
        result = runner.invoke(app, ["query", sql, "--db", str(db)])
        assert result.exit_code == 0, (sql, result.output)


@pytest.mark.parametrize("fmt", ["csv", "json", "table"])
def test_query_cells_print_literally(db: Path, tmp_path: Path, fmt: str) -> None:
    sql = "SELECT '[bold]x[/bold]' AS \"[red]k[/]\", '[/]' AS b, e'\\x1b[31mred\\nline' AS c"
    code, text, err = run(db, tmp_path, sql, fmt)
    assert code == 0, err
    if fmt == "table":
        assert "[bold]x[/bold]" in text and "[/]" in text and "[red]k[/]" in text
        assert "\x1b" not in text and "\\x1b[31mred\\nline" in text
    elif fmt == "csv":
        assert list(csv.reader(io.StringIO(text)))[1] == ["[bold]x[/bold]", "[/]", "\x1b[31mred\nline"]
    else:
        assert json.loads(text)[0]["[red]k[/]"] == "[bold]x[/bold]"


def test_parquet_keeps_types(db: Path, tmp_path: Path) -> None:
    out = tmp_path / "runs.parquet"
    result = runner.invoke(
        app, ["query", "SELECT * FROM ingest_runs", "-F", "parquet", "-o", str(out), "--db", str(db)]
    )
    assert result.exit_code == 0, result.output
    schema = pq.read_schema(out)
    assert str(schema.field("paths").type).startswith("list") and "timestamp" in str(schema.field("started_at").type)


def test_a_reader_that_stops_early_is_no_error(db: Path) -> None:
    """`backalley query ... | head -1`: the closed pipe ends the command quietly, exit 0."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent / "pipeline")}
    cmd = [sys.executable, "-m", "backalley", "query", "SELECT * FROM range(3000000)", "-F", "csv", "--db", str(db)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline() == b"range\n"
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait() == 0, err
    assert b"Traceback" not in err and b"error" not in err

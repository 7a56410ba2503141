"""``backalley ingest``, ``query`` and ``export`` from the command line, and the kill -9 test."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from backalley.cli.app import app
from tests.helpers import fail_plays_insert, make_inputs, snapshot
from tests.store_games import game_lines

runner = CliRunner()
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A database holding the mixed input set of test_store."""
    folder = tmp_path / "in"
    make_inputs(folder)
    path = tmp_path / "s.duckdb"
    result = runner.invoke(app, ["ingest", str(folder), "--db", str(path), "--workers", "1"])
    assert result.exit_code == 1, result.output  # invalid and rejected inputs: still stored
    return path


@pytest.mark.parametrize("command", ["ingest", "query", "export"])
def test_help(command: str) -> None:
    result = runner.invoke(app, [command, "--help"])
    assert result.exit_code == 0
    assert "--db" in result.stdout and "Exit status" in result.stdout


def test_ingest_exit_status_and_summary(tmp_path: Path) -> None:
    f = tmp_path / "good.jsonl"
    f.write_text("\n".join(game_lines(3, seed=4)) + "\n", encoding="utf-8")
    path = tmp_path / "s.duckdb"
    result = runner.invoke(app, ["ingest", str(f), "--db", str(path)])
    assert result.exit_code == 0, result.output
    assert "inserted 3" in result.stdout
    result = runner.invoke(app, ["ingest", str(f), "--db", str(path), "--json"])
    assert result.exit_code == 0
    summary = json.loads(result.stdout)
    assert (summary["inserted"], summary["duplicates"], summary["run_id"]) == (0, 3, 2)
    missing = runner.invoke(app, ["ingest", str(tmp_path / "nope.jsonl"), "--db", str(path)])
    assert missing.exit_code == 2 and "no such file" in missing.stderr


def test_ingest_uses_backalley_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "good.jsonl"
    f.write_text(game_lines(1, seed=4, deals=2)[0] + "\n", encoding="utf-8")
    monkeypatch.setenv("BACKALLEY_DB", str(tmp_path / "env" / "x.duckdb"))
    assert runner.invoke(app, ["ingest", str(f)]).exit_code == 0
    result = runner.invoke(app, ["query", "SELECT count(*) AS n FROM games", "--format", "csv"])
    assert result.stdout == "n\n1\n"


def test_ingest_refuses_a_newer_database(tmp_path: Path) -> None:
    import duckdb

    path = tmp_path / "s.duckdb"
    f = tmp_path / "g.jsonl"
    f.write_text(game_lines(1, seed=4, deals=1)[0] + "\n", encoding="utf-8")
    assert runner.invoke(app, ["ingest", str(f), "--db", str(path)]).exit_code == 0
    con = duckdb.connect(str(path))
    con.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    con.close()
    result = runner.invoke(app, ["ingest", str(f), "--db", str(path)])
    assert result.exit_code == 2 and "newer backalley" in result.stderr
    result = runner.invoke(app, ["query", "SELECT 1", "--db", str(path)])
    assert result.exit_code == 2 and "schema version 99" in result.stderr


def test_query_formats(db: Path, tmp_path: Path) -> None:
    sql = "SELECT game_id, status, played_at FROM games ORDER BY game_id"
    table = runner.invoke(app, ["query", sql, "--db", str(db)])
    assert table.exit_code == 0 and "full00000" in table.stdout and "(8 rows)" in table.stdout
    csv = runner.invoke(app, ["query", sql, "--db", str(db), "--format", "csv"])
    assert csv.stdout.splitlines()[0] == "game_id,status,played_at" and len(csv.stdout.splitlines()) == 9
    js = runner.invoke(app, ["query", sql, "--db", str(db), "--format", "json"])
    rows = json.loads(js.stdout)
    assert len(rows) == 8 and rows[0]["game_id"] == "full00000"
    out = tmp_path / "r.parquet"
    pq = runner.invoke(app, ["query", sql, "--db", str(db), "--format", "parquet", "--out", str(out)])
    assert pq.exit_code == 0 and pl.read_parquet(out).height == 8
    assert runner.invoke(app, ["query", sql, "--db", str(db), "--format", "parquet"]).exit_code == 2
    sql_file = tmp_path / "q.sql"
    sql_file.write_text("-- players\nSELECT player, games FROM player_summary ORDER BY player;\n", encoding="utf-8")
    from_file = runner.invoke(app, ["query", "--file", str(sql_file), "--db", str(db), "-F", "csv"])
    assert from_file.exit_code == 0 and from_file.stdout.startswith("player,games\n")
    csv_out = tmp_path / "r.csv"
    assert runner.invoke(app, ["query", sql, "--db", str(db), "-F", "csv", "-o", str(csv_out)]).exit_code == 0
    assert csv_out.read_text(encoding="utf-8") == csv.stdout


@pytest.mark.parametrize(
    "sql",
    [
        "INSERT INTO games SELECT * FROM games",
        "CREATE TABLE x (a INTEGER)",
        "DROP TABLE games",
        "COPY games TO 'stolen.csv'",
        "UPDATE games SET valid = true",
    ],
)
def test_query_refuses_writes(db: Path, sql: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    before = snapshot(db)
    result = runner.invoke(app, ["query", sql, "--db", str(db)])
    assert result.exit_code == 2
    assert "read-only" in result.stderr and "Traceback" not in result.output
    assert len(result.stderr.strip().splitlines()) == 1
    assert snapshot(db) == before
    assert not (tmp_path / "stolen.csv").exists()


def test_query_errors_keep_duckdb_whole_message(db: Path) -> None:
    for sql in ("SELECT * FROM no_such_table", "SELEC 1", "SELECT 1/'a'"):
        result = runner.invoke(app, ["query", sql, "--db", str(db)])
        assert result.exit_code == 2, sql
        assert result.stderr.startswith("error:") and "Traceback" not in result.output
    hint = runner.invoke(app, ["query", "SELECT gameid FROM games", "--db", str(db)])
    assert hint.exit_code == 2 and "Candidate bindings" in hint.stderr and '"game_id"' in hint.stderr
    assert runner.invoke(app, ["query", "--db", str(db)]).exit_code == 2  # no SQL at all


def test_export_command(db: Path, tmp_path: Path) -> None:
    out = tmp_path / "exp"
    result = runner.invoke(app, ["export", str(out), "--db", str(db)])
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    for table, info in manifest["tables"].items():
        frame = pl.scan_parquet(out / table / "**" / "*.parquet", hive_partitioning=True).collect()
        assert frame.height == info["rows"], table
    assert manifest["tables"]["games"]["rows"] == 8
    assert runner.invoke(app, ["export", str(out), "--db", str(db)]).exit_code == 2
    assert runner.invoke(app, ["export", str(out), "--db", str(db), "--force"]).exit_code == 0


# --- kill -9 and rerun -------------------------------------------------------------------------


def big_input(path: Path, copies: int = 20) -> None:
    """A few thousand records: 100 played games under many ids, with bad lines and duplicates."""
    base = game_lines(100, seed=99)
    lines: list[str] = []
    for k in range(copies):
        for i, line in enumerate(base):
            lines.append(line.replace('"game_id":"g', f'"game_id":"c{k:02d}-g', 1))
            if i == 50:
                lines.append("{broken line " + str(k))
                lines.append(lines[-2])  # a duplicate
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "backalley", *args]


def on_disk(db: Path) -> int:
    """Bytes of the database file and its write-ahead log."""
    wal = db.with_name(db.name + ".wal")
    return sum(p.stat().st_size for p in (db, wal) if p.exists())


def wait_for_bytes(proc: subprocess.Popen[bytes], db: Path, target: int, timeout: float = 120.0) -> None:
    """Until the database and its WAL hold ``target`` bytes, the process ends, or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while on_disk(db) < target and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)


@pytest.mark.slow
def test_kill_and_rerun_leaves_the_database_as_one_clean_run(tmp_path: Path) -> None:
    games = tmp_path / "games.jsonl"
    big_input(games)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    clean = tmp_path / "clean.duckdb"
    done = subprocess.run(cli("ingest", str(games), "--db", str(clean), "--workers", "2"), cwd=ROOT, env=env)
    size = on_disk(clean)
    assert done.returncode == 1  # the broken lines
    want = snapshot(clean)
    assert len(want["games"]) == 2000 and len(want["rejects"]) == 20
    killed_mid_run = 0
    # Kill at several moments of the run, by what it has written (not by the clock): as soon as the
    # database file exists (start-up), then once the file and its WAL hold a tenth, a third and
    # two thirds of the clean run's final size.
    for k, share in enumerate((0.0, 0.1, 0.33, 0.66)):
        db = tmp_path / f"killed{k}.duckdb"
        proc = subprocess.Popen(
            cli("ingest", str(games), "--db", str(db), "--workers", "2"),
            cwd=ROOT,
            env=env,
            start_new_session=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for_bytes(proc, db, max(1, int(share * size)))
        os.killpg(proc.pid, signal.SIGKILL)  # the ingest and its workers, at once
        proc.wait()
        rerun = subprocess.run(
            cli("ingest", str(games), "--db", str(db), "--workers", "2"),
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
        )
        assert rerun.returncode == 1, rerun.stderr
        assert snapshot(db) == want, f"after a kill at {share:.0%} of the clean size"
        runs = subprocess.run(
            cli("query", "SELECT status FROM ingest_runs ORDER BY run_id", "--db", str(db), "-F", "csv"),
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
        ).stdout.split()
        killed_mid_run += runs[1:] == ["running", "finished"]
    # Not a timing assertion: only that the loop exercised something (some kill landed mid-run).
    assert killed_mid_run >= 1


def test_a_database_error_during_ingest_is_one_clear_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DuckDB failing mid-run (here: out of memory inserting plays) is a
    database error: exit 2, one line naming the database, the failed run recorded, and
    the same command run again finishes the work."""
    import duckdb

    from backalley.store.database import Store

    f = tmp_path / "g.jsonl"
    f.write_text("\n".join(game_lines(8, seed=4, deals=2)) + "\n", encoding="utf-8")
    path = tmp_path / "s.duckdb"
    fail_plays_insert(
        monkeypatch,
        1,
        duckdb.OutOfMemoryException(
            "Out of Memory Error: failed to allocate data of size 4.0 KiB\n\nPossible solutions: ..."
        ),
    )
    args = ["ingest", str(f), "--db", str(path), "--workers", "1"]
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    message = " ".join(result.output.split())
    assert f"{path}: the database failed during the ingest: Out of Memory Error" in message
    assert "Possible solutions" not in message and "Traceback" not in result.output
    monkeypatch.undo()
    again = runner.invoke(app, args)
    assert again.exit_code == 0, again.output
    with Store.open_readonly(path) as s:
        assert s.count("games") == 8
        assert s.con.execute("SELECT status FROM ingest_runs ORDER BY run_id").fetchall() == [
            ("failed",),
            ("finished",),
        ]


def test_memory_limit_is_duckdbs_cap_while_ingesting(tmp_path: Path) -> None:
    """Records far larger than a game need more memory than the default cap (here a 100 kB event:
    the raw text is stored compressed, the event is not); the option
    reaches DuckDB (a cap too small fails with a hint, a large one succeeds), and a
    size DuckDB cannot read is a usage error before the database is touched."""
    lines = [json.dumps(dict(json.loads(line), event="E" * 100_000)) for line in game_lines(300, seed=6, deals=2)]
    f = tmp_path / "big.jsonl"
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    path = tmp_path / "s.duckdb"
    args = ["ingest", str(f), "--db", str(path), "--workers", "1", "--memory-limit"]
    bad = runner.invoke(app, [*args, "lots"])
    assert bad.exit_code == 2 and "expected a size such as 96MB" in bad.output and not path.exists()
    small = runner.invoke(app, [*args, "16MB"])
    assert small.exit_code == 2
    message = " ".join(small.output.split())
    assert "need more than the 16MB ingest memory limit: backalley ingest --memory-limit" in message
    large = runner.invoke(app, [*args, "256MB"])
    assert large.exit_code in (0, 1), large.output  # the long event makes the records invalid: still stored
    from backalley.store.database import Store

    with Store.open_readonly(path) as s:
        assert s.count("games") == 300


def test_long_records_go_in_under_a_small_cap_however_many(tmp_path: Path) -> None:
    """DuckDB keeps the rows appended since the last checkpoint in memory: the writer checkpoints
    when they pass a share of the cap, so 1,500 games with a 15 kB event (23 MB of events, more
    than the 16MB cap) go in, each transaction whole, and a second run finds them all stored."""
    lines = [json.dumps(dict(json.loads(line), event="E" * 15_000)) for line in game_lines(1500, seed=7, deals=2)]
    f = tmp_path / "long.jsonl"
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    path = tmp_path / "s.duckdb"
    args = ["ingest", str(f), "--db", str(path), "--workers", "1", "--no-ratings", "--memory-limit", "16MB"]
    first = runner.invoke(app, args)
    assert first.exit_code in (0, 1), first.output  # the long event makes the records invalid: still stored
    again = runner.invoke(app, [*args, "--json"])
    assert again.exit_code in (0, 1), again.output
    from backalley.store.database import Store

    with Store.open_readonly(path) as s:
        assert s.count("games") == 1500
        assert s.con.execute("SELECT count(DISTINCT event) FROM games").fetchall() == [(1,)]
        runs = s.con.execute("SELECT status, inserted, duplicates FROM ingest_runs ORDER BY run_id").fetchall()
        assert runs == [("finished", 1500, 0), ("finished", 0, 1500)]


def test_plain_games_take_no_checkpoint_for_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only DuckDB's long strings count towards the checkpoint at half the cap: the other rows a
    transaction appends can be evicted, and a checkpoint rewrites the tables' part-filled last row
    groups (a larger file), so 1,100 plain games at a 16MB cap (all of DuckDB's memory passes 8 MB
    after the first 512) take none before the last."""
    from backalley.store import ingest as ingest_module

    writers: list[ingest_module._Writer] = []
    init = ingest_module._Writer.__init__

    def spy(self: ingest_module._Writer, *args: object, **kwargs: object) -> None:
        init(self, *args, **kwargs)  # type: ignore[arg-type]
        writers.append(self)

    monkeypatch.setattr(ingest_module._Writer, "__init__", spy)
    f = tmp_path / "plain.jsonl"
    f.write_text("\n".join(game_lines(1100, seed=11)) + "\n", encoding="utf-8")
    args = ["ingest", str(f), "--db", str(tmp_path / "s.duckdb"), "--workers", "1", "--no-ratings"]
    result = runner.invoke(app, [*args, "--memory-limit", "16MB"])
    assert result.exit_code in (0, 1), result.output
    assert [w.checkpoints for w in writers] == [0]

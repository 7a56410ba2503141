"""``backalley query --db F`` while ``serve`` holds F: answered through the service, as offline.

The outputs are read offline first, then again while a service process holds the
file; ``show``, ``report`` and ``export`` say exactly what to do instead. The file
beside the database that says where the service runs is gone once it stops.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from backalley.cli.app import app
from backalley.service.running import find, path_of
from tests.helpers import make_inputs, served, snapshot

runner = CliRunner()

SQL = (
    "SELECT g.game_id, g.played_at, g.valid, d.deal, d.trump_card, d.points_ns FROM games g"
    " JOIN deals d USING (game_id) WHERE g.game_id <> $skip ORDER BY ALL LIMIT 40"
)
FORMATS = ("table", "csv", "json", "ndjson")


def query(db: Path, fmt: str, *extra: str) -> tuple[int, bytes, str]:
    result = runner.invoke(app, ["query", "--db", str(db), "-F", fmt, "-p", "skip", "none", SQL, *extra])
    return result.exit_code, result.stdout_bytes, result.stderr


@pytest.fixture
def db(tmp_path: Path) -> Path:
    make_inputs(tmp_path / "in")
    path = tmp_path / "s.duckdb"
    runner.invoke(app, ["ingest", str(tmp_path / "in"), "--db", str(path), "--workers", "1"])
    return path


def test_query_while_serving_answers_as_offline(db: Path, tmp_path: Path) -> None:
    offline = {fmt: query(db, fmt) for fmt in FORMATS}
    assert all(code == 0 for code, _, _ in offline.values())
    assert (
        runner.invoke(
            app,
            ["query", "--db", str(db), "-F", "parquet", "-o", str(tmp_path / "a.parquet"), SQL, "-p", "skip", "none"],
        ).exit_code
        == 0
    )
    before = snapshot(db)
    with served(db):
        running = find(db)
        assert running is not None and running.pid != os.getpid()
        assert oct(path_of(db).stat().st_mode & 0o777) == "0o600"
        for fmt in FORMATS:
            code, out, err = query(db, fmt)
            assert (code, out) == offline[fmt][:2], (fmt, err)
        r = runner.invoke(
            app,
            ["query", "--db", str(db), "-F", "parquet", "-o", str(tmp_path / "b.parquet"), SQL, "-p", "skip", "none"],
        )
        assert r.exit_code == 0, r.stderr
        assert pq.read_table(tmp_path / "b.parquet") == pq.read_table(tmp_path / "a.parquet")
        refused = runner.invoke(app, ["query", "--db", str(db), "DELETE FROM games"])
        assert refused.exit_code == 2 and "DELETE" in refused.stderr and f"pid {running.pid}" in refused.stderr
        bad = runner.invoke(app, ["query", "--db", str(db), "SELECT $x"])
        assert bad.exit_code == 2 and "$x" in bad.stderr
    assert not path_of(db).exists()  # removed when the service stopped
    assert snapshot(db) == before
    assert query(db, "csv")[:2] == offline["csv"][:2]  # offline again


def test_show_report_and_export_say_what_to_do_while_serving(db: Path, tmp_path: Path) -> None:
    game_id = json.loads(query(db, "json")[1])[0]["game_id"]
    with served(db) as base:
        running = find(db)
        assert running is not None
        shown = runner.invoke(app, ["show", game_id, "--db", str(db), "--deal", "1"])
        assert shown.exit_code == 2
        assert f"{base}/games/{game_id}/deals/1" in shown.stderr and f"kill {running.pid}" in shown.stderr
        report = runner.invoke(app, ["report", "--db", str(db), "--out", str(tmp_path / "r")])
        assert report.exit_code == 2 and f"{base}/players" in report.stderr and "Traceback" not in report.stderr
        assert "IO Error" not in report.stderr
        export = runner.invoke(app, ["export", str(tmp_path / "x"), "--db", str(db)])
        assert (
            export.exit_code == 2
            and "--format parquet --out" in export.stderr
            and f"kill {running.pid}" in export.stderr
        )


def test_a_file_left_by_a_dead_service_is_ignored(db: Path) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    path_of(db).write_text(json.dumps({"url": "http://127.0.0.1:9", "pid": dead.pid, "host": "x", "token": "t"}))
    assert find(db) is None
    assert query(db, "csv")[0] == 0  # nothing holds the file: offline

"""Issue 11 (hardening), through the command line: nothing lost, nothing wrongly accepted, no traceback.

Each test names the rule it checks and uses the input the issue names.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import pytest
from typer.testing import CliRunner

from backalley.cli.app import app
from tests.store_games import game_lines

runner = CliRunner()


def a_game(game_id: str = "g1", deals: int = 2, seed: int = 3) -> dict[str, Any]:
    rec: dict[str, Any] = json.loads(game_lines(1, seed=seed, deals=deals)[0])
    rec["game_id"] = game_id
    return rec


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def validate_json(*args: str) -> tuple[int, list[dict[str, Any]], str]:
    result = runner.invoke(app, ["validate", "--json", *args])
    assert "Traceback" not in result.output
    return result.exit_code, [json.loads(line) for line in result.stdout.splitlines()], result.stderr


def ingest_json(*args: str) -> tuple[int, dict[str, Any]]:
    result = runner.invoke(app, ["ingest", "--json", "--workers", "1", *args])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


def sql(db: Path, query: str) -> list[tuple[Any, ...]]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(query).fetchall()


# --- a trailing newline in an id ------------------------------------------------


@pytest.mark.parametrize(("field", "value"), [("game_id", "g1\n"), ("player", "Ada\n"), ("player", "A\tda")])
def test_a_control_character_in_an_id_is_a_schema_error(tmp_path: Path, field: str, value: str) -> None:
    rec = a_game()
    if field == "game_id":
        rec["game_id"] = value
        where = "/game_id"
    else:
        seat = next(s for s, p in rec["players"].items())
        rec["players"][seat] = value
        where = f"/players/{seat}"
    f = write_lines(tmp_path / "in.jsonl", [json.dumps(rec)])
    code, reports, _ = validate_json(str(f))
    assert code == 1
    assert [v["path"] for v in reports[0]["violations"] if v["code"] == "SCHEMA"] == [where]
    db = tmp_path / "s.duckdb"
    code, run = ingest_json(str(f), "--db", str(db))
    assert code == 1 and run["records"] == 1
    if field == "game_id":
        assert sql(db, "SELECT reason FROM rejects") == [("schema_no_id",)]
    else:
        assert sql(db, "SELECT valid, schema_ok FROM games") == [(False, False)]


# --- integers beyond 64 bits ----------------------------------------------------


@pytest.mark.parametrize("bid", [2000000000000000000, 10**30, -(10**30)])
def test_a_bid_beyond_64_bits_is_a_bid_range_violation(tmp_path: Path, bid: int) -> None:
    rec = a_game()
    rec["deals"][0]["bids"][0]["bid"] = bid
    f = write_lines(tmp_path / "in.jsonl", [json.dumps(rec)])
    code, reports, err = validate_json(str(f))
    assert code == 1 and err == ""
    first = reports[0]["violations"][0]
    assert (first["code"], first["path"]) == ("BID_RANGE", "/deals/0/bids/0/bid")
    assert str(bid) in first["message"]
    human = runner.invoke(app, ["validate", str(f)])
    assert human.exit_code == 1 and "BID_RANGE" in human.stdout
    db = tmp_path / "s.duckdb"
    code, run = ingest_json(str(f), "--db", str(db))
    assert (code, run["inserted"], run["invalid"]) == (1, 1, 1)
    assert sql(db, "SELECT code FROM violations ORDER BY ordinal LIMIT 1") == [("BID_RANGE",)]


@pytest.mark.parametrize(
    ("path", "code"),
    [
        (("format_version",), "SCHEMA"),
        (("deals", 0, "number"), "SCHEMA"),
        (("deals", 0, "result", "points", "NS"), "RESULT_MISMATCH"),
        (("deals", 0, "result", "tricks", "EW"), "RESULT_MISMATCH"),
        (("final_score", "NS"), "FINAL_SCORE_MISMATCH"),
    ],
)
def test_any_integer_beyond_64_bits_is_judged_by_the_rules(tmp_path: Path, path: tuple[Any, ...], code: str) -> None:
    rec = a_game()
    node: Any = rec
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = 10**30
    f = write_lines(tmp_path / "in.jsonl", [json.dumps(rec)])
    status, reports, err = validate_json(str(f))
    assert status == 1 and err == ""
    assert code in {v["code"] for v in reports[0]["violations"]}
    _, run = ingest_json(str(f), "--db", str(tmp_path / "s.duckdb"))
    assert run["records"] == run["inserted"] + run["rejected"] == 1


# --- player ids in NFC --------------------------------------------------------------


def test_player_ids_differing_only_by_unicode_normalisation_are_one_player(tmp_path: Path) -> None:
    one, two = a_game("g1", seed=3), a_game("g2", seed=3)
    seat = next(iter(one["players"]))
    one["players"][seat] = "Jos\u00e9"  # NFC
    two["players"][seat] = "Jose\u0301"  # NFD: the same name
    f = write_lines(tmp_path / "in.jsonl", [json.dumps(one), json.dumps(two)])
    db = tmp_path / "s.duckdb"
    _, run = ingest_json(str(f), "--db", str(db))
    assert run["inserted"] == 2
    assert sql(db, "SELECT DISTINCT player FROM player_games WHERE player LIKE 'Jos%'") == [("Jos\u00e9",)]
    col = f"player_{seat.lower()}"
    assert sql(db, f"SELECT DISTINCT {col} FROM games") == [("Jos\u00e9",)]
    out = tmp_path / "report"
    result = runner.invoke(app, ["report", "--db", str(db), "--out", str(out)])
    assert result.exit_code == 0, result.output
    pages = sorted(p.name for p in (out / "players").iterdir())
    assert len(pages) == len(set(one["players"].values())) and sum(p.startswith("jose-") for p in pages) == 1


# --- a lone surrogate ---------------------------------------------------------------


def test_a_lone_surrogate_is_a_json_error_for_its_line(tmp_path: Path) -> None:
    f = tmp_path / "in.jsonl"
    f.write_text('{"game_id":"\\ud800"}\n' + json.dumps(a_game("g1")) + "\n", encoding="utf-8")
    code, reports, err = validate_json(str(f))
    assert code == 1 and err == ""
    assert [r["line"] for r in reports] == [1, 2]
    assert [v["code"] for v in reports[0]["violations"]] == ["JSON"]
    assert "surrogate" in reports[0]["violations"][0]["message"]
    assert reports[1]["valid"]
    human = runner.invoke(app, ["validate", str(f)])
    assert human.exit_code == 1 and "surrogate" in human.stdout and "Traceback" not in human.output
    db = tmp_path / "s.duckdb"
    for run_no in (1, 2):  # the batch is not blocked, on the first run nor on a re-run
        code, run = ingest_json(str(f), "--db", str(db))
        assert code == 1 and run["records"] == 2
        assert (run["inserted"], run["rejected"]) == ((1, 1) if run_no == 1 else (0, 1))
    assert sql(db, "SELECT reason, line FROM rejects") == [("json", 1)]
    assert sql(db, "SELECT game_id FROM games") == [("g1",)]
    assert sql(db, "SELECT DISTINCT status FROM ingest_runs") == [("finished",)]


# --- export --force removes only an earlier export -----------------------------------


@pytest.fixture
def small_db(tmp_path: Path) -> Path:
    f = write_lines(tmp_path / "games.jsonl", game_lines(3, seed=5, deals=2))
    db = tmp_path / "s.duckdb"
    ingest_json(str(f), "--db", str(db))
    return db


def tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.startswith(".")]


def test_export_force_refuses_a_folder_that_is_not_an_export(small_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "games").mkdir(parents=True)
    (out / "games" / "notes.txt").write_text("my notes", encoding="utf-8")
    db = out / "games" / "s.duckdb"
    db.write_bytes(small_db.read_bytes())
    before = tree(out)
    result = runner.invoke(app, ["export", str(out), "--db", str(db), "--force"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert len(result.stderr.strip().splitlines()) == 1 and "not an earlier export" in result.stderr
    assert tree(out) == before and leftovers(tmp_path) == []


@pytest.mark.parametrize("extra", ["input.jsonl", "games/game_bucket=0/readme.txt", "deals/sub/data.parquet"])
def test_export_force_refuses_an_export_with_anything_else_in_it(small_db: Path, tmp_path: Path, extra: str) -> None:
    out = tmp_path / "out"
    assert runner.invoke(app, ["export", str(out), "--db", str(small_db)]).exit_code == 0
    (out / extra).parent.mkdir(parents=True, exist_ok=True)
    (out / extra).write_text("not from export", encoding="utf-8")
    before = tree(out)
    result = runner.invoke(app, ["export", str(out), "--db", str(small_db), "--force"])
    assert result.exit_code == 2 and "not written by an export" in result.stderr
    assert tree(out) == before and leftovers(tmp_path) == []


def test_export_force_replaces_an_earlier_export_atomically(
    small_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import backalley.store.database
    import backalley.store.export

    out = tmp_path / "out"
    assert runner.invoke(app, ["export", str(out), "--db", str(small_db)]).exit_code == 0
    before = tree(out)
    real = backalley.store.export._write_export

    def failing(store: Any, folder: Path) -> dict[str, Any]:
        real(store, folder)
        raise backalley.store.database.StoreError("export of plays failed: disk full")

    monkeypatch.setattr(backalley.store.export, "_write_export", failing)
    result = runner.invoke(app, ["export", str(out), "--db", str(small_db), "--force"])
    assert result.exit_code == 2 and "disk full" in result.stderr
    assert tree(out) == before and leftovers(tmp_path) == []  # the old export stands, nothing half-written
    monkeypatch.setattr(backalley.store.export, "_write_export", real)
    result = runner.invoke(app, ["export", str(out), "--db", str(small_db), "--force"])
    assert result.exit_code == 0, result.output
    assert set(tree(out)) == set(before) and leftovers(tmp_path) == []
    assert json.loads((out / "manifest.json").read_text())["tables"]["games"]["rows"] == 3


# --- one page per player ---------------------------------------------------------------


def test_players_whose_page_names_collide_get_a_page_each(tmp_path: Path) -> None:
    from backalley.reporting.html import player_slug

    assert player_slug("Ada?#~;") == player_slug("Ada$#$=")  # 32 bits of hash: the names the issue found
    rec = a_game("g1")
    seats = list(rec["players"])
    rec["players"][seats[0]], rec["players"][seats[1]] = "Ada?#~;", "Ada$#$="
    f = write_lines(tmp_path / "in.jsonl", [json.dumps(rec)])
    db = tmp_path / "s.duckdb"
    ingest_json(str(f), "--db", str(db))
    out = tmp_path / "report"
    result = runner.invoke(app, ["report", "--db", str(db), "--out", str(out)])
    assert result.exit_code == 0, result.output
    written = sorted((out / "players").iterdir())
    assert len(written) == 4 and "4 player pages" in result.stderr
    index = (out / "index.html").read_text(encoding="utf-8")
    for page in written:
        assert f'href="players/{page.name}"' in index
    titles = [p.read_text(encoding="utf-8").split("<title>")[1].split("</title>")[0] for p in written]
    assert sum(t.startswith("Ada?#~;") for t in titles) == 1 and sum(t.startswith("Ada$#$=") for t in titles) == 1


def test_page_names_are_numbered_when_whole_hashes_clash(monkeypatch: pytest.MonkeyPatch) -> None:
    from backalley.reporting import html

    monkeypatch.setattr(html, "player_slug", lambda player, digits=8: "same-" + "0" * digits)
    files = html.page_files(["a", "b", "c", "a"])
    assert len(files) == 3 and len(set(files.values())) == 3


# --- options checked up front ---------------------------------------------------------


@pytest.mark.parametrize("limit", ["1KB", "1MB", "lots", "-5MB"])
def test_a_memory_limit_too_small_is_refused_before_the_run(tmp_path: Path, limit: str) -> None:
    f = write_lines(tmp_path / "in.jsonl", [json.dumps(a_game())])
    db = tmp_path / "s.duckdb"
    result = runner.invoke(app, ["ingest", str(f), "--db", str(db), "--memory-limit", limit])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert len(result.stderr.strip().splitlines()) == 1 and "--memory-limit" in result.stderr
    assert not db.exists() or sql(db, "SELECT count(*) FROM ingest_runs WHERE status = 'running'") == [(0,)]


def test_a_setting_duckdb_refuses_leaves_no_running_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import backalley.store.ingest

    f = write_lines(tmp_path / "in.jsonl", [json.dumps(a_game())])
    db = tmp_path / "s.duckdb"
    monkeypatch.setattr(backalley.store.ingest, "ALLOCATOR_FLUSH", "not a size")
    result = runner.invoke(app, ["ingest", str(f), "--db", str(db)])
    assert result.exit_code == 2 and "allocator_flush_threshold" in result.stderr
    assert "Traceback" not in result.output and len(result.stderr.strip().splitlines()) == 1
    assert sql(db, "SELECT count(*) FROM ingest_runs") == [(0,)]


def test_an_ingest_run_that_fails_is_marked_failed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import backalley.store.ingest

    f = write_lines(tmp_path / "in.jsonl", [json.dumps(a_game())])
    db = tmp_path / "s.duckdb"

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug")

    monkeypatch.setattr(backalley.store.ingest, "built_chunks", broken)
    result = runner.invoke(app, ["ingest", str(f), "--db", str(db)])
    assert result.exit_code != 0
    assert sql(db, "SELECT status FROM ingest_runs") == [("failed",)]


def test_an_ingest_whose_worker_dies_fails_with_an_error_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import backalley.store.ingest
    import backalley.validate
    from tests.helpers import DeadPool

    f = write_lines(tmp_path / "in.jsonl", [json.dumps(a_game(f"g{n}")) for n in range(4)])
    db = tmp_path / "s.duckdb"
    monkeypatch.setattr(backalley.store.ingest, "ProcessPoolExecutor", DeadPool)
    monkeypatch.setattr(backalley.validate, "default_workers", lambda: 2)
    result = runner.invoke(app, ["ingest", str(f), "--db", str(db), "--workers", "2"])
    assert result.exit_code == 2, result.output
    assert "worker process stopped" in result.output and "marked failed" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert sql(db, "SELECT status FROM ingest_runs") == [("failed",)]


@pytest.mark.parametrize("command", ["validate", "ingest"])
def test_workers_are_capped_at_the_cpus_and_the_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    import multiprocessing.context

    from backalley.records.sources import expand
    from backalley.validate import default_workers, records_up_to, worker_count

    f = write_lines(tmp_path / "in.jsonl", ["", json.dumps(a_game()), "  "])
    started: list[int] = []
    real = multiprocessing.context.BaseContext.Pool

    def pool(self: Any, processes: int | None = None, *args: Any, **kwargs: Any) -> Any:
        started.append(processes or 0)
        return real(self, processes, *args, **kwargs)

    monkeypatch.setattr(multiprocessing.context.BaseContext, "Pool", pool)
    args = [command, str(f), "--workers", "1000"] + (
        ["--db", str(tmp_path / "s.duckdb")] if command == "ingest" else []
    )
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert started == []  # one record: one process, no pool
    many = write_lines(tmp_path / "many.jsonl", [json.dumps(a_game(f"g{i}")) for i in range(5)])
    files = expand([str(many)])
    assert records_up_to(files, 1000) == 5 and records_up_to(files, 3) == 3
    assert worker_count(1000, files) == min(default_workers(), 5)


def test_simulate_out_a_folder_is_a_usage_error(tmp_path: Path) -> None:
    result = runner.invoke(app, ["simulate", "--out", str(tmp_path), "--games", "1"])
    assert result.exit_code == 2 and "is a folder" in result.stderr and "Traceback" not in result.output
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    result = runner.invoke(app, ["simulate", "--out", str(blocker / "games.jsonl"), "--games", "1"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert len(result.stderr.strip().splitlines()) == 1


# --- records above --max-record-bytes ------------------------------------------------


@pytest.fixture
def big_input(tmp_path: Path) -> Path:
    """A 3 MB record (a valid game but for its event) between two ordinary games."""
    big = a_game("big")
    big["event"] = "é" * 1_500_000
    lines = [json.dumps(a_game("g1")), json.dumps(big, ensure_ascii=False), json.dumps(a_game("g2"))]
    f = write_lines(tmp_path / "in.jsonl", lines)
    assert 3_000_000 < len(lines[1].encode()) < 3_100_000
    return f


def test_validate_reports_a_record_above_max_record_bytes(big_input: Path) -> None:
    size = len(big_input.read_bytes().splitlines()[1])
    code, reports, err = validate_json(str(big_input))
    assert code == 1 and err == ""
    assert [r["valid"] for r in reports] == [True, False, True]
    (v,) = reports[1]["violations"]
    assert v["code"] == "JSON" and f"{size:,} bytes" in v["message"] and "--max-record-bytes" in v["message"]
    code, reports, _ = validate_json(str(big_input), "--max-record-bytes", "4MB")
    assert [v["code"] for v in reports[1]["violations"]] == ["SCHEMA"]  # read: the event is too long
    human = runner.invoke(app, ["validate", str(big_input), "--max-record-bytes", "nonsense"])
    assert human.exit_code == 2 and "--max-record-bytes" in human.stderr and "Traceback" not in human.output


def test_ingest_rejects_a_record_above_max_record_bytes_and_goes_on(big_input: Path, tmp_path: Path) -> None:
    import hashlib

    raw = big_input.read_bytes().splitlines()[1]
    db = tmp_path / "s.duckdb"
    for run_no in (1, 2):
        code, run = ingest_json(str(big_input), "--db", str(db))
        assert code == 1 and run["records"] == 3 and run["rejected"] == 1
        assert run["inserted"] == (2 if run_no == 1 else 0)
    rows = sql(db, "SELECT source, line, reason, message, content_hash, raw, raw_bytes FROM rejects")
    assert len(rows) == 1
    source, line, reason, message, sha, text, raw_bytes = rows[0]
    assert (source, line, reason) == (str(big_input), 2, "too_large")
    kept = text.encode()
    assert f"{len(raw):,} bytes" in message and f"first {len(kept):,} bytes" in message
    assert sha == hashlib.sha256(raw).hexdigest() and raw_bytes is None
    assert raw.startswith(kept) and 4094 <= len(kept) <= 4096  # whole characters only (é is two bytes)
    assert sql(db, "SELECT game_id FROM games ORDER BY game_id") == [("g1",), ("g2",)]
    _, run = ingest_json(str(big_input), "--db", str(db), "--max-record-bytes", "4000000")
    assert run["inserted"] == 1 and run["invalid"] == 1  # read now: stored, invalid (event too long)


# --- report on a bad database or into a bad folder -----------------------------------


def report(db: Path, out: Path) -> Any:
    result = runner.invoke(app, ["report", "--db", str(db), "--out", str(out)])
    assert "Traceback" not in result.output
    return result


def tmp_files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*.tmp")] if folder.is_dir() else []


def one_error_line(result: Any) -> str:
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1, result.output
    return str(lines[0])


def test_report_on_a_corrupt_database_is_one_error_line(small_db: Path, tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.duckdb"
    garbage.write_bytes(b"\x00not a database at all" * 1000)
    assert "garbage.duckdb" in one_error_line(report(garbage, tmp_path / "r1"))
    truncated = tmp_path / "truncated.duckdb"
    data = small_db.read_bytes()
    truncated.write_bytes(data[: len(data) // 3])
    one_error_line(report(truncated, tmp_path / "r2"))
    flipped = tmp_path / "flipped.duckdb"
    flipped.write_bytes(data[:4096] + bytes(b ^ 0xFF for b in data[4096:]))
    one_error_line(report(flipped, tmp_path / "r3"))
    assert tmp_files(tmp_path) == []


def test_report_refuses_a_newer_schema_version(small_db: Path, tmp_path: Path) -> None:
    with duckdb.connect(str(small_db)) as con:
        con.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    line = one_error_line(report(small_db, tmp_path / "r"))
    assert "schema version 99" in line and "upgrade backalley" in line
    query = runner.invoke(app, ["query", "SELECT 1", "--db", str(small_db)])
    assert query.exit_code == 2 and "schema version 99" in query.stderr  # the same check as query's
    assert not (tmp_path / "r").exists()


def test_report_out_that_is_a_file_or_cannot_be_created_is_an_error(small_db: Path, tmp_path: Path) -> None:
    a_file = tmp_path / "taken"
    a_file.write_text("mine", encoding="utf-8")
    assert "taken" in one_error_line(report(small_db, a_file))
    assert a_file.read_text(encoding="utf-8") == "mine"
    assert "taken" in one_error_line(report(small_db, a_file / "reports"))
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "players").write_text("in the way", encoding="utf-8")
    one_error_line(report(small_db, tmp_path / "r"))
    assert tmp_files(tmp_path) == []


def test_report_on_a_full_disk_leaves_no_temporary_file(
    small_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    real = Path.write_text
    written: list[Path] = []

    def full_after_two(self: Path, data: str, *args: Any, **kwargs: Any) -> int:
        if len(written) >= 2:
            real(self, data[:100], *args, **kwargs)  # a partial page, then the disk is full
            raise OSError(errno.ENOSPC, "No space left on device", str(self))
        written.append(self)
        return real(self, data, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", full_after_two)
    out = tmp_path / "r"
    line = one_error_line(report(small_db, out))
    assert "No space left on device" in line
    assert tmp_files(out) == [] and len(written) == 2


def test_the_next_report_removes_what_a_killed_run_left(small_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "r"
    (out / "players").mkdir(parents=True)
    left = [out / "index.html.tmp", out / "summary.md.tmp", out / "players" / "ada-12345678.html.tmp"]
    for p in left:
        p.write_text("<half a page", encoding="utf-8")
    mine = out / "players" / "notes.tmp"
    mine.write_text("not ours", encoding="utf-8")
    result = report(small_db, out)
    assert result.exit_code == 0, result.output
    assert tmp_files(out) == [mine]


# --- leap second ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("played_at", "stored"),
    [
        ("2016-12-31T23:59:60Z", "2017-01-01 00:00:00"),
        ("2017-01-01T01:59:60.5+02:00", "2017-01-01 00:00:00.5"),
        ("2026-01-31T19:05:00Z", "2026-01-31 19:05:00"),
    ],
)
def test_a_leap_second_is_stored_as_the_next_second(tmp_path: Path, played_at: str, stored: str) -> None:
    rec = a_game()
    rec["played_at"] = played_at
    f = write_lines(tmp_path / "in.jsonl", [json.dumps(rec)])
    code, reports, _ = validate_json(str(f))
    assert code == 0 and reports[0]["valid"]
    db = tmp_path / "s.duckdb"
    _, run = ingest_json(str(f), "--db", str(db))
    assert run["inserted"] == 1
    expected = datetime.fromisoformat(stored + "+00:00").timestamp()
    assert sql(db, "SELECT epoch(played_at) FROM games") == [(expected,)]


@pytest.mark.parametrize("where", ["a-file/s.duckdb", "folder"])
def test_a_db_path_that_cannot_be_a_database_is_a_usage_error(tmp_path: Path, where: str) -> None:
    (tmp_path / "a-file").write_text("x", encoding="utf-8")
    (tmp_path / "folder").mkdir()
    f = write_lines(tmp_path / "in.jsonl", [json.dumps(a_game())])
    result = runner.invoke(app, ["ingest", str(f), "--db", str(tmp_path / where)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert len(result.stderr.strip().splitlines()) == 1


def test_export_removes_what_a_killed_export_left(small_db: Path, tmp_path: Path) -> None:
    for left in (".out.partial-abc123/games", ".out.old-def456/export/games"):
        (tmp_path / left).mkdir(parents=True)
        (tmp_path / left / "data_0.parquet").write_bytes(b"half")
    (tmp_path / ".other.partial-x").mkdir()
    result = runner.invoke(app, ["export", str(tmp_path / "out"), "--db", str(small_db)])
    assert result.exit_code == 0, result.output
    assert leftovers(tmp_path) == [".other.partial-x"]

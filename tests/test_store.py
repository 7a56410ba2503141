"""The DuckDB store and the ingest library: row counts, idempotency, atomicity, views, export."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from backalley.cli.app import app
from backalley.records.sheets import csv_items
from backalley.records.sources import expand, read_file
from backalley.replay import Replay, replay, replay_sheet_csv
from backalley.rules import SCORED_DEALS
from backalley.store import ingest as ingest_mod
from backalley.store import migrations, schema
from backalley.store.database import (
    NotAStoreError,
    QueryError,
    ReadOnlyQueryError,
    SchemaVersionError,
    Store,
    StoreError,
    StoreLockedError,
)
from backalley.store.export import export
from backalley.store.ingest import ingest
from tests.helpers import fail_plays_insert, make_inputs, snapshot
from tests.store_games import game_lines

ROOT = Path(__file__).resolve().parent.parent


def counts(db: Path) -> dict[str, int]:
    with Store.open_readonly(db) as s:
        return s.counts()


@pytest.fixture
def inputs(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    folder = tmp_path / "in"
    return folder, make_inputs(folder)


def test_row_counts_of_a_mixed_input(inputs: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    folder, want = inputs
    db = tmp_path / "s.duckdb"
    run = ingest([str(folder)], db)
    assert (run.records, run.inserted, run.duplicates, run.conflicts, run.rejected) == (want["records"], 8, 1, 1, 6)
    assert run.invalid == 2 and not run.clean
    got = counts(db)
    for t in ("games", "deals", "bids", "tricks", "plays", "violations", "rejects"):
        assert got[t] == want[t], t
    assert got["ingest_runs"] == 1
    with Store.open_readonly(db) as s:
        reasons = dict(s.con.execute("SELECT reason, count(*) FROM rejects GROUP BY ALL").fetchall())
        assert reasons == {"json": 2, "no_game_id": 3, "schema_no_id": 1, "conflict": 1}
        status = dict(s.con.execute("SELECT game_id, status FROM games").fetchall())
        assert status["full00000"] == "valid" and status["short00001"] == "incomplete"
        assert status["schema-1"] == "invalid" and status["inv-1"] == "invalid"
        # The stored game keeps its first content; the conflicting newcomer is in rejects, raw.
        assert s.con.execute("SELECT event FROM games WHERE game_id = 'short00001'").fetchall()[0][0] != "Changed"
        raw = s.con.execute("SELECT raw FROM rejects WHERE reason = 'conflict'").fetchall()[0][0]
        assert json.loads(raw)["event"] == "Changed"
        # Raw text exactly as received.
        line1 = (folder / "a.jsonl").read_text(encoding="utf-8").splitlines()[0]
        assert s.con.execute("SELECT raw FROM games WHERE line = 1").fetchall()[0][0] == line1
        binary = s.con.execute("SELECT raw_bytes FROM rejects WHERE source LIKE '%b.json'").fetchall()[0][0]
        assert bytes(binary) == (folder / "b.json").read_bytes()
        # Schema-invalid record: a games row and its violations, nothing else.
        assert s.con.execute("SELECT count(*) FROM deals WHERE game_id = 'schema-1'").fetchall()[0][0] == 0
        assert s.con.execute("SELECT score_ns FROM games WHERE game_id = 'schema-1'").fetchall()[0][0] is None
        run_row = s.con.execute("SELECT status, records, inserted, finished_at IS NOT NULL FROM ingest_runs").fetchall()
        assert run_row == [("finished", want["records"], 8, True)]


def test_second_ingest_changes_nothing(inputs: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    folder, _ = inputs
    db = tmp_path / "s.duckdb"
    ingest([str(folder)], db)
    before = snapshot(db)
    run = ingest([str(folder)], db, workers=2)
    assert run.inserted == 0 and run.duplicates == 9  # 8 stored games and the in-file duplicate
    assert snapshot(db) == before
    assert counts(db)["ingest_runs"] == 2


class _CheckpointSpy:
    """A DuckDB connection that notes the thread count each ``CHECKPOINT`` runs with."""

    def __init__(self, con: duckdb.DuckDBPyConnection, seen: list[Any]) -> None:
        self._con = con
        self._seen = seen

    def __getattr__(self, name: str) -> Any:
        return getattr(self._con, name)

    def execute(self, sql: str, *args: Any) -> Any:
        if sql == "CHECKPOINT":
            self._seen.append(self._con.execute("SELECT current_setting('threads')").fetchall()[0][0])
        return self._con.execute(sql, *args)


def test_the_final_checkpoint_gets_the_threads_back_and_the_settings_are_restored(
    inputs: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    """The writer inserts on one DuckDB thread (the workers have the other CPUs); the final checkpoint,
    after the workers, runs on the connection's own thread count; afterwards the settings are as before."""
    folder, _ = inputs
    names = ("threads", "checkpoint_threshold", "allocator_flush_threshold", "memory_limit")
    seen: list[Any] = []
    with Store.open(tmp_path / "s.duckdb") as store:
        store.con.execute("SET threads = 3")
        before = {n: store.con.execute("SELECT current_setting(?)", [n]).fetchall()[0][0] for n in names}
        store.con.execute("SET python_scan_all_frames = true")  # the inserts' Arrow tables, seen past the spy
        store.con = _CheckpointSpy(store.con, seen)  # type: ignore[assignment]
        run = ingest_mod.ingest_files(store, expand([str(folder)]), [str(folder)], workers=2)
        store.con = store.con._con  # type: ignore[attr-defined]
        after = {n: store.con.execute("SELECT current_setting(?)", [n]).fetchall()[0][0] for n in names}
    assert run.inserted == 8
    assert seen == [3]
    assert after == before


def test_ingests_one_after_another_keep_the_stores_memory_limit(
    inputs: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    """DuckDB reads memory_limit back rounded (512MB is 488.2 MiB); an ingest puts back the store's own text."""
    folder, _ = inputs
    with Store.open(tmp_path / "s.duckdb", memory_limit="512MB") as store:
        before = store.con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
        for _ in range(3):
            ingest_mod.ingest_files(store, expand([str(folder)]), [str(folder)], workers=1, replace=True)
        after = store.con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
    assert after == before


def test_stored_keys_say_maybe_for_every_stored_key(monkeypatch: pytest.MonkeyPatch) -> None:
    keys = ingest_mod._Keys(np.array([9, 1, 5], dtype=np.uint64))
    probe = np.array([1, 2, 5, 9, 10, 11], dtype=np.uint64)
    assert keys.maybe(probe).tolist() == [True, False, True, True, False, False]
    keys.add(np.array([2], dtype=np.uint64))  # kept aside until MERGE keys are added
    assert keys.maybe(probe).tolist() == [True, True, True, True, False, False]
    monkeypatch.setattr(ingest_mod._Keys, "MERGE", 2)
    keys.add(np.array([10, 11], dtype=np.uint64))  # merged into the sorted array
    assert len(keys) == 6 and not keys._recent
    assert keys.maybe(probe).all()
    assert not ingest_mod._Keys(np.zeros(0, dtype=np.uint64)).maybe(probe).any()


def test_the_writers_string_keys_are_those_sql_computes_from_the_stored_strings() -> None:
    """The keys of a chunk's strings (Python) and of the stored ones (SQL, at the run's start) must agree,
    else a stored game would be missed."""
    values = ["sim-2026-000001", "", "Ærø ✓ 中文", "x" * 300, hashlib.sha256(b"a game").hexdigest()]
    con = duckdb.connect()
    sql = [con.execute(f"SELECT {ingest_mod.KEY_SQL.format('?::VARCHAR')}", [v]).fetchall()[0][0] for v in values]
    assert ingest_mod.string_keys(values).tolist() == sql
    assert len(set(sql)) == len(values)
    assert ingest_mod.string_keys([]).tolist() == []


def test_duplicates_conflicts_and_replacements_are_found_through_the_stored_keys(
    inputs: tuple[Path, dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The key filter only rules look-ups out: with keys merged after every chunk, and
    with a filter that rules nothing out, every run counts the same."""
    folder, _ = inputs

    def runs(db: Path) -> list[tuple[int, ...]]:
        out = []
        for replace in (False, False, True):
            r = ingest([str(folder)], db, chunk=3, replace=replace)
            out.append((r.records, r.inserted, r.duplicates, r.conflicts, r.replaced, r.rejected, r.invalid))
        return out

    monkeypatch.setattr(ingest_mod._Keys, "MERGE", 1)
    merged = runs(tmp_path / "merged.duckdb")
    monkeypatch.setattr(ingest_mod._Keys, "maybe", lambda self, keys: np.ones(len(keys), dtype=np.bool_))
    assert runs(tmp_path / "all.duckdb") == merged
    assert merged[1][1:5] == (0, 9, 1, 0) and merged[2][4] == 1
    assert snapshot(tmp_path / "merged.duckdb") == snapshot(tmp_path / "all.duckdb")


def test_background_writes_stop_at_the_first_failure() -> None:
    """No write runs after a failed one (a commit never follows a failed insert), and the
    error reaches the caller."""
    background = ingest_mod._Background()
    ran: list[int] = []

    def fail() -> None:
        raise RuntimeError("simulated insert failure")

    background.submit(lambda: ran.append(1))
    background.submit(fail)
    with pytest.raises(RuntimeError, match="simulated insert failure"):
        background.submit(lambda: ran.append(3))  # raises the failure of the job before it
    with pytest.raises(RuntimeError, match="skipped"):
        background.drain()
    background.close()
    assert ran == [1]


def test_same_input_twice_in_one_run_is_stored_once(tmp_path: Path) -> None:
    lines = game_lines(3, seed=5, deals=2)
    f = tmp_path / "g.jsonl"
    f.write_text("\n".join(lines + lines) + "\n", encoding="utf-8")
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(f.read_bytes())
    db = tmp_path / "s.duckdb"
    run = ingest([str(f), str(copy)], db, chunk=2)
    assert (run.records, run.inserted, run.duplicates) == (12, 3, 9)
    assert counts(db)["games"] == 3
    # The same path named twice is one source, read once.
    again = ingest([str(f), str(f)], tmp_path / "t.duckdb", chunk=2)
    assert (again.records, again.inserted, again.duplicates) == (6, 3, 3)


def test_workers_give_the_same_database(inputs: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    folder, _ = inputs
    one, two = tmp_path / "1.duckdb", tmp_path / "2.duckdb"
    ingest([str(folder)], one, workers=1)
    ingest([str(folder)], two, workers=2, chunk=3)
    assert snapshot(one) == snapshot(two)
    replaced = [ingest([str(folder)], db, workers=w, chunk=3, replace=True) for db, w in ((one, 1), (two, 2))]
    assert replaced[0].replaced == replaced[1].replaced == 1
    assert snapshot(one) == snapshot(two)


def count_screened(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Per span the workers send back, how many records came unreplayed (their hash maybe stored)."""
    screened: list[int] = []
    resolve = ingest_mod._Writer.resolve

    def counted(self: Any, part: Any) -> Any:
        screened.append(sum(isinstance(b, str) for _, b in part))
        return resolve(self, part)

    monkeypatch.setattr(ingest_mod._Writer, "resolve", counted)
    return screened


def test_workers_screen_out_stored_hashes_and_send_a_games_raw_text_only_compressed() -> None:
    from array import array

    from backalley.records.sources import Item
    from backalley.store import screen

    game, other = (Item("f.jsonl", n, line.encode()) for n, line in enumerate(game_lines(2, seed=3), 1))
    not_json = Item("f.jsonl", 3, b"{not json")
    stored = array("Q", sorted([screen.string_key(hashlib.sha256(game.raw).hexdigest())]))
    screen.init(stored.tobytes())
    try:
        limit = max(len(game.raw), len(other.raw))
        out = screen.screen([game, other, not_json, Item("f.jsonl", 4, b"x" * (limit + 1))], max_record_bytes=limit)
    finally:
        screen.init(b"")
    assert out[0] == (game, hashlib.sha256(game.raw).hexdigest())  # maybe stored: not replayed
    item, built = out[1]
    assert isinstance(built, ingest_mod.Built) and built.game_id is not None and built.raw_zstd
    assert (item.source, item.line, item.raw) == ("f.jsonl", 2, b"")  # the raw text travels compressed
    assert out[2][0] is not_json and not isinstance(out[2][1], str) and out[2][1].reject == "json"
    assert not isinstance(out[3][1], str) and out[3][1].reject == "too_large" and out[3][0].raw
    assert screen.maybe_stored(hashlib.sha256(game.raw).hexdigest(), stored)
    assert not screen.maybe_stored(hashlib.sha256(other.raw).hexdigest(), stored)


def test_workers_chunks_are_whole_and_their_progress_covers_the_input(
    inputs: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    folder, want = inputs
    seen: list[tuple[int, int]] = []
    run = ingest([str(folder)], tmp_path / "s.duckdb", workers=2, chunk=3, progress=lambda n, b: seen.append((n, b)))
    sizes = [n for n, _ in seen]
    assert sum(sizes) == run.records == want["records"]
    assert all(n == 3 for n in sizes[:-1]) and 0 < sizes[-1] <= 3
    assert sum(b for _, b in seen) == sum(f.path.stat().st_size for f in expand([str(folder)]) if f.problem is None)


@pytest.mark.parametrize(
    ("line_bytes", "want"),
    [(100, ingest_mod.MIN_SPAN_BYTES), (1_000, ingest_mod.SPAN_RECORDS * 1_000), (40_000, ingest_mod.MAX_SPAN_BYTES)],
)
def test_a_span_holds_about_span_records_records_within_bounds(line_bytes: int, want: int, tmp_path: Path) -> None:
    f = tmp_path / "g.jsonl"
    f.write_bytes((b"x" * (line_bytes - 1) + b"\n") * 20)
    assert ingest_mod.span_bytes(expand([str(f)])) == want
    (tmp_path / "only.json").write_bytes(b"{}")
    assert ingest_mod.span_bytes(expand([str(tmp_path / "only.json")])) == ingest_mod.MAX_SPAN_BYTES


def test_a_stale_screen_key_costs_a_replay_in_the_writer_never_a_wrong_fate(
    inputs: tuple[Path, dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Workers told that every input may be stored hand every record back unreplayed: the writer
    finds none stored, replays them itself, and the database is the one a single worker makes."""
    folder, _ = inputs
    every = np.sort(
        ingest_mod.string_keys(
            [hashlib.sha256(it.raw).hexdigest() for f in expand([str(folder)]) for it in read_file(f)]
        )
    )
    monkeypatch.setattr(ingest_mod._Keys, "snapshot", lambda self: every.tobytes())
    screened = count_screened(monkeypatch)
    one, two = tmp_path / "1.duckdb", tmp_path / "2.duckdb"
    ingest([str(folder)], one, workers=1)
    first = ingest([str(folder)], two, workers=2, chunk=3)
    assert sum(screened) > 0 and first.inserted == 8
    assert snapshot(one) == snapshot(two)


def test_a_rerun_with_workers_replays_nothing(
    inputs: tuple[Path, dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, _ = inputs
    db = tmp_path / "s.duckdb"
    ingest([str(folder)], db, workers=2)
    built: list[int] = []
    monkeypatch.setattr(ingest_mod, "build_item", lambda *a: built.append(1))  # the writer's own replays
    screened = count_screened(monkeypatch)
    again = ingest([str(folder)], db, workers=2)
    assert again.inserted == 0 and again.duplicates == 9 and again.conflicts == 1 and not built
    assert sum(screened) == 9  # every stored content came back unreplayed from the workers


def test_a_games_ingested_at_is_the_moment_its_chunk_was_written(
    inputs: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    folder, _ = inputs
    db = tmp_path / "s.duckdb"
    run = ingest([str(folder)], db, chunk=3)
    with Store.open_readonly(db) as s:
        stamps = s.con.execute("SELECT DISTINCT ingested_at FROM games ORDER BY 1").fetchall()
    assert len(stamps) > 1  # one a chunk
    assert run.finished_at is not None
    assert all(run.started_at <= at <= run.finished_at for (at,) in stamps)


def test_replace(inputs: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    folder, want = inputs
    db = tmp_path / "s.duckdb"
    ingest([str(folder)], db)
    run = ingest([str(folder)], db, replace=True)
    assert run.replaced == 1 and run.conflicts == 0
    with Store.open_readonly(db) as s:
        assert s.con.execute("SELECT event FROM games WHERE game_id = 'short00001'").fetchall()[0][0] == "Changed"
        assert s.con.execute("SELECT count(*) FROM games WHERE game_id = 'short00001'").fetchall()[0][0] == 1
    got = counts(db)
    for t in ("games", "deals", "bids", "tricks", "plays", "violations"):
        assert got[t] == want[t], t


def test_replace_within_one_chunk(tmp_path: Path) -> None:
    a = json.loads(game_lines(1, seed=3, deals=2)[0])
    b = dict(a, event="Second")
    f = tmp_path / "g.jsonl"
    f.write_text(json.dumps(a) + "\n" + json.dumps(b) + "\n", encoding="utf-8")
    db = tmp_path / "s.duckdb"
    run = ingest([str(f)], db, replace=True)
    assert (run.inserted, run.replaced) == (1, 1)
    with Store.open_readonly(db) as s:
        assert s.con.execute("SELECT event, line FROM games").fetchall() == [("Second", 2)]
        assert s.count("deals") == 2


@pytest.mark.parametrize(
    ("transaction", "committed"),
    [(3, 3), (6, 0)],
    ids=["one-chunk-transactions", "two-chunk-transactions"],
)
def test_a_failed_transaction_leaves_nothing_and_a_rerun_completes(
    inputs: tuple[Path, dict[str, Any]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    transaction: int,
    committed: int,
) -> None:
    """Atomicity without timing: the insert of plays fails in the second chunk (games 4-6).

    With one chunk per transaction the first three games are stored, whole; with
    two chunks per transaction the failure takes the first chunk down with it.
    The failed run's row keeps the counters of what was committed.
    """
    folder, _ = inputs
    clean = tmp_path / "clean.duckdb"
    ingest([str(folder)], clean)
    db = tmp_path / "s.duckdb"
    fail_plays_insert(monkeypatch, 2, RuntimeError("simulated crash"))
    with pytest.raises(RuntimeError):
        ingest([str(folder)], db, chunk=3, transaction=transaction)
    monkeypatch.undo()
    with Store.open_readonly(db) as s:
        assert s.count("games") == committed
        assert s.con.execute("SELECT count(DISTINCT game_id) FROM plays").fetchall()[0][0] == committed
        assert s.con.execute("SELECT status, records, inserted FROM ingest_runs").fetchall() == [
            ("failed", committed, committed)
        ]
    ingest([str(folder)], db, chunk=3, transaction=transaction)
    assert snapshot(db) == snapshot(clean)


def test_views_follow_the_contract(tmp_path: Path) -> None:
    f = tmp_path / "g.jsonl"
    f.write_text("\n".join(game_lines(4, seed=21)) + "\n", encoding="utf-8")
    db = tmp_path / "s.duckdb"
    ingest([str(f)], db)
    contract = (ROOT / "docs" / "contract-views.md").read_text(encoding="utf-8")
    section = contract.split("## View `player_deals`")[1].split("## View")[0]
    deal_cols = [ln.split("|")[1].strip() for ln in section.splitlines() if ln.startswith("| ") and "---" not in ln]
    deal_cols = [c for c in deal_cols if c != "column"]
    summary_section = contract.split("## View `player_summary`")[1]
    summary_cols = [
        c.strip("`, ") for c in summary_section.split("\n", 1)[1].replace("\n", " ").split("`") if c.strip("`, ")
    ]
    summary_cols = [c for c in summary_cols if c.isidentifier()]
    with Store.open_readonly(db) as s:
        have = [r[0] for r in s.con.execute("DESCRIBE player_deals").fetchall()]
        assert have[: len(deal_cols)] == deal_cols
        have_s = {r[0] for r in s.con.execute("DESCRIBE player_summary").fetchall()}
        assert set(summary_cols) <= have_s
        games_cols = {r[0] for r in s.con.execute("DESCRIBE games").fetchall()}
        for c in ("game_id", "event", "played_at", "player_n", "valid", "complete", "status", "score_ns", "winner"):
            assert c in games_cols
        scored = s.con.execute("SELECT count(*) FROM deals WHERE NOT pass_out").fetchall()[0][0]
        assert s.count("player_deals") == 4 * scored
        assert scored == 4 * SCORED_DEALS
        # A player's personal tricks add up to the team's tricks.
        bad = s.con.execute(
            "SELECT count(*) FROM (SELECT game_id, deal_index, team, sum(tricks_won) AS t, any_value(team_tricks) AS tt"
            " FROM player_deals GROUP BY ALL) WHERE t <> tt"
        ).fetchall()[0][0]
        assert bad == 0
        total = s.con.execute("SELECT sum(games), sum(deals) FROM player_summary").fetchall()[0]
        assert total == (16, 4 * scored)
        pts = s.con.execute("SELECT sum(team_points) FROM player_deals WHERE seat = 'N'").fetchall()[0][0]
        assert pts == s.con.execute("SELECT sum(score_ns) FROM games").fetchall()[0][0]


def test_export_round_trips_with_polars(inputs: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    folder, _ = inputs
    db = tmp_path / "s.duckdb"
    ingest([str(folder)], db)
    out = tmp_path / "export"
    with Store.open_readonly(db, external_access=True) as s:
        manifest = export(s, out)
        want = s.counts()
    for t, n in want.items():
        files = list((out / t).rglob("*.parquet"))
        assert files, t
        frame = pl.scan_parquet(out / t / "**" / "*.parquet", hive_partitioning=True).collect()
        assert frame.height == n == manifest["tables"][t]["rows"], t
    assert "game_bucket" in pl.scan_parquet(out / "plays" / "**" / "*.parquet", hive_partitioning=True).collect_schema()
    with Store.open_readonly(db, external_access=True) as s, pytest.raises(StoreError, match="not empty"):
        export(s, out)
    with Store.open_readonly(db, external_access=True) as s:
        export(s, out, force=True)


def test_readonly_query_refuses_writes(inputs: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    folder, _ = inputs
    db = tmp_path / "s.duckdb"
    ingest([str(folder)], db)
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    snap = snapshot(db)
    target = tmp_path / "out.csv"
    with Store.open_readonly(db) as s:
        for sql in (
            "INSERT INTO games SELECT * FROM games",
            "CREATE TABLE x (a INTEGER)",
            "DROP TABLE games",
            f"COPY games TO '{target}'",
            "DELETE FROM rejects",
            "SELECT 1; UPDATE games SET event = 'x'",
            f"ATTACH '{tmp_path / 'other.duckdb'}' AS other",
        ):
            with pytest.raises(ReadOnlyQueryError):
                s.query(sql)
        # Even past the statement check, the connection itself refuses and touches no file.
        with pytest.raises(QueryError, match="disabled"):
            s.query("SELECT * FROM read_csv('/etc/hostname')")
        for sql in ("INSTALL httpfs", "INSERT INTO rejects SELECT * FROM rejects", f"COPY games TO '{target}'"):
            with pytest.raises(duckdb.Error):
                s.con.execute(sql)
        with pytest.raises(QueryError, match="Catalog Error"):
            s.query("SELECT * FROM no_such_table")
        assert s.query("SELECT count(*) AS n FROM games").to_pylist() == [{"n": 8}]
    assert not target.exists()
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    assert snapshot(db) == snap


def _set_version(db: Path, version: str) -> None:
    con = duckdb.connect(str(db))
    con.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", [version])
    con.close()


def test_schema_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "s.duckdb"
    with Store.open(db) as s:
        assert s.schema_version() == schema.SCHEMA_VERSION
    _set_version(db, str(schema.SCHEMA_VERSION + 1))
    with pytest.raises(SchemaVersionError, match="newer backalley"):
        Store.open(db)
    with pytest.raises(SchemaVersionError, match="upgrade"):
        Store.open_readonly(db)
    # An older version without a known migration is refused, not guessed at.
    _set_version(db, "0")
    with pytest.raises(SchemaVersionError, match="no migration"):
        Store.open(db)
    with pytest.raises(SchemaVersionError):
        Store.open_readonly(db)
    # With a migration registered, opening for writing migrates (in one transaction).
    ran: list[int] = []

    def step(con: duckdb.DuckDBPyConnection) -> None:
        ran.append(0)
        con.execute("CREATE TABLE migrated (a INTEGER)")

    monkeypatch.setitem(migrations.MIGRATIONS, 0, step)
    with Store.open(db) as s:
        assert s.schema_version() == schema.SCHEMA_VERSION
        assert s.count("games") == 0
    assert ran == [0]


def test_not_a_store(tmp_path: Path) -> None:
    other = tmp_path / "other.duckdb"
    con = duckdb.connect(str(other))
    con.execute("CREATE TABLE t (a INTEGER)")
    con.close()
    with pytest.raises(NotAStoreError):
        Store.open(other)
    junk = tmp_path / "junk.duckdb"
    junk.write_text("hello, I am not a database" * 200)
    with pytest.raises(StoreError):
        Store.open(junk)
    with pytest.raises(StoreError, match="no such database"):
        Store.open_readonly(tmp_path / "missing.duckdb")


def test_a_second_writer_gets_a_clear_error(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    Store.open(db).close()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from backalley.store.database import Store; s = Store.open(sys.argv[1]); "
            "print('ready', flush=True); time.sleep(60)",
            str(db),
        ],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "ready"
        with pytest.raises(StoreLockedError, match="in use by another process"):
            Store.open(db)
        with pytest.raises(StoreLockedError):
            ingest_mod.ingest([str(db.parent)], db)
        games = tmp_path / "g.jsonl"
        games.write_text(game_lines(1, seed=3, deals=1)[0] + "\n", encoding="utf-8")
        result = CliRunner().invoke(app, ["ingest", str(games), "--db", str(db)])
        assert result.exit_code == 2 and "in use by another process" in result.stderr
        result = CliRunner().invoke(app, ["query", "SELECT 1", "--db", str(db)])
        assert result.exit_code == 2 and "in use by another process" in result.stderr
        result = CliRunner().invoke(app, ["report", "--db", str(db), "--out", str(tmp_path / "r")])
        assert result.exit_code == 2 and "in use by another process" in result.stderr  # not DuckDB's lock text
        assert "Conflicting lock" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    finally:
        holder.kill()
        holder.wait()
    t0 = time.monotonic()
    while True:  # the lock goes with the process
        try:
            Store.open(db).close()
            break
        except StoreLockedError:
            assert time.monotonic() - t0 < 30
            time.sleep(0.1)


def test_insert_batch_takes_polars_and_arrow(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    row = {
        "game_key": 1,
        "ordinal": 1,
        "code": "JSON",
        "severity": "error",
        "message": "m",
        "path": "",
        "deal": None,
        "trick": None,
        "seat": None,
    }
    with Store.open(db) as s:  # a narrow table: the view `violations` reads it
        with s.atomic():
            assert s.insert_batch("g_violations", pl.DataFrame([row])) == 1
            assert s.insert_batch("g_violations", pl.DataFrame([row]).to_arrow()) == 1
        with pytest.raises(RuntimeError), s.atomic():
            s.insert_batch("g_violations", pl.DataFrame([row]))
            raise RuntimeError("roll back")
        assert s.count("g_violations") == 2
        with pytest.raises(StoreError):
            s.insert_batch("nope", pl.DataFrame([row]))


SAMPLE = ROOT / "data" / "sample"


@pytest.mark.skipif(not SAMPLE.is_dir(), reason="no committed sample data")
def _oracle_records(f: Path) -> Iterator[tuple[Any, Replay | None]]:
    """Each record of ``f`` with its replay (``None``: not JSON), read with plain json, or as CSV sheets."""
    if f.suffix == ".csv":
        with f.open("rb") as fh:
            for item in csv_items(str(f), fh):
                yield replay_sheet_csv(item.raw, item.line or 1)
        return
    texts = [f.read_text(encoding="utf-8")] if f.suffix == ".json" else f.read_text(encoding="utf-8").splitlines()
    for text in texts:
        if not text.strip():
            continue
        try:
            rec = json.loads(text, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
        except ValueError:
            yield None, None
            continue
        yield rec, replay(rec)


def test_committed_sample_and_simulated_games(tmp_path: Path) -> None:
    """The committed samples (valid, faulty, bad inputs) plus engine-played games: every table's count."""
    sim = tmp_path / "sim.jsonl"
    sim.write_text("\n".join(game_lines(20, seed=2026)) + "\n", encoding="utf-8")
    db = tmp_path / "s.duckdb"
    run = ingest([str(sim), str(SAMPLE)], db, workers=2)
    # What should be stored, worked out from the files with plain json and the replay.
    want = dict.fromkeys(("games", "deals", "deal_sides", "game_sides", "tricks", "violations", "rejects"), 0)
    records = 0
    for f in [sim, *sorted(SAMPLE.rglob("*.json*")), *sorted(SAMPLE.rglob("*.csv"))]:
        for rec, r in _oracle_records(f):
            records += 1
            if r is None:
                want["rejects"] += 1
                continue
            if not isinstance(rec, dict) or not isinstance(rec.get("game_id"), str):
                want["rejects"] += 1
                continue
            if any(v.path == "/game_id" for v in r.violations):
                want["rejects"] += 1
                continue
            want["games"] += 1
            want["violations"] += len(r.violations)
            if not any(v.code == "SCHEMA" for v in r.violations):
                want["deals"] += len(rec["deals"])
                want["deal_sides"] += len(rec["deals"]) * len(r.sides)
                want["game_sides"] += len(r.sides)
                want["tricks"] += sum(len(o.winners) for o in r.deals)
    got = counts(db)
    assert run.records == records
    assert run.inserted == want["games"] and run.duplicates == 0
    for t, n in want.items():
        assert got[t] == n, t
    assert got["bids"] == 4 * want["deals"] and got["plays"] == 4 * got["tricks"]
    with Store.open_readonly(db) as s:
        codes = {r[0] for r in s.con.execute("SELECT DISTINCT code FROM violations").fetchall()}
        assert {"SCHEMA", "REVOKE", "BIG_BLOOPER", "FINAL_SCORE_MISMATCH", "INCOMPLETE"} <= codes
        assert s.con.execute("SELECT count(*) FROM games WHERE game_id = 'bad-2'").fetchall()[0][0] == 0
    before = snapshot(db)
    again = ingest([str(sim), str(SAMPLE)], db)
    assert again.inserted == 0 and snapshot(db) == before


def test_a_rerun_does_not_replay_stored_records(
    inputs: tuple[Path, dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, _ = inputs
    db = tmp_path / "s.duckdb"
    ingest([str(folder)], db)
    before = snapshot(db)
    built: list[bytes] = []
    real = ingest_mod.build_item

    def counting(item: Any, sha: str | None = None) -> Any:
        built.append(item.raw)
        return real(item, sha)

    monkeypatch.setattr(ingest_mod, "build_item", counting)
    run = ingest([str(folder)], db)
    # Only what is not a stored game is replayed again: the rejects and the conflicting record.
    assert len(built) == 7
    assert (run.duplicates, run.invalid, run.conflicts, run.rejected) == (9, 2, 1, 6)
    assert snapshot(db) == before


def test_export_of_empty_tables_keeps_their_columns(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    Store.open(db).close()
    out = tmp_path / "export"
    with Store.open_readonly(db, external_access=True) as s:
        export(s, out)
        columns = {t: [r[0] for r in s.con.execute(f"DESCRIBE {t}").fetchall()] for t in schema.TABLES}
    for t in schema.TABLES:
        frame = pl.scan_parquet(out / t / "**" / "*.parquet", hive_partitioning=False).collect()
        assert frame.height == 0 and frame.columns == columns[t], t


def test_no_connection_draws_duckdbs_progress_bar(tmp_path: Path) -> None:
    """DuckDB's own progress bar (on by default) writes to stdout: into `query --format csv` output or a report's."""
    from backalley.reporting.metrics import open_store
    from backalley.store.database import Store

    db = tmp_path / "s.duckdb"
    with Store.open(db) as store:
        assert store.con.execute("SELECT current_setting('enable_progress_bar')").fetchall() == [(False,)]
    con = open_store(db)
    try:
        assert con.execute("SELECT current_setting('enable_progress_bar')").fetchall() == [(False,)]
    finally:
        con.close()

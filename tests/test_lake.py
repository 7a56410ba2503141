"""The scale-out ingest (``backalley.store.lake``): Dask tasks on a LocalCluster writing a Delta Lake.

The lake, attached to a DuckDB file, must hold what the embedded store holds for the
same inputs: every table and view is compared, sorted, without the run ids and times.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

distributed = pytest.importorskip("distributed")
pytest.importorskip("deltalake")

import duckdb  # noqa: E402

from backalley.cli.app import app  # noqa: E402
from backalley.records.sources import InputFile, expand, line_ranges, range_items, read_file  # noqa: E402
from backalley.simulate import simulate_games  # noqa: E402
from backalley.store import lake  # noqa: E402
from backalley.store.database import Store  # noqa: E402
from backalley.store.ingest import RunSummary, ingest  # noqa: E402
from tests.helpers import failing_at, make_inputs, odd_inputs  # noqa: E402

runner = CliRunner()
ROOT = Path(__file__).resolve().parent.parent
#: Small byte ranges, so that the generated .jsonl files are cut into several partitions.
PART = 150_000
#: Columns that name a run or its time: the only ones allowed to differ (and the worker count).
RUN_COLUMNS = {"run_id", "ingested_at", "rejected_at", "started_at", "finished_at", "workers"}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """data/sample, the store tests' mixed set, and a generated set with faults, duplicates and conflicts."""
    folder = tmp_path_factory.mktemp("in")
    make_inputs(folder / "mixed")
    lines = list(simulate_games(24, seed=5, faults=0.2))
    conflict = json.loads(lines[3])
    conflict["event"] = "Changed elsewhere"
    gen = folder / "gen"
    gen.mkdir()
    (gen / "games.jsonl").write_text("\n".join(lines[:20]) + "\n\n{oops\n", encoding="utf-8")
    later = [lines[5], json.dumps(conflict), "", *lines[20:], lines[7], "[]"]  # duplicates, a conflict, a reject
    (gen / "later.jsonl").write_text("\r\n".join(later) + "\r\n", encoding="utf-8")
    (gen / "one.json").write_text(lines[9], encoding="utf-8")  # a duplicate as a whole file
    return [str(ROOT / "data" / "sample"), str(folder / "mixed"), str(gen)]


def embedded(paths: list[str], db: Path, runs: int = 1) -> RunSummary:
    summary = RunSummary()
    for _ in range(runs):
        summary = ingest(paths, db)
    return summary


def in_lake(paths: list[str], uri: Path, dask_client: Any, runs: int = 1, stage_files: bool = True) -> lake.LakeRun:
    run = None
    for _ in range(runs):
        run = lake.ingest(paths, str(uri), dask_client, partition_bytes=PART, stage_files=stage_files)
    assert run is not None
    return run


def counters(run: RunSummary) -> dict[str, int]:
    keep = ("files", "records", "inserted", "replaced", "duplicates", "conflicts", "rejected", "invalid")
    return {k: getattr(run, k) for k in keep}


#: The lake's game keys are not the embedded store's (see ``lake.GAME_KEY``): a base table's
#: rows are compared with the game id their key names instead.
KEY_AS_ID = "(SELECT k.game_id FROM g_games AS k WHERE k.game_key = t.game_key) AS game_key"


def contents(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every table and view of a store, sorted, without the run columns (and the lake's meta key).

    The base tables' game keys are replaced by the game ids they name.
    """
    con = duckdb.connect(str(db), read_only=True)
    try:
        names = [
            r[0]
            for r in con.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' ORDER BY 1"
            ).fetchall()
        ]
        out = {}
        for name in names:
            cols = [
                r[0]
                for r in con.execute(
                    "SELECT column_name FROM information_schema.columns WHERE table_schema = 'main'"
                    " AND table_name = ? ORDER BY ordinal_position",
                    [name],
                ).fetchall()
            ]
            kept = ", ".join(KEY_AS_ID if c == "game_key" else f'"{c}"' for c in cols if c not in RUN_COLUMNS)
            where = " WHERE key <> 'lake'" if name == "meta" else ""
            sql = f'SELECT {kept} FROM "{name}" AS t{where} ORDER BY ALL'
            out[name] = [tuple(cols), *con.execute(sql).fetchall()]
        return out
    finally:
        con.close()


def assert_same(lake_db: Path, embedded_db: Path) -> None:
    got, want = contents(lake_db), contents(embedded_db)
    assert sorted(got) == sorted(want)
    for name, rows in want.items():
        assert got[name] == rows, name
    assert len(want["games"]) > 40 and len(want["rejects"]) > 5 and len(want["player_summary"]) > 5


@pytest.mark.parametrize("stage_files", [True, False], ids=["tasks-write-files", "client-writes-rows"])
def test_lake_equals_embedded_store(dask_client: Any, inputs: list[str], tmp_path: Path, stage_files: bool) -> None:
    emb = embedded(inputs, tmp_path / "e.duckdb")
    run = in_lake(inputs, tmp_path / "lake", dask_client, stage_files=stage_files)
    assert counters(run.summary) == counters(emb)
    if stage_files:  # most partitions commit the tasks' files; those meeting a stored game id are decided again
        assert 0 < run.redecided < run.partitions / 2
    assert emb.duplicates and emb.conflicts and emb.rejected and emb.invalid
    files = len(lake.plan(expand(inputs), PART))
    assert run.partitions == files and files > 12  # the generated files were cut into byte ranges
    views = lake.attach(str(tmp_path / "lake"), tmp_path / "l.duckdb")
    assert {"g_games", "g_tricks", "rejects", "ingest_runs"} <= set(views)  # the base tables the lake holds
    assert_same(tmp_path / "l.duckdb", tmp_path / "e.duckdb")


def test_rerun_commits_nothing_again(dask_client: Any, inputs: list[str], tmp_path: Path) -> None:
    emb = embedded(inputs, tmp_path / "e.duckdb", runs=2)
    run = in_lake(inputs, tmp_path / "lake", dask_client, runs=2)
    assert run.skipped == run.partitions
    assert counters(run.summary) == counters(emb)  # all duplicates, the rejects and conflicts again
    lake.attach(str(tmp_path / "lake"), tmp_path / "l.duckdb")
    lake.attach(str(tmp_path / "lake"), tmp_path / "l.duckdb")  # attaching again replaces the views
    assert_same(tmp_path / "l.duckdb", tmp_path / "e.duckdb")


def failing_once(log: Path) -> Callable[..., lake.PartResult]:
    """The task, failing on its first attempt at the first byte range that does not start a file.

    Every attempt is logged to a file: the workers' copy of the task is not this one.
    """
    real = lake.build_partition

    def task(part: lake.Partition, *args: Any) -> lake.PartResult:
        key = f"{part.source}@{part.start}"
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(key + "\n")
        if part.start > 0 and not any(k.rsplit("@", 1)[1] != "0" for k in log.read_text().splitlines()[:-1]):
            raise OSError("worker lost (injected)")
        return real(part, *args)

    return task


def test_a_failed_task_is_retried_and_committed_once(
    dask_client: Any, inputs: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "attempts"
    monkeypatch.setattr(lake, "build_partition", failing_once(log))
    run = in_lake(inputs, tmp_path / "lake", dask_client)
    attempts = log.read_text().splitlines()
    failed = next(k for k in attempts if not k.endswith("@0"))
    assert attempts.count(failed) == 2  # the failed attempt and the retry
    assert len(attempts) == run.partitions + 1 + run.redecided  # those decided again are built again
    embedded(inputs, tmp_path / "e.duckdb")
    lake.attach(str(tmp_path / "lake"), tmp_path / "l.duckdb")
    assert_same(tmp_path / "l.duckdb", tmp_path / "e.duckdb")


def test_a_run_killed_before_its_commit_is_undone(
    dask_client: Any, inputs: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed after a partition's tables were appended, before its ``partitions`` row: re-run = one clean run."""
    real = lake.Lake.append
    commits = [0]

    def append(self: lake.Lake, name: str, table: Any) -> int:
        if name == lake.PARTITIONS:
            commits[0] += 1
            if commits[0] == 4:
                raise KeyboardInterrupt  # the driver dies here
        return real(self, name, table)

    monkeypatch.setattr(lake.Lake, "append", append)
    with pytest.raises(KeyboardInterrupt):
        in_lake(inputs, tmp_path / "lake", dask_client)
    monkeypatch.setattr(lake.Lake, "append", real)
    run = in_lake(inputs, tmp_path / "lake", dask_client)
    assert run.restored and run.skipped == 3
    emb = embedded(inputs, tmp_path / "e.duckdb")
    lake.attach(str(tmp_path / "lake"), tmp_path / "l.duckdb")
    got = contents(tmp_path / "l.duckdb")
    want = contents(tmp_path / "e.duckdb")
    for name in want:
        if name != "ingest_runs":  # the lake also keeps the failed run's row
            assert got[name] == want[name], name
    assert counters(run.summary)["records"] == emb.records


@pytest.mark.slow
def test_a_killed_worker_process_is_replaced_and_its_partition_recomputed(inputs: list[str], tmp_path: Path) -> None:
    """A worker process dies (os._exit) in the middle of a task: Dask reruns the task on a new worker."""
    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    marker = tmp_path / "killed"
    try:
        with lake.connect("local:1", processes=True) as c:
            c.run(_install_dying_task, str(marker))
            run = in_lake(inputs[1:2], tmp_path / "lake", c)
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    assert marker.exists()  # a worker died in a task
    embedded(inputs[1:2], tmp_path / "e.duckdb")
    assert run.partitions >= 2
    lake.attach(str(tmp_path / "lake"), tmp_path / "l.duckdb")
    assert_same_small(tmp_path / "l.duckdb", tmp_path / "e.duckdb")


def _install_dying_task(marker: str) -> None:
    """In the worker process: the next task kills the process the first time (the marker file says so)."""
    real = lake.build_partition

    def task(part: lake.Partition, *args: Any) -> lake.PartResult:
        if not os.path.exists(marker):
            Path(marker).touch()
            os._exit(1)
        return real(part, *args)

    lake.__dict__["build_partition"] = task


def assert_same_small(lake_db: Path, embedded_db: Path) -> None:
    got, want = contents(lake_db), contents(embedded_db)
    for name, rows in want.items():
        assert got[name] == rows, name


# -- partitions and byte ranges --------------------------------------------------------------


def test_byte_ranges_give_the_records_and_line_numbers_of_the_whole_file(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    lines = [b"\xef\xbb\xbf{}", b"", b"  ", *(b'{"n": %d}' % i for i in range(40)), b"{bad", b'{"a": 1}\r']
    path.write_bytes(b"\n".join(lines))  # no newline at the end
    whole = list(read_file(InputFile("x.jsonl", path, True)))
    for size in (1, 7, 30, 100, 10_000):
        ranges = list(line_ranges(path, path.stat().st_size, size))
        assert ranges[0][0] == 0 and ranges[-1][1] == path.stat().st_size
        assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges))
        data = path.read_bytes()
        got = [it for s, e, first in ranges for it in range_items("x.jsonl", data[s:e], first)]
        assert got == whole, size


def test_plan_cuts_large_jsonl_files_only(tmp_path: Path) -> None:
    (tmp_path / "big.jsonl").write_text("".join(f'{{"n": {i}}}\n' for i in range(1000)))
    (tmp_path / "one.json").write_text("{}" + " " * 5000)
    parts = lake.plan(expand([str(tmp_path)]), 2000)
    assert [p.source.rsplit("/", 1)[1] for p in parts].count("one.json") == 1
    big = [p for p in parts if p.source.endswith("big.jsonl")]
    assert len(big) > 3 and big[0].first_line == 1 and big[1].first_line > 100


def test_a_read_error_while_planning_leaves_the_rest_to_one_partition_that_reports_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plan covers the whole file whatever the cutting pass met; the partition after the
    last cut meets the error itself and reports it as one record (it does not raise)."""
    path = tmp_path / "big.jsonl"
    path.write_text("".join(f'{{"n": {i}}}\n' for i in range(1000)))
    data, size = path.read_bytes(), path.stat().st_size
    failing_at(monkeypatch, path, size // 2)
    real_open = open

    def open_(file: object, mode: str = "r", *args: object, **kwargs: object) -> object:
        return Path(str(file)).open(mode) if Path(str(file)) == path else real_open(file, mode, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(lake, "open", open_, raising=False)
    parts = lake.plan(expand([str(path)]), 2000)
    assert parts[0].start == 0 and parts[-1].end == size
    assert all(a.end == b.start for a, b in itertools.pairwise(parts))
    last = parts[-1]
    assert last.start is not None and last.start <= size // 2 < last.end
    assert last.first_line == data[: last.start].count(b"\n") + 1
    items, _ = lake._read(last)
    assert [(it.raw, it.read_error) for it in items] == [(b"", "cannot read: Input/output error")]
    before, _ = lake._read(parts[-2])  # (read in full: its bytes come before the bad ones)
    assert all(it.read_error is None for it in before) and before


def test_standard_input_is_refused() -> None:
    with pytest.raises(lake.LakeError, match="standard input"):
        lake.plan(expand(["-"]))


def test_a_missing_package_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "deltalake", None)
    with pytest.raises(lake.LakeError, match=r"pip install 'backalley\[cluster\]'"):
        lake.Lake(str(tmp_path))


# -- the command line ------------------------------------------------------------------------


def test_cli_ingest_attach_query(dask_client: Any, inputs: list[str], tmp_path: Path) -> None:
    address = dask_client.scheduler.address.removeprefix("tcp://")
    out = tmp_path / "lake"
    result = runner.invoke(app, ["ingest", "--cluster", f"dask://{address}", "--lake", str(out), *inputs, "--json"])
    assert result.exit_code == 1, result.output  # invalid and rejected inputs: still recorded
    summary = json.loads(result.stdout)
    assert summary["inserted"] > 40 and summary["conflicts"] >= 1
    db = tmp_path / "l.duckdb"
    result = runner.invoke(app, ["attach", str(out), "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert "attached" in result.stdout
    result = runner.invoke(app, ["query", "--db", str(db), "SELECT count(*) AS n FROM games", "--format", "json"])
    assert result.exit_code == 0, result.output
    assert str(summary["inserted"]) in result.stdout
    result = runner.invoke(app, ["report", "--db", str(db), "--out", str(tmp_path / "reports")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "reports" / "index.html").is_file()
    # The query connection may read the lake's folder, nothing else.
    result = runner.invoke(app, ["query", "--db", str(db), "SELECT * FROM read_csv('/etc/hostname')"])
    assert result.exit_code == 2 and "disabled" in result.output


def test_raw_text_and_bytes_of_an_attached_lake(dask_client: Any, tmp_path: Path) -> None:
    """``games.raw`` (the ``backalley_raw`` macro) and ``backalley raw`` read the lake's compressed text."""
    want = odd_inputs(tmp_path / "in")  # a BOM, CRLF, non-ASCII text
    assert in_lake([str(tmp_path / "in")], tmp_path / "lake", dask_client).summary.inserted == 2
    db = tmp_path / "l.duckdb"
    lake.attach(str(tmp_path / "lake"), db)
    for gid, data in want.items():
        result = runner.invoke(app, ["raw", gid, "--db", str(db)])
        assert result.exit_code == 0, result.output
        assert result.stdout_bytes == data
        with Store.open_readonly(db) as s:  # the read-only connection may read the lake's folder only
            rows = s.con.execute("SELECT content_hash, raw FROM games WHERE game_id = ?", [gid]).fetchall()
        assert rows == [(hashlib.sha256(data).hexdigest(), data.decode("utf-8"))]
    missing = runner.invoke(app, ["raw", "no-such-game", "--db", str(db)])
    assert missing.exit_code == 2 and "no stored game has game_id 'no-such-game'" in missing.output


def test_game_keys_are_unique_across_partitions_and_runs(dask_client: Any, inputs: list[str], tmp_path: Path) -> None:
    """Each partition's games get keys of their own: the partition's number in the high bits."""
    in_lake(inputs[:2], tmp_path / "lake", dask_client)
    in_lake(inputs, tmp_path / "lake", dask_client)  # a second run adds the generated files' partitions
    db = tmp_path / "l.duckdb"
    lake.attach(str(tmp_path / "lake"), db)
    con = duckdb.connect(str(db), read_only=True)
    try:
        games, keys, parts = con.execute(
            "SELECT count(*), count(DISTINCT game_key), count(DISTINCT game_key >> 32) FROM g_games"
        ).fetchall()[0]
        orphans = con.execute(
            "SELECT count(*) FROM g_deals d ANTI JOIN g_games g ON g.game_key = d.game_key"
        ).fetchall()[0][0]
    finally:
        con.close()
    assert games == keys and games > 40 and parts > 3 and orphans == 0


def test_cli_help_names_the_cluster_options() -> None:
    result = runner.invoke(app, ["ingest", "--help"])
    assert "--cluster" in result.stdout and "--lake" in result.stdout
    result = runner.invoke(app, ["attach", "--help"])
    assert result.exit_code == 0 and "--db" in result.stdout


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--cluster", "yarn://x", "--lake", "L"], "expected dask://HOST:PORT or local[:N]"),
        (["--cluster", "local:0", "--lake", "L"], "at least one worker"),
        (["--cluster", "dask://host", "--lake", "L"], "expected dask://HOST:PORT"),
        (["--lake", "L"], "--cluster and --lake go together"),
        (["--cluster", "local:1"], "--cluster and --lake go together"),
        (["--cluster", "local:1", "--lake", "L", "--db", "x.duckdb"], "do not apply"),
        (["--cluster", "local:1", "--lake", "L", "--replace"], "do not apply"),
    ],
)
def test_cli_usage_errors(args: list[str], message: str, tmp_path: Path) -> None:
    result = runner.invoke(app, ["ingest", *args, str(ROOT / "data" / "sample")])
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_cli_unreachable_scheduler(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(lake, "CONNECT_TIMEOUT", "1s")
    address = f"dask://127.0.0.1:{free_port()}"
    result = runner.invoke(app, ["ingest", "--cluster", address, "--lake", str(tmp_path / "L"), str(ROOT / "data")])
    assert result.exit_code == 2
    assert "cannot reach the Dask scheduler" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_cli_attach_errors(tmp_path: Path) -> None:
    result = runner.invoke(app, ["attach", str(tmp_path / "none"), "--db", str(tmp_path / "x.duckdb")])
    assert result.exit_code == 2 and "no lake here" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_cli_attach_refuses_an_ingested_store(dask_client: Any, tmp_path: Path) -> None:
    sample = [str(ROOT / "data" / "sample" / "valid-games.jsonl")]
    in_lake(sample, tmp_path / "lake", dask_client)
    store = tmp_path / "s.duckdb"
    ingest(sample, store)
    result = runner.invoke(app, ["attach", str(tmp_path / "lake"), "--db", str(store)])
    assert result.exit_code == 2 and "attach a lake to a new file" in result.output


# --- issue 29: the lake touches only its own tables; a damaged lake or one of another schema is refused


@pytest.fixture(scope="module")
def small_lake(dask_client: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A lake of the three sample games (copied by each test that damages it)."""
    uri = tmp_path_factory.mktemp("small") / "lake"
    in_lake([str(ROOT / "data" / "sample" / "valid-games.jsonl")], uri, dask_client)
    return uri


def damaged(small_lake: Path, tmp_path: Path, damage: Callable[[Path], None]) -> Path:
    import shutil

    copy = tmp_path / "lake"
    shutil.copytree(small_lake, copy)
    damage(copy)
    return copy


def attach_fails(uri: Path, db: Path, *words: str) -> str:
    result = runner.invoke(app, ["attach", str(uri), "--db", str(db)])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and len(result.stderr.strip().splitlines()) == 1
    for word in words:
        assert word in result.stderr
    assert not db.exists() and not db.with_name(db.name + ".wal").exists()  # no empty store left behind
    return result.stderr


def test_ingest_lake_leaves_a_foreign_table_in_the_folder_alone(dask_client: Any, tmp_path: Path) -> None:
    from deltalake import DeltaTable, write_deltalake

    pa = pytest.importorskip("pyarrow")
    uri = tmp_path / "lake"
    write_deltalake(str(uri / "sales"), pa.table({"item": ["a", "b", "c"], "price": [1, 2, 3]}))
    for _ in range(2):  # the first run restores nothing; the second neither
        run = in_lake([str(ROOT / "data" / "sample" / "valid-games.jsonl")], uri, dask_client)
        assert run.restored == []
    assert DeltaTable(str(uri / "sales")).to_pyarrow_table().num_rows == 3


def first_file(uri: Path, table: str) -> Path:
    return next((uri / table).glob("*.parquet"))


def rewrite(path: Path, change: Callable[[Any], Any]) -> None:
    import pyarrow.parquet as pq

    pq.write_table(change(pq.read_table(path)), path)


@pytest.mark.parametrize(
    ("damage", "words"),
    [
        (lambda u: first_file(u, "g_deals").unlink(), ["g_deals", "files named by its Delta log are missing"]),
        (lambda u: (u / "g_games" / "_delta_log" / f"{1:020d}.json").write_bytes(b""), ["commit 1", "is empty"]),
        (lambda u: (u / "g_games" / "_delta_log" / f"{1:020d}.json").unlink(), ["g_games", "commits", "missing"]),
        (lambda u: (u / "g_bids" / "_delta_log" / f"{0:020d}.json").unlink(), ["commit 0", "missing"]),
        (lambda u: __import__("shutil").rmtree(u / "g_games" / "_delta_log"), ["g_games", "_delta_log"]),
        (lambda u: __import__("shutil").rmtree(u / "partitions" / "_delta_log"), ["partitions", "no Delta log"]),
    ],
    ids=[
        "parquet-file",
        "emptied-commit",
        "deleted-last-commit",
        "deleted-first-commit",
        "delta-log",
        "partitions-log",
    ],
)
def test_attach_refuses_a_damaged_lake(
    small_lake: Path, tmp_path: Path, damage: Callable[[Path], None], words: list[str]
) -> None:
    attach_fails(damaged(small_lake, tmp_path, damage), tmp_path / "a.duckdb", "damaged", *words)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda t: t.drop_columns(["player_n"]), ["g_games", "lacks column player_n", "another version"]),
        (lambda t: t.append_column("novel", t.column(0)), ["unknown column novel"]),
        (
            lambda t: t.set_column(t.schema.get_field_index("player_n"), "player_n", t["player_n"].cast("binary")),
            ["player_n is BLOB, not VARCHAR"],
        ),
    ],
    ids=["missing-column", "extra-column", "other-type"],
)
def test_attach_refuses_a_lake_of_another_schema(
    small_lake: Path, tmp_path: Path, change: Callable[[Any], Any], words: list[str]
) -> None:
    uri = damaged(small_lake, tmp_path, lambda u: rewrite(first_file(u, "g_games"), change))
    attach_fails(uri, tmp_path / "a.duckdb", *words)


def test_ingest_into_a_lake_missing_a_file_fails_clearly(dask_client: Any, small_lake: Path, tmp_path: Path) -> None:
    uri = damaged(small_lake, tmp_path, lambda u: first_file(u, "g_tricks").unlink())
    before = sorted(p.relative_to(uri) for p in uri.rglob("*"))
    address = dask_client.scheduler.address.removeprefix("tcp://")
    result = runner.invoke(
        app, ["ingest", "--cluster", f"dask://{address}", "--lake", str(uri), str(ROOT / "data" / "sample")]
    )
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "g_tricks" in result.stderr and "missing" in result.stderr
    assert sorted(p.relative_to(uri) for p in uri.rglob("*")) == before  # nothing written

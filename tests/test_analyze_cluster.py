"""``backalley analyze --cluster``: the store's (and a lake's) double-dummy analysis as Dask tasks.

Whatever runs it, the analysis of a store must fill the same rows: the cluster's
``dd_deals``, ``dd_deal_sides`` and ``dd_plays`` are compared, table by table and
ordered, with those of ``analyze --workers 2`` on a copy of the store.
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

distributed = pytest.importorskip("distributed")
pytest.importorskip("deltalake")

import duckdb  # noqa: E402

from backalley.analysis import cluster, dd  # noqa: E402
from backalley.cli.app import app  # noqa: E402
from backalley.rules import find_ruleset  # noqa: E402
from backalley.simulate import simulate_games  # noqa: E402
from backalley.store import lake  # noqa: E402
from backalley.store.ingest import ingest  # noqa: E402
from backalley.store.schema import DD_TABLES  # noqa: E402

runner = CliRunner()
#: Deals of at most this many cards a hand are solved (the larger take the search seconds each).
CARDS = 7


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """Games with partnerships (some breaking rules of play) and without, as record files."""
    folder = tmp_path_factory.mktemp("games")
    teams = list(simulate_games(24, seed=31, faults=0.15))
    alone = list(simulate_games(8, seed=32, rules=find_ruleset("standard", ("no_partnerships",))))
    (folder / "teams.jsonl").write_text("\n".join(teams) + "\n", encoding="utf-8")
    (folder / "alone.jsonl").write_text("\n".join(alone) + "\n", encoding="utf-8")
    return [str(folder)]


@pytest.fixture(scope="module")
def store(inputs: list[str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The games ingested, nothing analysed yet (each test analyses a copy)."""
    db = tmp_path_factory.mktemp("store") / "s.duckdb"
    ingest(inputs, db)
    return db


def copy(db: Path, to: Path) -> Path:
    shutil.copy(db, to)
    return to


def dd_rows(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Each double-dummy table's rows, ordered."""
    with duckdb.connect(str(db), read_only=True) as con:
        return {name: con.execute(f"SELECT * FROM {name} ORDER BY ALL").fetchall() for name in DD_TABLES}


def analysed(db: Path, **kwargs: Any) -> dict[str, list[tuple[Any, ...]]]:
    """The rows ``analyze --workers 2`` fills in ``db`` (at most :data:`CARDS` cards a hand)."""
    dd.analyse_store(db, workers=2, max_cards=CARDS, **kwargs)
    return dd_rows(db)


def assert_many(rows: dict[str, list[tuple[Any, ...]]]) -> None:
    """Enough rows of every kind for the comparison to mean something."""
    deals = rows["dd_deals"]
    assert len(deals) > 100 and len(rows["dd_plays"]) > 500
    assert any(not d[4] for d in deals) and any(d[5] is None and d[4] for d in deals)  # skipped; seats alone
    assert {len(s[2]) for s in rows["dd_deal_sides"]} == {1, 2}  # seats and teams


def test_analyze_cluster_local_equals_analyze_workers(store: Path, tmp_path: Path) -> None:
    """The issue's check: ``analyze --cluster local:2`` = ``analyze --workers 2``, table by table."""
    on_cluster, in_pool = copy(store, tmp_path / "c.duckdb"), copy(store, tmp_path / "w.duckdb")
    args = ["analyze", "--max-cards", str(CARDS), "--db"]
    got = runner.invoke(app, [*args, str(on_cluster), "--cluster", "local:2"])
    want = runner.invoke(app, [*args, str(in_pool), "--workers", "2"])
    assert got.exit_code == want.exit_code == 0, got.output + want.output
    assert got.stdout == want.stdout and "32 games" in got.stdout
    rows = dd_rows(in_pool)
    assert_many(rows)
    assert dd_rows(on_cluster) == rows


def test_an_interrupted_run_resumes_where_it_stopped(
    dask_client: Any, store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed after two batches: those stay; the next run analyses the rest, once; a third finds nothing.

    The records are read a block of about 7 games at a time: one batch of 5 a block.
    """
    monkeypatch.setattr(dd, "READ_BLOCK", 7)
    db = copy(store, tmp_path / "c.duckdb")
    real = dd.store_batch
    written = [0]

    def store_batch(target: Any, solved: dd.Solved) -> None:
        if written[0] == 2:
            raise KeyboardInterrupt
        written[0] += 1
        real(target, solved)

    monkeypatch.setattr(dd, "store_batch", store_batch)
    with pytest.raises(KeyboardInterrupt):
        cluster.analyse_store_on(dask_client, db, max_cards=CARDS, batch=5)
    assert len({g for g, *_ in dd_rows(db)["dd_deals"]}) == 10
    monkeypatch.setattr(dd, "store_batch", real)
    seen: list[tuple[int, int, int]] = []
    rest = cluster.analyse_store_on(dask_client, db, max_cards=CARDS, batch=5, progress=lambda *p: seen.append(p))
    assert rest.games == 22 and seen[0] == (0, 22, 0) and seen[-1] == (22, 22, rest.deals) > seen[-2]
    assert cluster.analyse_store_on(dask_client, db, max_cards=CARDS).games == 0
    assert dd_rows(db) == analysed(copy(store, tmp_path / "w.duckdb"))


def test_larger_deals_are_left_for_a_later_run(dask_client: Any, store: Path, tmp_path: Path) -> None:
    db = copy(store, tmp_path / "c.duckdb")
    first = cluster.analyse_store_on(dask_client, db, max_cards=3)
    second = cluster.analyse_store_on(dask_client, db, max_cards=CARDS)
    assert first.games == second.games == 32 and 0 < first.deals < second.deals
    assert first.cpu_seconds > 0 and second.cpu_seconds > 0  # the workers' CPU, summed over the batches
    assert dd_rows(db) == analysed(copy(store, tmp_path / "w.duckdb"))


@pytest.mark.slow
def test_a_killed_worker_is_replaced_and_its_batch_analysed_again(store: Path, tmp_path: Path) -> None:
    """A worker process dies (os._exit) in the middle of a task: Dask reruns the task on a new worker."""
    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    marker = tmp_path / "killed"
    db = copy(store, tmp_path / "c.duckdb")
    try:
        with lake.connect("local:1", processes=True) as c:
            c.run(_install_dying_task, str(marker))
            summary = cluster.analyse_store_on(c, db, max_cards=CARDS)
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    assert marker.exists() and summary.games == 32  # a worker died in a task; no game was lost
    assert dd_rows(db) == analysed(copy(store, tmp_path / "w.duckdb"))


def _install_dying_task(marker: str) -> None:
    """In the worker process: its next task kills the process, the first time (the marker file says so)."""
    real = dd.solve_jobs

    def task(jobs: list[dd.Job]) -> dd.Solved:
        if not os.path.exists(marker):
            Path(marker).touch()
            os._exit(1)
        return real(jobs)

    dd.__dict__["solve_jobs"] = task


def test_a_batch_whose_workers_keep_dying_is_a_clear_error() -> None:
    """Dask gives up on a task after its workers died ``allowed_failures + 1`` times: one line, no traceback."""
    import types

    class Lost:
        def result(self) -> Any:
            raise distributed.KilledWorker("solve_jobs-1f2e", types.SimpleNamespace(address="tcp://w:1"), 3)

    with pytest.raises(lake.LakeError) as caught:
        cluster._take(Lost())
    message = str(caught.value)
    assert "4 workers died running one batch" in message and "run analyze again" in message
    assert "\n" not in message


# -- a lake ------------------------------------------------------------------------------------


@pytest.fixture
def games_lake(dask_client: Any, inputs: list[str], tmp_path: Path) -> Path:
    uri = tmp_path / "lake"
    lake.ingest(inputs, str(uri), dask_client)
    return uri


def test_analyze_lake_fills_the_dd_tables_attach_shows(
    dask_client: Any, games_lake: Path, store: Path, tmp_path: Path
) -> None:
    small = cluster.analyse_lake(dask_client, str(games_lake), max_cards=3, batch=7)
    summary = cluster.analyse_lake(dask_client, str(games_lake), max_cards=CARDS, batch=7)  # the larger deals
    assert small.games == summary.games == 32 and 0 < small.deals < summary.deals
    assert cluster.analyse_lake(dask_client, str(games_lake), max_cards=CARDS).games == 0  # resumable: nothing left
    keys = [r["partition_key"] for r in lake.Lake(str(games_lake)).partitions() if r["source"] == "analyze"]
    assert len(keys) == len(set(keys)) == 10  # a commit row each batch (5 a run), each its own key
    views = lake.attach(str(games_lake), tmp_path / "l.duckdb")
    assert set(DD_TABLES) <= set(views)
    assert dd_rows(tmp_path / "l.duckdb") == analysed(copy(store, tmp_path / "w.duckdb"))


def test_a_lake_analysis_killed_before_its_commit_is_undone(
    dask_client: Any, games_lake: Path, store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed after a batch's dd_deals and dd_plays were appended, before its commit: undone by the next run."""
    real = lake.Lake.append
    appends = [0]

    def append(self: lake.Lake, name: str, table: Any) -> int:
        if name == "dd_deal_sides":
            appends[0] += 1
            if appends[0] == 3:
                raise KeyboardInterrupt
        return real(self, name, table)

    monkeypatch.setattr(lake.Lake, "append", append)
    with pytest.raises(KeyboardInterrupt):
        cluster.analyse_lake(dask_client, str(games_lake), max_cards=CARDS, batch=5)
    monkeypatch.setattr(lake.Lake, "append", real)
    assert cluster.analyse_lake(dask_client, str(games_lake), max_cards=CARDS, batch=5).games == 22
    lake.attach(str(games_lake), tmp_path / "l.duckdb")
    assert dd_rows(tmp_path / "l.duckdb") == analysed(copy(store, tmp_path / "w.duckdb"))


def test_cli_analyze_lake_then_attach(dask_client: Any, games_lake: Path, tmp_path: Path) -> None:
    address = dask_client.scheduler.address.removeprefix("tcp://")
    args = ["analyze", "--cluster", f"dask://{address}", "--lake", str(games_lake), "--max-cards", "2"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("analyze: 32 games")
    db = tmp_path / "l.duckdb"
    assert runner.invoke(app, ["attach", str(games_lake), "--db", str(db)]).exit_code == 0
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT max(hand_size), count(*) > 32 FROM dd_deals").fetchall() == [(2, True)]


def test_attach_refuses_to_drop_rows_analyze_db_wrote_into_the_file(
    dask_client: Any, games_lake: Path, tmp_path: Path
) -> None:
    """The file's own dd rows (from ``analyze --db`` on an attached store) are never dropped by a later attach."""
    db = tmp_path / "l.duckdb"
    lake.attach(str(games_lake), db)
    assert runner.invoke(app, ["analyze", "--db", str(db), "--max-cards", "2"]).exit_code == 0
    before = dd_rows(db)
    assert before["dd_deals"]  # the file's own dd_deals hold rows
    cluster.analyse_lake(dask_client, str(games_lake), max_cards=2)
    with pytest.raises(lake.LakeError) as caught:
        lake.attach(str(games_lake), db)
    assert "its own table dd_" in str(caught.value) and "attach the lake to a new file" in str(caught.value)
    assert dd_rows(db) == before


# -- errors ------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_cli_help_names_the_cluster_options() -> None:
    result = runner.invoke(app, ["analyze", "--help"])
    assert result.exit_code == 0 and "--cluster" in result.stdout and "--lake" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--cluster", "yarn://x"], "expected dask://HOST:PORT or local[:N]"),
        (["--cluster", "local:0"], "at least one worker"),
        (["--cluster", "local:1", "--workers", "2"], "--workers does not apply"),
        (["--lake", "L"], "--lake needs --cluster"),
        (["--cluster", "local:1", "--lake", "L", "--db", "x.duckdb"], "--db does not apply"),
        (["--cluster", "local:1", "some.jsonl"], "not both"),
    ],
)
def test_cli_usage_errors(args: list[str], message: str) -> None:
    result = runner.invoke(app, ["analyze", *args])
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_cli_unreachable_scheduler(monkeypatch: pytest.MonkeyPatch, store: Path, tmp_path: Path) -> None:
    monkeypatch.setattr(lake, "CONNECT_TIMEOUT", "1s")
    db = copy(store, tmp_path / "c.duckdb")
    result = runner.invoke(app, ["analyze", "--cluster", f"dask://127.0.0.1:{free_port()}", "--db", str(db)])
    assert result.exit_code == 2 and "cannot reach the Dask scheduler" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_cli_no_lake_there(dask_client: Any, tmp_path: Path) -> None:
    address = dask_client.scheduler.address.removeprefix("tcp://")
    result = runner.invoke(app, ["analyze", "--cluster", f"dask://{address}", "--lake", str(tmp_path / "none")])
    assert result.exit_code == 2 and "no lake here" in result.output
    assert len(result.output.strip().splitlines()) == 1

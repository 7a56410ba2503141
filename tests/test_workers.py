"""The worker processes of ``validate --workers``: results in order, errors raised here, no thread, no orphan."""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

import backalley.validate
from backalley import workers
from backalley.cli.app import app
from backalley.workers import RemoteTraceback, WorkerDied, ordered_map
from tests.helpers import DeadPool

FORK = multiprocessing.get_context("fork")
runner = CliRunner()


def square_after(n: int, delay: float) -> tuple[int, int]:
    time.sleep(delay)
    return n, n * n


def fail_on(n: int, bad: int) -> int:
    if n == bad:
        raise ValueError(f"task {n} is bad")
    return n


def die_on(n: int, bad: int) -> int:
    if n == bad:
        os._exit(3)
    return n


def grow(data: bytes) -> bytes:
    return data * 8


def unpicklable(n: int) -> object:
    return lambda: n


def no_workers_left() -> bool:
    deadline = time.monotonic() + 5
    while multiprocessing.active_children() and time.monotonic() < deadline:
        time.sleep(0.01)
    return not multiprocessing.active_children()


@pytest.mark.parametrize("count", [0, 1, 2, 3, 57])
def test_results_come_back_in_task_order_whatever_the_timing(count: int) -> None:
    rng = random.Random(count)
    tasks = [(n, rng.choice([0.0, 0.0, 0.002, 0.01])) for n in range(count)]
    got = list(ordered_map(square_after, iter(tasks), 3, FORK))
    assert got == [(n, n * n) for n in range(count)]
    assert no_workers_left()


def test_results_come_back_in_order_from_forkserver_workers() -> None:
    ctx = multiprocessing.get_context("forkserver")
    got = list(ordered_map(os.path.join, ((f"a{n}", "b") for n in range(20)), 2, ctx))
    assert got == [os.path.join(f"a{n}", "b") for n in range(20)]


def test_the_pool_server_started_early_is_the_one_the_pool_uses() -> None:
    """``ingest`` starts the forkserver (and its imports) before it opens the store; the pool then uses it."""
    from multiprocessing import forkserver

    workers.start_pool_server(["backalley.store.rows"])
    pid = forkserver._forkserver._forkserver_pid  # type: ignore[attr-defined]
    assert pid is not None
    os.kill(pid, 0)  # running (raises if not)
    ctx = workers.pool_context(["backalley.store.rows"])
    got = list(ordered_map(os.path.join, ((f"a{n}", "b") for n in range(6)), 2, ctx))
    assert got == [os.path.join(f"a{n}", "b") for n in range(6)]
    assert forkserver._forkserver._forkserver_pid == pid  # type: ignore[attr-defined]


def test_no_thread_is_started_in_this_process() -> None:
    before = threading.active_count()
    counts = [threading.active_count() for _ in ordered_map(square_after, ((n, 0.001) for n in range(30)), 2, FORK)]
    assert set(counts) == {before}


def test_tasks_are_taken_only_as_far_ahead_as_the_bound() -> None:
    taken = 0

    def tasks() -> Iterator[tuple[int, float]]:
        nonlocal taken
        for n in range(100):
            taken += 1
            yield n, (0.3 if n == 0 else 0.0)  # the first result comes last: the others must wait

    it = ordered_map(square_after, tasks(), 2, FORK)
    assert next(it) == (0, 0)
    assert taken <= workers.AHEAD * 2 + 1
    assert [n for n, _ in it] == list(range(1, 100))


def test_large_tasks_and_larger_results_do_not_wait_on_each_other() -> None:
    """A worker writing a result larger than its pipe waits for this process to read it: this process
    must not be waiting to send that worker a task larger than its pipe at the same time."""

    def too_long(*_: object) -> None:
        raise TimeoutError("the workers and this process waited on each other")

    tasks = [(bytes([n]) * 300_000,) for n in range(12)]
    old = signal.signal(signal.SIGALRM, too_long)
    signal.alarm(60)
    try:
        got = list(ordered_map(grow, iter(tasks), 2, FORK))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert got == [t[0] * 8 for t in tasks]
    assert no_workers_left()


def test_an_exception_in_a_task_is_raised_here_with_the_workers_traceback() -> None:
    with pytest.raises(ValueError, match="task 5 is bad") as info:
        list(ordered_map(fail_on, ((n, 5) for n in range(20)), 2, FORK))
    assert isinstance(info.value.__cause__, RemoteTraceback)
    assert "fail_on" in str(info.value.__cause__)
    assert no_workers_left()


def test_a_result_that_cannot_be_sent_back_is_an_error_here() -> None:
    with pytest.raises(RuntimeError, match="cannot send the result back"):
        list(ordered_map(unpicklable, [(1,), (2,)], 2, FORK))
    assert no_workers_left()


def test_a_worker_that_dies_ends_the_run_with_worker_died() -> None:
    with pytest.raises(WorkerDied, match=r"exit code 3"):
        list(ordered_map(die_on, ((n, 7) for n in range(40)), 2, FORK))
    assert no_workers_left()


def test_closing_the_results_early_stops_the_workers() -> None:
    it = ordered_map(square_after, ((n, 0.01) for n in range(1000)), 2, FORK)
    assert next(it) == (0, 0)
    it.close()
    assert no_workers_left()


def test_validate_reports_a_dead_worker_as_an_error_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "games.jsonl"
    path.write_bytes(b"{}\n" * 10)
    monkeypatch.setattr(backalley.validate, "_check_task", die_on_task)
    result = runner.invoke(app, ["validate", "--workers", "2", str(path)])
    assert result.exit_code == 2, result.output
    assert "worker process" in result.output and "exit code 3" in result.output
    assert "Traceback" not in result.output
    assert no_workers_left()


def die_on_task(*args: object) -> None:
    os._exit(3)


def test_simulate_reports_a_dead_worker_as_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import backalley.simulate.writer

    monkeypatch.setattr(backalley.simulate.writer, "ProcessPoolExecutor", DeadPool)
    out = tmp_path / "games.jsonl"
    result = runner.invoke(app, ["simulate", "--games", "4", "--workers", "2", "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert "worker process stopped" in result.output and "holds the games before it" in result.output
    assert "Traceback" not in result.output


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store of a few three-deal games of six players."""
    from tests.store_games import game_lines

    root = tmp_path_factory.mktemp("dead")
    games = root / "games.jsonl"
    games.write_text("".join(line + "\n" for line in game_lines(6, deals=3)), encoding="utf-8")
    db = root / "s.duckdb"
    assert runner.invoke(app, ["ingest", "--db", str(db), str(games)]).exit_code == 0
    return db


@pytest.mark.parametrize(
    ("module", "args", "message"),
    [
        ("backalley.reporting", ["report", "--workers", "2", "--out", "{tmp}"], "before it wrote its pages"),
        ("backalley.analysis.dd", ["analyze", "--workers", "2", "--max-cards", "13"], "run analyze again"),
    ],
)
def test_report_and_analyze_report_a_dead_worker_as_an_error(
    store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str, args: list[str], message: str
) -> None:
    import importlib

    monkeypatch.setattr(importlib.import_module(module), "ProcessPoolExecutor", DeadPool)
    monkeypatch.setattr(backalley.validate, "default_workers", lambda: 2)
    result = runner.invoke(app, [*(a.format(tmp=tmp_path / "out") for a in args), "--db", str(store)])
    assert result.exit_code == 2, result.output
    assert "worker process stopped" in result.output and message in result.output
    assert "Traceback" not in result.output

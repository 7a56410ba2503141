"""Child processes die with their parent (issue 29): after ``kill -9`` (or ``SIGTERM``) of a command's main process,
its workers, the forkserver and the resource tracker used to keep running (seen after 18 minutes).

Each command is started in its own session; once its workers exist, its main process is killed
and every process left in the session must end within :data:`GRACE` seconds.  Every wait is tied
to what ``/proc`` shows, and bounded.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from backalley.cli.app import app
from backalley.workers import Guarded, guarded

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")

runner = CliRunner()
BACKALLEY = [sys.executable, "-m", "backalley"]
#: Seconds the processes left may take to end once the main one is killed.
GRACE = 10.0
#: Seconds a command may take to start its workers.
START = 90.0


def session(sid: int) -> list[tuple[int, int, str]]:
    """``(pid, ppid, name)`` of every live process of session ``sid`` (zombies are over)."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:  # (ended meanwhile)
            continue
        name, rest = stat[stat.index("(") + 1 : stat.rindex(")")], stat[stat.rindex(")") + 2 :].split()
        if int(rest[3]) == sid and rest[0] not in "ZX":
            found.append((int(d.name), int(rest[1]), name))
    return found


def wait_for(what: Callable[[], bool], seconds: float) -> bool:
    """Whether ``what()`` became true within ``seconds``."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if what():
            return True
        time.sleep(0.05)
    return what()


@pytest.fixture
def started() -> Iterator[Callable[..., subprocess.Popen[bytes]]]:
    """Start commands in their own sessions; whatever is left of them is killed at the end."""
    procs: list[subprocess.Popen[bytes]] = []

    def start(*args: str) -> subprocess.Popen[bytes]:
        p = subprocess.Popen(
            [*BACKALLEY, *args],
            start_new_session=True,
            stdin=subprocess.PIPE,  # (held open: a command reading standard input waits on it)
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        procs.append(p)
        return p

    yield start
    for p in procs:
        for pid, _, _ in session(p.pid):
            with contextlib.suppress(ProcessLookupError):  # (it may end between the look and the kill)
                os.kill(pid, signal.SIGKILL)
        p.kill()
        p.wait(5)
        if p.stdin is not None:
            p.stdin.close()


def kill_main_and_count(
    p: subprocess.Popen[bytes], workers_up: Callable[[], bool], sig: int = signal.SIGKILL
) -> list[tuple[int, int, str]]:
    """Wait until ``workers_up()``, send the main process ``sig``, and give what is left after :data:`GRACE`."""
    assert wait_for(workers_up, START), f"the workers never started: {session(p.pid)}"
    assert p.poll() is None, "the command ended before it was killed"
    os.kill(p.pid, sig)
    p.wait(10)
    wait_for(lambda: not session(p.pid), GRACE)
    return session(p.pid)


def children(p: subprocess.Popen[bytes], at_least: int) -> Callable[[], bool]:
    """``at_least`` processes in ``p``'s session besides ``p``."""
    return lambda: len([x for x in session(p.pid) if x[0] != p.pid]) >= at_least


@pytest.fixture(scope="module")
def games(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """600 games: more than two of ingest's chunks, so its pool starts before standard input is read."""
    out = tmp_path_factory.mktemp("lifeline") / "games.jsonl"
    result = runner.invoke(app, ["simulate", "--games", "600", "--seed", "5", "--out", str(out), "--workers", "1"])
    assert result.exit_code == 0, result.output
    return out


def test_validate_workers_end_with_the_main_process(
    games: Path, started: Callable[..., subprocess.Popen[bytes]]
) -> None:
    p = started("validate", "--workers", "2", str(games), "-")  # waits on standard input, after the file
    assert kill_main_and_count(p, children(p, 2)) == []


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_ingest_workers_forkserver_and_tracker_end_with_the_main_process(
    games: Path, tmp_path: Path, started: Callable[..., subprocess.Popen[bytes]], sig: int
) -> None:
    p = started("ingest", "--workers", "2", "--db", str(tmp_path / "i.duckdb"), str(games), "-")
    assert kill_main_and_count(p, children(p, 4), sig) == []  # two workers, the forkserver, the resource tracker


def test_simulate_workers_end_with_the_main_process(
    tmp_path: Path, started: Callable[..., subprocess.Popen[bytes]]
) -> None:
    p = started("simulate", "--workers", "2", "--games", "1000000", "--out", str(tmp_path / "s.jsonl"))
    assert kill_main_and_count(p, children(p, 4)) == []


def test_analyze_workers_end_with_the_main_process(
    games: Path, tmp_path: Path, started: Callable[..., subprocess.Popen[bytes]]
) -> None:
    db = tmp_path / "a.duckdb"
    result = runner.invoke(app, ["ingest", "--workers", "1", "--db", str(db), str(games)])
    assert result.exit_code == 0, result.output
    p = started("analyze", "--workers", "2", "--db", str(db))  # 15,000 deals: minutes of work
    assert kill_main_and_count(p, children(p, 4)) == []


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_serve_workers_end_with_the_main_process(
    games: Path, tmp_path: Path, started: Callable[..., subprocess.Popen[bytes]]
) -> None:
    port = free_port()
    db = str(tmp_path / "s.duckdb")
    p = started("serve", "--db", db, "--port", str(port), "--workers", "2", "--public-validate")
    url = f"http://127.0.0.1:{port}/api/v1/validate"
    body = b"".join(games.read_bytes().splitlines(keepends=True)[:20])

    def answered() -> bool:
        try:
            with urllib.request.urlopen(
                urllib.request.Request(url, body, {"content-type": "application/x-ndjson"}), timeout=30
            ) as r:
                return len([json.loads(x) for x in r.read().splitlines()]) == 20
        except OSError:
            return p.poll() is not None  # (not listening yet; a command that ended fails below)

    assert wait_for(answered, START) and p.poll() is None  # the replays' pool has started
    assert kill_main_and_count(p, children(p, 4)) == []


def test_guarded_is_sent_to_workers_whole() -> None:
    from backalley.validate import tune_gc

    g = pickle.loads(pickle.dumps(guarded(tune_gc)))
    assert isinstance(g, Guarded) and (g.main, g.then, g.args) == (os.getpid(), tune_gc, ())

"""Worker processes that run one function over many tasks and give the results back in order.

:func:`ordered_map` is what ``validate --workers`` runs its pieces of input on.  Unlike
``multiprocessing.Pool`` it starts no thread in this process: it sends each worker its
tasks over the worker's own pipe and reads whichever result is ready.  A ``Pool``'s
worker-handler thread also waits on the shared result pipe, so while a result sits
there unread it wakes again and again; with the result and task threads it took
0.2–0.3 s of CPU in a 2.5 s two-core validation of 10,000 games, from the workers, and
took the GIL from the thread that writes the reports.  A worker that dies (killed, out
of memory) ends the run with :class:`WorkerDied` instead of a wait for ever.

Every worker, of these and of the ``ProcessPoolExecutor`` pools of the other commands
(started with :func:`pool_context` and :func:`guarded`), ends with the command's main
process, and so do the forkserver and the resource tracker (the "lifeline" section below).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # multiprocessing is imported when workers start: a one-process run starts sooner without it
    from multiprocessing.connection import Connection
    from multiprocessing.context import ForkContext, ForkServerContext, SpawnContext
    from multiprocessing.process import BaseProcess

    #: How workers start: ``multiprocessing.get_context(...)``.
    ProcessContext = ForkContext | ForkServerContext | SpawnContext

#: Tasks sent ahead to each worker: one to work on and one waiting in its pipe.
IN_FLIGHT = 2
#: A task of more bytes than this, pickled, is sent only to a worker with no task (a pipe holds at
#: least this much on every system: the one queued task waits there while the worker is busy).
SMALL_TASK = 8192
#: Tasks done or in flight at most, per worker, ahead of the oldest result not yet given back.
AHEAD = 2 * IN_FLIGHT


class WorkerDied(RuntimeError):
    """A worker process ended before it gave back the results of the tasks sent to it."""


class RemoteTraceback(Exception):
    """Where a task raised in its worker: the exception's traceback, as text."""


@contextlib.contextmanager
def pool_errors(error: type[Exception], before: str) -> Iterator[None]:
    """Around a ``ProcessPoolExecutor``'s work: a worker that died is ``error`` (the command's own kind).

    Its message: "a worker process stopped (killed, or out of memory?) before it ``before``".
    The executor raises ``BrokenProcessPool`` once a worker is gone, where
    ``multiprocessing.Pool`` waited for ever.
    """
    from concurrent.futures.process import BrokenProcessPool

    try:
        yield
    except BrokenProcessPool:
        raise error(f"a worker process stopped (killed, or out of memory?) before it {before}") from None


def ordered_map(
    fn: Callable[..., Any],
    tasks: Iterable[tuple[Any, ...]],
    workers: int,
    ctx: ProcessContext,
    initializer: Callable[[], None] | None = None,
) -> Iterator[Any]:
    """``fn(*task)`` for each task, computed in ``workers`` processes, given back in the tasks' order.

    Tasks are taken from ``tasks`` as workers need them, and at most :data:`AHEAD`
    a worker are done or under way beyond the oldest result not yet given back, so
    memory stays bounded however many tasks there are.  An exception raised by
    ``fn`` is raised here, its worker's traceback as its cause.  Closing the iterator
    early stops the workers.
    """
    pool: list[tuple[BaseProcess, Connection]] = []
    finished = False
    try:
        for _ in range(workers):
            here, there = ctx.Pipe()
            proc = ctx.Process(target=_serve, args=(there, fn, guarded(initializer)), daemon=True)
            proc.start()
            there.close()
            pool.append((proc, here))
        yield from _run(pool, iter(tasks))
        finished = True
    finally:
        _stop(pool, finished)


def _run(pool: list[tuple[BaseProcess, Connection]], tasks: Iterator[tuple[Any, ...]]) -> Iterator[Any]:
    import selectors
    from multiprocessing.reduction import ForkingPickler

    queued: list[deque[int]] = [deque() for _ in pool]  # task numbers sent to each worker, oldest first
    done: dict[int, Any] = {}
    sent = given = 0
    payload: Any = None  # the next task, pickled, not sent yet
    more = True
    with selectors.DefaultSelector() as selector:  # registered once: a result, or a worker gone
        for k, (proc, conn) in enumerate(pool):
            selector.register(conn, selectors.EVENT_READ, k)
            selector.register(proc.sentinel, selectors.EVENT_READ, k)
        while True:
            while sent - given < AHEAD * len(pool):
                if payload is None:
                    task = next(tasks, None) if more else None
                    if task is None:
                        more = False
                        break
                    payload = ForkingPickler.dumps(task)
                if (i := _worker_for(queued, len(payload))) is None:
                    break
                _send(pool[i], payload)
                queued[i].append(sent)
                sent += 1
                payload = None
            if given in done:
                yield done.pop(given)
                given += 1
                continue
            if not more and payload is None and given == sent:
                return
            for key, _ in selector.select():
                _receive(pool[key.data], queued[key.data], done, key.fileobj is pool[key.data][1])


def _worker_for(queued: list[deque[int]], size: int) -> int | None:
    """The worker to send a task of ``size`` bytes: the one with the fewest tasks, if it may take one more.

    A worker takes up to :data:`IN_FLIGHT` tasks, but a task above :data:`SMALL_TASK` bytes
    only when it has none: a worker busy with a task does not read the next one, so sending
    it would wait on the worker, while the worker may wait on this process to read a result.
    """
    i = min(range(len(queued)), key=lambda k: len(queued[k]))
    n = len(queued[i])
    return i if n == 0 or (n < IN_FLIGHT and size <= SMALL_TASK) else None


def _send(worker: tuple[BaseProcess, Connection], payload: Any) -> None:
    proc, conn = worker
    try:
        conn.send_bytes(payload)
    except OSError:
        proc.join(0.1)
        raise WorkerDied(
            f"worker process {proc.pid} stopped (exit code {proc.exitcode}) before it took a task"
        ) from None


def _receive(worker: tuple[BaseProcess, Connection], queued: deque[int], done: dict[int, Any], readable: bool) -> None:
    """Keep the worker's next result (its pipe is ``readable``, or else its sentinel is ready); a worker gone
    is an error.

    One result a call: the selector reports the pipe again while more is there.
    """
    proc, conn = worker
    if queued and (readable or conn.poll()):  # (a worker's last result may still be in its pipe)
        ok, value = _recv(proc, conn)
        n = queued.popleft()
        if not ok:
            raise value[0] from RemoteTraceback(value[1])
        done[n] = value
    elif not proc.is_alive() or not queued:  # its sentinel, or the end of its pipe: it is gone
        proc.join(0.1)
        raise WorkerDied(
            f"worker process {proc.pid} stopped (exit code {proc.exitcode}) "
            f"before it finished its {len(queued)} task(s)"
        )


def _recv(proc: BaseProcess, conn: Connection) -> tuple[bool, Any]:
    try:
        got: tuple[bool, Any] = conn.recv()
    except (EOFError, OSError):
        proc.join(0.1)
        raise WorkerDied(
            f"worker process {proc.pid} stopped (exit code {proc.exitcode}) while it sent a result"
        ) from None
    return got


def _serve(conn: Connection, fn: Callable[..., Any], initializer: Callable[[], None] | None) -> None:
    """A worker: run ``fn`` on each task received, send back ``(True, result)`` or ``(False, (error, traceback))``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is this process's parent's to handle: it stops the workers
    if initializer is not None:
        initializer()
    while (task := _next_task(conn)) is not None:
        try:
            reply: tuple[bool, Any] = (True, fn(*task))
        except Exception as exc:  # given back to the caller, raised there
            reply = (False, (exc, traceback.format_exc()))
        try:
            conn.send(reply)
        except OSError:  # the parent is gone: nobody to tell
            return
        except Exception as exc:  # an exception (or result) that cannot be pickled
            conn.send((False, (RuntimeError(f"cannot send the result back: {exc!r}"), traceback.format_exc())))


def _next_task(conn: Connection) -> tuple[Any, ...] | None:
    """The next task, or ``None`` when told to end or when the parent is gone."""
    try:
        task: tuple[Any, ...] | None = conn.recv()
    except (EOFError, OSError):
        return None
    return task


def _stop(pool: list[tuple[BaseProcess, Connection]], finished: bool) -> None:
    """Tell each worker to end when all went well, else end it now; wait for all."""
    for proc, conn in pool:
        if finished:
            with contextlib.suppress(OSError):  # it is gone already: join() below says no more
                conn.send(None)
        else:
            proc.terminate()
        conn.close()
    for proc, _ in pool:
        proc.join(5.0)
        if proc.is_alive():
            proc.kill()
            proc.join()


# --- lifeline: processes that end with the command that started them (issue 29) ------------------
#
# After ``kill -9`` of a command's main process, its workers, the forkserver and the resource
# tracker kept running: a worker of a ``ProcessPoolExecutor`` waits on a queue whose other end it
# holds itself, and it holds the forkserver's "alive" pipe, so neither ever saw the main process go.
# Now every worker's initializer is a :class:`Guarded`: Linux kills the worker when its parent ends
# (``PR_SET_PDEATHSIG``; its parent is the main process under ``fork``, else the forkserver), and a
# thread ends it when the main process ends (a pidfd, else polling).  The forkserver imports this
# module first (the preload of :func:`pool_context`), and a thread ends it when the main process
# ends.  The resource tracker ends by itself once every process holding its pipe is gone.

#: ``prctl`` option: the signal this process gets when its parent ends (linux/prctl.h).
PR_SET_PDEATHSIG = 1
#: How often the fallback (no pidfd) looks whether the main process is still there, in seconds.
POLL_SECONDS = 0.5
#: The exit status of a process ended because the main process ended.
ORPHANED = 70
#: The module the forkserver imports first: this one (see :func:`in_forkserver` at its end).
FORKSERVER_GUARD = "backalley.workers"


def pool_context(preload: Sequence[str] = ()) -> ForkServerContext | SpawnContext:
    """The start method of a command's pools: ``forkserver`` on POSIX (with its guard and
    ``preload``), else ``spawn``."""
    import multiprocessing

    if os.name != "posix":
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload([FORKSERVER_GUARD, *preload])
    return ctx


def start_pool_server(preload: Sequence[str] = ()) -> None:
    """Start the forkserver of :func:`pool_context` now (with ``preload``), before the pool needs it.

    The server imports ``preload`` while this process goes on with its own imports and
    set-up, on another CPU: ``ingest`` imports DuckDB, Arrow and numpy and opens the
    database first, and its pool then waited about 0.15 s for the server's imports.
    Without a forkserver (``spawn``) this does nothing.
    """
    ctx = pool_context(preload)
    if ctx.get_start_method() == "forkserver":
        from multiprocessing import forkserver

        forkserver.ensure_running()


@dataclass(frozen=True, slots=True)
class Guarded:
    """A worker's initializer: tie the worker's life to the main process ``main``, then run ``then(*args)``.

    Picklable (a forkserver or spawned worker receives it), as long as ``then`` is a module's function.
    """

    main: int
    then: Callable[..., Any] | None = None
    args: tuple[Any, ...] = ()

    def __call__(self) -> None:
        kill_with_parent()
        end_with(self.main)
        if self.then is not None:
            self.then(*self.args)


def guarded(then: Callable[..., Any] | None = None, *args: Any) -> Guarded:
    """The initializer of workers started by this process: :class:`Guarded` with this process as the main one."""
    return Guarded(os.getpid(), then, args)


def kill_with_parent() -> None:
    """On Linux, have the kernel send this process ``SIGKILL`` when its parent ends (else nothing).

    The kernel's signal needs no thread and no GIL: it reaches a worker busy in C code.
    """
    if sys.platform != "linux":
        return
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def end_with(pid: int) -> None:
    """Start a daemon thread that ends this process as soon as process ``pid`` ends (at once if it has)."""
    if pid == os.getpid():
        return
    opener = getattr(os, "pidfd_open", None)
    try:
        fd = None if opener is None else int(opener(pid))
    except ProcessLookupError:
        os._exit(ORPHANED)
    except OSError:
        fd = None  # (an old kernel: poll instead)
    if fd is None and os.name != "posix":
        return  # (os.kill(pid, 0) would end ``pid`` on Windows)
    target: Callable[[], None] = (lambda: _wait_pidfd(fd)) if fd is not None else (lambda: _poll(pid))
    threading.Thread(target=target, name="backalley-lifeline", daemon=True).start()


def _wait_pidfd(fd: int) -> None:
    """Block until the process of pidfd ``fd`` ends, then end this one."""
    import select

    poller = select.poll()
    poller.register(fd, select.POLLIN)
    while not poller.poll():
        pass
    os._exit(ORPHANED)


def _poll(pid: int) -> None:
    """Look every :data:`POLL_SECONDS` whether ``pid`` still exists; end this process when it does not."""
    while True:
        time.sleep(POLL_SECONDS)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            os._exit(ORPHANED)
        except PermissionError:  # (another user's process: ``pid`` was reused, so it ended)
            os._exit(ORPHANED)


def in_forkserver() -> bool:
    """Whether this process is a ``multiprocessing`` forkserver (it runs ``python -c`` with its module loaded)."""
    return sys.argv[:1] == ["-c"] and "multiprocessing.forkserver" in sys.modules


if in_forkserver():  # imported by the forkserver (the preload of pool_context): it ends with its main process
    end_with(os.getppid())

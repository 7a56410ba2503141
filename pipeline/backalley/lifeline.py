"""Worker processes that end with the command that started them (issue 29).

After ``kill -9`` of a command's main process, its workers, the forkserver and the resource
tracker kept running: a worker of a ``ProcessPoolExecutor`` waits on a queue whose other end it
holds itself, and it holds the forkserver's "alive" pipe, so neither ever sees the main process
go.  Now:

- every worker's initializer is a :class:`Guarded`: Linux kills the worker when its parent
  ends (``PR_SET_PDEATHSIG``; its parent is the main process under ``fork``, else the
  forkserver), and a thread ends it when the main process ends (a pidfd, else polling);
- the forkserver imports :mod:`backalley.forkserver_guard` (a preload of
  :func:`pool_context`), whose thread ends it when the main process ends: its workers
  then get their signal;
- the resource tracker ends by itself once every process that holds its pipe is gone.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from multiprocessing.context import ForkServerContext, SpawnContext

#: ``prctl`` option: the signal this process gets when its parent ends (linux/prctl.h).
PR_SET_PDEATHSIG = 1
#: How often the fallback (no pidfd) looks whether the main process is still there, in seconds.
POLL_SECONDS = 0.5
#: The exit status of a process ended because the main process ended.
ORPHANED = 70
#: The module the forkserver imports first (see :mod:`backalley.forkserver_guard`).
FORKSERVER_GUARD = "backalley.forkserver_guard"


def pool_context(preload: Sequence[str] = ()) -> ForkServerContext | SpawnContext:
    """The start method of a command's pools: ``forkserver`` on POSIX (with its guard and
    ``preload``), else ``spawn``."""
    import multiprocessing

    if os.name != "posix":
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload([FORKSERVER_GUARD, *preload])
    return ctx


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

"""Imported by the forkserver (a preload of :func:`backalley.lifeline.pool_context`): it ends with its main process.

The forkserver is started by the main process, so its parent is the main process.  Imported
anywhere else (a test, a tool), this module does nothing: only the forkserver runs Python as
``-c`` with :mod:`multiprocessing.forkserver` loaded.
"""

from __future__ import annotations

import os
import sys

from backalley.lifeline import end_with


def in_forkserver() -> bool:
    """Whether this process is a ``multiprocessing`` forkserver."""
    return sys.argv[:1] == ["-c"] and "multiprocessing.forkserver" in sys.modules


if in_forkserver():
    end_with(os.getppid())

"""The file a running service writes beside its database: how other commands on the same file find it.

While ``backalley serve`` holds a database ``F`` (DuckDB lets one process open a file for
writing, and then no other may open it at all), it keeps ``F.serve.json``: its address,
its process id, the host name to ask for, and a token of this run that reads (only reads)
even under ``--private``. The file is readable by its owner only (as is the database's
data to whoever can read ``F``), and removed when the service stops; a file left by a
service that died is known by its process id being gone, and ignored.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson

SUFFIX = ".serve.json"


def path_of(db: Path) -> Path:
    return db.with_name(db.name + SUFFIX)


@dataclass(frozen=True)
class Running:
    """A service running on a database: where to ask it, and the read token of its run."""

    url: str
    pid: int
    host: str
    token: str

    def describe(self) -> str:
        return f"`backalley serve` (pid {self.pid}, {self.url})"


def local_url(host: str, port: int) -> str:
    """The address to reach a service listening on ``host``:``port`` from this machine."""
    if host in ("0.0.0.0", ""):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def new_token() -> str:
    return "ba_local_" + secrets.token_urlsafe(32)


@contextlib.contextmanager
def announced(db: Path, url: str, host: str, token: str) -> Iterator[Path]:
    """Keep the file for as long as the block runs (the service's whole life); remove it after, if still ours."""
    path = path_of(db)
    body = orjson.dumps({"url": url, "pid": os.getpid(), "host": host, "token": token})
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(body)
    os.replace(tmp, path)
    try:
        yield path
    finally:
        found = find(db)
        if found is not None and found.pid == os.getpid():
            path.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


def find(db: Path) -> Running | None:
    """The service running on ``db``, as its file says; ``None`` without a file, or when its process is gone."""
    try:
        raw = orjson.loads(path_of(db).read_bytes())
        found = Running(str(raw["url"]), int(raw["pid"]), str(raw["host"]), str(raw["token"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return found if found.pid > 0 and _alive(found.pid) else None


__all__ = ["SUFFIX", "Running", "announced", "find", "local_url", "new_token", "path_of"]

"""Commands on a database that ``backalley serve`` holds: ``query`` asks the service; the others say what to do.

DuckDB lets no other process open a file that one process writes, so ``query --db F``
while a service holds ``F`` sends its SQL to the service's ``GET /api/v1/sql`` (found
from the file beside ``F``: :mod:`backalley.service.running`) with the run's read token,
and writes the answer as it would offline: the service runs the same sandbox, and
the formats are DuckDB's own writers in both cases (``table`` renders the Parquet answer).
"""

from __future__ import annotations

import io
import json
import os
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import IO
from urllib.parse import urlencode

import pyarrow.parquet as pq

from backalley.service.running import Running, find
from backalley.store.database import QueryError, StoreError, StoreLockedError
from backalley.store.query import QUERY_TIMEOUT, Format, check_out, table_text

#: The longest URL sent (the service reads at most 16 KiB of a request's head).
MAX_URL = 15_000


def held(db: Path, exc: StoreLockedError) -> Running:
    """The service holding ``db``; the lock error itself (exit 2) when no service says it does."""
    found = find(db)
    if found is None:
        raise exc
    return found


def ask(running: Running, sql: str, params: Mapping[str, object], fmt: str, timeout: float) -> bytes:
    """The service's answer to ``sql`` in ``fmt``; :class:`QueryError` with its problem's detail."""
    query = [("q", sql), ("format", fmt), ("timeout", f"{min(timeout, QUERY_TIMEOUT):g}")]
    query += [(f"${name}", str(value)) for name, value in params.items()]
    url = f"{running.url}/api/v1/sql?{urlencode(query)}"
    if len(url) > MAX_URL:
        raise QueryError(f"this SQL is too long to send to {running.describe()}: stop it to run the SQL offline")
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {running.token}", "Host": running.host})
    try:
        with urllib.request.urlopen(request, timeout=timeout + 30) as answer:
            body: bytes = answer.read()
            return body
    except urllib.error.HTTPError as exc:
        try:
            detail = str(json.loads(exc.read())["detail"])
        except (ValueError, KeyError, TypeError):
            detail = f"{exc.code} {exc.reason}"
        raise QueryError(f"{detail} (answered by {running.describe()})") from None
    except OSError as exc:
        raise StoreError(
            f"the database is held by {running.describe()}, which does not answer ({exc}): wait for it, or stop it"
        ) from None


def query_served(
    db: Path,
    exc: StoreLockedError,
    sql: str,
    *,
    params: Mapping[str, object],
    fmt: Format,
    dest: IO[bytes],
    max_rows: int = 100,
    width: int | None = None,
    styles: bool = False,
    timeout: float = QUERY_TIMEOUT,
) -> None:
    """:func:`backalley.store.query.run_query` through the service holding ``db`` (``exc`` when none does)."""
    running = held(db, exc)
    if fmt is Format.table:
        body = ask(running, sql, params, Format.parquet.value, timeout)
        reader = pq.read_table(io.BytesIO(body)).to_reader() if body else None
        if reader is not None:
            dest.write(table_text(reader, max_rows, width, styles).encode("utf-8"))
        return
    dest.write(ask(running, sql, params, fmt.value, timeout))


def write_served(
    db: Path, exc: StoreLockedError, sql: str, out: Path, *, force: bool = False, **options: object
) -> None:
    """:func:`query_served` into the file ``out``, which appears whole or not at all (as ``query --out``)."""
    check_out(out, db, force)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.partial")
    try:
        with tmp.open("wb") as fh:
            query_served(db, exc, sql, dest=fh, **options)  # type: ignore[arg-type]
        if force:
            tmp.replace(out)
        else:
            os.link(tmp, out)
    except FileExistsError:
        raise StoreError(f"{out}: already exists (use --force to overwrite it)") from None
    finally:
        tmp.unlink(missing_ok=True)


def held_advice(db: Path, what: str) -> str | None:
    """What to do when ``db`` is held by a service, for a command that cannot ask it (``show``, ``report``,
    ``export``): ``what`` says where the service shows the same, or what else works (``{url}`` stands for
    the service's address); ``None`` when no
    service says it holds ``db``."""
    running = find(db)
    if running is None:
        return None
    what = what.replace("{url}", running.url)
    return (
        f"{db}: held by {running.describe()}. {what}; or stop the service (kill {running.pid}),"
        " run this again, and start it again"
    )


__all__ = ["ask", "held", "held_advice", "query_served", "write_served"]

"""``backalley query``: read-only SQL on the store, its result written as csv, json, ndjson, parquet or a table.

The query runs on the store's sandboxed read-only connection (see
:meth:`~backalley.store.database.Store.open_readonly`) with a memory cap and a time
limit.  Its rows stream, batch by batch, into DuckDB's own writers (``COPY``),
run by a second, in-memory DuckDB connection that holds no database and runs
only that ``COPY``: so every column type DuckDB has (lists, structs, BLOBs,
timestamps) is written as DuckDB writes it, the sandbox of the connection
that runs the user's SQL stays closed, and memory stays flat however many rows.
Two result columns of the same name (a join) are written as ``name`` and
``name_1``, DuckDB's own rule.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from enum import StrEnum
from pathlib import Path
from typing import IO, Any

import duckdb
import pyarrow as pa

from backalley.display import printable
from backalley.store.database import QueryError, Store, quiet
from backalley.store.outputs import OutputError, protected

#: DuckDB's memory cap for a query: fits a 2-core, 4 GB machine with room to spare.
QUERY_MEMORY_LIMIT = "1GB"
#: Seconds a query may run before it is interrupted.
QUERY_TIMEOUT = 60.0


class Format(StrEnum):
    table = "table"
    csv = "csv"
    json = "json"
    ndjson = "ndjson"
    parquet = "parquet"


#: DuckDB ``COPY`` options of each file format.
COPY_OPTIONS = {
    Format.csv: "FORMAT csv, HEADER true",
    Format.json: "FORMAT json, ARRAY true",
    Format.ndjson: "FORMAT json",
    Format.parquet: "FORMAT parquet",
}


def check_out(out: Path, db: Path, force: bool) -> None:
    """Refuse an output path that is the database, its WAL or in its lake (always, :mod:`backalley.store.outputs`),
    a folder, or an existing file (unless ``force``)."""
    protected(db).check_file(out, "--out")
    if out.is_dir():
        raise OutputError(f"{out}: is a folder; --out takes a file name")
    if (out.exists() or out.is_symlink()) and not force:
        raise OutputError(f"{out}: already exists (use --force to overwrite it)")
    if not out.parent.is_dir():
        raise OutputError(f"{out.parent}: no such folder")


@contextmanager
def deadline(con: duckdb.DuckDBPyConnection, seconds: float) -> Iterator[threading.Event]:
    """Interrupt whatever ``con`` runs once ``seconds`` have passed; the event tells whether it fired."""
    fired = threading.Event()

    def stop() -> None:
        fired.set()
        con.interrupt()

    timer = threading.Timer(seconds, stop)
    timer.daemon = True
    timer.start()
    try:
        yield fired
    finally:
        timer.cancel()


def _explain(exc: BaseException, fired: threading.Event, timeout: float, memory_limit: str) -> QueryError:
    if fired.is_set():
        return QueryError(f"query interrupted after {timeout:g} s (the time limit; raise it with --timeout)")
    text = str(exc).strip()
    if "out of memory" in text.lower():
        text += f"\n(the query's memory cap is {memory_limit}; raise it with --memory-limit)"
    return QueryError(text)


#: ``relations(con, sql)``: a context in which the computed relations ``sql`` names are registered on ``con``.
Relations = Callable[[duckdb.DuckDBPyConnection, str], AbstractContextManager[None]]


def _no_relations(con: duckdb.DuckDBPyConnection, sql: str) -> AbstractContextManager[None]:
    return contextlib.nullcontext()


def run_query(
    db: Path,
    sql: str,
    *,
    params: Mapping[str, object] | None = None,
    fmt: Format = Format.table,
    dest: IO[bytes],
    max_rows: int = 100,
    width: int | None = None,
    styles: bool = False,
    memory_limit: str = QUERY_MEMORY_LIMIT,
    timeout: float = QUERY_TIMEOUT,
    relations: Relations | None = None,
) -> None:
    """Run ``sql`` read-only on the store at ``db`` and write the result in ``fmt`` to ``dest``.

    ``relations(con, sql)`` (e.g. :func:`backalley.analysis.relations.registered`) makes the
    computed relations ``sql`` names available on the connection for the query's length.

    Raises :class:`~backalley.store.database.QueryError` (DuckDB's whole message, a time
    limit or memory cap reached) or :class:`~backalley.store.database.StoreError`.
    """
    with Store.open_readonly(db, memory_limit=memory_limit) as store, deadline(store.con, timeout) as fired:
        try:
            with (relations or _no_relations)(store.con, sql):
                reader = store.query_reader(sql, params)
                if fmt is Format.table:
                    dest.write(table_text(reader, max_rows, width, styles).encode("utf-8"))
                else:
                    copy_rows(reader, fmt, dest, memory_limit)
        except (duckdb.Error, QueryError) as exc:
            raise _explain(exc, fired, timeout, memory_limit) from None


def write_query(db: Path, sql: str, out: Path, *, force: bool = False, **options: Any) -> None:
    """:func:`run_query` into the file ``out``, which appears whole or not at all (see :func:`check_out`)."""
    check_out(out, db, force)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.partial")
    try:
        with tmp.open("wb") as fh:
            run_query(db, sql, dest=fh, **options)
        if force:
            tmp.replace(out)
        else:
            os.link(tmp, out)  # fails if a file appeared meanwhile: never overwrites
    except FileExistsError:
        raise OutputError(f"{out}: already exists (use --force to overwrite it)") from None
    finally:
        tmp.unlink(missing_ok=True)


def copy_rows(reader: pa.RecordBatchReader, fmt: Format, dest: IO[bytes], memory_limit: str) -> None:
    """Stream the rows through DuckDB's writer for ``fmt`` into ``dest``."""
    if not reader.schema.names:
        return
    with tempfile.TemporaryDirectory(prefix="backalley-query-") as folder:
        path = os.path.join(folder, f"result.{fmt.value}")
        writer = quiet(duckdb.connect(":memory:", config={"memory_limit": memory_limit}))
        try:
            quoted = path.replace("'", "''")
            writer.execute(f"COPY (SELECT * FROM reader) TO '{quoted}' ({COPY_OPTIONS[fmt]})")
        finally:
            writer.close()
        with open(path, "rb") as fh:
            shutil.copyfileobj(fh, dest)


def cell(value: object) -> str:
    """One table cell: ``NULL`` for a missing value, else the value with control characters escaped."""
    return "NULL" if value is None else printable(value)


def table_text(reader: pa.RecordBatchReader, max_rows: int, width: int | None, styles: bool) -> str:
    """The first ``max_rows`` rows as a text table, and the row count; data is never read as markup."""
    import io

    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    names = [printable(n) for n in reader.schema.names]
    rows: list[list[str]] = []
    total = 0
    for batch in reader:
        total += batch.num_rows
        take = min(batch.num_rows, max_rows - len(rows))
        if take > 0:
            columns = [batch.column(k).slice(0, take).to_pylist() for k in range(batch.num_columns)]
            rows.extend([cell(col[r]) for col in columns] for r in range(take))
    table = Table(header_style="bold")
    for n in names:
        table.add_column(Text(n))
    for row in rows:
        table.add_row(*[Text(c) for c in row])
    natural = sum(max([len(n), *(len(r[k]) for r in rows)]) for k, n in enumerate(names)) + 3 * len(names) + 1
    console = Console(record=True, width=max(40, min(natural, width or natural)), file=io.StringIO(), markup=False)
    if names:
        console.print(table)
    shown = (
        f"{total} rows, {max_rows} shown; --max-rows or --format csv for all" if total > max_rows else f"{total} rows"
    )
    console.print(f"({shown})", soft_wrap=True)
    return console.export_text(styles=styles)


__all__ = [
    "COPY_OPTIONS",
    "QUERY_MEMORY_LIMIT",
    "QUERY_TIMEOUT",
    "Format",
    "OutputError",
    "check_out",
    "run_query",
    "table_text",
    "write_query",
]

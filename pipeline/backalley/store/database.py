"""The DuckDB store: its errors, the connection and :class:`Store`.

The tables, views and schema version are in :mod:`backalley.store.schema`, the
migrations in :mod:`backalley.store.migrations`, the SQL functions in
:mod:`backalley.store.functions`, the read-only check of ``query`` in
:mod:`backalley.store.readonly` and ``export`` in :mod:`backalley.store.export`.

:class:`Store` wraps one DuckDB connection (in the spirit of sqlite-utils):
:meth:`Store.open` opens a database for writing (creating it, or migrating an
older schema version), :meth:`Store.open_readonly` for reading;
:meth:`Store.atomic` is a transaction; :meth:`Store.insert_batch` inserts an
Arrow table or a polars frame in one statement.  The database records its
schema version in the table ``meta``; a file written by a newer tool, or one
that is not a backalley database, is refused with a clear message.

DuckDB allows one writing process per file: a second one gets
:class:`StoreLockedError` ("database is in use by another process").
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa

from backalley.store import raw as raw_codec
from backalley.store.functions import register_functions, register_macro
from backalley.store.migrations import MIGRATIONS
from backalley.store.schema import (
    DD_TABLES,
    NARROW_TABLES,
    SCHEMA_VERSION,
    TABLE_DDL,
    TABLES,
    VIEW_DDL,
    _create_schema,
    _create_views,
    _table_names,
)

if TYPE_CHECKING:  # polars is imported only when a frame is passed in (ingest does not need it)
    import polars as pl

#: The environment variable naming the default database.
DB_ENV = "BACKALLEY_DB"
DEFAULT_DB = Path("data/backalley.duckdb")


class StoreError(ValueError):
    """Anything wrong with the database itself (not with the games in it)."""


class StoreLockedError(StoreError):
    """Another process holds the database open."""


class SchemaVersionError(StoreError):
    """The file's schema version is one this tool cannot work with."""


class NotAStoreError(StoreError):
    """The file is not a DuckDB database, or not one of ours."""


class GameNotFoundError(StoreError):
    """No stored game has the ``game_id`` asked for."""


class QueryError(StoreError):
    """A query that failed, or that would change the database."""


class ReadOnlyQueryError(QueryError):
    """A statement that would write, refused by ``query``."""


#: DuckDB's buffer memory cap for a writing connection.
WRITE_MEMORY_LIMIT = "512MB"


def default_db() -> Path:
    """``$BACKALLEY_DB`` if set, else ``data/backalley.duckdb``."""
    env = os.environ.get(DB_ENV)
    return Path(env) if env else DEFAULT_DB


def _read_version(con: duckdb.DuckDBPyConnection, path: str) -> int | None:
    """The file's schema version; ``None`` for an empty database; raises for a foreign one."""
    names = _table_names(con)
    if not names:
        return None
    if "meta" not in names:
        raise NotAStoreError(f"{path}: not a backalley database (it has tables but no 'meta' table)")
    rows = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchall()
    row = rows[0] if rows else None
    if row is None:
        raise NotAStoreError(f"{path}: not a backalley database (no schema_version in 'meta')")
    try:
        return int(row[0])
    except ValueError:
        raise SchemaVersionError(f"{path}: unreadable schema version {row[0]!r}") from None


def quiet(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """``con`` without DuckDB's own progress bar, which is on by default in Python for any query
    over 2 s and writes to standard output: into ``query --format csv`` output, or a report's.

    (A session setting: it cannot be given to ``duckdb.connect``; cursors inherit it.)
    """
    con.execute("SET enable_progress_bar = false")
    return con


def _connect(path: Path, read_only: bool, config: dict[str, Any] | None = None) -> duckdb.DuckDBPyConnection:
    try:
        con = quiet(duckdb.connect(str(path), read_only=read_only, config=config or {}))
    except duckdb.IOException as exc:
        text = str(exc)
        if "lock" in text.lower():
            raise StoreLockedError(
                f"{path}: database is in use by another process (DuckDB allows one writer per file; "
                "wait for it to finish)"
            ) from None
        if "not a valid DuckDB database" in text or "database file" in text:
            raise NotAStoreError(f"{path}: not a DuckDB database file") from None
        raise StoreError(f"{path}: cannot open: {text.splitlines()[0]}") from None
    except duckdb.Error as exc:
        raise StoreError(f"{path}: cannot open: {str(exc).splitlines()[0]}") from None
    try:
        register_functions(con)
    except BaseException:
        con.close()
        raise
    return con


def connect(
    path: Path | str, *, read_only: bool = True, config: dict[str, Any] | None = None
) -> duckdb.DuckDBPyConnection:
    """A plain DuckDB connection to a database, with backalley's SQL functions (:func:`register_functions`).

    Raises :class:`StoreLockedError` when another process writes the database, and
    :class:`StoreError` when it cannot be opened.
    """
    return _connect(Path(path), read_only, config)


def check_readable(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """Raise :class:`StoreError` unless ``con`` holds a backalley database of the schema version this tool reads.

    ``query``, ``export`` and ``report`` all read through this check.
    """
    try:
        version = _read_version(con, str(path))
    except duckdb.Error as exc:
        raise NotAStoreError(f"{path}: cannot read the database: {one_line(exc)}") from None
    if version is None:
        raise NotAStoreError(f"{path}: empty database (run `backalley ingest` first)")
    if version != SCHEMA_VERSION:
        newer = version > SCHEMA_VERSION
        raise SchemaVersionError(
            f"{path}: schema version {version}, this tool reads version {SCHEMA_VERSION}; "
            + (
                "upgrade backalley to read it"
                if newer
                else "open it once for writing (e.g. `backalley ingest`) to migrate it"
            )
        )


#: ``meta`` key naming a folder of Parquet files the views read (a lake attached by
#: ``backalley attach``): reading it stays allowed when all other file access is not.
LAKE_KEY = "lake"


def _lock_down(con: duckdb.DuckDBPyConnection, lock: bool = True) -> None:
    """No file access but to an attached lake's folder (``meta`` key :data:`LAKE_KEY`); the settings locked
    (unless not ``lock``: a writer changes its memory settings for the length of a store)."""
    try:
        dirs = [str(r[0]) for r in con.execute("SELECT value FROM meta WHERE key = ?", [LAKE_KEY]).fetchall()]
    except duckdb.Error:  # not a backalley database: check_readable says so
        dirs = []
    if dirs:
        con.execute("SET allowed_directories = ?", [dirs])
    con.execute("SET enable_external_access = false")
    if lock:
        con.execute("SET lock_configuration = true")


class Store:
    """One open database (see the module docstring)."""

    def __init__(self, con: duckdb.DuckDBPyConnection, path: Path, read_only: bool) -> None:
        self.con = con
        self.path = path
        self.read_only = read_only
        #: See :meth:`sandbox`.
        self.sandboxed = False
        self._in_tx = False
        #: The ``memory_limit`` text the connection was opened with (``None``: DuckDB's default).  Kept
        #: because DuckDB reads the setting back rounded (``488.2 MiB``), and setting that text again
        #: would lower the limit a little every time.
        self.memory_limit: str | None = None

    # -- opening -------------------------------------------------------------------------

    @classmethod
    def open(cls, path: Path | str | None = None, *, memory_limit: str = WRITE_MEMORY_LIMIT) -> Store:
        """Open for writing: create the schema in a new file, migrate an older one, refuse a newer one.

        ``memory_limit`` caps DuckDB's buffer memory (it spills to ``<db>.tmp``
        beyond it), so a long ingest stays within a fixed footprint.
        """
        p = Path(path) if path is not None else default_db()
        if p.parent and not p.parent.exists():
            try:
                p.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"{p}: cannot create its folder: {exc.strerror or exc}") from None
        con = _connect(p, read_only=False, config={"memory_limit": memory_limit})
        try:
            store = cls(con, p, read_only=False)
            store.memory_limit = memory_limit
            store._prepare()
        except BaseException:
            con.close()
            raise
        return store

    @classmethod
    def memory(cls, *, memory_limit: str = WRITE_MEMORY_LIMIT) -> Store:
        """A new, empty database in memory with the current schema and backalley's functions.

        Each call is a database of its own (DuckDB's ``:memory:``), gone when it is closed: the
        service reads what its pages show of games it has just stored from a copy of their rows
        in one, so that the pages are computed by the same views as from the file.
        """
        con = _connect(Path(":memory:"), read_only=False, config={"memory_limit": memory_limit})
        store = cls(con, Path(":memory:"), read_only=False)
        store.memory_limit = memory_limit
        with store.atomic():
            _create_schema(con)
        return store

    @classmethod
    def open_readonly(
        cls, path: Path | str | None = None, *, external_access: bool = False, memory_limit: str | None = None
    ) -> Store:
        """Open an existing database for reading only.

        Without ``external_access`` the connection cannot touch any file either
        (no ``COPY ... TO``, ``ATTACH``, ``read_csv``, extension installs), and
        that setting is locked.  ``memory_limit`` caps DuckDB's memory (locked too).
        """
        p = Path(path) if path is not None else default_db()
        if not p.exists():
            raise StoreError(f"{p}: no such database (run `backalley ingest` first)")
        config: dict[str, Any] = {}
        if memory_limit is not None:
            config["memory_limit"] = memory_limit
        con = _connect(p, read_only=True, config=config)
        try:
            if not external_access:
                _lock_down(con)
            check_readable(con, p)
        except BaseException:
            con.close()
            raise
        return cls(con, p, read_only=True)

    def _prepare(self) -> None:
        version = _read_version(self.con, str(self.path))
        if version is None:
            with self.atomic():
                _create_schema(self.con)
            return
        if version > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"{self.path}: schema version {version} was written by a newer backalley "
                f"(this one knows versions up to {SCHEMA_VERSION}); upgrade backalley to use it"
            )
        if version < SCHEMA_VERSION:
            self.migrate(version)

    def migrate(self, version: int) -> None:
        """Bring a database at ``version`` up to :data:`SCHEMA_VERSION`, all in one transaction."""
        with self.atomic():
            v = version
            while v < SCHEMA_VERSION:
                step = MIGRATIONS.get(v)
                if step is None:
                    raise SchemaVersionError(
                        f"{self.path}: schema version {v} cannot be migrated to {SCHEMA_VERSION} "
                        "(no migration is known from it)"
                    )
                step(self.con)
                v += 1
            _create_views(self.con)
            self.con.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", [str(v)])

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing -------------------------------------------------------------------------------

    @contextmanager
    def atomic(self) -> Iterator[None]:
        """A transaction: everything inside commits together or not at all (nesting joins the outer one)."""
        if self._in_tx:
            yield
            return
        self.con.begin()
        self._in_tx = True
        try:
            yield
        except BaseException:
            self._in_tx = False
            self.con.rollback()
            raise
        self._in_tx = False
        self.con.commit()

    def insert_batch(self, table: str, data: pa.Table | pl.DataFrame) -> int:
        """Insert the rows of an Arrow table or polars frame (columns matched by name); returns the row count."""
        if table not in TABLE_DDL:
            raise StoreError(f"unknown table {table!r}")
        arrow = data if isinstance(data, pa.Table) else data.to_arrow()
        if arrow.num_rows == 0:
            return 0
        # DuckDB scans the local variable by name (a replacement scan).  Unlike a registered
        # view, which the transaction keeps (and the Arrow table with it) until it commits,
        # nothing holds the table once the statement has run.
        sql = f"INSERT INTO {table} BY NAME SELECT * FROM _batch"
        if self.sandboxed:  # no scans of Python variables: the table as a relation named _batch
            self.con.from_arrow(arrow).query("_batch", sql)
            return int(arrow.num_rows)
        _batch = arrow  # read by name in the SQL below
        self.con.execute(sql)
        return int(arrow.num_rows)

    def delete_games(self, game_ids: Sequence[str]) -> None:
        """Remove every row of these games from every per-game table."""
        if not game_ids:
            return
        ids = [list(game_ids)]
        keys = "SELECT game_key FROM g_games WHERE game_id IN (SELECT unnest(?::VARCHAR[]))"
        for t in NARROW_TABLES[1:]:
            self.con.execute(f"DELETE FROM {t} WHERE game_key IN ({keys})", ids)
        for t in (*DD_TABLES, "g_games"):
            self.con.execute(f"DELETE FROM {t} WHERE game_id IN (SELECT unnest(?::VARCHAR[]))", ids)

    # -- reading -----------------------------------------------------------------------------

    def cursor(self) -> duckdb.DuckDBPyConnection:
        """A cursor of this connection, with backalley's SQL functions (the ``raw`` of ``games`` needs them)."""
        cur = self.con.cursor()
        register_macro(cur)  # the functions belong to the database instance: registered when it was opened
        return cur

    def raw(self, game_id: str) -> bytes:
        """The exact bytes a stored game was read from; :class:`GameNotFoundError` when it is not stored."""
        rows = self.con.execute("SELECT raw_zstd FROM g_games WHERE game_id = ?", [game_id]).fetchall()
        if not rows:
            raise GameNotFoundError(f"{self.path}: no stored game has game_id {game_id!r}")
        return raw_codec.decompress(rows[0][0])

    def schema_version(self) -> int | None:
        return _read_version(self.con, str(self.path))

    def count(self, table: str) -> int:
        if table not in TABLE_DDL and table not in VIEW_DDL:
            raise StoreError(f"unknown table {table!r}")
        return int(self.con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0])

    def counts(self) -> dict[str, int]:
        """Row count of every table."""
        return {t: self.count(t) for t in TABLES}

    def query(self, sql: str, params: Mapping[str, object] | None = None) -> pa.Table:
        """Run SQL (one or more statements) and return the last statement's result as Arrow.

        See :meth:`query_reader`, which this reads to the end.
        """
        return self.query_reader(sql, params).read_all()

    def query_reader(self, sql: str, params: Mapping[str, object] | None = None) -> pa.RecordBatchReader:
        """Run SQL and return a reader over the last statement's rows (memory stays flat however many).

        ``params`` gives the values of named parameters (``$name``).  On a
        read-only store only statements that read are run: each statement's type
        is read by DuckDB's own parser (looking inside ``EXPLAIN``), and anything
        else is refused before any statement runs.  DuckDB's errors become
        :class:`QueryError` with DuckDB's whole message, hints included.
        """
        return read_query(self.con, sql, params, check=self.read_only)

    def sandbox(self) -> None:
        """Close this open store's connection to every file but its own (and an attached lake's folder),
        as :meth:`open_readonly` does, for a writer that also answers read-only SQL (``serve``'s ``/sql``):
        no ``read_csv``, ``COPY ... TO``, ``ATTACH`` or extension install, from then on. Its own inserts
        then read Arrow through a relation (DuckDB's scans of Python variables are off with file access)."""
        _lock_down(self.con, lock=False)
        self.sandboxed = True


def read_query(
    con: duckdb.DuckDBPyConnection, sql: str, params: Mapping[str, object] | None = None, *, check: bool = True
) -> pa.RecordBatchReader:
    """:meth:`Store.query_reader` on the connection (or cursor) ``con``; ``check``: refuse every statement that
    does not only read (:func:`backalley.store.readonly.check_read_only`), before any runs."""
    from backalley.store.readonly import (  # it imports this module
        bind_parameters,
        check_read_only,
        parse_statements,
    )

    statements = parse_statements(sql)
    values = bind_parameters(statements, params or {})
    if check:
        for st in statements:
            check_read_only(st)
    try:
        for st, bound in zip(statements[:-1], values[:-1], strict=True):
            earlier = con.sql(st.query, params=bound)
            if earlier is not None:  # it reads and changes nothing: run it for its errors only
                earlier.to_arrow_reader(QUERY_BATCH_ROWS).close()
        last = con.sql(statements[-1].query, params=values[-1])
        if last is None:
            return pa.table({}).to_reader()
        reader: pa.RecordBatchReader = last.to_arrow_reader(QUERY_BATCH_ROWS)
        return reader
    except duckdb.Error as exc:
        raise QueryError(str(exc).strip()) from None


#: Rows per Arrow batch read from a query.
QUERY_BATCH_ROWS = 8192


def one_line(exc: BaseException) -> str:
    """The first line of an error's message (DuckDB's run on with hints and links)."""
    text = str(exc).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    return first


__all__ = [
    "DB_ENV",
    "DEFAULT_DB",
    "LAKE_KEY",
    "GameNotFoundError",
    "NotAStoreError",
    "QueryError",
    "ReadOnlyQueryError",
    "SchemaVersionError",
    "Store",
    "StoreError",
    "StoreLockedError",
    "check_readable",
    "connect",
    "default_db",
    "one_line",
    "quiet",
    "read_query",
]

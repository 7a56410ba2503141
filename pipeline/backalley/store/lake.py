"""Scale-out ingest: the same pipeline as tasks on a Dask cluster, writing a Delta Lake.

``backalley ingest --cluster … --lake …`` cuts the inputs into partitions (whole
files, or byte ranges of large ``.jsonl`` files cut at line boundaries) and runs
:func:`build_partition` for each as a Dask task: read, replay and row building
(:func:`backalley.store.ingest.built_chunks`).  This process (the client) takes the
results **in input order** and, for each partition, serially:

1. decides every record's fate with the embedded store's own writer
   (:class:`backalley.store.ingest.Writer`) against an in-memory index of what the lake
   holds (game ids, content hashes, reject keys), so duplicates and conflicts are
   decided exactly as ``backalley ingest --db`` decides them;
2. appends the Arrow tables the writer produced (the store's base tables ``g_games``,
   ``g_deals``, … of :func:`backalley.store.tables.game_tables`, and ``rejects``) to the
   Delta table of the same name under the lake, one Delta commit per table; the
   games' keys are the lake's own (:data:`GAME_KEY`);
3. appends the partition's row to the Delta table ``partitions``: the partition
   is committed when, and only when, that row is.

A partition's key is a hash of its source, byte range and content: a re-run (or a
retried task) whose key is in ``partitions`` is not committed again.  A run
killed between steps 2 and 3 left table versions that no ``partitions`` row
names; the next run restores those tables to the versions the last committed
partition recorded (:meth:`Lake.recover`) before it starts.  ``analyze --lake``
(:mod:`backalley.analysis.cluster`) commits its batches of double-dummy rows the
same way (:meth:`Lake.commit_batch`).  One ingest or analysis writes to a lake at a time.  :func:`attach` makes a DuckDB file whose base tables are
views over the lake's files, and whose user-facing views (``games``, ``plays``,
…) are the store's own (:func:`backalley.store.schema.create_views`).  See docs/scale-out.md.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import re
import time
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from backalley.records import sources
from backalley.records.sources import InputFile, Item, expand, range_items, read_file
from backalley.store.database import LAKE_KEY, Store, one_line
from backalley.store.ingest import CHUNK, Chunk, RunSummary, Writer, built_chunks
from backalley.store.schema import DD_TABLES, NARROW_TABLES, SCHEMA_VERSION, create_views
from backalley.validate import MAX_RECORD_BYTES

#: How to install what the cluster path needs.
INSTALL_HINT = "pip install 'backalley[cluster]'"
#: A ``.jsonl`` file larger than this is cut into byte ranges of about this size (one task each).
PARTITION_BYTES = 32 * 1024 * 1024
#: The Delta tables of the rows (the store's base tables, :func:`backalley.store.tables.game_tables`,
#: ``rejects``, and the double-dummy tables ``analyze --lake`` writes): with :data:`PARTITIONS` and
#: :data:`RUNS`, the only tables in the lake's folder an ingest or analysis writes, restores or reads;
#: any other table there is left alone.
DATA_TABLES = (*NARROW_TABLES, "rejects", *DD_TABLES)
#: The Delta table of committed partitions and analysis batches (the commit marker), and that of the ingest runs.
PARTITIONS = "partitions"
RUNS = "ingest_runs"
#: The ``source`` of an analysis batch's row in :data:`PARTITIONS` (:meth:`Lake.commit_batch`).
ANALYSIS_SOURCE = "analyze"
#: What the writer looks up in the store to decide a record's fate (ingest.Writer: the stored
#: games by game_id and content hash, their source, line and validity, the largest game key;
#: the rejects by key): the index holds only these columns of these base tables.  The first
#: column of each is the key :meth:`_Index.knows` looks for.
INDEX_COLUMNS = {
    "g_games": ("game_id", "content_hash", "source", "line", "valid", "game_key"),
    "rejects": ("reject_id",),
}
#: The integer game key of the base tables (``game_key``).  In the lake it is 64 bits wide:
#: the partition's number (given by the client, :func:`ingest`) in the high 32 bits, the game's
#: number within its partition (1, 2, … as the writer gives them) in the low 32 bits; so a task
#: can write its files before it is known which partitions commit, and the keys stay unique
#: across the whole lake, for any reader of the Delta tables.
GAME_KEY = "game_key"
GAME_KEY_TYPE = "BIGINT"
KEY_BITS = 32
#: Tasks in flight per worker: results wait on the workers until the client commits them in order.
IN_FLIGHT = 2
#: Failed attempts of a task before the ingest gives up (a killed worker's tasks are rerun by Dask).
RETRIES = 2
#: How long to wait for a scheduler.
CONNECT_TIMEOUT = "10s"


class LakeError(ValueError):
    """A bad ``--cluster``/``--lake``, an unreachable scheduler, a missing package or lake (exit 2)."""


def _require(module: str) -> Any:
    """Import ``module`` (dask's or deltalake's) or say how to install it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise LakeError(f"--cluster and --lake need dask and deltalake: {INSTALL_HINT}") from None


# -- partitions ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Partition:
    """One task's input: a whole file (``end is None``), or bytes ``[start, end)`` of a ``.jsonl`` file."""

    source: str
    path: str
    jsonl: bool
    problem: str | None = None
    start: int = 0
    end: int | None = None
    #: Line number of the first line at ``start``.
    first_line: int = 1
    #: The partition's number in this run (:func:`ingest`): the high bits of its games' keys.
    number: int = 0

    @property
    def key_base(self) -> int:
        """What is added to the writer's game keys (1, 2, …) to make them the lake's (:data:`GAME_KEY`)."""
        return self.number << KEY_BITS


@dataclass
class PartResult:
    """What a task returns: the partition, its key and its records with their row data, in order."""

    part: Partition
    key: str
    chunks: list[Chunk] = field(default_factory=list)
    records: int = 0
    #: Seconds the task took (read, replay and rows), and the CPU seconds of its thread.
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    #: Its key was committed already: nothing was replayed.
    skipped: bool = False
    #: The rows as the writer decides them for this partition alone, written by the task as
    #: Parquet files under the lake (see :func:`stage`); ``None`` when ``chunks`` are returned.
    staged: Staged | None = None


@dataclass
class Staged:
    """A partition's tables written by its task as Parquet files, not yet in any Delta table's log."""

    #: Per table: its Arrow schema and its file (path under the table's folder, size, rows).
    files: dict[str, tuple[pa.Schema, str, int, int]]
    #: The game ids of every record that is a game (stored, duplicate or conflicting) and the reject keys.
    game_ids: list[str]
    reject_ids: list[str]
    #: What the index must learn when the files are committed (:data:`INDEX_COLUMNS` of the rows).
    index_rows: dict[str, pa.Table]
    #: The run counters of these records.
    counters: dict[str, int]


def plan(files: Sequence[InputFile], partition_bytes: int = PARTITION_BYTES) -> list[Partition]:
    """The partitions of these inputs, in input order.  Raises :class:`LakeError` for standard input."""
    parts: list[Partition] = []
    for f in files:
        if f.stdin:
            raise LakeError("--cluster cannot read standard input (the workers read the files): name files")
        path = os.path.abspath(f.path)
        size = f.size
        if f.problem is not None or not f.jsonl or size <= partition_bytes:
            parts.append(Partition(f.source, path, f.jsonl, f.problem))
            continue
        for start, end, line in sources.line_ranges(Path(path), size, partition_bytes):
            parts.append(Partition(f.source, path, True, None, start, end, line))
    return parts


def partition_key(part: Partition, sha: str) -> str:
    """The key of a partition: its source, byte range and content."""
    return hashlib.sha256(f"{part.source}\0{part.start}\0{part.end}\0{sha}".encode()).hexdigest()[:32]


def _read(part: Partition) -> tuple[list[Item], str]:
    """The partition's records, and the SHA-256 of what was read."""
    f = InputFile(part.source, Path(part.path), part.jsonl, part.problem)
    if part.end is None:
        items = list(read_file(f))
        digest = hashlib.sha256()
        for it in items:
            digest.update(it.raw + (it.read_error or "").encode())
        return items, digest.hexdigest()
    try:
        with open(part.path, "rb") as fh:
            fh.seek(part.start)
            data = fh.read(part.end - part.start)
    except OSError as exc:
        return [Item(part.source, None, b"", f"cannot read: {exc.strerror or exc}")], ""
    return list(range_items(part.source, data, part.first_line)), hashlib.sha256(data).hexdigest()


def build_partition(
    part: Partition, committed: frozenset[str], max_record_bytes: int, stage_to: StageTo | None = None
) -> PartResult:
    """The Dask task: read, replay and build the rows of one partition (nothing when ``committed``).

    With ``stage_to`` the task also decides the partition's records on its own and writes
    their tables as Parquet files under the lake (:func:`stage`); it returns those files
    instead of the row data.
    """
    t0, cpu0 = time.perf_counter(), time.thread_time()
    items, sha = _read(part)
    result = PartResult(part, partition_key(part, sha), records=len(items))
    if result.key in committed:
        result.skipped = True
    else:
        result.chunks = list(built_chunks(items, 1, CHUNK, None, max_record_bytes))
        if stage_to is not None:
            result.staged = stage(result.chunks, part, result.key, stage_to)
            result.chunks = []
    result.seconds, result.cpu_seconds = time.perf_counter() - t0, time.thread_time() - cpu0
    return result


@dataclass(frozen=True)
class StageTo:
    """Where a task writes its Parquet files, and the run its rows belong to."""

    lake_uri: str
    run_id: int


def stage(chunks: list[Chunk], part: Partition, key: str, to: StageTo) -> Staged:
    """Decide a partition's records with the embedded writer as if nothing were stored, and write its tables.

    The client commits these files as they are when none of the partition's game ids
    or reject keys is stored already (the common case); otherwise it decides the
    partition again against the lake (:func:`_commit`) and the files are left unused.
    """
    index = _Index.empty()
    try:
        run = RunSummary()
        writer = index.writer(run, part)
        writer.begin([], 1)
        run.run_id = to.run_id
        for chunk in chunks:
            writer.write(chunk)
        writer.commit()
        writer.finish()
        tables = {name: t for name, t in index.take().items() if name != RUNS}
    finally:
        index.close()
    tables = {name: _plain(t) for name, t in tables.items()}
    files = {name: (t.schema, *_write_parquet(to.lake_uri, name, t, key)) for name, t in tables.items()}
    game_ids = [b.game_id for chunk in chunks for _, b in chunk if b.reject is None and b.game_id is not None]
    rejects = tables.get("rejects")
    return Staged(
        files,
        game_ids,
        [] if rejects is None else [str(r) for r in rejects.column("reject_id").to_pylist()],
        {name: tables[name].select(list(cols)) for name, cols in INDEX_COLUMNS.items() if name in tables},
        {c: getattr(run, c) for c in _COUNTERS},
    )


def _plain(table: pa.Table) -> pa.Table:
    """Dictionary-encoded columns (names over small lookup arrays, tables.py) as plain ones, as Parquet takes them."""
    for k, f in enumerate(table.schema):
        if pa.types.is_dictionary(f.type):
            table = table.set_column(k, f.name, table.column(k).cast(f.type.value_type))
    return table


def _write_parquet(lake_uri: str, name: str, table: pa.Table, key: str) -> tuple[str, int, int]:
    """Write ``table`` as one Parquet file in the folder of the Delta table ``name``; ``(relative path, bytes, rows)``."""
    import uuid

    import pyarrow.fs as pafs
    import pyarrow.parquet as pq

    fs, root = pafs.FileSystem.from_uri(lake_uri if _URL.match(lake_uri) else os.path.abspath(lake_uri))
    rel = f"part-{key}-{uuid.uuid4().hex}.parquet"
    folder = f"{root.rstrip('/')}/{name}"
    fs.create_dir(folder, recursive=True)
    pq.write_table(table, f"{folder}/{rel}", filesystem=fs, compression="snappy")
    return rel, int(fs.get_file_info(f"{folder}/{rel}").size), int(table.num_rows)


# -- the lake ------------------------------------------------------------------------------


_URL = re.compile(r"^[a-z][a-z0-9+.-]*://", re.IGNORECASE)


class Lake:
    """A folder (or object-store URL) of Delta tables, one per store table, plus :data:`PARTITIONS`."""

    def __init__(self, uri: str, storage_options: dict[str, str] | None = None) -> None:
        self.deltalake = _require("deltalake")
        self.local = not _URL.match(uri) or uri.lower().startswith("file://")
        self.uri = os.path.abspath(uri.removeprefix("file://")) if self.local else uri.rstrip("/")
        self.storage_options = storage_options
        #: The Delta tables appended to, kept open.
        self._open: dict[str, Any] = {}

    def table_uri(self, name: str) -> str:
        return f"{self.uri}/{name}"

    def table(self, name: str) -> Any:
        """The Delta table ``name``, or ``None`` when there is none yet."""
        uri = self.table_uri(name)
        if not self.deltalake.DeltaTable.is_deltatable(uri, storage_options=self.storage_options):
            return None
        return self.deltalake.DeltaTable(uri, storage_options=self.storage_options)

    def read(self, name: str, columns: Sequence[str] | None = None) -> pa.Table | None:
        dt = self.table(name)
        if dt is None:
            return None
        table: pa.Table = dt.to_pyarrow_table(columns=list(columns) if columns is not None else None)
        return table

    def append(self, name: str, table: pa.Table) -> int:
        """Append rows to the Delta table ``name`` (created by the first append) in one commit; its new version.

        The table's state is kept between appends: loading it from its log costs more than the write.
        """
        dt = self._open.get(name)
        target = dt if dt is not None else self.table_uri(name)
        self.deltalake.write_deltalake(
            target, table, mode="append", schema_mode="merge", storage_options=self.storage_options
        )
        if dt is None:
            dt = self._open[name] = self.table(name)
        else:
            dt.update_incremental()
        return int(dt.version())

    def add_files(self, name: str, schema: pa.Schema, path: str, size: int, rows: int) -> int:
        """Commit a Parquet file written in the table's folder to the Delta table ``name``; its new version."""
        dt = self._open.get(name) or self.table(name)
        if dt is None:  # the first rows of this table: create it (empty) with their schema
            self.deltalake.write_deltalake(
                self.table_uri(name), schema.empty_table(), mode="append", storage_options=self.storage_options
            )
            dt = self.table(name)
        self._open[name] = dt
        action = self.deltalake.transaction.AddAction(
            path, size, {}, int(time.time() * 1000), True, json.dumps({"numRecords": rows})
        )
        dt.create_write_transaction([action], "append", dt.schema())
        dt.update_incremental()
        return int(dt.version())

    def commit_batch(self, key: str, tables: dict[str, pa.Table], games: int) -> None:
        """Append an analysis batch's rows (``analyze --lake``), then its :data:`PARTITIONS` row: the commit.

        As for an ingest's partition, a run killed between the two leaves table versions no
        committed row names, which the next run restores (:meth:`recover`).
        """
        versions = {name: self.append(name, table) for name, table in tables.items() if table.num_rows}
        row: dict[str, Any] = {
            "partition_key": key,
            "source": ANALYSIS_SOURCE,
            "start": 0,
            "committed_at": datetime.now(UTC),
            **dict.fromkeys(_COUNTERS, 0),
            "records": games,
            "versions": json.dumps(versions),
        }
        self.append(PARTITIONS, pa.Table.from_pylist([row], schema=_PARTITION_SCHEMA))

    def partitions(self) -> list[dict[str, Any]]:
        """The committed partitions' rows."""
        t = self.read(PARTITIONS)
        return [] if t is None else t.to_pylist()

    def table_names(self) -> list[str]:
        """Every table a committed partition wrote, and the runs table (if any)."""
        names: dict[str, None] = {}
        for row in self.partitions():
            names.update(dict.fromkeys(json.loads(row["versions"])))
        if self.table(RUNS) is not None:
            names[RUNS] = None
        return list(names)

    def recover(self) -> list[str]:
        """Undo what a killed run appended without committing its partition; returns the tables restored."""
        expected: dict[str, int] = {}
        for row in self.partitions():
            for name, version in json.loads(row["versions"]).items():
                expected[name] = max(expected.get(name, -1), int(version))
        restored = []
        for name in self._data_tables():
            dt = self.table(name)
            if dt is None or dt.version() <= expected.get(name, -1):
                continue
            if name in expected:
                dt.restore(expected[name])
            else:  # created by the uncommitted partition: empty it
                dt.delete()
            restored.append(name)
        return restored

    def _data_tables(self) -> list[str]:
        if not self.local:  # on an object store only the tables committed partitions name are known
            return [n for n in self.table_names() if n != RUNS]
        root = Path(self.uri)
        if not root.is_dir():
            return []
        # Only the lake's own tables: a Delta table of any other name in the folder is someone else's.
        return [name for name in DATA_TABLES if (root / name / "_delta_log").is_dir()]

    def check(self) -> dict[str, list[str]]:
        """Each table the committed partitions name (and the runs table), with its files; or :class:`LakeError`.

        The lake must be whole and of the schema this version writes: every Delta log
        present with no commit missing or emptied and at least at the version the committed
        partitions recorded, every file its log names present, every table with the store's
        columns and types (:func:`_check_columns`).  A damaged lake is an error, never an
        empty result; nothing is changed.
        """
        self._check_partitions_log()
        committed: dict[str, int] = {}
        for row in self.partitions():
            for name, version in json.loads(row["versions"]).items():
                committed[name] = max(committed.get(name, -1), int(version))
        names = list(committed) + ([RUNS] if self._has_log(RUNS) else [])
        found: dict[str, list[str]] = {}
        with Store.memory() as expected:
            for name in names:
                dt = self._intact(name, committed.get(name))
                files = [f.removeprefix("file://") for f in dt.file_uris()]
                if self.local:
                    missing = [f for f in files if not os.path.isfile(f)]
                    if missing:
                        raise LakeError(
                            f"{self.table_uri(name)}: {len(missing)} of its files named by its Delta log are missing "
                            f"(first: {os.path.basename(missing[0])}); the lake is damaged"
                        )
                _check_columns(expected, self.table_uri(name), name, files)
                found[name] = files
        return found

    def _has_log(self, name: str) -> bool:
        if self.local:
            return (Path(self.uri) / name / "_delta_log").is_dir()
        return self.table(name) is not None

    def _check_partitions_log(self) -> None:
        """The commit marker's own log must be whole, and present wherever the lake's tables are."""
        if self._has_log(PARTITIONS):
            self._intact(PARTITIONS, None)
        elif self.local and any(self._has_log(name) for name in DATA_TABLES):
            raise LakeError(
                f"{self.table_uri(PARTITIONS)}: no Delta log, yet the lake has tables: the lake is damaged "
                "(its committed partitions cannot be known)"
            )

    def _intact(self, name: str, committed: int | None) -> Any:
        """The Delta table ``name`` opened, after checking its log (see :meth:`check`)."""
        where = self.table_uri(name)
        if self.local:
            _check_log(Path(where) / "_delta_log", where)
        try:
            dt = self.deltalake.DeltaTable(where, storage_options=self.storage_options)
        except Exception as exc:  # deltalake's errors (TableNotFoundError, DeltaError, …) are many
            raise LakeError(f"{where}: cannot read its Delta log: {one_line(exc)}; the lake is damaged") from None
        if committed is not None and dt.version() < committed:
            raise LakeError(
                f"{where}: at version {dt.version()}, but a committed partition names version {committed}: "
                "commits of its Delta log are missing; the lake is damaged"
            )
        return dt


_COMMIT = re.compile(r"^(\d{20})\.json$")
_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint(\..*)?\.parquet$")


def _check_log(log: Path, where: str) -> None:
    """A local Delta log: present, and every commit since the last checkpoint present and not empty."""
    if not log.is_dir():
        raise LakeError(f"{where}: its Delta log (_delta_log) is missing; the lake is damaged")
    commits: dict[int, int] = {}
    checkpoints = [-1]
    for entry in os.scandir(log):
        if m := _COMMIT.match(entry.name):
            commits[int(m.group(1))] = entry.stat().st_size
        elif m := _CHECKPOINT.match(entry.name):
            checkpoints.append(int(m.group(1)))
    if not commits and max(checkpoints) < 0:
        raise LakeError(f"{where}: its Delta log holds no commit; the lake is damaged")
    last = max(commits, default=max(checkpoints))
    start = max(c for c in checkpoints if c <= last) + 1
    for v in range(start, last + 1):
        if v not in commits:
            raise LakeError(f"{where}: commit {v} of its Delta log is missing; the lake is damaged")
        if commits[v] == 0:
            raise LakeError(f"{where}: commit {v} of its Delta log is empty; the lake is damaged")


def _check_columns(expected: Store, where: str, name: str, files: list[str]) -> None:
    """The files of ``name`` have the store's columns and types (the game key 64-bit): else :class:`LakeError`."""
    want = {c: GAME_KEY_TYPE if c == GAME_KEY else t for c, t in _columns(expected, name)}
    if not want:
        raise LakeError(f"{where}: a table this version of backalley does not know; the lake was written by another")
    if not files:
        return
    con = expected.con
    try:
        per_file = con.execute("SELECT file_name, list(name) FROM parquet_schema(?) GROUP BY ALL", [files]).fetchall()
        have = {
            str(r[0]): str(r[1])
            for r in con.execute("DESCRIBE SELECT * FROM read_parquet(?, union_by_name = true)", [files]).fetchall()
        }
    except duckdb.Error as exc:
        raise LakeError(f"{where}: cannot read its files: {one_line(exc)}") from None
    for file, names in per_file:
        lacking = [c for c in want if c not in names]
        if lacking:
            raise LakeError(
                f"{where}: {os.path.basename(str(file))} lacks column {', '.join(lacking)} of schema version "
                f"{SCHEMA_VERSION}; the lake was written by another version of backalley"
            )
    extra = [c for c in have if c not in want]
    wrong = [f"{c} is {have[c]}, not {t}" for c, t in want.items() if have[c] != t]
    if extra or wrong:
        what = "; ".join([*(f"unknown column {c}" for c in extra), *wrong])
        raise LakeError(
            f"{where}: {what} (schema version {SCHEMA_VERSION}); the lake was written by another version of backalley"
        )


# -- the decisions: the embedded writer over an in-memory index of the lake ------------------


class _Index(Store):
    """An in-memory store the writer decides against; the tables it writes are kept for the lake.

    The base tables of :data:`INDEX_COLUMNS` hold only those columns (what the writer looks
    up), so the index costs a few hundred bytes a game, not the game's rows.  Every table
    the writer inserts is kept whole (:meth:`take`), its game keys made the lake's
    (:attr:`key_base` added, see :data:`GAME_KEY`).
    """

    captured: dict[str, list[pa.Table]]
    #: Added to the game keys of what the writer inserts: the partition's (:attr:`Partition.key_base`).
    key_base: int

    @classmethod
    def empty(cls) -> _Index:
        """An index of nothing stored."""
        index = cls.open(":memory:")
        assert isinstance(index, _Index)
        index.captured = {}
        index.key_base = 0
        con = index.con
        for name, columns in INDEX_COLUMNS.items():
            cols = ", ".join(
                f"CAST({_quote(c)} AS {GAME_KEY_TYPE}) AS {_quote(c)}" if c == GAME_KEY else _quote(c) for c in columns
            )
            con.execute(f"CREATE TABLE _index AS SELECT {cols} FROM {_quote(name)} WHERE false")
            con.execute(f"DROP TABLE {_quote(name)}")
            con.execute(f"ALTER TABLE _index RENAME TO {_quote(name)}")
        return index

    @classmethod
    def for_lake(cls, lake: Lake) -> _Index:
        """An index of what the lake holds."""
        index = cls.empty()
        for name, columns in INDEX_COLUMNS.items():
            stored = lake.read(name, columns)
            if stored is not None and stored.num_rows:
                index.learn(name, stored)
        runs = lake.read(RUNS)
        if runs is not None and runs.num_rows:
            Store.insert_batch(index, RUNS, runs)
        return index

    def writer(self, run: RunSummary, part: Partition) -> Writer:
        """The embedded writer, deciding against this index, giving the games of ``part`` their keys."""
        writer = Writer(self, run, replace=False)
        writer.next_key = 1  # the game's number within its partition: the key's low bits
        self.key_base = part.key_base
        return writer

    def first_number(self) -> int:
        """The first partition number no committed game's key holds (see :data:`GAME_KEY`)."""
        sql = f"SELECT coalesce(max({GAME_KEY}), 0) >> {KEY_BITS} FROM g_games"
        return int(self.con.execute(sql).fetchall()[0][0]) + 1

    def insert_batch(self, table: str, data: Any) -> int:
        """Keep the rows for the lake, with the lake's game keys; index what the writer looks up."""
        data = self._rekeyed(data)
        self.captured.setdefault(table, []).append(data)
        columns = INDEX_COLUMNS.get(table)
        if columns is not None:
            super().insert_batch(table, data.select(list(columns)))
        return int(data.num_rows)

    def _rekeyed(self, data: pa.Table) -> pa.Table:
        """``data`` with :attr:`key_base` added to its game keys (64-bit), if it has any."""
        k = data.schema.get_field_index(GAME_KEY)
        if k < 0:
            return data
        keys = pc.add(data.column(k).cast(pa.int64()), pa.scalar(self.key_base, pa.int64()))
        return data.set_column(k, GAME_KEY, keys)

    def learn(self, name: str, rows: pa.Table) -> None:
        """Index rows stored without the writer (:data:`INDEX_COLUMNS` of them)."""
        Store.insert_batch(self, name, rows)

    def knows(self, name: str, values: list[str]) -> bool:
        """Whether any of these keys (the first of :data:`INDEX_COLUMNS` of table ``name``) is indexed."""
        if not values:
            return False
        column = _quote(INDEX_COLUMNS[name][0])
        sql = f"SELECT count(*) FROM {_quote(name)} WHERE {column} IN (SELECT unnest(?::VARCHAR[]))"
        return bool(self.con.execute(sql, [values]).fetchall()[0][0])

    def take(self) -> dict[str, pa.Table]:
        """The rows written since the last call, one table per name."""
        out = {name: pa.concat_tables(ts, promote_options="permissive") for name, ts in self.captured.items()}
        self.captured = {}
        return out


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


# -- the cluster ---------------------------------------------------------------------------


_LOCAL = re.compile(r"^local(?::(\d+))?$")


def check_cluster(spec: str) -> None:
    """Raises :class:`LakeError` unless ``spec`` is ``dask://HOST:PORT`` or ``local[:N]``."""
    m = _LOCAL.match(spec)
    if m is not None:
        if m.group(1) is not None and int(m.group(1)) < 1:
            raise LakeError(f"--cluster {spec!r}: a local cluster needs at least one worker")
        return
    if not re.match(r"^dask://[^/:\s]+:\d+$", spec):
        raise LakeError(f"--cluster {spec!r}: expected dask://HOST:PORT or local[:N] (N workers)")


@contextlib.contextmanager
def connect(spec: str, *, processes: bool = True) -> Iterator[Any]:
    """A Dask client for ``spec`` (see :func:`check_cluster`): a scheduler's, or a new ``LocalCluster``'s."""
    check_cluster(spec)
    distributed = _require("distributed")
    m = _LOCAL.match(spec)
    if m is not None:
        n = int(m.group(1)) if m.group(1) else (os.cpu_count() or 1)
        # The scheduler's HTTP server always starts: on a free port, not on 8787 (maybe taken).
        # Its workers' own logs are silenced below CRITICAL: a task's failure reaches the client
        # as the task's exception, and a worker's heartbeat racing the cluster's shutdown would
        # otherwise print a traceback after the command's output.
        cluster = distributed.LocalCluster(
            n_workers=n,
            threads_per_worker=1,
            processes=processes,
            dashboard_address=":0",
            silence_logs=logging.CRITICAL,
        )
        try:
            with distributed.Client(cluster) as client:
                yield client
        finally:
            cluster.close()
        return
    address = "tcp://" + spec.removeprefix("dask://")
    try:
        client = distributed.Client(address, timeout=CONNECT_TIMEOUT)
    except (OSError, TimeoutError) as exc:
        raise LakeError(f"--cluster {spec}: cannot reach the Dask scheduler: {one_line(exc)}") from None
    with client:
        yield client


# -- the ingest ----------------------------------------------------------------------------


def _results(
    client: Any,
    parts: Sequence[Partition],
    committed: dict[str, frozenset[str]],
    max_record_bytes: int,
    stage_to: StageTo | None,
) -> Iterator[PartResult]:
    """The tasks' results in partition order, with a bounded number of tasks in flight."""
    workers = max(1, len(client.scheduler_info().get("workers", {})))
    pending: deque[Any] = deque()
    todo = iter(parts)

    def submit() -> None:
        part = next(todo, None)
        if part is not None:
            task = globals()["build_partition"]  # looked up now: a test may wrap it
            known = committed.get(part.source, frozenset())
            pending.append(client.submit(task, part, known, max_record_bytes, stage_to, pure=False, retries=RETRIES))

    for _ in range(workers * IN_FLIGHT):
        submit()
    while pending:
        future = pending.popleft()
        result: PartResult = future.result()
        future.release()
        submit()
        yield result


_COUNTERS = ("records", "inserted", "replaced", "duplicates", "conflicts", "rejected", "invalid")


@dataclass
class LakeRun:
    """An ingest into a lake: its counters, its partitions, and where the time went."""

    summary: RunSummary
    partitions: int = 0
    skipped: int = 0
    #: Seconds summed over the tasks (read, replay, rows and, staged, their files), and their CPU seconds.
    task_seconds: float = 0.0
    task_cpu_seconds: float = 0.0
    #: Seconds the client spent committing (and its process's CPU seconds meanwhile).
    commit_seconds: float = 0.0
    commit_cpu_seconds: float = 0.0
    restored: list[str] = field(default_factory=list)
    #: Partitions whose staged files could not be committed (a game id or reject key was stored
    #: already): built again and decided here.
    redecided: int = 0


def ingest(
    paths: Sequence[str],
    lake_uri: str,
    client: Any,
    *,
    partition_bytes: int = PARTITION_BYTES,
    max_record_bytes: int = MAX_RECORD_BYTES,
    storage_options: dict[str, str] | None = None,
    stage_files: bool = True,
) -> LakeRun:
    """Ingest every record under ``paths`` into the lake at ``lake_uri`` with the Dask ``client``.

    With ``stage_files`` (the default) the tasks write the Parquet files and the client commits
    them (:func:`_commit_staged`); without it the client writes every row (:func:`_commit`).

    Raises :class:`~backalley.records.sources.SourceError` for a bad path and
    :class:`LakeError` for standard input.
    """
    t0 = time.perf_counter()
    parts = plan(expand(paths), partition_bytes)
    lake = Lake(lake_uri, storage_options)
    lake.check()  # a damaged lake, or one of another schema, is refused before anything is written
    restored = lake.recover()
    done = {row["partition_key"]: row for row in lake.partitions()}
    index = _Index.for_lake(lake)
    first = index.first_number()
    parts = [dataclasses.replace(p, number=first + k) for k, p in enumerate(parts)]
    run = LakeRun(RunSummary(db=lake.uri, files=len({p.source for p in parts})), len(parts), restored=restored)
    writer = Writer(index, run.summary, replace=False)
    writer.begin(list(paths), max(1, len(client.scheduler_info().get("workers", {}))))
    try:
        stage_to = StageTo(lake.uri, run.summary.run_id) if stage_files else None
        for result in _results(client, parts, _by_source(done), max_record_bytes, stage_to):
            run.task_seconds += result.seconds
            run.task_cpu_seconds += result.cpu_seconds
            t, cpu = time.perf_counter(), time.process_time()
            _take(client, lake, index, run, done, result, max_record_bytes)
            run.commit_seconds += time.perf_counter() - t
            run.commit_cpu_seconds += time.process_time() - cpu
        writer.finish()
    except BaseException:
        writer.abort()
        writer.committed = dataclasses.replace(run.summary)  # the failed run's row counts what was committed
        writer.end("failed")
        with contextlib.suppress(Exception):
            lake.append(RUNS, _run_row(index, run.summary))
        raise
    finally:
        run.summary.seconds = time.perf_counter() - t0
    writer.end("finished")
    lake.append(RUNS, _run_row(index, run.summary))
    index.close()
    return run


def _by_source(done: dict[str, dict[str, Any]]) -> dict[str, frozenset[str]]:
    """The committed partitions' keys by source (a task is sent only those of its own source)."""
    keys: dict[str, set[str]] = {}
    for key, row in done.items():
        keys.setdefault(row["source"], set()).add(key)
    return {source: frozenset(k) for source, k in keys.items()}


def _take(
    client: Any,
    lake: Lake,
    index: _Index,
    run: LakeRun,
    done: dict[str, dict[str, Any]],
    result: PartResult,
    max_record_bytes: int,
) -> None:
    """Commit one task's result: skip a committed partition, commit its files, or decide it again here."""
    if result.key in done:
        _count_again(run.summary, done[result.key])
        run.skipped += 1
        return
    row = _commit_staged(lake, index, run.summary, result)
    if row is None:
        run.redecided += result.staged is not None
        if result.staged is not None:  # built again, with its row data this time
            task = globals()["build_partition"]
            result = client.submit(
                task, result.part, frozenset(), max_record_bytes, pure=False, retries=RETRIES
            ).result()
        row = _commit(lake, index, run.summary, result)
    done[result.key] = row


def _commit(lake: Lake, index: _Index, run: RunSummary, result: PartResult) -> dict[str, Any]:
    """Decide and append one partition's rows here, then its ``partitions`` row (the commit); returns that row.

    A writer of its own reads the index as it is now (what earlier partitions committed included).
    """
    before = {c: getattr(run, c) for c in _COUNTERS}
    writer = index.writer(run, result.part)
    try:
        for chunk in result.chunks:
            writer.write(chunk)
        writer.commit()
        writer.finish()
    except BaseException:
        writer.abort()
        raise
    versions = {name: lake.append(name, table) for name, table in index.take().items() if name != RUNS}
    return _mark(lake, result, run, {c: getattr(run, c) - before[c] for c in _COUNTERS}, versions)


def _commit_staged(lake: Lake, index: _Index, run: RunSummary, result: PartResult) -> dict[str, Any] | None:
    """Commit the files a task wrote, when its decisions stand (no game id or reject key stored); else ``None``."""
    staged = result.staged
    if staged is None or index.knows("g_games", staged.game_ids) or index.knows("rejects", staged.reject_ids):
        return None
    versions = {name: lake.add_files(name, *file) for name, file in staged.files.items()}
    for name, rows in staged.index_rows.items():
        index.learn(name, rows)
    for c, n in staged.counters.items():
        setattr(run, c, getattr(run, c) + n)
    return _mark(lake, result, run, staged.counters, versions)


def _mark(
    lake: Lake, result: PartResult, run: RunSummary, counters: dict[str, int], versions: dict[str, int]
) -> dict[str, Any]:
    """Append the partition's ``partitions`` row: the partition is committed.  Returns the row."""
    row: dict[str, Any] = {
        "partition_key": result.key,
        "source": result.part.source,
        "start": result.part.start,
        "end": result.part.end,
        "first_line": result.part.first_line,
        "run_id": run.run_id,
        "committed_at": datetime.now(UTC),
        **counters,
        "versions": json.dumps(versions),
    }
    lake.append(PARTITIONS, pa.Table.from_pylist([row], schema=_PARTITION_SCHEMA))
    return row


_PARTITION_SCHEMA = pa.schema(
    [
        ("partition_key", pa.string()),
        ("source", pa.string()),
        ("start", pa.int64()),
        ("end", pa.int64()),
        ("first_line", pa.int64()),
        ("run_id", pa.int32()),
        ("committed_at", pa.timestamp("us", tz="UTC")),
        *((c, pa.int64()) for c in _COUNTERS),
        ("versions", pa.string()),
    ]
)


def _count_again(run: RunSummary, row: dict[str, Any]) -> None:
    """A committed partition seen again counts as the embedded store counts a re-run's records."""
    run.records += row["records"]
    run.duplicates += row["inserted"] + row["replaced"] + row["duplicates"]
    run.conflicts += row["conflicts"]
    run.rejected += row["rejected"]
    run.invalid += row["invalid"]


def _run_row(index: _Index, run: RunSummary) -> pa.Table:
    """The run's ``ingest_runs`` row, as the writer keeps it."""
    table: pa.Table = index.con.sql("SELECT * FROM ingest_runs WHERE run_id = ?", params=[run.run_id]).to_arrow_table()
    return table


# -- attach --------------------------------------------------------------------------------


def attach(lake_uri: str, db: Path | str, storage_options: dict[str, str] | None = None) -> dict[str, int]:
    """Make ``db`` a store whose base tables are views over the lake's current files; returns each one's file count.

    The lake's tables (``g_games``, ``g_deals``, …, ``rejects``, ``ingest_runs``, and the
    ``dd_*`` tables of ``analyze --lake``) become views with the store's columns and types (the game key 64-bit, :data:`GAME_KEY`), and the
    store's views over them (``games``, ``plays``, ``player_summary``, …) are created again
    by the store's one view DDL.  Run it again after an ingest: a Delta table's files change
    with every commit.
    """
    lake = Lake(lake_uri, storage_options)
    found = lake.check()
    if not found:
        raise LakeError(f"{lake_uri}: no lake here (no committed partition; run `backalley ingest --lake` first)")
    target = Path(db)
    created = not target.exists()
    try:
        with Store.open(target) as store:
            _check_attachable(store, [name for name, files in found.items() if files])
            counts: dict[str, int] = {}
            with store.atomic():
                for name, files in found.items():
                    if files:
                        _view(store, name, files)
                        counts[name] = len(files)
                create_views(store.con)
                store.con.execute("DELETE FROM meta WHERE key = ?", [LAKE_KEY])
                if lake.local:
                    store.con.execute("INSERT INTO meta VALUES (?, ?)", [LAKE_KEY, lake.uri + "/"])
    except BaseException:
        if created:  # no empty store left behind
            for p in (target, target.with_name(target.name + ".wal")):
                p.unlink(missing_ok=True)
        raise
    return counts


def _check_attachable(store: Store, replaced: list[str]) -> None:
    """Refuse to attach over rows of the file's own: an ingested store, or tables the lake's views would replace."""
    con = store.con
    attached = con.execute("SELECT count(*) FROM meta WHERE key = ?", [LAKE_KEY]).fetchall()[0][0]
    if not attached and store.count("games"):
        raise LakeError(f"{store.path}: holds an ingested store; attach a lake to a new file")
    for name in replaced:
        rows = _own_rows(store, name)
        if rows:
            raise LakeError(
                f"{store.path}: its own table {name} holds {rows} rows (written by `analyze --db`) that the lake's"
                f" {name} would replace; attach the lake to a new file, and analyse a lake with `analyze --lake`"
            )


def _own_rows(store: Store, name: str) -> int:
    """The rows of ``name`` when it is a base table of the file (0 when it is a view, or absent)."""
    kind = store.con.execute(
        "SELECT table_type FROM information_schema.tables WHERE table_schema = 'main'"
        " AND table_catalog = current_database() AND table_name = ?",
        [name],
    ).fetchall()
    if not kind or kind[0][0] == "VIEW":
        return 0
    return int(store.con.execute(f"SELECT count(*) FROM {_quote(name)}").fetchall()[0][0])


def _columns(store: Store, name: str) -> list[tuple[str, str]]:
    """The store's columns of ``name`` (a table, or the view that stands for it), with their types."""
    rows = store.con.execute(
        "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = 'main'"
        " AND table_catalog = current_database() AND table_name = ? ORDER BY ordinal_position",
        [name],
    ).fetchall()
    return [(str(r[0]), str(r[1])) for r in rows]


def _view(store: Store, name: str, files: list[str]) -> None:
    """Replace the table (or view) ``name`` by a view over these Parquet files, with the store's columns and types."""
    con = store.con
    types = {c: GAME_KEY_TYPE if c == GAME_KEY else t for c, t in _columns(store, name)}
    select = ", ".join(f"CAST({_quote(c)} AS {t}) AS {_quote(c)}" for c, t in types.items())
    listed = "[" + ", ".join(_literal(f) for f in files) + "]"
    kind = con.execute(
        "SELECT table_type FROM information_schema.tables WHERE table_schema = 'main'"
        " AND table_catalog = current_database() AND table_name = ?",
        [name],
    ).fetchall()[0][0]
    con.execute(f"DROP {'VIEW' if kind == 'VIEW' else 'TABLE'} {_quote(name)}")
    con.execute(f"CREATE VIEW {_quote(name)} AS SELECT {select} FROM read_parquet({listed}, union_by_name = true)")


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


__all__ = [
    "ANALYSIS_SOURCE",
    "INSTALL_HINT",
    "PARTITION_BYTES",
    "Lake",
    "LakeError",
    "LakeRun",
    "PartResult",
    "Partition",
    "attach",
    "build_partition",
    "check_cluster",
    "connect",
    "ingest",
    "partition_key",
    "plan",
]

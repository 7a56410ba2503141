"""Ingest: every input record replayed and stored, in atomic batches, idempotently.

Worker processes parse and replay each input and build its compact row data
(:func:`backalley.store.rows.build_item`); with several workers of a file ingest
they also read the input themselves, a span each, and hash and screen it
(:mod:`backalley.store.screen`), so this process never touches the raw records
of the games it stores.  This process decides each record's fate,
turns a chunk's row data into Arrow tables (:mod:`backalley.store.tables`) and is the
single DuckDB writer, its inserts and commits running in order on a thread of
their own (:class:`_Background`) while the next chunk is prepared.  Inputs are
taken in chunks of :data:`CHUNK` records (one insert per table each), and
every :data:`TRANSACTION` records are written in **one**
transaction together with the progress counters of the run's ``ingest_runs``
row: a process killed at any moment leaves whole transactions only, and running
the same command again skips what is stored (duplicates) and adds the rest, so
the database ends as if the first run had finished.

Per record, in input order:

* not a game (not JSON, no usable ``game_id``): a ``rejects`` row;
* ``game_id`` not stored yet: its rows in every table (invalid records too);
* stored with the same content hash (SHA-256 of the raw bytes): a duplicate;
* stored with a different hash: a conflict; the stored game stays and the
  newcomer goes to ``rejects`` (reason ``conflict``), unless ``replace`` is set,
  in which case the old game's rows are deleted and the new ones inserted.

Rejects are keyed by source, line and content hash, so they are not repeated
by a second run either.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import islice
from pathlib import Path
from typing import Any, NamedTuple, cast

import duckdb
import numpy as np
import pyarrow as pa

from backalley import __version__
from backalley.records.sources import SPAN_BYTES, InputFile, Item, expand, read_file, spans
from backalley.sizes import parse_size
from backalley.store import ROW_WORKER_PRELOAD, screen
from backalley.store import raw as raw_codec
from backalley.store.database import Store, StoreError, one_line
from backalley.store.rows import Built, build_item, content_hash, oversized, worker_init
from backalley.store.tables import game_tables, rows_table
from backalley.validate import GC_THRESHOLD, MAX_RECORD_BYTES
from backalley.workers import WorkerDied, guarded, pool_context, pool_errors

#: Records per chunk: the writer inserts a chunk's rows with one statement per table.  Two
#: chunks are in flight (one written, the next replayed), raw inputs and row data
#: included: 512 held about 35 MB more than 256, for no measurable speed.
CHUNK = 256
#: Records per transaction (whole chunks).  DuckDB holds a transaction's rows until it
#: commits, under its memory cap.  Larger transactions were faster (10,000 games with 2
#: workers: 860 games/s at 512, 937 at 2,048), but with 2,048 an ingest with one worker
#: ran out of the 96 MB cap (the raw texts alone are about 47 MB).
TRANSACTION = 512
#: DuckDB's buffer memory cap while ingesting (the writer's own batches come on top), by
#: default.  DuckDB keeps the rows appended since the last checkpoint in memory; the writer
#: checkpoints when their long strings pass :data:`CHECKPOINT_SHARE` of the cap, so the input's
#: length does not matter, but one transaction's records must fit: records far larger than a game (about
#: 23 kB a line) need more (``backalley ingest --memory-limit``; see docs/database.md).
INGEST_MEMORY_LIMIT = "96MB"
#: The smallest ``--memory-limit`` taken: below it DuckDB cannot even hold its own working set.
MIN_MEMORY_LIMIT = "16MB"
#: DuckDB returns freed allocator memory once this much is held after a task.
ALLOCATOR_FLUSH = "16MB"
#: Write-ahead log size that triggers a checkpoint while ingesting (DuckDB's default:
#: 16 MB).  A checkpoint recompresses the last, partly filled row group of each table,
#: and ``games`` carries every record's raw text (about 23 kB): at the default a
#: checkpoint came every ~500 games and most of the writer's time went into zstd
#: recompressing raw texts already stored.  The log may now reach this size on disk
#: before it is folded into the file (a killed run replays it on the next open).
INGEST_CHECKPOINT = "128MB"
#: Share of the memory cap that DuckDB's long strings (its ``OVERFLOW_STRINGS`` memory) may
#: take after a commit before the writer checkpoints.  DuckDB keeps the rows appended since
#: the last checkpoint in memory, and the long strings among them (the compressed raw texts,
#: any field over a few kB) in blocks it cannot evict, so with long records the cap ran out
#: before the log reached :data:`INGEST_CHECKPOINT` (3,000 games with a 40 kB ``event``:
#: out of memory).  A checkpoint writes them to the file and frees them; the other half of
#: the cap is left for the next transaction (512 of those games hold about 30 MB) and for
#: the checkpoint's own work.  Only those strings count: the other appended rows can be
#: evicted, and checkpointing on all of DuckDB's memory (88 MB after 5,000 simulated games)
#: made the file of 10,000 plain games 80 MB instead of 70 (a checkpoint rewrites the
#: tables' part-filled last row groups).
CHECKPOINT_SHARE = 0.5
_LONG_STRINGS_SQL = "SELECT coalesce(sum(memory_usage_bytes), 0) FROM duckdb_memory() WHERE tag = 'OVERFLOW_STRINGS'"
#: Records per task sent to a worker.
TASK = 32

_STR = pa.string()
_I32 = pa.int32()
_TS = pa.timestamp("us", tz="UTC")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass
class RunSummary:
    """The counters of one ingest run (its ``ingest_runs`` row)."""

    run_id: int = 0
    db: str = ""
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    finished_at: datetime | None = None
    files: int = 0
    records: int = 0
    inserted: int = 0
    replaced: int = 0
    duplicates: int = 0
    conflicts: int = 0
    rejected: int = 0
    invalid: int = 0
    seconds: float = 0.0

    @property
    def clean(self) -> bool:
        """Everything stored and valid: nothing rejected, conflicting or invalid."""
        return not (self.rejected or self.conflicts or self.invalid)

    @property
    def rate(self) -> float:
        """Records per second."""
        return self.records / self.seconds if self.seconds > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["started_at"] = self.started_at.isoformat()
        d["finished_at"] = self.finished_at.isoformat() if self.finished_at else None
        return d


Progress = Callable[[int, int], None]
"""``progress(records, bytes)``: called after each chunk with what that chunk added."""


def ingest(
    paths: Sequence[str],
    db: Path | str | None = None,
    *,
    workers: int = 1,
    replace: bool = False,
    progress: Progress | None = None,
    chunk: int = CHUNK,
    transaction: int = TRANSACTION,
    memory_limit: str = INGEST_MEMORY_LIMIT,
    max_record_bytes: int = MAX_RECORD_BYTES,
) -> RunSummary:
    """Replay and store every record under ``paths``; returns the run's counters.

    Raises :class:`~backalley.records.sources.SourceError` for a bad path (before the
    database is touched) and :class:`~backalley.store.database.StoreError` for database
    problems.
    """
    files = expand(paths)
    with Store.open(db) as store:
        return ingest_files(
            store,
            files,
            [str(p) for p in paths],
            workers=workers,
            replace=replace,
            progress=progress,
            chunk=chunk,
            transaction=transaction,
            memory_limit=memory_limit,
            max_record_bytes=max_record_bytes,
        )


def ingest_files(
    store: Store,
    files: Sequence[InputFile],
    paths: Sequence[str],
    *,
    workers: int = 1,
    replace: bool = False,
    progress: Progress | None = None,
    chunk: int = CHUNK,
    transaction: int = TRANSACTION,
    memory_limit: str = INGEST_MEMORY_LIMIT,
    max_record_bytes: int = MAX_RECORD_BYTES,
) -> RunSummary:
    """Ingest ``files`` into ``store`` (see :func:`ingest`); ``memory_limit`` caps DuckDB's memory meanwhile.

    A record above ``max_record_bytes`` is rejected as ``too_large`` and the ingest goes on.
    """
    if workers <= 1:
        items = (item for f in files for item in read_file(f))
        return ingest_items(
            store,
            items,
            paths,
            files=len(files),
            workers=workers,
            replace=replace,
            progress=progress,
            chunk=chunk,
            transaction=transaction,
            memory_limit=memory_limit,
            max_record_bytes=max_record_bytes,
        )

    def chunks(writer: _Writer) -> Iterator[tuple[Chunk, int]]:
        return span_chunks(files, workers, writer, chunk, max_record_bytes)

    return _ingest(
        store,
        paths,
        chunks,
        files=len(files),
        workers=workers,
        replace=replace,
        progress=progress,
        transaction=transaction,
        memory_limit=memory_limit,
    )


#: ``fate(item, fate, message)``: what became of one input, called in input order once its
#: chunk is decided (``stored``, ``replaced``, ``duplicate``, ``conflict`` or ``rejected``).
Fate = Callable[[Item, str, str], None]


def ingest_items(
    store: Store,
    items: Iterable[Item],
    paths: Sequence[str],
    *,
    files: int = 0,
    workers: int = 1,
    replace: bool = False,
    progress: Progress | None = None,
    chunk: int = CHUNK,
    transaction: int = TRANSACTION,
    memory_limit: str = INGEST_MEMORY_LIMIT,
    max_record_bytes: int = MAX_RECORD_BYTES,
    fate: Fate | None = None,
    checkpoint: bool = True,
    build: Callable[[Item], Built] | None = None,
) -> RunSummary:
    """Ingest ``items`` (records already read, e.g. an upload) into ``store``, as :func:`ingest_files` does.

    ``fate`` hears what became of each input; without ``checkpoint`` the
    write-ahead log is left for DuckDB to fold in later (a service doing many
    small ingests); ``build`` replaces :func:`~backalley.store.rows.build_item` with
    one worker (a caller that replayed the records already).  A record above
    ``max_record_bytes`` is rejected as ``too_large`` and the ingest goes on.
    """

    def chunks(writer: _Writer) -> Iterator[tuple[Chunk, int]]:
        for part in built_chunks(items, workers, chunk, writer.stored_hashes, max_record_bytes, build):
            yield part, sum(len(it.raw) + 1 for it, _ in part)

    return _ingest(
        store,
        paths,
        chunks,
        files=files,
        workers=workers,
        replace=replace,
        progress=progress,
        transaction=transaction,
        memory_limit=memory_limit,
        fate=fate,
        checkpoint=checkpoint,
    )


def _ingest(
    store: Store,
    paths: Sequence[str],
    chunks: Callable[[_Writer], Iterator[tuple[Chunk, int]]],
    *,
    files: int,
    workers: int,
    replace: bool,
    progress: Progress | None,
    transaction: int,
    memory_limit: str,
    fate: Fate | None = None,
    checkpoint: bool = True,
) -> RunSummary:
    """Write the chunks ``chunks(writer)`` gives (each with its input bytes, for ``progress``): the ingest's run."""
    check_memory_limit(memory_limit)
    t0 = time.perf_counter()
    run = RunSummary(db=str(store.path), files=files)
    # A flat footprint however long the input: a smaller DuckDB buffer than its default,
    # and DuckDB and Arrow hand freed memory back after every chunk instead of keeping it.
    # One DuckDB thread: the other CPUs run the workers.  Set before the run row exists,
    # so that a setting DuckDB refuses leaves no run behind.
    settings = _Settings.for_ingest(store, memory_limit)
    try:
        writer = _Writer(store, run, replace, fate, memory_limit)
        writer.begin(paths, workers)
    except BaseException:
        settings.restore()
        raise
    threshold = gc.get_threshold()
    gc.set_threshold(max(threshold[0], GC_THRESHOLD), *threshold[1:])  # as in the workers (rows.worker_init)
    try:
        records = 0
        for part, nbytes in chunks(writer):
            writer.write(part)
            if progress is not None:
                progress(len(part), nbytes)
            records += len(part)
            del part  # freed before the next chunk is read
            if records >= transaction:
                writer.commit()
                records = 0
        writer.commit()
        writer.finish()
        # Fold the log into the file now, under the ingest's memory cap: left to the close,
        # the checkpoint would run with the connection's larger cap and peak there.
        # The workers are done by now: the checkpoint gets DuckDB's own thread count back (it
        # compresses the tables' row groups in parallel).
        if checkpoint:
            settings.restore("threads")
            store.con.execute("CHECKPOINT")
    except BaseException as exc:
        writer.abort()
        writer.end("failed")
        if not isinstance(exc, duckdb.Error):
            raise
        hint = (
            f" (records much larger than a game of about 23 kB need more than the {memory_limit} ingest memory"
            " limit: backalley ingest --memory-limit)"
            if isinstance(exc, duckdb.OutOfMemoryException) or "failed to pin block" in str(exc)
            else ""
        )
        raise StoreError(
            f"{store.path}: the database failed during the ingest: {one_line(exc)}{hint}. The transactions"
            " committed before it are kept; running the same command again adds the rest"
        ) from exc
    finally:
        gc.set_threshold(*threshold)
        settings.restore()
    run.seconds = time.perf_counter() - t0
    writer.end("finished")
    return run


def check_memory_limit(size: str) -> None:
    """Raises ``ValueError`` unless ``size`` is a memory size DuckDB reads and at least :data:`MIN_MEMORY_LIMIT`."""
    if parse_size(size, unit_required=True) < parse_size(MIN_MEMORY_LIMIT):
        raise ValueError(f"{size!r}: an ingest needs at least {MIN_MEMORY_LIMIT} (default {INGEST_MEMORY_LIMIT})")


class _Settings:
    """DuckDB settings changed for the length of an ingest, and put back afterwards."""

    def __init__(self, store: Store, values: dict[str, str]) -> None:
        self.con = store.con
        self.old: dict[str, str] = {}
        for name, value in values.items():
            old = self._current(store, name)
            try:
                self.con.execute(f"SET {name} = '{value}'")
            except duckdb.Error as exc:
                self.restore()
                raise StoreError(f"{store.path}: DuckDB refused {name} = {value}: {one_line(exc)}") from None
            self.old[name] = old

    def _current(self, store: Store, name: str) -> str:
        """The setting's value as set: the store's own ``memory_limit`` text rather than DuckDB's rounded one."""
        if name == "memory_limit" and store.memory_limit is not None:
            return store.memory_limit
        return str(self.con.execute("SELECT current_setting(?)", [name]).fetchall()[0][0])

    @classmethod
    def for_ingest(cls, store: Store, memory_limit: str) -> _Settings:
        """An ingest's settings: a small buffer, freed memory handed back, one DuckDB thread."""
        values = {
            "memory_limit": memory_limit,
            "allocator_flush_threshold": ALLOCATOR_FLUSH,
            "checkpoint_threshold": INGEST_CHECKPOINT,
            "threads": "1",
        }
        return cls(store, values)

    def restore(self, *names: str) -> None:
        """Put these settings back (all of them without ``names``)."""
        for name, value in self.old.items():
            if names and name not in names:
                continue
            with contextlib.suppress(duckdb.Error):  # best effort: the connection may be gone
                self.con.execute(f"SET {name} = '{value}'")


#: ``stored(hashes)``: of these content hashes, those already stored, with their game's validity.
StoredLookup = Callable[[list[str]], dict[str, bool]]


#: A chunk: consecutive inputs, each with what became of it.
Chunk = list[tuple[Item, Built]]


def built_chunks(
    items: Iterable[Item],
    workers: int,
    chunk: int = CHUNK,
    stored: StoredLookup | None = None,
    max_record_bytes: int = MAX_RECORD_BYTES,
    build: Callable[[Item], Built] | None = None,
) -> Iterator[Chunk]:
    """``(item, built)`` pairs, in input order, a chunk at a time.

    With ``workers > 1`` a process pool builds the rows in tasks of :data:`TASK`
    inputs; at most two chunks are in flight (the next one is built while this
    one is written), so memory stays bounded however long the input.  With
    ``stored``, inputs whose content hash is already stored are not replayed
    again: they come back as ``Built(stored=True)`` (a duplicate), which makes a
    re-run cheap.  An input above ``max_record_bytes`` is not replayed either: it
    comes back as the reject ``too_large``, its raw text cut short
    (:func:`backalley.store.rows.oversized`).  ``build`` (one worker) stands in for
    :func:`~backalley.store.rows.build_item`: a caller that replayed the inputs already; the
    content hash of each input is then its rows' ``sha``, not computed again.
    """
    it = iter(items)
    # A caller's rows carry each input's content hash: it is not computed again.
    sha_of: Callable[[Item], str] = (lambda x: build(x).sha) if build is not None else (lambda x: content_hash(x.raw))

    def split(batch: list[Item]) -> tuple[list[Built | None], list[tuple[Item, str | None]]]:
        """Each input's rows known already (too large, stored), and the others to build, each with its
        content hash when it was computed for the look-up (a worker does not compute it again)."""
        pre: list[Built | None] = [None] * len(batch)
        for k, x in enumerate(batch):
            if (big := oversized(x, max_record_bytes)) is not None:
                batch[k], pre[k] = big
        shas: list[str | None] = [None] * len(batch)
        if stored is not None:
            shas = [sha_of(x) if b is None else "" for x, b in zip(batch, pre, strict=True)]
            known = stored([sha for sha in shas if sha])
            pre = [
                Built(sha, stored=True, valid=known[sha]) if sha in known else b
                for sha, b in zip(shas, pre, strict=True)
            ]
        return pre, [(x, sha) for x, b, sha in zip(batch, pre, shas, strict=True) if b is None]

    def merge(batch: list[Item], pre: list[Built | None], built: list[Built]) -> Chunk:
        rest = iter(built)
        return [(x, b if b is not None else next(rest)) for x, b in zip(batch, pre, strict=True)]

    if workers <= 1:
        while batch := list(islice(it, chunk)):
            pre, todo = split(batch)
            yield merge(batch, pre, [build_item(x, sha) if build is None else build(x) for x, sha in todo])
        return
    ctx = pool_context(ROW_WORKER_PRELOAD)
    # ProcessPoolExecutor, not multiprocessing.Pool: the pool's worker-handler thread also waits on the
    # result pipe, so it woke again and again while a result sat there unread (about 1 s of this
    # process's CPU in an ingest of 10,000 standard games on two cores).
    with (
        pool_errors(WorkerDied, "built the rows given to it"),
        ProcessPoolExecutor(workers, mp_context=ctx, initializer=guarded(worker_init)) as pool,
    ):

        def start(todo: list[tuple[Item, str | None]]) -> Iterator[Built]:
            """The rows of ``todo``'s inputs, built in the workers in tasks of :data:`TASK` inputs."""
            return pool.map(build_item, *_columns(todo), chunksize=TASK)

        batch = list(islice(it, chunk))
        pre, todo = split(batch)
        pending = start(todo) if batch else None
        del todo  # else the first chunk's inputs stay alive for the whole run
        while pending is not None:
            nxt = list(islice(it, chunk))
            nxt_pre, nxt_todo = split(nxt) if nxt else ([], [])
            nxt_pending = start(nxt_todo) if nxt else None
            yield merge(batch, pre, list(pending))
            batch, pre, pending = nxt, nxt_pre, nxt_pending


#: At most this many spans are given to the workers ahead of the writer; fewer when a span holds many
#: records (:func:`span_chunks`).
SPANS_AHEAD = 16
#: Records a span holds, about (:func:`span_bytes`; at most :data:`MAX_SPAN_BYTES`: 22 standard games).
#: Each span costs the writer and the workers a task's overhead, and a worker holds a span's rows at
#: once.  2,000 pereulok games, --workers 2, against the build before spans: spans of about 200 games
#: (512 kB) peaked at 217 MB against 203-205 (games/s x 1.08-1.35), of 24 games at 204-205 against
#: 202-206 (games/s x 0.62-0.90, the workers' CPU +12%), of 64 at 208-210 against 205-206 (x 0.97-0.99).
SPAN_RECORDS = 64
#: The input sampled for the bytes a record takes, and the bounds of a span's size.
SPAN_SAMPLE = 1 << 18
MIN_SPAN_BYTES, MAX_SPAN_BYTES = 1 << 14, SPAN_BYTES


def span_bytes(files: Sequence[InputFile]) -> int:
    """The bytes of a span of about :data:`SPAN_RECORDS` records, by the first JSON Lines file's first lines."""
    first = next((f for f in files if f.jsonl and f.problem is None and not f.stdin), None)
    if first is None:
        return MAX_SPAN_BYTES
    try:
        with first.path.open("rb") as fh:
            sample = fh.read(SPAN_SAMPLE)
    except OSError:  # the worker reading it says why
        return MAX_SPAN_BYTES
    per_record = len(sample) / max(1, sample.count(b"\n"))
    return int(min(MAX_SPAN_BYTES, max(MIN_SPAN_BYTES, SPAN_RECORDS * per_record)))


def span_chunks(
    files: Sequence[InputFile],
    workers: int,
    writer: _Writer,
    chunk: int = CHUNK,
    max_record_bytes: int = MAX_RECORD_BYTES,
) -> Iterator[tuple[Chunk, int]]:
    """As :func:`built_chunks`, but the workers read the input themselves (:mod:`backalley.store.screen`).

    Each worker reads a span, hashes and screens its records against the content
    hashes stored when the run began, and builds the rest.  The spans out at once
    hold about two chunks of records (by the records a span has held so far; at
    least one more span than there are workers, at most :data:`SPANS_AHEAD`), so
    memory stays bounded however long the input.  Chunks are of ``chunk`` records
    (the last one fewer), each given with about the input bytes it covers.
    """
    ctx = pool_context(ROW_WORKER_PRELOAD)
    init = guarded(screen.init, writer.shas.snapshot())
    with (
        pool_errors(WorkerDied, "built the rows given to it"),
        ProcessPoolExecutor(workers, mp_context=ctx, initializer=init) as pool,
    ):
        todo = spans(files, span_bytes(files))
        pending: deque[tuple[Future[screen.Screened], int]] = deque()
        seen = [0, 0]  # spans and records received

        def fill() -> None:
            wanted = -(-2 * chunk * seen[0] // seen[1]) if seen[1] else 0
            ahead = min(SPANS_AHEAD, max(workers + 1, wanted))
            while len(pending) < ahead and (s := next(todo, None)) is not None:
                pending.append((pool.submit(screen.build_span, s, max_record_bytes), s.size))

        fill()
        part: Chunk = []
        nbytes = 0
        while pending:
            done, size = pending.popleft()
            got = writer.resolve(done.result())
            seen[0], seen[1] = seen[0] + 1, seen[1] + len(got)
            fill()
            part += got
            nbytes += size
            while len(part) >= chunk or (part and not pending):
                yield part[:chunk], nbytes
                part, nbytes = part[chunk:], 0


def _columns(todo: list[tuple[Item, str | None]]) -> tuple[list[Item], list[str | None]]:
    return [x for x, _ in todo], [sha for _, sha in todo]


class _Keys:
    """The 64-bit keys (:func:`string_keys`) of the strings stored in one ``games`` column.

    A chunk's game ids and content hashes are looked up in ``games`` only when
    their key is among these, so the table is not scanned for every chunk: that
    scan grew with the database (20 ms a chunk at 200,000 games), this costs 8
    bytes a stored game.  A key can be stale (a replaced game's, or one added in
    a transaction that rolled back): that costs a look-up, never a wrong answer.
    """

    #: Keys added since the sorted array was built, before they are merged into it.
    MERGE = 16_384

    def __init__(self, keys: np.ndarray[Any, np.dtype[np.uint64]]) -> None:
        self._sorted = np.sort(keys)
        self._recent: set[int] = set()

    def __len__(self) -> int:
        return len(self._sorted) + len(self._recent)

    def maybe(self, keys: np.ndarray[Any, np.dtype[np.uint64]]) -> np.ndarray[Any, np.dtype[np.bool_]]:
        """For each key: could it be stored?"""
        hit = np.zeros(len(keys), dtype=np.bool_)
        if len(self._sorted):
            at = np.minimum(np.searchsorted(self._sorted, keys), len(self._sorted) - 1)
            hit = self._sorted[at] == keys
        if self._recent:
            hit |= np.fromiter((k in self._recent for k in keys.tolist()), dtype=np.bool_, count=len(keys))
        return hit

    def snapshot(self) -> bytes:
        """Every key, sorted, as native uint64 bytes (what :func:`backalley.store.screen.init` reads)."""
        self._merge()
        return self._sorted.astype(np.uint64).tobytes()

    def _merge(self) -> None:
        if self._recent:
            recent = np.fromiter(self._recent, dtype=np.uint64, count=len(self._recent))
            self._sorted = np.sort(np.concatenate([self._sorted, recent]))
            self._recent = set()

    def add(self, keys: np.ndarray[Any, np.dtype[np.uint64]]) -> None:
        self._recent.update(keys.tolist())
        if len(self._recent) >= self.MERGE:
            self._merge()


#: The key of a stored string in SQL: the low 64 bits of its MD5, as :func:`backalley.store.screen.string_key`.
KEY_SQL = "(md5_number({}) & 18446744073709551615::UHUGEINT)::UBIGINT"


def string_keys(values: Sequence[str]) -> np.ndarray[Any, np.dtype[np.uint64]]:
    """The 64-bit keys of these strings (:func:`backalley.store.screen.string_key`, as :data:`KEY_SQL`).

    Computed here, not by DuckDB: a query a chunk cost the writer about 9 µs a game.
    """
    return np.fromiter((screen.string_key(v) for v in values), dtype=np.uint64, count=len(values))


class _Known(NamedTuple):
    sha: str
    source: str
    line: int | None
    #: Index in the current chunk when the game arrived in it, else ``None`` (stored earlier).
    at: int | None


def reject_id(source: str, line: int | None, sha: str) -> str:
    """The key of a reject: where it came from and what it was."""
    return hashlib.sha256(f"{source}\0{line}\0{sha}".encode()).hexdigest()[:32]


def _where(source: str, line: int | None) -> str:
    return source if line is None else f"{source}:{line}"


_COUNTERS = ("records", "inserted", "replaced", "duplicates", "conflicts", "rejected", "invalid")


class _Background:
    """DuckDB's writes, run in order on one thread of their own.

    DuckDB releases the GIL while it works, so the writer's Python work on the
    next chunk (fates, look-ups, Arrow tables) runs while DuckDB inserts and
    commits this one.  At most :attr:`DEPTH` jobs wait, which bounds the Arrow
    tables held.  A job that fails stops every job after it (a transaction is
    never committed past a failed insert), and its error is raised in the caller
    at the next :meth:`submit` or :meth:`drain`.
    """

    DEPTH = 1

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="backalley-duckdb")
        self._pending: deque[Future[None]] = deque()
        self._failed = False

    def _run(self, job: Callable[[], None]) -> None:
        if self._failed:
            raise RuntimeError("skipped: an earlier DuckDB write failed")
        try:
            job()
        except BaseException:
            self._failed = True
            raise

    def submit(self, job: Callable[[], None]) -> None:
        self._pending.append(self._pool.submit(self._run, job))
        while len(self._pending) > self.DEPTH:
            self._pending.popleft().result()

    def drain(self) -> None:
        """Wait until every job has run; raises the first job's error."""
        while self._pending:
            self._pending.popleft().result()

    def close(self) -> None:
        """Stop: no job starts any more; wait for the one running, whatever its outcome."""
        self._failed = True
        for f in self._pending:
            f.cancel()
        self._pool.shutdown(wait=True)
        self._pending.clear()


class _Writer:
    """Decides each record's fate and writes its rows, a transaction per :meth:`commit`.

    The decisions and the Arrow tables are made in the calling thread; the
    inserts and commits run in order on a :class:`_Background` thread.  Anything
    that reads the database through the writing connection waits for it first.
    """

    def __init__(
        self,
        store: Store,
        run: RunSummary,
        replace: bool,
        fate: Fate | None = None,
        memory_limit: str = INGEST_MEMORY_LIMIT,
    ) -> None:
        self.store = store
        #: DuckDB's long strings' memory (bytes) above which a commit is followed by a checkpoint.
        self.checkpoint_above = int(parse_size(memory_limit) * CHECKPOINT_SHARE)
        #: Checkpoints run because DuckDB's long strings passed :attr:`checkpoint_above`.
        self.checkpoints = 0
        self.run = run
        self.replace = replace
        self.fate = fate
        #: The counters as of the last commit (what a failed run's row keeps).
        self.committed = _replace_counters(RunSummary(), run)
        self.background = _Background()
        #: Hears the tables of every chunk before they are written (the service keeps the pages' data).
        self.on_tables: Callable[[dict[str, pa.Table]], None] | None = None
        #: A transaction is open on the writing connection (only the background thread writes).
        self.open = False
        stored = store.con.execute(
            f"SELECT {KEY_SQL.format('game_id')} AS id, {KEY_SQL.format('content_hash')} AS sha FROM g_games"
        ).fetchnumpy()
        #: The key the next stored game gets (keys are never reused, a replaced game gets a new one).
        self.next_key = int(store.con.execute("SELECT coalesce(max(game_key), 0) + 1 FROM g_games").fetchall()[0][0])
        #: What could be stored already, to skip the look-ups of what cannot.
        self.ids = _Keys(np.asarray(stored["id"], dtype=np.uint64))
        self.shas = _Keys(np.asarray(stored["sha"], dtype=np.uint64))

    # -- the run row -------------------------------------------------------------------

    def begin(self, paths: Sequence[str], workers: int) -> None:
        con = self.store.con
        with self.store.atomic():
            self.run.run_id = int(con.execute("SELECT coalesce(max(run_id), 0) + 1 FROM ingest_runs").fetchall()[0][0])
            con.execute(
                "INSERT INTO ingest_runs (run_id, started_at, status, tool_version, paths, workers, replace_mode, files)"
                " VALUES (?, ?, 'running', ?, ?, ?, ?, ?)",
                [self.run.run_id, self.run.started_at, __version__, list(paths), workers, self.replace, self.run.files],
            )

    def _update_run(self, r: RunSummary) -> None:
        self.store.con.execute(
            f"UPDATE ingest_runs SET {', '.join(f'{c} = ?' for c in _COUNTERS)} WHERE run_id = ?",
            [*(getattr(r, c) for c in _COUNTERS), self.run.run_id],
        )

    def commit(self) -> None:
        """Commit what was written since the last commit, with the run row's counters as of now."""
        counters = _replace_counters(RunSummary(), self.run)

        def job() -> None:
            self._begin()
            self._update_run(counters)
            self.store.con.commit()
            self.open = False
            self.committed = counters
            pa.default_memory_pool().release_unused()  # hand the Arrow buffers back to the system
            self._free_appended()

        self.background.submit(job)

    def _free_appended(self) -> None:
        """Checkpoint when DuckDB's long strings passed :data:`CHECKPOINT_SHARE` of the cap (between transactions).

        The long strings appended since the last checkpoint stay in DuckDB's memory until one;
        the checkpoint writes them to the file (atomically: a killed run keeps the last
        checkpoint and replays the log) and frees them, so the memory stays under the cap
        however many long records there are.
        """
        used = self.store.con.execute(_LONG_STRINGS_SQL).fetchall()
        if int(used[0][0]) > self.checkpoint_above:
            self.store.con.execute("CHECKPOINT")
            self.checkpoints += 1

    def finish(self) -> None:
        """Wait for every write; raises the first one's error."""
        self.background.drain()
        self.background.close()

    def abort(self) -> None:
        """Stop writing and roll back the open transaction (after a failure, or an interrupt)."""
        self.background.close()
        if self.open:
            with contextlib.suppress(duckdb.Error):
                self.store.con.rollback()
            self.open = False

    def _begin(self) -> None:
        if not self.open:
            self.store.con.begin()
            self.open = True

    def _query(self, sql: str, values: list[str]) -> list[tuple[Any, ...]]:
        """A look-up through the writing connection: it must see this transaction's rows."""
        self.background.drain()
        return self.store.con.execute(sql, [values]).fetchall()

    def end(self, status: str) -> None:
        if status != "finished":  # what the rolled-back transaction counted is not in the database
            _replace_counters(self.run, self.committed)
        self.run.finished_at = datetime.now(UTC)
        try:
            with self.store.atomic():
                self._update_run(self.run)
                self.store.con.execute(
                    "UPDATE ingest_runs SET status = ?, finished_at = ? WHERE run_id = ?",
                    [status, self.run.finished_at, self.run.run_id],
                )
        except Exception:
            if status == "finished":
                raise

    # -- a chunk ---------------------------------------------------------------------------

    @staticmethod
    def _keys(values: list[str]) -> np.ndarray[Any, np.dtype[np.uint64]]:
        """The 64-bit keys of these strings, as :class:`_Keys` holds them."""
        return string_keys(values)

    @staticmethod
    def _candidates(values: list[str], keys: _Keys, of: np.ndarray[Any, np.dtype[np.uint64]]) -> list[str]:
        return [v for v, m in zip(values, keys.maybe(of).tolist(), strict=True) if m]

    def _stored_games(self, ids: list[str], keys: np.ndarray[Any, np.dtype[np.uint64]]) -> dict[str, _Known]:
        ids = self._candidates(ids, self.ids, keys)
        if not ids:
            return {}
        rows = self._query(
            "SELECT game_id, content_hash, source, line FROM g_games WHERE game_id IN (SELECT unnest(?::VARCHAR[]))",
            ids,
        )
        return {r[0]: _Known(r[1], r[2], r[3], None) for r in rows}

    def stored_hashes(self, shas: list[str]) -> dict[str, bool]:
        """Content hashes already stored in ``games``, with the game's validity."""
        shas = self._candidates(shas, self.shas, self._keys(shas))
        if not shas:
            return {}
        rows = self._query(
            "SELECT content_hash, valid FROM g_games WHERE content_hash IN (SELECT unnest(?::VARCHAR[]))", shas
        )
        return {r[0]: bool(r[1]) for r in rows}

    def resolve(self, screened: screen.Screened) -> Chunk:
        """A span's records from the workers, those maybe stored (given with their hash) decided here:
        a duplicate when stored, else built in this process (their key was stale)."""
        maybe = [b for _, b in screened if isinstance(b, str)]
        if not maybe:
            return cast(Chunk, screened)
        known = self.stored_hashes(maybe)

        def decided(item: Item, sha: str) -> Built:
            return Built(sha, stored=True, valid=known[sha]) if sha in known else build_item(item, sha)

        return [(it, decided(it, b) if isinstance(b, str) else b) for it, b in screened]

    def _stored_rejects(self, ids: list[str]) -> set[str]:
        if not ids:
            return set()
        rows = self._query("SELECT reject_id FROM rejects WHERE reject_id IN (SELECT unnest(?::VARCHAR[]))", ids)
        return {r[0] for r in rows}

    def write(self, part: Chunk) -> None:
        """Decide the fate of a chunk's inputs, and insert the rows of those stored (in the background)."""
        run = self.run
        items = [it for it, _ in part]
        built = [b for _, b in part]
        ids = list({b.game_id for b in built if b.reject is None and b.game_id is not None})
        id_keys = self._keys(ids)
        known = self._stored_games(ids, id_keys)
        accepted = np.zeros(len(items), dtype=np.bool_)
        delete: list[str] = []
        rejects: list[tuple[int, str, str]] = []  # (index, reason, message)
        fates: list[tuple[str, str]] = []  # per input: (fate, message)
        for i, (item, b) in enumerate(zip(items, built, strict=True)):
            run.records += 1
            if b.stored:  # the same content is stored already: a duplicate, not replayed again
                run.duplicates += 1
                run.invalid += not b.valid
                fates.append(("duplicate", ""))
                continue
            if b.reject is not None or b.game_id is None:
                run.rejected += 1
                rejects.append((i, b.reject or "no_game_id", b.message))
                fates.append(("rejected", b.message))
                continue
            if not b.valid:
                run.invalid += 1
            gid = b.game_id
            prev = known.get(gid)
            if prev is None:
                run.inserted += 1
                fates.append(("stored", ""))
            elif prev.sha == b.sha:
                run.duplicates += 1
                fates.append(("duplicate", ""))
                continue
            elif self.replace:
                run.replaced += 1
                fates.append(("replaced", ""))
                if prev.at is not None:
                    accepted[prev.at] = False
                elif gid not in delete:
                    delete.append(gid)
            else:
                run.conflicts += 1
                message = (
                    f"game_id {gid} is already stored from {_where(prev.source, prev.line)} with different content"
                    " (ingest with --replace to replace it)"
                )
                rejects.append((i, "conflict", message))
                fates.append(("conflict", message))
                continue
            accepted[i] = True
            known[gid] = _Known(b.sha, item.source, item.line, i)
        if self.fate is not None:
            for item, (what, message) in zip(items, fates, strict=True):
                self.fate(item, what, message)

        now = datetime.now(UTC)
        stored = [part[i] for i in np.flatnonzero(accepted)]
        if stored:
            key_of = dict(zip(ids, id_keys.tolist(), strict=True))
            self.ids.add(np.array([key_of[b.game_id] for _, b in stored if b.game_id is not None], dtype=np.uint64))
            self.shas.add(self._keys([b.sha for _, b in stored]))
        tables = self._game_tables(stored, now)
        rids = {i: reject_id(items[i].source, items[i].line, built[i].sha) for i, _, _ in rejects}
        stored_rejects = self._stored_rejects(list(rids.values()))
        seen: set[str] = set()
        reject_rows: list[tuple[Any, ...]] = []
        for i, reason, message in rejects:
            item, b = items[i], built[i]
            rid = rids[i]
            if rid in stored_rejects or rid in seen:
                continue
            seen.add(rid)
            raw, raw_bytes = _reject_raw(item, b)
            reject_rows.append(
                (rid, run.run_id, now, item.source, item.line, reason, message, b.game_id, b.sha, raw, raw_bytes)
            )
        if reject_rows:
            tables["rejects"] = rows_table(reject_rows, REJECT_TYPES)
        if self.on_tables is not None:
            self.on_tables(tables)

        def job() -> None:
            self._begin()
            self.store.delete_games(delete)
            for name, table in tables.items():
                self.store.insert_batch(name, table)

        self.background.submit(job)

    def _game_tables(self, games: Chunk, now: datetime) -> dict[str, pa.Table]:
        out = game_tables(games, self.next_key)
        if "g_games" in out:
            g = out["g_games"]
            n = g.num_rows
            self.next_key += n
            g = g.append_column("run_id", pa.array(np.full(n, self.run.run_id, dtype=np.int32)))
            # From the microseconds as int64: ``take`` of a one-value array would import pyarrow.compute (30 ms).
            stamp = (now - _EPOCH) // timedelta(microseconds=1)
            out["g_games"] = g.append_column("ingested_at", pa.array(np.full(n, stamp, dtype=np.int64), _TS))
        return out


#: The writer, for an ingest that stores elsewhere than one DuckDB file (:mod:`backalley.store.lake`).
Writer = _Writer

REJECT_TYPES: dict[str, Any] = {
    "reject_id": _STR,
    "run_id": _I32,
    "rejected_at": _TS,
    "source": _STR,
    "line": _I32,
    "reason": _STR,
    "message": _STR,
    "game_id": _STR,
    "content_hash": _STR,
    "raw": _STR,
    "raw_bytes": pa.binary(),
}


def _reject_raw(item: Item, built: Built) -> tuple[str, bytes | None]:
    """A reject's raw text, and its exact bytes when they are not UTF-8.

    A game a worker built comes without its raw bytes (:mod:`backalley.store.screen`): a
    conflict's raw text is then its compressed copy's.
    """
    data = raw_codec.decompress(built.raw_zstd) if not item.raw and built.raw_zstd else item.raw
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError:
        return data.decode("utf-8", errors="replace"), data


def _replace_counters(target: RunSummary, source: RunSummary) -> RunSummary:
    """Copy the record counters of ``source`` into ``target``; returns ``target``."""
    for name in _COUNTERS:
        setattr(target, name, getattr(source, name))
    return target


class Session:
    """One ingest run that stores groups of records as they come, one transaction per group (a service).

    :func:`ingest_items` pays a run's fixed costs (its ``ingest_runs`` row in
    transactions of its own, DuckDB's settings, the look-up keys of every stored
    game) at every call; a session pays them once, then :meth:`store` writes a
    group's records and commits them, with the run row's counters, in **one**
    transaction. Fates and guarantees are those of :func:`ingest_items` (with
    ``replace`` off): a group is stored whole or not at all. After a failed
    group the session is over (:attr:`failed`): open another one. A group larger
    than ``transaction`` records is committed every ``transaction`` records, as
    :func:`ingest_items` commits a file: a failure keeps what was committed.
    """

    def __init__(
        self,
        store: Store,
        paths: Sequence[str],
        *,
        memory_limit: str = INGEST_MEMORY_LIMIT,
        max_record_bytes: int = MAX_RECORD_BYTES,
        transaction: int = TRANSACTION,
    ) -> None:
        check_memory_limit(memory_limit)
        self.store = store
        self.transaction = transaction
        self.memory_limit = memory_limit
        self.max_record_bytes = max_record_bytes
        self.run = RunSummary(db=str(store.path))
        self.failed = False
        self._settings = _Settings.for_ingest(store, memory_limit)
        try:
            self._writer = _Writer(store, self.run, replace=False, memory_limit=memory_limit)
            self._writer.begin(paths, 1)
        except BaseException:
            self._settings.restore()
            raise

    def store_group(
        self,
        items: Sequence[Item],
        fate: Fate,
        build: Callable[[Item], Built] | None = None,
        tables: Callable[[dict[str, pa.Table]], None] | None = None,
    ) -> None:
        """Store ``items`` in one transaction (up to ``transaction`` records); ``fate`` hears each one's fate.

        ``tables`` hears the tables written, a chunk at a time, before they are written.

        Raises :class:`~backalley.store.database.StoreError` when the database fails: the
        group's transaction is rolled back and the session is over.
        """
        if self.failed:
            raise StoreError(f"{self.store.path}: this ingest session failed earlier; open a new one")
        t0 = time.perf_counter()
        self._writer.fate = fate
        self._writer.on_tables = tables
        try:
            records = 0
            for part in built_chunks(items, 1, CHUNK, self._writer.stored_hashes, self.max_record_bytes, build):
                self._writer.write(part)
                records += len(part)
                if records >= self.transaction:
                    self._writer.commit()
                    records = 0
            self._writer.commit()
            self._writer.background.drain()
        except BaseException as exc:
            self.failed = True
            self._writer.abort()
            self._writer.end("failed")
            self._settings.restore()
            if not isinstance(exc, duckdb.Error):
                raise
            raise StoreError(f"{self.store.path}: the database failed during the ingest: {one_line(exc)}") from exc
        finally:
            self._writer.fate = None
            self._writer.on_tables = None
            self.run.seconds += time.perf_counter() - t0

    def close(self) -> RunSummary:
        """End the run (its row says finished) and put DuckDB's settings back; returns the run's counters."""
        if not self.failed:
            try:
                self._writer.finish()
                self._writer.end("finished")
            finally:
                self._settings.restore()
        return self.run


__all__ = [
    "CHECKPOINT_SHARE",
    "CHUNK",
    "TRANSACTION",
    "Chunk",
    "Fate",
    "RunSummary",
    "Session",
    "Writer",
    "built_chunks",
    "check_memory_limit",
    "ingest",
    "ingest_files",
    "ingest_items",
    "reject_id",
]

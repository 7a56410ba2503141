"""Ingest: every input record replayed and stored, in atomic batches, idempotently.

Worker processes parse and replay each input and build its row data
(:func:`pipeline.rows.build_item`); this process is the single DuckDB writer.
Inputs are taken in chunks of :data:`CHUNK` records, and each chunk is written
in **one** transaction together with the progress counters of its
``ingest_runs`` row: a process killed at any moment leaves whole chunks only,
and running the same command again skips what is stored (duplicates) and adds
the rest, so the database ends as if the first run had finished.

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
import multiprocessing
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from itertools import islice
from pathlib import Path
from typing import Any, NamedTuple

import duckdb
import numpy as np
import pyarrow as pa

from pipeline import __version__
from pipeline.cards import CARD_NAMES, CARD_RANK, CARD_SUIT, EFFECTIVE_SUIT, IS_TRUMP, NO_TRUMP, SUITS
from pipeline.rows import (
    BID_FIELDS,
    BID_INTS,
    BID_KINDS,
    CONTRACT_KINDS,
    DEAL_FIELDS,
    DEAL_INTS,
    GAME_FIELDS,
    VIOLATION_FIELDS,
    Built,
    build_item,
    content_hash,
    worker_init,
)
from pipeline.sources import InputFile, Item, expand, read_file
from pipeline.store import Store
from pipeline.validate import GC_THRESHOLD

#: Records per chunk: one transaction each, and the unit of work handed to the pool.
CHUNK = 500
#: DuckDB's buffer memory cap while ingesting (the writer's own batches come on top).
INGEST_MEMORY_LIMIT = "128MB"
#: DuckDB returns freed allocator memory once this much is held after a task.
ALLOCATOR_FLUSH = "16MB"
#: Records per task sent to a worker.
TASK = 25

_STR = pa.string()
_I32 = pa.int32()
_I64 = pa.int64()
_BOOL = pa.bool_()
_TS = pa.timestamp("us", tz="UTC")

GAME_TYPES: dict[str, Any] = {
    "game_id": _STR,
    "format_version": _I64,
    "ruleset": _STR,
    "played_at": _TS,
    "event": _STR,
    "player_n": _STR,
    "player_e": _STR,
    "player_s": _STR,
    "player_w": _STR,
    "valid": _BOOL,
    "complete": _BOOL,
    "status": _STR,
    "schema_ok": _BOOL,
    "dealings": _I32,
    "scored_deals": _I32,
    "pass_outs": _I32,
    "errors": _I32,
    "warnings": _I32,
    "score_ns": _I32,
    "score_ew": _I32,
    "recorded_score_ns": _I64,
    "recorded_score_ew": _I64,
    "winner": _STR,
}
VIOLATION_TYPES: dict[str, Any] = {
    "game_id": _STR,
    "ordinal": _I32,
    "code": _STR,
    "severity": _STR,
    "message": _STR,
    "path": _STR,
    "deal": _I32,
    "trick": _I32,
    "seat": _STR,
}
_DEAL_STR = {
    "game_id",
    "dealer",
    "trump_card",
    "trump_suit",
    "joker_swap_seat",
    "joker_swap_drawn",
    "opening_leader",
    "ns_contract_kind",
    "ew_contract_kind",
}
_DEAL_BOOL = {"no_trump", "pass_out", "ns_made", "ew_made"}
_DEAL_I64 = {
    "ns_contract",
    "ew_contract",
    "points_ns",
    "points_ew",
    "recorded_tricks_ns",
    "recorded_tricks_ew",
    "recorded_points_ns",
    "recorded_points_ew",
}
DEAL_TYPES: dict[str, Any] = {
    f: _STR if f in _DEAL_STR else _BOOL if f in _DEAL_BOOL else _I64 if f in _DEAL_I64 else _I32 for f in DEAL_FIELDS
}
BID_TYPES: dict[str, Any] = {
    "game_id": _STR,
    "deal": _I32,
    "position": _I32,
    "seat": _STR,
    "player": _STR,
    "kind": _STR,
    "value": _I64,
    "board_level": _I32,
}
assert tuple(GAME_TYPES) == GAME_FIELDS and tuple(VIOLATION_TYPES) == VIOLATION_FIELDS
assert tuple(BID_TYPES) == BID_FIELDS

#: Lookup arrays indexed by small ints.
SEAT_ARRAY = pa.array(list("NESW"), _STR)
CARD_ARRAY = pa.array(CARD_NAMES, _STR)
#: Natural suit letter of each card; NULL for the jokers.
CARD_SUIT_ARRAY = pa.array([SUITS[s] if s < 4 else None for s in CARD_SUIT], _STR)
#: Suit letter of a suit index 0..3; NULL for 4 (no trump, or a joker led in a no-trump deal).
SUIT_ARRAY = pa.array([*SUITS, None], _STR)
CONTRACT_KIND_ARRAY = pa.array(CONTRACT_KINDS, _STR)
BID_KIND_ARRAY = pa.array(BID_KINDS, _STR)
#: Rank 2..14 for two..ace; 15 for the Little and 16 for the Big Blooper.
RANK_VALUES = np.array([r + 2 for r in CARD_RANK], dtype=np.int32)
#: ``[trump, card]`` tables of :mod:`pipeline.cards` as arrays.
EFFECTIVE_SUIT_NP = np.array(EFFECTIVE_SUIT, dtype=np.int64)
IS_TRUMP_NP = np.array(IS_TRUMP, dtype=np.bool_)

_D = {f: k for k, f in enumerate(DEAL_INTS)}
_B = {f: k for k, f in enumerate(BID_INTS)}
#: How each packed deal field becomes its column: a type, or a lookup array for strings.
_DEAL_COLUMNS: dict[str, tuple[str, Any]] = {
    "number": ("number", _I32),
    "hand_size": ("hand_size", _I32),
    "dealer": ("dealer", SEAT_ARRAY),
    "trump_card": ("trump_card", CARD_ARRAY),
    "trump_suit": ("trump", SUIT_ARRAY),
    "joker_swap_seat": ("joker_swap_seat", SEAT_ARRAY),
    "joker_swap_drawn": ("joker_swap_drawn", CARD_ARRAY),
    "pass_out": ("pass_out", _BOOL),
    "opening_leader": ("opening_leader", SEAT_ARRAY),
    "ns_contract_kind": ("ns_contract_kind", CONTRACT_KIND_ARRAY),
    "ns_contract": ("ns_contract", _I64),
    "ns_board_level": ("ns_board_level", _I32),
    "ew_contract_kind": ("ew_contract_kind", CONTRACT_KIND_ARRAY),
    "ew_contract": ("ew_contract", _I64),
    "ew_board_level": ("ew_board_level", _I32),
    **{f: (f, DEAL_TYPES[f]) for f in DEAL_FIELDS[18:]},
}
assert all(DEAL_TYPES[f] == t for f, (_, t) in _DEAL_COLUMNS.items() if isinstance(t, pa.DataType))


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
) -> RunSummary:
    """Replay and store every record under ``paths``; returns the run's counters.

    Raises :class:`~pipeline.sources.SourceError` for a bad path (before the
    database is touched) and :class:`~pipeline.store.StoreError` for database
    problems.
    """
    files = expand(paths)
    with Store.open(db) as store:
        return ingest_files(
            store, files, [str(p) for p in paths], workers=workers, replace=replace, progress=progress, chunk=chunk
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
) -> RunSummary:
    t0 = time.perf_counter()
    run = RunSummary(db=str(store.path), files=len(files))
    writer = _Writer(store, run, replace)
    writer.begin(paths, workers)
    threshold = gc.get_threshold()
    gc.set_threshold(max(threshold[0], GC_THRESHOLD), *threshold[1:])  # as in the workers (rows.worker_init)
    # A flat footprint however long the input: a smaller DuckDB buffer than its default,
    # and DuckDB and Arrow hand freed memory back after every chunk instead of keeping it.
    settings = _Settings(store, {"memory_limit": INGEST_MEMORY_LIMIT, "allocator_flush_threshold": ALLOCATOR_FLUSH})
    try:
        items = (item for f in files for item in read_file(f))
        for part in built_chunks(items, workers, chunk, writer.stored_hashes):
            writer.write(part)
            pa.default_memory_pool().release_unused()
            if progress is not None:
                progress(len(part), sum(len(it.raw) + 1 for it, _ in part))
    except BaseException:
        writer.end("failed")
        raise
    finally:
        gc.set_threshold(*threshold)
        settings.restore()
    run.seconds = time.perf_counter() - t0
    writer.end("finished")
    return run


class _Settings:
    """DuckDB settings changed for the length of an ingest, and put back afterwards."""

    def __init__(self, store: Store, values: dict[str, str]) -> None:
        self.con = store.con
        self.old: dict[str, str] = {}
        for name, value in values.items():
            self.old[name] = str(self.con.execute("SELECT current_setting(?)", [name]).fetchall()[0][0])
            self.con.execute(f"SET {name} = '{value}'")

    def restore(self) -> None:
        for name, value in self.old.items():
            with contextlib.suppress(duckdb.Error):  # best effort: the connection may be gone
                self.con.execute(f"SET {name} = '{value}'")


#: ``stored(hashes)``: of these content hashes, those already stored, with their game's validity.
StoredLookup = Callable[[list[str]], dict[str, bool]]


def built_chunks(
    items: Iterable[Item], workers: int, chunk: int = CHUNK, stored: StoredLookup | None = None
) -> Iterator[list[tuple[Item, Built]]]:
    """``(item, built)`` pairs, in input order, a chunk at a time.

    With ``workers > 1`` a process pool builds the rows; at most two chunks are
    in flight (the next one is built while this one is written), so memory
    stays bounded however long the input.  With ``stored``, inputs whose
    content hash is already stored are not replayed again: they come back as
    ``Built(stored=True)`` (a duplicate), which makes a re-run cheap.
    """
    it = iter(items)

    def split(batch: list[Item]) -> tuple[list[Built | None], list[Item]]:
        if stored is None:
            return [None] * len(batch), batch
        shas = [content_hash(x.raw) for x in batch]
        known = stored(shas)
        pre: list[Built | None] = [Built(sha, stored=True, valid=known[sha]) if sha in known else None for sha in shas]
        return pre, [x for x, b in zip(batch, pre, strict=True) if b is None]

    def merge(batch: list[Item], pre: list[Built | None], built: list[Built]) -> list[tuple[Item, Built]]:
        rest = iter(built)
        return [(x, b if b is not None else next(rest)) for x, b in zip(batch, pre, strict=True)]

    if workers <= 1:
        while batch := list(islice(it, chunk)):
            pre, todo = split(batch)
            yield merge(batch, pre, [build_item(x) for x in todo])
        return
    ctx = multiprocessing.get_context("forkserver" if os.name == "posix" else "spawn")
    if os.name == "posix":
        ctx.set_forkserver_preload(["pipeline.rows"])
    with ctx.Pool(workers, initializer=worker_init) as pool:
        batch = list(islice(it, chunk))
        pre, todo = split(batch)
        pending = pool.map_async(build_item, todo, chunksize=TASK) if batch else None
        while pending is not None:
            nxt = list(islice(it, chunk))
            nxt_pre, nxt_todo = split(nxt) if nxt else ([], [])
            nxt_pending = pool.map_async(build_item, nxt_todo, chunksize=TASK) if nxt else None
            yield merge(batch, pre, pending.get())
            batch, pre, pending = nxt, nxt_pre, nxt_pending


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


class _Writer:
    """Decides each record's fate and writes a chunk in one transaction."""

    def __init__(self, store: Store, run: RunSummary, replace: bool) -> None:
        self.store = store
        self.run = run
        self.replace = replace

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

    def _update_run(self) -> None:
        r = self.run
        self.store.con.execute(
            "UPDATE ingest_runs SET records = ?, inserted = ?, replaced = ?, duplicates = ?, conflicts = ?,"
            " rejected = ?, invalid = ? WHERE run_id = ?",
            [r.records, r.inserted, r.replaced, r.duplicates, r.conflicts, r.rejected, r.invalid, r.run_id],
        )

    def end(self, status: str) -> None:
        self.run.finished_at = datetime.now(UTC)
        try:
            with self.store.atomic():
                self._update_run()
                self.store.con.execute(
                    "UPDATE ingest_runs SET status = ?, finished_at = ? WHERE run_id = ?",
                    [status, self.run.finished_at, self.run.run_id],
                )
        except Exception:
            if status == "finished":
                raise

    # -- a chunk ---------------------------------------------------------------------------

    def _stored_games(self, ids: list[str]) -> dict[str, _Known]:
        if not ids:
            return {}
        rows = self.store.con.execute(
            "SELECT game_id, content_hash, source, line FROM games WHERE game_id IN (SELECT unnest(?::VARCHAR[]))",
            [ids],
        ).fetchall()
        return {r[0]: _Known(r[1], r[2], r[3], None) for r in rows}

    def stored_hashes(self, shas: list[str]) -> dict[str, bool]:
        """Content hashes already stored in ``games``, with the game's validity."""
        if not shas:
            return {}
        rows = self.store.con.execute(
            "SELECT content_hash, valid FROM games WHERE content_hash IN (SELECT unnest(?::VARCHAR[]))", [shas]
        ).fetchall()
        return {r[0]: bool(r[1]) for r in rows}

    def _stored_rejects(self, ids: list[str]) -> set[str]:
        if not ids:
            return set()
        rows = self.store.con.execute(
            "SELECT reject_id FROM rejects WHERE reject_id IN (SELECT unnest(?::VARCHAR[]))", [ids]
        ).fetchall()
        return {r[0] for r in rows}

    def write(self, part: list[tuple[Item, Built]]) -> None:
        run = self.run
        known = self._stored_games(list({b.game_id for _, b in part if b.reject is None and b.game_id is not None}))
        rids = [reject_id(it.source, it.line, b.sha) for it, b in part]
        stored_rejects = self._stored_rejects(rids)
        accepted: set[int] = set()
        delete: list[str] = []
        rejects: list[tuple[int, str, str]] = []  # (index, reason, message)
        for i, (item, b) in enumerate(part):
            run.records += 1
            if b.stored:  # the same content is stored already: a duplicate, not replayed again
                run.duplicates += 1
                run.invalid += not b.valid
                continue
            if b.reject is not None or b.game_id is None:
                run.rejected += 1
                rejects.append((i, b.reject or "no_game_id", b.message))
                continue
            if not b.valid:
                run.invalid += 1
            gid = b.game_id
            prev = known.get(gid)
            if prev is None:
                run.inserted += 1
            elif prev.sha == b.sha:
                run.duplicates += 1
                continue
            elif self.replace:
                run.replaced += 1
                if prev.at is not None:
                    accepted.discard(prev.at)
                elif gid not in delete:
                    delete.append(gid)
            else:
                run.conflicts += 1
                rejects.append(
                    (
                        i,
                        "conflict",
                        f"game_id {gid} is already stored from {_where(prev.source, prev.line)} with different content"
                        " (ingest with --replace to replace it)",
                    )
                )
                continue
            accepted.add(i)
            known[gid] = _Known(b.sha, item.source, item.line, i)

        now = datetime.now(UTC)
        games = [part[i] for i in sorted(accepted)]
        tables = self._game_tables(games, now)
        seen: set[str] = set()
        reject_rows: list[tuple[Any, ...]] = []
        for i, reason, message in rejects:
            item, b = part[i]
            rid = rids[i]
            if rid in stored_rejects or rid in seen:
                continue
            seen.add(rid)
            try:
                raw, raw_bytes = item.raw.decode("utf-8"), None
            except UnicodeDecodeError:
                raw, raw_bytes = item.raw.decode("utf-8", errors="replace"), item.raw
            reject_rows.append(
                (rid, run.run_id, now, item.source, item.line, reason, message, b.game_id, b.sha, raw, raw_bytes)
            )
        if reject_rows:
            tables["rejects"] = _table(
                reject_rows,
                {
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
                },
            )
        with self.store.atomic():
            self.store.delete_games(delete)
            for name, table in tables.items():
                self.store.insert_batch(name, table)
            self._update_run()

    def _game_tables(self, games: list[tuple[Item, Built]], now: datetime) -> dict[str, pa.Table]:
        if not games:
            return {}
        n = len(games)
        built = [b for _, b in games]
        g = _table([b.game for b in built], GAME_TYPES)
        g = g.append_column("content_hash", pa.array([b.sha for b in built], _STR))
        g = g.append_column("source", pa.array([it.source for it, _ in games], _STR))
        g = g.append_column("line", pa.array([it.line for it, _ in games], _I32))
        g = g.append_column("run_id", pa.array(np.full(n, self.run.run_id, dtype=np.int32)))
        g = g.append_column("ingested_at", pa.array([now], _TS).take(pa.array(np.zeros(n, dtype=np.int32))))
        g = g.append_column("raw", _text([it.raw for it, _ in games]))
        out = {"games": g, **_deal_tables(built)}
        out["violations"] = _table([r for b in built for r in b.violations], VIOLATION_TYPES)
        return out


def _text(raws: list[bytes]) -> pa.Array:
    """Raw inputs as a string column, without a Python ``str`` per input (a stored game is UTF-8)."""
    arr = pa.array(raws, pa.binary())
    try:
        return arr.cast(_STR)
    except pa.ArrowInvalid:
        return pa.array([r.decode("utf-8", errors="replace") for r in raws], _STR)


def _table(rows: list[tuple[Any, ...]], types: dict[str, Any]) -> pa.Table:
    names = list(types)
    if not rows:
        return pa.table({k: pa.array([], t) for k, t in types.items()})
    cols = list(zip(*rows, strict=True))
    return pa.table({k: pa.array(c, types[k]) for k, c in zip(names, cols, strict=True)})


_IntArray = np.ndarray[Any, np.dtype[np.int64]]
_BoolArray = np.ndarray[Any, np.dtype[np.bool_]]


def _packed(data: list[bytes], nulls: list[bytes], width: int) -> tuple[_IntArray, _BoolArray | None]:
    """The packed int64 fields of many games as one ``(rows, width)`` array, and the null mask."""
    ints = np.frombuffer(b"".join(data), dtype=np.int64).reshape(-1, width)
    if not any(nulls):
        return ints, None
    mask = b"".join(m or bytes(len(d) // 8) for d, m in zip(data, nulls, strict=True))
    return ints, np.frombuffer(mask, dtype=np.bool_).reshape(-1, width)


def _column(values: _IntArray, mask: _BoolArray | None, how: Any) -> pa.Array:
    """One column from packed ints: a type, or a lookup array (strings) the ints index."""
    m = mask if mask is not None and mask.any() else None
    if isinstance(how, pa.DataType):
        arr = values.astype(bool) if how == _BOOL else values.astype(how.to_pandas_dtype())
        return pa.array(arr, type=how, mask=m)
    idx = values.astype(np.int32)
    return how.take(pa.array(idx, mask=m))


def _within(counts: _IntArray) -> _IntArray:
    """1, 2, ... within each group of consecutive rows of the given sizes."""
    total = int(counts.sum())
    starts = np.cumsum(counts) - counts
    return np.arange(total, dtype=np.int64) - np.repeat(starts, counts) + 1


def _deal_tables(built: list[Built]) -> dict[str, pa.Table]:
    """``deals``, ``bids``, ``tricks`` and ``plays`` of a chunk's games, column-wise from the packed data."""
    nd = len(DEAL_INTS)
    ids = pa.array([b.game_id for b in built], _STR)
    players = pa.array([p for b in built for p in b.game[5:9]], _STR)
    per_game = np.array([len(b.deals) // (8 * nd) for b in built], dtype=np.int64)
    if not per_game.any():
        return {}
    deals, dmask = _packed([b.deals for b in built], [b.deal_nulls for b in built], nd)
    deal_game = np.repeat(np.arange(len(built), dtype=np.int64), per_game)
    deal_no = _within(per_game)
    deal_cols: dict[str, pa.Array] = {"game_id": ids.take(pa.array(deal_game)), "deal": pa.array(deal_no, _I32)}
    for name, (src, how) in _DEAL_COLUMNS.items():
        k = _D[src]
        deal_cols[name] = _column(deals[:, k], None if dmask is None else dmask[:, k], how)
    deal_cols["no_trump"] = pa.array(deals[:, _D["trump"]] == NO_TRUMP)
    out = {"deals": pa.table({f: deal_cols[f] for f in DEAL_FIELDS})}

    bids, bmask = _packed([b.bids for b in built], [b.bid_nulls for b in built], len(BID_INTS))
    bid_deal = np.repeat(np.arange(len(deals), dtype=np.int64), 4)
    bid_game = deal_game[bid_deal]
    bid_seat = bids[:, _B["seat"]]

    def bcol(f: str, how: Any) -> pa.Array:
        return _column(bids[:, _B[f]], None if bmask is None else bmask[:, _B[f]], how)

    out["bids"] = pa.table(
        {
            "game_id": ids.take(pa.array(bid_game)),
            "deal": pa.array(deal_no[bid_deal], _I32),
            "position": pa.array(np.tile(np.arange(1, 5, dtype=np.int32), len(deals))),
            "seat": bcol("seat", SEAT_ARRAY),
            "player": players.take(pa.array(bid_game * 4 + bid_seat)),
            "kind": bcol("kind", BID_KIND_ARRAY),
            "value": bcol("value", _I64),
            "board_level": bcol("board_level", _I32),
        }
    )

    per_deal = deals[:, _D["tricks"]]
    if not per_deal.any():
        return out
    trick_deal = np.repeat(np.arange(len(deals), dtype=np.int64), per_deal)
    trick_game = deal_game[trick_deal]
    trump = deals[trick_deal, _D["trump"]]
    leader = np.frombuffer(b"".join(b.leaders for b in built), dtype=np.uint8).astype(np.int64)
    winner = np.frombuffer(b"".join(b.winners for b in built), dtype=np.uint8).astype(np.int64)
    broken = np.frombuffer(b"".join(b.broken for b in built), dtype=np.bool_)
    cards = np.frombuffer(b"".join(b.cards for b in built), dtype=np.uint8).astype(np.int64)
    ntr = len(leader)
    c4 = cards.reshape(ntr, 4)
    led = c4[:, 0]
    trick_deal_no = pa.array(deal_no[trick_deal], _I32)
    trick_no = pa.array(_within(per_deal), _I32)
    out["tricks"] = pa.table(
        {
            "game_id": ids.take(pa.array(trick_game)),
            "deal": trick_deal_no,
            "trick": trick_no,
            "leader": SEAT_ARRAY.take(pa.array(leader)),
            "leader_player": players.take(pa.array(trick_game * 4 + leader)),
            "winner": SEAT_ARRAY.take(pa.array(winner)),
            "winner_player": players.take(pa.array(trick_game * 4 + winner)),
            "led_card": CARD_ARRAY.take(pa.array(led)),
            "led_suit": SUIT_ARRAY.take(pa.array(EFFECTIVE_SUIT_NP[trump, led])),
            "winning_card": CARD_ARRAY.take(pa.array(c4[np.arange(ntr), (winner - leader) & 3])),
            "trump_broken_before": pa.array(broken),
        }
    )
    play_trick = np.repeat(np.arange(ntr, dtype=np.int64), 4)
    play_game = trick_game[play_trick]
    seat = (leader[play_trick] + np.tile(np.arange(4, dtype=np.int64), ntr)) & 3
    out["plays"] = pa.table(
        {
            "game_id": ids.take(pa.array(play_game)),
            "deal": trick_deal_no.take(pa.array(play_trick)),
            "trick": trick_no.take(pa.array(play_trick)),
            "position": pa.array(np.tile(np.arange(1, 5, dtype=np.int32), ntr)),
            "seat": SEAT_ARRAY.take(pa.array(seat)),
            "player": players.take(pa.array(play_game * 4 + seat)),
            "card": CARD_ARRAY.take(pa.array(cards)),
            "suit": CARD_SUIT_ARRAY.take(pa.array(cards)),
            "rank": pa.array(RANK_VALUES[cards]),
            "is_trump": pa.array(IS_TRUMP_NP[trump[play_trick], cards]),
        }
    )
    return out


__all__ = ["CHUNK", "RunSummary", "built_chunks", "ingest", "ingest_files", "reject_id"]

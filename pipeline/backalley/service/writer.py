"""The one thread that stores uploads: uploads waiting for it are stored together, in one transaction.

Each upload arrives replayed (its rows built); the writer takes the first one
waiting and every other one waiting behind it (up to :data:`GROUP_RECORDS`
records), and stores them in one transaction of a long-lived ingest run
(:class:`backalley.store.ingest.Session`, the same code as ``backalley ingest``), in
arrival order, so that several small uploads share the fixed cost of a commit
instead of paying it each (group commit). The answer is as if they had come one
after the other: a game sent twice in the group is stored once, the second time
a duplicate. When a group fails, each of its uploads is stored again alone, so
that one bad upload does not take the others' records with it.
"""

from __future__ import annotations

import logging
import queue
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

import pyarrow as pa

from backalley.records.sources import Item
from backalley.store.database import Store
from backalley.store.ingest import Session
from backalley.store.rows import Built

log = logging.getLogger("backalley.service")

#: Records stored together at most, and records per transaction: an upload larger than this is
#: stored alone, in transactions of this many records (as ``backalley ingest`` stores a file).
GROUP_RECORDS = 2_048
#: The ingest session's record limit: none, since every record reaches the writer checked already (one
#: over the service's limit as the reject ``too_large``, cut short: ``Replays.built``), and the writer
#: knows each record by identity (a record the session replaced would be a record of no upload).
CHECKED = sys.maxsize


@dataclass
class _Upload:
    items: list[Item]
    built: dict[int, Built]
    progress: Callable[[int], None] | None
    fates: list[tuple[str, str]] = field(default_factory=list)
    done: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None


@dataclass(frozen=True, slots=True)
class StoredGame:
    """A game a group has just stored: its id, raw text (and compressed, if the worker did), time of the
    ingest, and the source and line it came from."""

    game_id: str
    raw: bytes
    raw_zstd: bytes
    ingested_at: datetime | None
    source: str
    line: int | None


#: ``stored(games)``: after a group is committed, before its uploads are answered, every game it stored.
Stored = Callable[[list[StoredGame]], None]


class Writer:
    def __init__(
        self,
        store: Store,
        lock: threading.Lock,
        after: Callable[[], None],
        memory_limit: str,
        stored: Stored | None = None,
    ) -> None:
        self.store = store
        self.memory_limit = memory_limit
        self.lock = lock
        self.after = after
        self.stored = stored
        self.session: Session | None = None
        self.queue: queue.Queue[_Upload | None] = queue.Queue()
        self.thread = threading.Thread(target=self._loop, name="backalley-writer", daemon=True)
        self.thread.start()

    def write(
        self,
        items: list[Item],
        built: list[Built],
        progress: Callable[[int], None] | None = None,
    ) -> list[tuple[str, str]]:
        """Store ``items`` (with their rows) and wait; the ``(fate, message)`` of each, in order."""
        keyed = {id(it): b for it, b in zip(items, built, strict=True)}
        up = _Upload(items, keyed, progress)
        self.queue.put(up)
        up.done.wait()
        if up.error is not None:
            raise up.error
        return up.fates

    def close(self) -> None:
        """Store what is waiting, then end the ingest run."""
        self.queue.put(None)
        self.thread.join()
        with self.lock:
            if self.session is not None:
                self.session.close()
                self.session = None

    def _loop(self) -> None:
        held: _Upload | None = None  # taken from the queue, but too large for the group before it
        stop = False
        while not stop or held is not None:
            first = held if held is not None else self.queue.get()
            held = None
            if first is None:
                return
            group, records = [first], len(first.items)
            while records < GROUP_RECORDS and not stop:
                try:
                    nxt = self.queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    stop = True
                elif records + len(nxt.items) > GROUP_RECORDS:
                    held = nxt
                    break
                else:
                    group.append(nxt)
                    records += len(nxt.items)
            try:
                self._store(group)
            finally:
                for up in group:
                    up.done.set()

    def _store(self, group: list[_Upload]) -> None:
        """Store the group in one transaction; if that fails, each upload alone (each hears its own error)."""
        try:
            self._commit(group)
            return
        except BaseException as exc:  # the group is stored again, upload by upload
            if len(group) == 1:
                log.error("storing %d records failed: %s", len(group[0].items), exc)
                group[0].error = exc
                return
        for up in group:
            up.fates.clear()
            try:
                self._commit([up])
            except BaseException as exc:  # this upload's answer is its error
                log.error("storing %d records failed: %s", len(up.items), exc)
                up.error = exc

    def _commit(self, group: list[_Upload]) -> None:
        owner = {id(it): up for up in group for it in up.items}
        built = {k: b for up in group for k, b in up.built.items()}
        games: list[tuple[str, Item]] = []
        times: dict[str, datetime] = {}

        def fate(item: Item, what: str, message: str) -> None:
            up = owner[id(item)]
            up.fates.append((what, message))
            if what == "stored" and (gid := built[id(item)].game_id) is not None:
                games.append((gid, item))
            if up.progress is not None:
                up.progress(len(up.fates))

        def tables(written: dict[str, pa.Table]) -> None:  # the time each stored game was ingested at
            g = written.get("g_games")
            if g is not None and g.num_rows:
                names, at = g.column("game_id").to_pylist(), g.column("ingested_at").to_pylist()
                times.update(zip(names, at, strict=True))

        with self.lock:
            if self.session is None or self.session.failed:
                self.session = Session(
                    self.store,
                    ["backalley serve"],
                    memory_limit=self.memory_limit,
                    max_record_bytes=CHECKED,
                    transaction=GROUP_RECORDS,
                )
            try:
                self.session.store_group(
                    [it for up in group for it in up.items], fate, build=lambda it: built[id(it)], tables=tables
                )
            except BaseException:
                for up in group:
                    up.fates.clear()
                raise
            self.after()
        if self.stored is not None and games:
            kept = [
                StoredGame(gid, it.raw, built[id(it)].raw_zstd, times.get(gid), it.source, it.line) for gid, it in games
            ]
            try:
                self.stored(kept)
            except Exception:  # what the pages keep in memory: they read the store instead
                log.exception("keeping the pages of %d stored games failed", len(games))

"""One replay per uploaded record gives its report and its rows, in worker processes; a stored game's pages'
data when a page first asks for it, in a worker of its own.

:func:`build_and_report` replays a record once for the common case (a record
that fits the format: the fast path of both :func:`backalley.store.rows.build_item`
and :func:`backalley.validate.check`); any other input takes both generic
paths, so its report and rows are exactly those of ``validate`` and ``ingest``.
What the pages show of a game (:func:`backalley.service.fresh.page`) is
computed from the same rows, replayed again from the raw text the service keeps
in memory, when a page of the game is first read (:meth:`Replays.page`): about a
third of a worker's instructions per record, spent only on the games someone looks at.
That replay runs in a process of its own, so that a page never waits behind the
uploads queued for the other workers.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.context
import threading
from concurrent.futures import Executor, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from backalley.records.models import fast_decode
from backalley.records.sources import Item
from backalley.replay import replay_checked
from backalley.service.fresh import Page, page
from backalley.store.rows import Built, build_game, build_item, build_rows, content_hash, oversized, with_raw
from backalley.validate import cap_records, check_item, tune_gc
from backalley.workers import guarded, pool_context

#: Records per task sent to a worker process.
TASK = 16

Report = dict[str, Any]


def build_and_report(item: Item) -> tuple[Built, Report]:
    """The row data and the JSON Lines report object of one input."""
    rec = fast_decode(item.raw) if item.read_error is None else None
    if rec is not None:
        r = replay_checked(rec)
        return with_raw(build_game(rec, r, content_hash(item.raw)), item), r.report(item.source, item.line)
    return build_item(item), report(item)


def report(item: Item) -> Report:
    return check_item(item).report(item.source, item.line)


#: What the writer needs of one upload's record: its rows and its report.
Replayed = tuple[Built, Report]


def _build_many(items: list[Item]) -> list[Replayed]:
    return [build_and_report(it) for it in items]


def _report_many(items: list[Item]) -> list[Report]:
    return [report(it) for it in items]


def page_of(item: Item, zone: str) -> Page | None:
    """What the pages show of a stored game (times in ``zone``), from its raw text (``item``: as it was
    uploaded, with its source and line); ``None`` for an input that is not a game."""
    return page(item, build_rows(item), zone)  # (the rows without their raw text compressed: pages do not show it)


def _tasks(items: list[Item]) -> list[list[Item]]:
    return [items[i : i + TASK] for i in range(0, len(items), TASK)]


def _context() -> multiprocessing.context.BaseContext:
    return pool_context(["backalley.store.rows", "backalley.service.fresh"])


class Replays:
    """Replays in ``workers`` processes (started on first use), or in this one with ``workers <= 1``.

    ``zone`` is the time zone the database gives times in (its ``TimeZone``): the pages' data
    shows times as a read from the file would. With workers, the pages' data are computed by one
    more process, started when a page first needs one."""

    def __init__(self, workers: int, zone: str = "UTC") -> None:
        self.workers = workers
        self.zone = zone
        self._pool: Executor | None = None
        self._pages: Executor | None = None
        self._lock = threading.Lock()

    def _executor(self) -> Executor:
        with self._lock:
            if self._pool is None:
                self._pool = ProcessPoolExecutor(self.workers, mp_context=_context(), initializer=guarded(tune_gc))
            return self._pool

    def _page_executor(self) -> Executor:
        with self._lock:
            if self._pages is None:
                self._pages = ProcessPoolExecutor(1, mp_context=_context(), initializer=guarded(tune_gc))
            return self._pages

    def built(self, items: list[Item], limit: int) -> tuple[list[Item], list[Replayed]]:
        """Each record's rows and report, and the records to store: a record over ``limit`` bytes is not
        replayed; it is the reject ``too_large`` (as ``backalley ingest`` stores it: its first bytes) and its
        report the ``JSON`` error ``backalley validate`` gives it."""
        big = {k: cut for k, it in enumerate(items) if (cut := oversized(it, limit)) is not None}
        todo = [it for k, it in enumerate(items) if k not in big] if big else items
        done = iter(self._built(todo))
        stored: list[Item] = []
        out: list[Replayed] = []
        for k, it in enumerate(items):
            if k in big:
                kept, rows = big[k]
                stored.append(kept)
                out.append((rows, report(next(cap_records([it], limit)))))
            else:
                stored.append(it)
                out.append(next(done))
        return stored, out

    def _built(self, items: list[Item]) -> list[Replayed]:
        if self.workers <= 1 or len(items) <= 1:
            return _build_many(items)
        return [x for part in self._executor().map(_build_many, _tasks(items)) for x in part]

    def page(self, item: Item) -> Page | None:
        """What the pages show of the stored game whose raw text is ``item`` (:func:`page_of`)."""
        if self.workers <= 1:
            return page_of(item, self.zone)
        pool = self._page_executor()
        try:
            return pool.submit(page_of, item, self.zone).result()
        except BrokenProcessPool:  # the worker died: the next page starts another
            with self._lock:
                if self._pages is pool:
                    self._pages = None
            pool.shutdown(wait=False, cancel_futures=True)
            raise

    def reports(self, items: list[Item], limit: int) -> list[Report]:
        """Each record's report; a record over ``limit`` bytes is not parsed: its report is a ``JSON`` error."""
        items = list(cap_records(items, limit))
        if self.workers <= 1 or len(items) <= 1:
            return _report_many(items)
        return [x for part in self._executor().map(_report_many, _tasks(items)) for x in part]

    def close(self) -> None:
        for pool in (self._pool, self._pages):
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)

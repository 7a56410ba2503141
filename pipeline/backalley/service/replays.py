"""One replay per uploaded record gives its report, its rows and its pages' data, in worker processes.

:func:`build_and_report` replays a record once for the common case (a record
that fits the format: the fast path of both :func:`backalley.rows.build_item`
and :func:`backalley.validate.check`); any other input takes both generic
paths, so its report and rows are exactly those of ``validate`` and ``ingest``.
What the pages will show of the game once it is stored is computed from those
rows in the same task (:func:`backalley.service.fresh.page`), for the records
the service keeps pages of.
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import Executor, ProcessPoolExecutor
from typing import Any

from backalley.record import fast_decode
from backalley.replay import replay_checked
from backalley.rows import Built, build_game, build_item, content_hash, with_raw
from backalley.service.fresh import Page, page
from backalley.sources import Item
from backalley.validate import check_item, tune_gc

#: Records per task sent to a worker process.
TASK = 16

Report = dict[str, Any]


def build_and_report(item: Item) -> tuple[Built, Report, int | None]:
    """The row data and the JSON Lines report object of one input, and how many deals it holds when the
    fast decoder read it (``None``: it did not)."""
    rec = fast_decode(item.raw) if item.read_error is None else None
    if rec is not None:
        r = replay_checked(rec)
        built = with_raw(build_game(rec, r, content_hash(item.raw)), item)
        return built, r.report(item.source, item.line), len(rec.deals)
    return build_item(item), report(item), None


def report(item: Item) -> Report:
    return check_item(item).report(item.source, item.line)


#: What the writer needs of one upload's record: its rows, its report, its pages' data (or ``None``).
Replayed = tuple[Built, Report, Page | None]


def _build_many(items: list[Item], pages_from: int, zone: str) -> list[Replayed]:
    """Replay each record; the pages' data of those from index ``pages_from`` on (times in ``zone``)."""
    out: list[Replayed] = []
    for k, it in enumerate(items):
        built, found, deals = build_and_report(it)
        out.append((built, found, page(it, built, zone, deals) if k >= pages_from else None))
    return out


def _report_many(items: list[Item]) -> list[Report]:
    return [report(it) for it in items]


def _tasks(items: list[Item]) -> list[list[Item]]:
    return [items[i : i + TASK] for i in range(0, len(items), TASK)]


class Replays:
    """Replays in ``workers`` processes (started on first use), or in this one with ``workers <= 1``.

    ``zone`` is the time zone the database gives times in (its ``TimeZone``): the pages' data
    shows times as a read from the file would."""

    def __init__(self, workers: int, zone: str = "UTC") -> None:
        self.workers = workers
        self.zone = zone
        self._pool: Executor | None = None

    def _executor(self) -> Executor:
        if self._pool is None:
            ctx = multiprocessing.get_context("forkserver")
            ctx.set_forkserver_preload(["backalley.rows", "backalley.service.fresh"])
            self._pool = ProcessPoolExecutor(self.workers, mp_context=ctx, initializer=tune_gc)
        return self._pool

    def built(self, items: list[Item], pages_from: int = 0) -> list[Replayed]:
        """Each record's rows and report, and its pages' data from index ``pages_from`` on."""
        if self.workers <= 1 or len(items) <= 1:
            return _build_many(items, pages_from, self.zone)
        tasks = _tasks(items)
        starts = [max(0, pages_from - k * TASK) for k in range(len(tasks))]
        parts = self._executor().map(_build_many, tasks, starts, [self.zone] * len(tasks))
        return [x for part in parts for x in part]

    def reports(self, items: list[Item]) -> list[Report]:
        if self.workers <= 1 or len(items) <= 1:
            return _report_many(items)
        return [x for part in self._executor().map(_report_many, _tasks(items)) for x in part]

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)

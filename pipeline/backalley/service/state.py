"""The running service: the database's only writer, its reading cursors, upload jobs.

Every write (an upload, a token) runs under one lock; uploads are stored by one
thread (:class:`~backalley.service.writer.Writer`) through the same ingest code
as ``backalley ingest`` (:func:`backalley.ingest.ingest_items`): idempotent,
atomic per transaction, conflicts kept in ``rejects``. Reads use cursors of the
same database, which see every committed write.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, cast

import duckdb
import orjson

from backalley.reporting.metrics import Metrics, compute
from backalley.service import auth, data
from backalley.service.cache import RecordCache
from backalley.service.fresh import pack_page, unpack_page, zone
from backalley.service.replays import Replays
from backalley.service.settings import Settings
from backalley.service.writer import StoredGame, Writer
from backalley.sources import Item, dumps, parse
from backalley.store import Store

log = logging.getLogger("backalley.service")

#: Finished jobs kept for polling (the oldest are forgotten first).
KEEP_JOBS = 200
FATES = ("stored", "duplicate", "conflict", "rejected")
#: Record-cache bytes per game whose source, line and time of ingest are kept to compute its pages'
#: data from its text in memory (:meth:`Service.fresh_page`): 16,384 games for the default 64 MB.
FRESH_BYTES_PER_GAME = 4_096
#: The players' figures are recomputed in the background at most this share of the time.
METRICS_SHARE = 0.1


@dataclass
class Job:
    """A large upload stored in the background."""

    id: str
    records: int
    status: str = "queued"  # queued, running, finished, failed
    done: int = 0
    result: dict[str, Any] | None = None
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "status": self.status,
            "records": self.records,
            "done": self.done,
            "result": self.result,
            "error": self.error,
        }


@dataclass
class Service:
    settings: Settings
    store: Store = field(init=False)
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: Bumped after every write: cached figures older than it are recomputed.
    generation: int = 0
    jobs: OrderedDict[str, Job] = field(default_factory=OrderedDict)

    def __post_init__(self) -> None:
        self.store = Store.open(self.settings.db)
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="backalley-jobs")
        #: The time zone DuckDB gives times in: the pages computed by the workers show times as it does.
        self.zone = str(self.store.con.execute("SELECT current_setting('TimeZone')").fetchall()[0][0])
        self.replays = Replays(self.settings.workers, self.zone)
        self.records = RecordCache(self.settings.record_cache)
        #: What :func:`backalley.service.data.game` says of a game, as JSON (it never changes either).
        self.games = RecordCache(self.settings.record_cache // 2, pack_page, unpack_page)
        #: Each game's trick winners (:data:`backalley.service.data.Winners`), as JSON.
        self.winners = RecordCache(self.settings.record_cache // 4)
        #: Games this service stored: their source, line and time of ingest (as the pages show it), newest last.
        self._fresh: OrderedDict[str, tuple[str, int | None, str]] = OrderedDict()
        self._fresh_lock = threading.Lock()
        self._writer = Writer(self.store, self.lock, self._written, self.settings.memory_limit, self._stored)
        self._metrics: _Figures | None = None
        self._metrics_lock = threading.Lock()
        self._refreshing = False
        #: Called with new figures in the thread that computed them, before they are served (the
        #: pages render the report's index then: :meth:`backalley.service.pages._ReportPages.prepare`).
        self.prepare_figures: Callable[[Metrics], None] | None = None
        self._refresher: threading.Thread | None = None

    def close(self) -> None:
        if self._refresher is not None:  # it reads the database through a cursor of the connection closed below
            self._refresher.join()
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._writer.close()
        self.replays.close()
        with self.lock:
            self.store.con.execute("CHECKPOINT")
            self.store.close()

    @contextmanager
    def reader(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A cursor for reading: it sees what was committed when it runs. It is opened on first use, so
        that a page served from memory opens none (:class:`_LazyCursor`)."""
        cur = _LazyCursor(self.store)
        try:
            yield cast(duckdb.DuckDBPyConnection, cur)
        finally:
            cur.close()

    def record_text(self, cur: duckdb.DuckDBPyConnection, game_id: str) -> bytes | None:
        """A stored game's raw text (:data:`backalley.service.data.RecordText`), from memory when it can."""
        return self.records.get(game_id, lambda gid: data.record_text(cur, gid))

    def game_data(self, cur: duckdb.DuckDBPyConnection, game_id: str) -> dict[str, Any] | None:
        """A stored game's figures, deals and violations (:func:`backalley.service.data.game`), from memory when it can."""

        def load(gid: str) -> bytes | None:
            found = data.game(cur, gid, self.record_text)
            return None if found is None else dumps(found)

        text = self._kept(self.games, game_id, load)
        return None if text is None else dict(parse(text)[0])  # (exact: an integer beyond 64 bits stays one)

    def trick_winners(self, cur: duckdb.DuckDBPyConnection, game_id: str) -> data.Winners:
        """A stored game's trick winners (:data:`backalley.service.data.WinnersOf`), from memory when it can."""
        text = self._kept(self.winners, game_id, lambda gid: data.winners_json(data.trick_winners(cur, [gid])[gid]))
        return {(d, t): w for d, t, w in orjson.loads(text or b"[]")}

    def _kept(self, cache: RecordCache, game_id: str, load: Callable[[str], bytes | None]) -> bytes | None:
        """A game's entry of ``cache`` (games or winners): from memory; else computed from its text in memory
        (:meth:`fresh_page`, which fills both); else ``load(game_id)`` from the file."""
        text = cache.get(game_id, _absent)
        if text is None and self.fresh_page(game_id):
            text = cache.get(game_id, _absent)
        return text if text is not None else cache.get(game_id, load)

    def fresh_page(self, game_id: str) -> bool:
        """Compute and keep the pages' data of a game this service stored, from its text in memory (a
        worker replays it: :meth:`backalley.service.replays.Replays.page`); ``False`` when the text or
        where it came from is no longer in memory (the file answers then).

        Computed when first asked, not at the upload: most stored games are never looked at, and the
        pages' data of one cost about a third of what its upload costs the workers."""
        with self._fresh_lock:
            where = self._fresh.get(game_id)
        raw = None if where is None or self.games.budget <= 0 else self.records.get(game_id, _absent)
        if where is None or raw is None:
            return False
        source, line, stamp = where
        try:
            found = self.replays.page(Item(source, line, raw))
        except Exception:  # a worker that died, say: the file answers
            log.exception("computing the pages' data of game %r in a worker failed", game_id)
            return False
        if found is None:
            return False
        self.games.put_packed(game_id, found.entry(stamp))
        self.winners.put_packed(game_id, found.winners)
        return True

    def token_ok(self, token: str | None) -> bool:
        with self.reader() as cur:
            return auth.known(token, self.settings.tokens, cur)

    def _written(self) -> None:
        self.generation += 1

    def create_token(self, name: str) -> str:
        with self.lock:
            return auth.create_token(self.store, name)

    # -- uploads ------------------------------------------------------------------------

    def upload(self, items: list[Item], job: Job | None = None) -> dict[str, Any]:
        """Validate and store ``items``; per record its report and its fate.

        The records are replayed first (in the worker processes), then stored by the writer thread,
        together with other uploads waiting for it.
        """
        built = self.replays.built(items)

        def progress(done: int) -> None:
            if job is not None:
                job.done = done

        fates = self._writer.write(items, [b for b, _ in built], progress)
        counts = dict.fromkeys(FATES, 0)
        results = []
        for (_, report), (what, message) in zip(built, fates, strict=True):
            counts[what] = counts.get(what, 0) + 1
            results.append({"fate": what, "message": message or None, "report": report})
        return {"records": len(items), "fates": counts, "results": results}

    def _stored(self, games: list[StoredGame]) -> None:
        """Keep the text of the games a group has just stored, and where each came from: their pages need
        nothing from the file (:meth:`fresh_page`). The writer calls it before it answers their uploads."""
        tz = zone(self.zone)
        keep = max(self.settings.record_cache // FRESH_BYTES_PER_GAME, 1)
        for g in games:
            self._remember(g.game_id, g.raw, g.raw_zstd)
            if g.ingested_at is not None:
                with self._fresh_lock:
                    self._fresh[g.game_id] = (g.source, g.line, g.ingested_at.astimezone(tz).isoformat())
                    while len(self._fresh) > keep:
                        self._fresh.popitem(last=False)

    def _remember(self, game_id: str, raw: bytes, raw_zstd: bytes = b"") -> None:
        """Keep a stored record's text for its pages (as the store has it: valid UTF-8 only); ``raw_zstd``
        is the same text compressed, if the worker did it."""
        try:
            raw.isascii() or raw.decode("utf-8")
        except UnicodeDecodeError:
            return
        if raw_zstd:
            self.records.put_packed(game_id, raw_zstd)
        else:
            self.records.put(game_id, raw)

    def submit(self, items: list[Item]) -> Job:
        """Store ``items`` in the background (one job at a time, in order of submission)."""
        job = Job(uuid.uuid4().hex, len(items))
        self.jobs[job.id] = job
        while len(self.jobs) > KEEP_JOBS:
            oldest = next(iter(self.jobs.values()))
            if oldest.status in ("queued", "running"):
                break
            self.jobs.popitem(last=False)
        self._pool.submit(self._run, job, items)
        return job

    def _run(self, job: Job, items: list[Item]) -> None:
        job.status = "running"
        try:
            job.result = self.upload(items, job)
            job.status = "finished"
        except Exception as exc:  # a job's failure is its answer, not a crash of the service
            job.error = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            job.status = "failed"

    # -- figures --------------------------------------------------------------------------

    def reports(self, items: list[Item]) -> list[dict[str, Any]]:
        """The JSON Lines report object of every record (RECORD.md), in order; stores nothing."""
        return self.replays.reports(items)

    def warm(self) -> None:
        """Start computing the figures in the background (the service does at start-up): the first
        request for them then waits for less, or not at all."""
        with self._metrics_lock:
            if self._metrics is None and not self._refreshing:
                self._start_refresh()

    def metrics(self) -> Metrics:
        """The report's figures: computed on the first call (or waited for while :meth:`warm` computes
        them); after a write, recomputed in the background while the last figures are served, at most
        once per ``metrics_max_age`` seconds and at most :data:`METRICS_SHARE` of the time
        (:meth:`_stale`)."""
        with self._metrics_lock:
            first = self._refresher if self._metrics is None and self._refreshing else None
        if first is not None:
            first.join()
        with self._metrics_lock:
            cached = self._metrics
            if cached is None:  # (not computed yet, or the computation at start-up failed: computed here)
                cached = self._compute_metrics()
            elif self._stale(cached) and not self._refreshing:
                self._start_refresh()
            return cached.metrics

    def current_metrics(self) -> Metrics:
        """The figures, recomputed first if the store changed since they were computed: for a request
        about something they may not hold yet (the page of a player whose games were just stored).

        Such a request does not wait for ``metrics_max_age``, but the figures are still computed at
        most :data:`METRICS_SHARE` of the time: when the last computation is too recent, the figures
        are those of :meth:`metrics`. A computation already running is waited for."""
        figures = self.metrics()
        with self._metrics_lock:
            cached = self._metrics
            due = cached is not None and self._stale(cached, max_age=0.0)
            if due and not self._refreshing:
                self._start_refresh()
            running = self._refresher if self._refreshing else None
        if running is None:
            return figures
        running.join()
        return self.metrics()

    def figures_time(self) -> float | None:
        """When the figures served now were computed (``time.time()``), if they were."""
        cached = self._metrics
        return None if cached is None else time.time() - (time.monotonic() - cached.done)

    def figures_behind(self) -> bool:
        """The store changed since the figures served now were computed."""
        cached = self._metrics
        return cached is not None and cached.generation != self.generation

    def _start_refresh(self) -> None:
        """Compute the figures in a thread of their own (the caller holds ``_metrics_lock``)."""
        self._refreshing = True
        self._refresher = threading.Thread(target=self._refresh_metrics, name="backalley-metrics", daemon=True)
        self._refresher.start()

    def _stale(self, cached: _Figures, max_age: float | None = None) -> bool:
        """Written to since, and rested long enough: ``max_age`` seconds (default ``metrics_max_age``), and
        ten times as long as the last computation took (on a large store it takes seconds of the CPUs the
        uploads need)."""
        rest = max(self.settings.metrics_max_age if max_age is None else max_age, cached.seconds / METRICS_SHARE)
        return cached.generation != self.generation and time.monotonic() - cached.done >= rest

    def _figures(self) -> _Figures:
        gen, start = self.generation, time.monotonic()
        with self.reader() as cur:
            found = compute(cur)
        done = time.monotonic()
        return _Figures(gen, done, done - start, found)

    def _compute_metrics(self) -> _Figures:
        self._metrics = self._figures()
        return self._metrics

    def _refresh_metrics(self) -> None:
        try:
            fresh = None
            fresh = self._figures()
            if self.prepare_figures is not None:
                self.prepare_figures(fresh.metrics)
        except Exception:  # the figures stay as they were (or are served unprepared); the next write tries again
            log.exception("recomputing the players' figures failed")
        finally:
            with self._metrics_lock:
                if fresh is not None:
                    self._metrics = fresh
                self._refreshing = False


def _absent(_game_id: str) -> None:
    """A cache's loader that loads nothing: a look-up in memory only."""
    return None


class _LazyCursor:
    """A cursor of the store made when first used (it has backalley's SQL functions: ``games.raw`` needs
    them). Making one registers them on it, a statement of its own: about a millisecond, more than
    a page served from memory takes otherwise."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._cur: duckdb.DuckDBPyConnection | None = None

    def __getattr__(self, name: str) -> Any:
        if self._cur is None:
            self._cur = self._store.cursor()
        return getattr(self._cur, name)

    def close(self) -> None:
        if self._cur is not None:
            self._cur.close()
            self._cur = None


@dataclass(frozen=True)
class _Figures:
    """The players' figures as computed after write ``generation``, when, and in how many seconds."""

    generation: int
    done: float
    seconds: float
    metrics: Metrics

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
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import duckdb
import orjson

from backalley.reporting.metrics import Metrics, compute
from backalley.service import auth, data
from backalley.service.cache import RecordCache
from backalley.service.fresh import FreshPages, FreshTables
from backalley.service.replays import Replays
from backalley.service.settings import Settings
from backalley.service.writer import Writer
from backalley.sources import Item
from backalley.store import Store

log = logging.getLogger("backalley.service")

#: Finished jobs kept for polling (the oldest are forgotten first).
KEEP_JOBS = 200
FATES = ("stored", "duplicate", "conflict", "rejected")
#: Games of one upload whose pages' data are kept in memory as soon as they are stored (its last ones).
PREPARE_PAGES = 2_000
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
        self.replays = Replays(self.settings.workers)
        self.records = RecordCache(self.settings.record_cache)
        #: What :func:`backalley.service.data.game` says of a game, as JSON (it never changes either).
        self.games = RecordCache(self.settings.record_cache // 2)
        #: Each game's trick winners (:data:`backalley.service.data.Winners`), as JSON.
        self.winners = RecordCache(self.settings.record_cache // 4)
        #: Answers what the pages show of the games the writer has just stored (see :meth:`_stored`).
        self._fresh = FreshPages()
        self._writer = Writer(
            self.store, self.lock, self._written, self.settings.memory_limit, self._stored, keep=PREPARE_PAGES
        )
        self._metrics: _Figures | None = None
        self._metrics_lock = threading.Lock()
        self._refreshing = False

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._writer.close()
        self._fresh.close()
        self.replays.close()
        with self.lock:
            self.store.con.execute("CHECKPOINT")
            self.store.close()

    @contextmanager
    def reader(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A cursor for reading: it sees what was committed when it runs."""
        cur = self.store.cursor()  # with backalley's SQL functions: games.raw needs them
        try:
            yield cur
        finally:
            cur.close()

    def record_text(self, cur: duckdb.DuckDBPyConnection, game_id: str) -> bytes | None:
        """A stored game's raw text (:data:`backalley.service.data.RecordText`), from memory when it can."""
        return self.records.get(game_id, lambda gid: data.record_text(cur, gid))

    def game_data(self, cur: duckdb.DuckDBPyConnection, game_id: str) -> dict[str, Any] | None:
        """A stored game's figures, deals and violations (:func:`backalley.service.data.game`), from memory when it can."""

        def load(gid: str) -> bytes | None:
            found = data.game(cur, gid, self.record_text)
            return None if found is None else orjson.dumps(found)

        text = self.games.get(game_id, load)
        return None if text is None else dict(orjson.loads(text))

    def trick_winners(self, cur: duckdb.DuckDBPyConnection, game_id: str) -> data.Winners:
        """A stored game's trick winners (:data:`backalley.service.data.WinnersOf`), from memory when it can."""
        text = self.winners.get(game_id, lambda gid: _winners_json(data.trick_winners(cur, [gid])[gid]))
        return {(d, t): w for d, t, w in orjson.loads(text or b"[]")}

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

        The records are replayed first (in the worker processes), then stored
        by the writer thread, together with other uploads waiting for it.
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

    def _stored(self, games: list[tuple[str, bytes]], tables: FreshTables) -> None:
        """Keep what the pages show of the games a group has just stored; the writer calls it before it
        answers their uploads, so that a page asked for after the answer reads nothing from the file.

        Their raw text, and their rows and trick winners as
        :class:`~backalley.service.fresh.FreshPages` reads them from the tables the writer wrote (of
        a large upload, a job, only the last :data:`PREPARE_PAGES` games').
        """
        for gid, raw in games:
            self._remember(gid, raw)
        if self.games.budget <= 0 or not tables.parts:
            return
        found, winners = self._fresh.read(tables.parts, self.record_text)
        for gid, g in found.items():
            self.games.put(gid, orjson.dumps(g))
        for gid, w in winners.items():
            self.winners.put(gid, _winners_json(w))

    def _remember(self, game_id: str, raw: bytes) -> None:
        """Keep a stored record's text for its pages (as the store has it: valid UTF-8 only)."""
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            return
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

    def metrics(self) -> Metrics:
        """The report's figures: computed on the first call; after a write, recomputed in the background
        while the last figures are served, at most once per ``metrics_max_age`` seconds and at most
        :data:`METRICS_SHARE` of the time (:meth:`_stale`)."""
        with self._metrics_lock:
            cached = self._metrics
            if cached is None:
                cached = self._compute_metrics()
            elif self._stale(cached) and not self._refreshing:
                self._refreshing = True
                threading.Thread(target=self._refresh_metrics, name="backalley-metrics", daemon=True).start()
            return cached.metrics

    def _stale(self, cached: _Figures) -> bool:
        """Written to since, and rested long enough: ``metrics_max_age`` seconds, and ten times as long as
        the last computation took (on a large store it takes seconds of the CPUs the uploads need)."""
        rest = max(self.settings.metrics_max_age, cached.seconds / METRICS_SHARE)
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
        except Exception:  # the figures stay as they were; the next write tries again
            log.exception("recomputing the players' figures failed")
        finally:
            with self._metrics_lock:
                if fresh is not None:
                    self._metrics = fresh
                self._refreshing = False


@dataclass(frozen=True)
class _Figures:
    """The players' figures as computed after write ``generation``, when, and in how many seconds."""

    generation: int
    done: float
    seconds: float
    metrics: Metrics


def _winners_json(winners: data.Winners) -> bytes:
    return orjson.dumps([[d, t, w] for (d, t), w in winners.items()])

"""The running service: the database's only writer, its reading cursors, upload jobs.

Every write (an upload, a token) runs under one lock, through the same ingest
code as ``backalley ingest`` (:func:`backalley.ingest.ingest_items`): idempotent,
atomic per transaction, conflicts kept in ``rejects``. Reads use cursors of the
same database, which see every committed write.
"""

from __future__ import annotations

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

from backalley.ingest import ingest_items
from backalley.reporting.metrics import Metrics, compute
from backalley.service import auth
from backalley.service.replays import Replays
from backalley.service.settings import Settings
from backalley.sources import Item
from backalley.store import Store

#: Finished jobs kept for polling (the oldest are forgotten first).
KEEP_JOBS = 200
FATES = ("stored", "duplicate", "conflict", "rejected")


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
        #: (generation, time computed, figures)
        self._metrics: tuple[int, float, Metrics] | None = None
        self._metrics_lock = threading.Lock()

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
        self.replays.close()
        with self.lock:
            self.store.con.execute("CHECKPOINT")
            self.store.close()

    @contextmanager
    def reader(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A cursor for reading: it sees what was committed when it runs."""
        cur = self.store.con.cursor()
        try:
            yield cur
        finally:
            cur.close()

    def token_ok(self, token: str | None) -> bool:
        with self.reader() as cur:
            return auth.known(token, self.settings.tokens, cur)

    def create_token(self, name: str) -> str:
        with self.lock:
            return auth.create_token(self.store, name)

    # -- uploads ------------------------------------------------------------------------

    def upload(self, items: list[Item], job: Job | None = None) -> dict[str, Any]:
        """Validate and store ``items``; per record its report and its fate.

        The records are replayed first (in the worker processes, outside the
        lock); the lock covers the ingest of what they gave.
        """
        built = self.replays.built(items)
        by_item = {id(it): b for it, (b, _) in zip(items, built, strict=True)}
        fates: list[tuple[str, str]] = []

        def fate(item: Item, what: str, message: str) -> None:
            fates.append((what, message))
            if job is not None:
                job.done = len(fates)

        sources = sorted({it.source for it in items})
        with self.lock:
            ingest_items(
                self.store,
                items,
                [f"backalley serve: {', '.join(sources)}"],
                files=len(sources),
                fate=fate,
                checkpoint=False,
                build=lambda it: by_item[id(it)],
            )
            self.generation += 1
        counts = dict.fromkeys(FATES, 0)
        results = []
        for (_, report), (what, message) in zip(built, fates, strict=True):
            counts[what] = counts.get(what, 0) + 1
            results.append({"fate": what, "message": message or None, "report": report})
        return {"records": len(items), "fates": counts, "results": results}

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
        """The report's figures, recomputed on demand after a write, at most once per ``metrics_max_age`` seconds."""
        with self._metrics_lock:
            gen, now = self.generation, time.monotonic()
            cached = self._metrics
            if cached is None or (cached[0] != gen and now - cached[1] >= self.settings.metrics_max_age):
                with self.reader() as cur:
                    cached = self._metrics = (gen, now, compute(cur))
            return cached[2]

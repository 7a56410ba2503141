"""The running service: the database's only writer, its reading cursors, upload jobs.

Every write (an upload, a token, the ratings) runs under one lock; uploads are stored by one
thread (:class:`~backalley.service.writer.Writer`) through the same ingest code
as ``backalley ingest`` (:func:`backalley.store.ingest.ingest_items`): idempotent,
atomic per transaction, conflicts kept in ``rejects``. Reads use cursors of the
same database, which see every committed write.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import tempfile
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import duckdb
import orjson

from backalley.analysis.ratings import RatingError, fit_groups, plan_refit, write_ratings
from backalley.records.sources import Item, dumps, parse
from backalley.reporting.metrics import Metrics, compute
from backalley.service import auth, data
from backalley.service.cache import RecordCache
from backalley.service.fresh import pack_page, unpack_page, zone
from backalley.service.listing import Cursors
from backalley.service.problems import Problem
from backalley.service.replays import Replays
from backalley.service.settings import Settings
from backalley.service.sql import SqlRunner
from backalley.service.writer import StoredGame, Writer
from backalley.store.database import Store

log = logging.getLogger("backalley.service")

#: Finished jobs kept for polling (the oldest are forgotten first), and the bytes of their results kept
#: in all (in memory and on disk): past either bound the oldest finished jobs are forgotten.
KEEP_JOBS = 200
JOB_BYTES = 512 << 20
#: A finished job's result larger than this (bytes of JSON) is kept on disk, not in memory.
JOB_MEMORY = 256 << 10
FATES = ("stored", "duplicate", "conflict", "rejected")
#: Record-cache bytes per game whose source, line and time of ingest are kept to compute its pages'
#: data from its text in memory (:meth:`Service.fresh_page`): 16,384 games for the default 64 MB.
FRESH_BYTES_PER_GAME = 4_096
#: The players' figures are recomputed in the background at most this share of the time.
METRICS_SHARE = 0.1


@dataclass
class Job:
    """A large upload stored in the background. Its result, once finished, is kept as JSON: in memory up
    to :data:`JOB_MEMORY` bytes, else in a file of the service's job folder (removed with the job)."""

    id: str
    records: int
    status: str = "queued"  # queued, running, finished, failed
    done: int = 0
    error: str | None = None
    #: Bytes of the result's JSON (in memory or on disk).
    size: int = 0
    _result: bytes | None = None
    _file: Path | None = None

    def keep(self, result: dict[str, Any], folder: Path) -> None:
        raw = orjson.dumps(result)
        self.size = len(raw)
        if len(raw) <= JOB_MEMORY:
            self._result = raw
        else:
            self._file = folder / f"{self.id}.json"
            self._file.write_bytes(raw)

    def forget(self) -> None:
        """Drop the result (its file too)."""
        self._result = None
        if self._file is not None:
            self._file.unlink(missing_ok=True)
            self._file = None

    def result_json(self) -> bytes:
        if self._result is not None:
            return self._result
        if self._file is not None:
            try:
                return self._file.read_bytes()
            except OSError:
                return b"null"
        return b"null"

    def as_dict(self) -> dict[str, Any]:
        """The job without its result (as the 202 answers it)."""
        return {
            "id": self.id,
            "status": self.status,
            "records": self.records,
            "done": self.done,
            "result": None,
            "error": self.error,
        }

    def as_json(self) -> bytes:
        """The job with its result, as JSON (the result's JSON is not parsed again)."""
        head = orjson.dumps({k: v for k, v in self.as_dict().items() if k != "result"})
        return head[:-1] + b',"result":' + self.result_json() + b"}"


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
        self.store.sandbox()  # /sql runs visitors' SQL on cursors of this connection: no file but its own
        #: The database file's identity when opened: a file deleted or replaced since is no longer the one written.
        self._file = _identity(self.settings.db)
        self._gone_logged = False
        self._jobs_lock = threading.Lock()
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="backalley-jobs")
        #: Where finished jobs' large results are kept (removed at stop).
        self._job_folder = Path(tempfile.mkdtemp(prefix="backalley-jobs-"))
        #: The time zone DuckDB gives times in: the pages computed by the workers show times as it does.
        self.zone = str(self.store.con.execute("SELECT current_setting('TimeZone')").fetchall()[0][0])
        self.replays = Replays(self.settings.workers, self.zone)
        self.records = RecordCache(self.settings.record_cache)
        #: What :func:`backalley.service.data.game` says of a game, as JSON (it never changes either).
        self.games = RecordCache(self.settings.record_cache // 2, pack_page, unpack_page)
        #: Each game's trick winners (:data:`backalley.service.data.Winners`), as JSON.
        self.winners = RecordCache(self.settings.record_cache // 4)
        #: The index's cursors are signed with a key of this run (a cursor of an earlier run is refused).
        self.cursors = Cursors()
        #: Visitors' read-only SQL (``/sql``), one query at a time.
        self.sql = SqlRunner()
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
        shutil.rmtree(self._job_folder, ignore_errors=True)
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
        if text is None:
            return None
        found = dict(parse(text)[0])  # (exact: an integer beyond 64 bits stays one)
        if isinstance(found.get("source"), str):
            found["source"] = public_name(found["source"])
        return found

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
        self.check_file()
        limit = self.settings.max_record
        stored, built = self.replays.built(items, limit)

        def progress(done: int) -> None:
            if job is not None:
                job.done = done

        fates = self._writer.write(stored, [b for b, _ in built], progress)
        counts = dict.fromkeys(FATES, 0)
        results = []
        for (_, report), (what, message) in zip(built, fates, strict=True):
            counts[what] = counts.get(what, 0) + 1
            results.append({"fate": what, "message": public_message(message) or None, "report": report})
        too_large = [_where(it) for it in items if len(it.raw) > limit]
        return {"records": len(items), "fates": counts, "results": results, "too_large": too_large}

    def check_file(self) -> None:
        """Refuse to store (503) when the database file was deleted or replaced since the service opened it:
        what it wrote would go to a file no longer there, and be lost when it stops."""
        if _identity(self.settings.db) == self._file:
            return
        if not self._gone_logged:
            self._gone_logged = True
            log.error(
                "%s was deleted or replaced while the service runs: uploads are refused; restart the service",
                self.settings.db,
            )
        raise Problem(
            503, "the service's database was deleted or replaced while it runs; nothing was stored (restart it)"
        )

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
        self.check_file()
        job = Job(uuid.uuid4().hex, len(items))
        with self._jobs_lock:
            self.jobs[job.id] = job
            self._forget_jobs()
        self._pool.submit(self._run, job, items)
        return job

    def _forget_jobs(self) -> None:
        """Forget the oldest finished jobs while more than :data:`KEEP_JOBS` or :data:`JOB_BYTES` are kept."""
        while len(self.jobs) > 1:
            total = sum(j.size for j in self.jobs.values())
            if len(self.jobs) <= KEEP_JOBS and total <= JOB_BYTES:
                return
            oldest = next(iter(self.jobs.values()))
            if oldest.status in ("queued", "running"):
                return
            self.jobs.popitem(last=False)
            oldest.forget()

    def _run(self, job: Job, items: list[Item]) -> None:
        job.status = "running"
        try:
            result = self.upload(items, job)
            job.keep(result, self._job_folder)
            job.status = "finished"
        except Exception as exc:  # a job's failure is its answer, not a crash of the service
            said = str(exc).replace(str(self.settings.db), self.settings.db.name)
            job.error = public_message(said.splitlines()[0]) if said else type(exc).__name__
            job.status = "failed"
        with self._jobs_lock:
            self._forget_jobs()

    # -- figures --------------------------------------------------------------------------

    def reports(self, items: list[Item]) -> list[dict[str, Any]]:
        """The JSON Lines report object of every record (docs/record-format.md, "The JSON Lines report"), in order; stores nothing."""
        return self.replays.reports(items, self.settings.max_record)

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

    def _refresh_ratings(self) -> None:
        """Refit and store (table ``ratings``) the ratings of the rulesets and options whose games changed since
        they were fitted (a store just upgraded has none: all), as ``ingest`` does (``plan_refit``): fitted on a
        reading cursor, written under the write lock. A failure is logged; the ratings stay as they were."""
        try:
            with self.reader() as cur:
                plan = plan_refit(cur)
                if not plan.due:
                    return
                rows = fit_groups(cur, plan)
            with self.lock, self.store.cursor() as cur:
                write_ratings(cur, rows, plan)
        except (RatingError, duckdb.Error):
            log.exception("refreshing the ratings failed")

    def _figures(self) -> _Figures:
        gen, start = self.generation, time.monotonic()
        self._refresh_ratings()
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


#: A conflict's "already stored from SOURCE:LINE with": the source may be a file of the server.
_STORED_FROM = re.compile(r"(already stored from )(.+?)( with different content)")


def public_name(source: str) -> str:
    """What a client may see of a record's source: the name it sent (an upload), or a server file's name
    without its folders (a game ingested from the server's own files)."""
    return source.rsplit("/", 1)[-1] if "/" in source else source


def public_message(message: str) -> str:
    """A fate's message, the server's folders left out of the sources it names; the ingest session's
    advice (``--replace``, a command-line option) as what a client can do."""
    message = _STORED_FROM.sub(lambda m: m[1] + public_name(m[2]) + m[3], message)
    return message.replace("(ingest with --replace to replace it)", "(the stored game is kept)")


def _identity(path: Path) -> tuple[int, int] | None:
    """The file's device and inode (``None`` when it is not there)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _where(item: Item) -> str:
    """``source:line`` (or the source of a one-record body), as the reports name a record."""
    return item.source if item.line is None else f"{item.source}:{item.line}"


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

"""``backalley analyze --cluster``: the store's (or a lake's) double-dummy analysis as Dask tasks.

The client (this process) finds the games left to analyse exactly as
:func:`backalley.analysis.dd.analyse_store` does, cuts them into batches, reads their raw
records from the store a block at a time (:func:`dd.job_batches`) and sends each batch as
one task: :func:`dd.solve_jobs`, the same function a batch runs in one process, which
returns the batch's rows as Arrow tables.  The client takes the results **in order**, with
at most :data:`IN_FLIGHT` tasks a worker in flight (memory holds those batches and one
block of records, not the store), and writes each:

* into the store with :func:`dd.store_batch` (one transaction a batch, as ``--workers``);
* or, with a lake, into its Delta tables ``dd_deals``, ``dd_plays`` and ``dd_deal_sides``,
  committed by the batch's row in the lake's ``partitions`` (:meth:`Lake.commit_batch`),
  which ``backalley attach`` then shows.

Either way a run resumes where a killed one stopped: only deals without rows are
pending.  A task that fails is retried (:data:`RETRIES`); a worker that dies is
replaced and its tasks are run again by Dask.  See docs/scale-out.md.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from backalley.analysis import dd
from backalley.analysis.dd import AnalyzeSummary, Job, Pending, Progress, Solved, job_batches, pending_games
from backalley.store.database import Store
from backalley.store.lake import Lake, LakeError, attach

#: Games a task analyses (as many as a batch of ``analyze --workers`` commits).
BATCH = 20
#: Tasks in flight per worker: the next batches wait on the workers while the client writes one.
IN_FLIGHT = 2
#: Failed attempts of a task before the run gives up (a killed worker's tasks are rerun by Dask).
RETRIES = 2


def analyse_store_on(
    client: Any, db: Path | str | None, *, max_cards: int = 13, batch: int = BATCH, progress: Progress | None = None
) -> AnalyzeSummary:
    """Analyse every deal of the store ``db`` that has no values yet, on the Dask ``client``'s workers."""
    with Store.open(db) as store:
        pending = pending_games(store, max_cards)
        return _run(client, store, pending, max_cards, batch, lambda s: dd.store_batch(store, s), progress)


def analyse_lake(
    client: Any,
    lake_uri: str,
    *,
    max_cards: int = 13,
    batch: int = BATCH,
    progress: Progress | None = None,
    storage_options: dict[str, str] | None = None,
) -> AnalyzeSummary:
    """Analyse every deal of the lake at ``lake_uri`` that has no values yet, into the lake's dd tables.

    Raises :class:`LakeError` for a damaged lake or a folder without one.
    """
    lake = Lake(lake_uri, storage_options)
    lake.check()
    lake.recover()  # what a killed run appended without its commit row
    with tempfile.TemporaryDirectory(prefix="backalley-analyze-") as tmp:
        db = Path(tmp) / "lake.duckdb"
        attach(lake.uri, db, storage_options)  # the store's views over the lake: what is pending, the raw text
        with Store.open(db) as store:
            pending = pending_games(store, max_cards)

            def write(solved: Solved) -> None:
                lake.commit_batch(batch_key(solved), solved.tables, solved.summary.games)

            return _run(client, store, pending, max_cards, batch, write, progress)


def batch_key(solved: Solved) -> str:
    """The key of an analysis batch in the lake's ``partitions``: a hash of its games and of the deals it
    gave rows (a deal gets its row once: a later batch of the same games, larger deals, has another key)."""
    deals = solved.tables["dd_deals"]
    pairs = [f"{g}#{d}" for g, d in zip(deals["game_id"].to_pylist(), deals["deal"].to_pylist(), strict=True)]
    return hashlib.sha256("\0".join(["analyze", *solved.game_ids, "", *pairs]).encode()).hexdigest()[:32]


def _run(
    client: Any,
    store: Store,
    pending: list[Pending],
    max_cards: int,
    batch: int,
    write: Callable[[Solved], None],
    progress: Progress | None,
) -> AnalyzeSummary:
    """Send the pending games in batches, and write each batch's rows as its result comes, in order."""
    summary = AnalyzeSummary()
    total = len(pending)
    if progress is not None:
        progress(0, total, 0)
    for solved in _results(client, job_batches(store, pending, max_cards, batch)):
        write(solved)
        summary.add(solved.summary)
        if progress is not None:
            progress(summary.games, total, summary.deals)
    return summary


def _results(client: Any, batches: Iterator[list[Job]]) -> Iterator[Solved]:
    """The batches' rows in order, with at most :data:`IN_FLIGHT` tasks a worker submitted and not yet taken."""
    window = max(1, len(client.scheduler_info().get("workers", {}))) * IN_FLIGHT
    in_flight: deque[Any] = deque()
    for jobs in batches:
        in_flight.append(client.submit(dd.solve_jobs, jobs, pure=False, retries=RETRIES))
        if len(in_flight) >= window:
            yield _take(in_flight.popleft())
    while in_flight:
        yield _take(in_flight.popleft())


def _take(future: Any) -> Solved:
    """A task's result; a task whose workers kept dying is a :class:`LakeError`."""
    from distributed import KilledWorker

    try:
        result: Solved = future.result()
    except KilledWorker as exc:
        raise LakeError(
            f"{exc.allowed_failures + 1} workers died running one batch of games (task {exc.task}; see the workers' "
            "logs); the batches written before stay: run analyze again to go on"
        ) from None
    future.release()
    return result


__all__ = ["BATCH", "analyse_lake", "analyse_store_on", "batch_key"]

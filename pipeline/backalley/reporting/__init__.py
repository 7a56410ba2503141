"""Reports on a store: ``index.html``, ``players/<slug>.html`` and ``summary.md``.

The figures come from :mod:`backalley.reporting.metrics` (SQL in DuckDB), the
charts from :mod:`backalley.reporting.charts` (hand-written inline SVG) and the
pages from :mod:`backalley.reporting.html` (escaped, self-contained).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from backalley.reporting.html import METRICS_FILE, index_page, metrics_page, page_files, player_page
from backalley.reporting.markdown import summary_markdown
from backalley.reporting.metrics import Metrics, ReportError, compute, open_store
from backalley.reporting.scope import Period, PeriodError, period
from backalley.store.database import one_line
from backalley.store.outputs import OutputError, protected
from backalley.workers import guarded, pool_context, pool_errors

#: Called as progress(done, total, what) while pages are written.
Progress = Callable[[int, int, str], None]


@dataclass
class ReportSummary:
    out_dir: Path
    index: Path
    summary: Path
    player_pages: list[Path] = field(default_factory=list)
    games: int = 0
    players: int = 0
    seconds_queries: float = 0.0
    seconds_pages: float = 0.0

    def __str__(self) -> str:
        return (
            f"{len(self.player_pages)} player pages, {self.games} valid games, {self.players} players"
            f" (queries {self.seconds_queries:.1f}s, pages {self.seconds_pages:.1f}s)"
        )


#: The suffix of a page being written; renamed to the page's name once complete.
TMP = ".tmp"


def _write(path: Path, text: str) -> None:
    """Write ``path`` whole or not at all: a temporary file beside it, renamed; removed on any failure."""
    tmp = path.with_name(path.name + TMP)
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _prepare(out_dir: Path) -> None:
    """Create the output folders, and remove the temporary pages a killed run left behind."""
    for folder in (out_dir, out_dir / "players"):
        folder.mkdir(parents=True, exist_ok=True)
        for left in folder.iterdir():
            if left.name.endswith((".html" + TMP, ".md" + TMP)) and left.is_file() and not left.is_symlink():
                left.unlink()


def _nothing(
    db_path: Path, event: str | None, rejected: int, ruleset: str | None = None, period: Period = Period()
) -> str:
    """Why there is nothing to report on."""
    if period:
        what = " and ".join(
            w for w in (f"ruleset {ruleset}" if ruleset else "", f"event {event!r}" if event is not None else "") if w
        )
        return f"no games {period.words()}" + (f" of {what}" if what else "") + f" in {db_path}"
    if ruleset is not None:
        return (
            f"no games of ruleset {ruleset}" + (f" in event {event!r}" if event is not None else "") + f" in {db_path}"
        )
    if event is not None:
        return f"no games of event {event!r} in {db_path}"
    extra = f" ({rejected} rejected inputs only)" if rejected else " (an empty database: run `backalley ingest` first)"
    return f"no games in {db_path}{extra}"


#: What a page-rendering worker process holds: the metrics, the linked players' page files, the output folder.
_worker: tuple[Metrics, dict[str, str], Path] | None = None


def _start_worker(metrics: Metrics, linked: dict[str, str], out_dir: Path) -> None:
    global _worker
    _worker = (metrics, linked, out_dir)


def _page(name: str) -> Path:
    """Render and write one player's page (in a worker, from what :func:`_start_worker` gave it)."""
    assert _worker is not None
    metrics, linked, out_dir = _worker
    path = out_dir / linked[name]
    _write(path, player_page(metrics, name, linked))
    return path


def _player_pages(
    metrics: Metrics, names: list[str], linked: dict[str, str], out_dir: Path, workers: int | None
) -> Iterator[Path]:
    """Write the pages of ``names``, in ``workers`` processes (the metrics are sent to each once)."""
    n = min(workers or _cpus(), len(names))
    if n <= 1:
        _start_worker(metrics, linked, out_dir)
        yield from map(_page, names)
        return
    ctx = pool_context()
    chunk = max(1, min(8, len(names) // (4 * n)))
    with (  # (as ingest's: a worker that dies is an error, where multiprocessing.Pool waited for ever)
        pool_errors(ReportError, "wrote its pages"),
        ProcessPoolExecutor(n, mp_context=ctx, initializer=guarded(_start_worker, metrics, linked, out_dir)) as pool,
    ):
        yield from pool.map(_page, names, chunksize=chunk)


def _cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def write_reports(
    db_path: Path,
    out_dir: Path,
    player: str | None = None,
    event: str | None = None,
    progress: Progress | None = None,
    workers: int | None = None,
    ruleset: str | None = None,
    period: Period = Period(),
) -> ReportSummary:
    """Write the reports of the store at ``db_path`` into ``out_dir``.

    ``player`` limits the player pages to that one player (the index and summary
    are still written, linking only to pages that exist); ``event`` restricts
    every figure to the games of one event, ``ruleset`` to the games of one
    ruleset (an unknown name is a :class:`ReportError`), ``period`` to the games played on its
    days (:func:`backalley.reporting.scope.period` reads ``--since``/``--until``); ``workers`` processes render the
    player pages (default: one per CPU). Raises :class:`ReportError` for
    anything wrong with the database or the output folder (one line), leaving no
    temporary file behind.
    """
    try:
        return _write_reports(db_path, out_dir, player, event, progress, workers, ruleset, period)
    except OSError as exc:
        where = exc.filename if exc.filename is not None else out_dir
        raise ReportError(f"{where}: cannot write the report: {exc.strerror or exc}") from None
    except duckdb.Error as exc:
        raise ReportError(f"{db_path}: the database failed: {one_line(exc)}") from None


def _write_reports(
    db_path: Path,
    out_dir: Path,
    player: str | None,
    event: str | None,
    progress: Progress | None,
    workers: int | None,
    ruleset: str | None = None,
    period: Period = Period(),
) -> ReportSummary:
    t0 = time.perf_counter()
    if progress is not None:
        progress(0, 1, "queries")
    con = open_store(db_path)
    try:
        # Never a page over the database, its WAL or its lake (backalley.store.outputs), whatever is there.
        protected(db_path, con).check_files(out_dir, "--out", ["index.html", METRICS_FILE, "summary.md"], ["players"])
        metrics = compute(con, event, ruleset, period)
    except OutputError as exc:
        raise ReportError(str(exc)) from None
    finally:
        con.close()
    t1 = time.perf_counter()
    if metrics.population["games"] == 0:
        raise ReportError(_nothing(db_path, event, metrics.population["rejected"], ruleset, period))
    everyone = metrics.players["player"].to_list()
    if player is not None and player not in everyone:
        raise ReportError(f"no player {player!r} in {db_path}" + (f" (event {event!r})" if event is not None else ""))
    chosen = [player] if player is not None else everyone
    _prepare(out_dir)
    files = page_files(everyone)
    wanted = set(chosen)
    linked = {p: files[p] for p in everyone if p in wanted or (out_dir / files[p]).is_file()}
    pages: list[Path] = []
    for path in _player_pages(metrics, chosen, linked, out_dir, workers):
        pages.append(path)
        if progress is not None:
            progress(len(pages), len(chosen), "player pages")
    index = out_dir / "index.html"
    _write(index, index_page(metrics, linked))
    _write(out_dir / METRICS_FILE, metrics_page())
    summary = out_dir / "summary.md"
    _write(summary, summary_markdown(metrics, linked))
    return ReportSummary(
        out_dir=out_dir,
        index=index,
        summary=summary,
        player_pages=pages,
        games=int(metrics.population["valid_games"]),
        players=len(everyone),
        seconds_queries=t1 - t0,
        seconds_pages=time.perf_counter() - t1,
    )


__all__ = [
    "Metrics",
    "Period",
    "PeriodError",
    "Progress",
    "ReportError",
    "ReportSummary",
    "compute",
    "period",
    "write_reports",
]

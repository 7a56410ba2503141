"""Reports on a store: ``index.html``, ``players/<slug>.html`` and ``summary.md``.

The figures come from :mod:`backalley.reporting.metrics` (SQL in DuckDB), the
charts from :mod:`backalley.reporting.charts` (matplotlib, inline SVG) and the
pages from :mod:`backalley.reporting.html` (escaped, self-contained).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from backalley.reporting.html import index_page, page_files, player_page
from backalley.reporting.markdown import summary_markdown
from backalley.reporting.metrics import Metrics, ReportError, compute, open_store

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


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def write_reports(
    db_path: Path,
    out_dir: Path,
    player: str | None = None,
    event: str | None = None,
    progress: Progress | None = None,
) -> ReportSummary:
    """Write the reports of the store at ``db_path`` into ``out_dir``.

    ``player`` limits the player pages to that one player (the index and summary
    are still written, linking only to pages that exist); ``event`` restricts
    every figure to the games of one event. Raises :class:`ReportError`.
    """
    t0 = time.perf_counter()
    if progress is not None:
        progress(0, 1, "queries")
    con = open_store(db_path)
    try:
        metrics = compute(con, event)
    finally:
        con.close()
    t1 = time.perf_counter()
    everyone = metrics.players["player"].to_list()
    if player is not None and player not in everyone:
        raise ReportError(f"no player {player!r} in {db_path}" + (f" (event {event!r})" if event is not None else ""))
    chosen = [player] if player is not None else everyone
    out_dir.mkdir(parents=True, exist_ok=True)
    files = page_files(everyone)
    wanted = set(chosen)
    linked = {p: files[p] for p in everyone if p in wanted or (out_dir / files[p]).is_file()}
    pages: list[Path] = []
    for i, name in enumerate(chosen, 1):
        path = out_dir / files[name]
        _write(path, player_page(metrics, name, linked))
        pages.append(path)
        if progress is not None:
            progress(i, len(chosen), "player pages")
    index = out_dir / "index.html"
    _write(index, index_page(metrics, linked))
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


__all__ = ["Metrics", "Progress", "ReportError", "ReportSummary", "compute", "write_reports"]

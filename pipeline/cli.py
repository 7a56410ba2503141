"""The ``backalley`` command line: parse arguments, call one library function, print.

Library errors become exit codes only here: 0 success, 1 some input invalid or
rejected, 2 usage or environment errors.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import orjson
import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TransferSpeedColumn

from pipeline import record
from pipeline.sources import SourceError, expand, read_file
from pipeline.validate import Summary, check_items, default_workers, status

app = typer.Typer(
    name="backalley",
    help="Check, score and analyse played games of Back Alley.",
    no_args_is_help=True,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
err = Console(stderr=True, soft_wrap=True)
out = Console(highlight=False, soft_wrap=True)

#: Show a progress bar when stderr is a terminal and the input is at least this large.
PROGRESS_MIN_BYTES = 1 << 20
#: Below this much input, starting worker processes costs more than it saves.
AUTO_WORKERS_MIN_BYTES = 8 << 20


def fail(message: str, code: int = 2) -> typer.Exit:
    err.print(f"[bold red]error:[/] {message}", highlight=False)
    return typer.Exit(code)


@contextmanager
def progress_bar(total_bytes: int, what: str) -> Iterator[Progress | None]:
    """A byte-based progress bar on stderr for long runs on a terminal, else nothing."""
    if not sys.stderr.isatty() or total_bytes < PROGRESS_MIN_BYTES:
        yield None
        return
    with Progress(
        TextColumn(f"{what} [progress.description]{{task.description}}"),
        BarColumn(),
        TextColumn("{task.fields[records]} records"),
        TransferSpeedColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
    ) as bar:
        yield bar


Paths = Annotated[
    list[str],
    typer.Argument(
        help="Files (.json: one record; .jsonl: one per line) or folders (searched recursively).", show_default=False
    ),
]


@app.command()
def validate(
    paths: Paths,
    json_out: Annotated[
        bool, typer.Option("--json", help="Write the JSON Lines report of RECORD.md to stdout.")
    ] = False,
    workers: Annotated[
        int, typer.Option("--workers", "-w", min=1, help="Worker processes for the replay (default: 1).")
    ] = 1,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="Human output: only invalid records and the summary.")
    ] = False,
) -> None:
    """Replay every record and report each rule violation with its location.

    Exit status: 0 when every record is valid, 1 when any is not, 2 for a usage
    error (an unknown option, or a path that does not exist or cannot be read).
    """
    try:
        files = expand(paths)
    except SourceError as exc:
        raise fail(str(exc)) from None
    summary = Summary()
    total = sum(f.path.stat().st_size for f in files)
    if workers is None:
        workers = default_workers() if total >= AUTO_WORKERS_MIN_BYTES else 1
    write = sys.stdout.buffer.write
    with progress_bar(total, "validating") as bar:
        task = bar.add_task("", total=total, records=0) if bar else None
        items = (item for f in files for item in read_file(f))
        for item, result in check_items(items, workers=workers):
            summary.add(result)
            if bar is not None and task is not None:
                bar.update(task, advance=len(item.raw) + 1, records=summary.records)
            if json_out:
                write(orjson.dumps(result.report(item.source, item.line)) + b"\n")
                continue
            st = status(result)
            if quiet and st != "invalid":
                continue
            where = item.source if item.line is None else f"{item.source}:{item.line}"
            mark = {
                "valid": "[green]valid     [/]",
                "incomplete": "[yellow]incomplete[/]",
                "invalid": "[red]invalid   [/]",
            }[st]
            out.print(f"{mark} {where}  {result.game_id or '(no game_id)'}", markup=True)
            for v in result.violations:
                loc = ", ".join(
                    p
                    for p in (f"deal {v.deal}" if v.deal else "", f"trick {v.trick}" if v.trick else "", v.seat or "")
                    if p
                )
                out.print(
                    f"    {v.code}{' (' + loc + ')' if loc else ''}: {v.message}  [dim]{v.path or '/'}[/]", markup=True
                )
    if not json_out:
        out.print()
        out.print(
            f"{summary.records} records: {summary.by_status['valid']} valid, "
            f"{summary.by_status['incomplete']} incomplete, {summary.by_status['invalid']} invalid"
        )
        for code, n in sorted(summary.by_code.items(), key=lambda kv: (-kv[1], kv[0])):
            out.print(f"  {code:<22}{n:>8}")
    raise typer.Exit(0 if summary.all_valid else 1)


@app.command()
def schema() -> None:
    """Print the JSON Schema (draft 2020-12) of game-record format v1."""
    sys.stdout.write(record.json_schema_text())


@app.command()
def simulate(
    out_file: Annotated[Path, typer.Option("--out", "-o", help="Where to write the games (JSON Lines).")] = Path(
        "data/simulated.jsonl"
    ),
    games: Annotated[int, typer.Option("--games", "-n", min=1, help="How many complete games to play.")] = 100,
    seed: Annotated[int, typer.Option("--seed", help="Random seed: the same seed gives the same bytes.")] = 1,
    players: Annotated[int, typer.Option("--players", min=4, help="Size of the pool of named players.")] = 12,
    faults: Annotated[
        float, typer.Option("--faults", min=0.0, max=1.0, help="Share of games that get one injected rule violation.")
    ] = 0.0,
) -> None:
    """Play complete, legal games between bots and write them as JSON Lines."""
    from pipeline.simulate import write_games

    out_file.parent.mkdir(parents=True, exist_ok=True)
    summary = write_games(out_file, games=games, seed=seed, players=players, faults=faults)
    err.print(f"wrote {summary} to {out_file}", highlight=False)


@app.command()
def report(
    db: Annotated[Path, typer.Option("--db", help="The DuckDB store to report on.")] = Path("data/backalley.duckdb"),
    out_dir: Annotated[
        Path, typer.Option("--out", "-o", help="Folder for index.html, players/ and summary.md.")
    ] = Path("reports"),
    player: Annotated[
        str | None, typer.Option("--player", help="Write the page of this player only (the index is still written).")
    ] = None,
    event: Annotated[str | None, typer.Option("--event", help="Report on the games of this event only.")] = None,
) -> None:
    """Write HTML reports (index.html, players/*.html) and summary.md from the store.

    Exit status: 0 on success, 2 when the store is missing or unusable or the player unknown.
    """
    from pipeline.reporting import ReportError, write_reports

    show = sys.stderr.isatty()
    with Progress(
        TextColumn("report: {task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=not show,
    ) as bar:
        task = bar.add_task("queries", total=None)

        def progress(done: int, total: int, what: str) -> None:
            bar.update(task, description=what, completed=done, total=total)

        try:
            summary = write_reports(db, out_dir, player=player, event=event, progress=progress)
        except ReportError as exc:
            raise fail(str(exc)) from None
    err.print(f"report: {summary}", highlight=False)
    out.print(f"open {summary.index.resolve()}")


def main() -> None:  # pragma: no cover - console entry point
    app(prog_name="backalley")


__all__ = ["app", "default_workers", "main"]

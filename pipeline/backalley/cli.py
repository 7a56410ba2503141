"""The ``backalley`` command line: parse arguments, call one library function, print.

Library errors become exit codes only here: 0 success, 1 some input invalid or
rejected, 2 usage or environment errors.
"""

from __future__ import annotations

import io
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TransferSpeedColumn

from backalley import record
from backalley.sources import SourceError, expand, read_file
from backalley.validate import Summary, check_items, default_workers

app = typer.Typer(
    name="backalley",
    help="Check, score and analyse played games of Back Alley.",
    no_args_is_help=True,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
err = Console(stderr=True, soft_wrap=True)
out = Console(highlight=False, soft_wrap=True)


def version_text() -> str:
    """``backalley --version``: the package, the record formats it reads, the rulesets it knows."""
    import backalley

    build = "compiled (mypyc)" if backalley.compiled() else "pure Python"
    formats = ", ".join(str(v) for v in record.FORMAT_VERSIONS)
    rulesets = ", ".join(record.RULESETS)
    return f"backalley {backalley.__version__}\nrecord formats: {formats}\nrulesets: {rulesets}\nreplay: {build}\n"


def _version(value: bool) -> None:
    if value:
        sys.stdout.write(version_text())
        raise typer.Exit(0)


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            "-V",
            callback=_version,
            is_eager=True,
            help="Print the version, the record formats and rulesets it reads, and exit.",
        ),
    ] = False,
) -> None:
    """Check, score and analyse played games of Back Alley."""


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
        for item, result in check_items(items, workers=workers, json_report=json_out):
            summary.add(result)
            if bar is not None and task is not None:
                bar.update(task, advance=len(item.raw) + 1, records=summary.records)
            if result.report is not None:
                write(result.report + b"\n")
                continue
            st = result.status
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
    from backalley.simulate import write_games

    out_file.parent.mkdir(parents=True, exist_ok=True)
    summary = write_games(out_file, games=games, seed=seed, players=players, faults=faults)
    err.print(f"wrote {summary} to {out_file}", highlight=False)


@app.command()
def report(
    db: Annotated[
        Path | None,
        typer.Option("--db", help="The DuckDB store to report on [default: $BACKALLEY_DB or data/backalley.duckdb]."),
    ] = None,
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
    from backalley.reporting import ReportError, write_reports
    from backalley.store import default_db

    db = db if db is not None else default_db()

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


# --- the store: ingest, query, export ------------------------------------------------------

DbOption = Annotated[
    Path | None,
    typer.Option(
        "--db", help="The DuckDB database (default: $BACKALLEY_DB, else data/backalley.duckdb).", show_default=False
    ),
]


@app.command()
def ingest(
    paths: Paths,
    db: DbOption = None,
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers",
            "-w",
            min=1,
            help="Worker processes for the replay (default: the CPU count).",
            show_default=False,
        ),
    ] = None,
    replace: Annotated[
        bool,
        typer.Option(
            "--replace", help="A game_id stored with different content is replaced (default: rejected as a conflict)."
        ),
    ] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print the run summary as JSON on stdout.")] = False,
    memory_limit: Annotated[
        str | None,
        typer.Option(
            "--memory-limit",
            metavar="SIZE",
            help="DuckDB's memory cap while ingesting, e.g. 1GB (default: 96MB, enough for ordinary games; "
            "records far larger than a game of about 23 kB need more).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Replay every record and store it in the DuckDB database, with its violations.

    Valid, invalid and unreadable inputs all leave a trace: games (valid or not)
    in `games` and the detail tables, everything else in `rejects`. The same
    record ingested twice is stored once; a run killed at any moment can simply
    be run again.

    Exit status: 0 when every record was stored and valid, 1 when some were
    invalid, conflicting or rejected (still recorded), 2 for usage or database errors.
    """
    from backalley.ingest import INGEST_MEMORY_LIMIT, check_memory_limit, ingest_files
    from backalley.store import Store, StoreError, default_db

    memory_limit = memory_limit or INGEST_MEMORY_LIMIT
    try:
        check_memory_limit(memory_limit)
    except ValueError as exc:
        raise fail(f"--memory-limit {exc}") from None
    try:
        files = expand(paths)
    except SourceError as exc:
        raise fail(str(exc)) from None
    db_path = db if db is not None else default_db()
    n_workers = workers if workers is not None else default_workers()
    total = sum(f.path.stat().st_size for f in files)
    show = sys.stderr.isatty()
    try:
        with (
            Store.open(db_path) as store,
            Progress(
                TextColumn("ingesting"),
                BarColumn(),
                TextColumn("{task.fields[records]} records, {task.fields[rate]} records/s"),
                TimeElapsedColumn(),
                console=err,
                transient=True,
                disable=not show,
            ) as bar,
        ):
            task = bar.add_task("", total=total or None, records=0, rate=0)
            t0 = time.perf_counter()
            done = [0]

            def progress(records: int, nbytes: int) -> None:
                done[0] += records
                rate = done[0] / max(time.perf_counter() - t0, 1e-9)
                bar.update(task, advance=nbytes, records=done[0], rate=f"{rate:,.0f}")

            run = ingest_files(
                store, files, paths, workers=n_workers, replace=replace, progress=progress, memory_limit=memory_limit
            )
    except StoreError as exc:
        raise fail(str(exc)) from None
    if json_out:
        sys.stdout.buffer.write(orjson.dumps(run.as_dict()) + b"\n")
    else:
        out.print(
            f"ingest run {run.run_id} into {run.db}: {run.files} files, {run.records} records in {run.seconds:.1f} s "
            f"({run.rate:,.0f} records/s)\n"
            f"  inserted {run.inserted}, replaced {run.replaced}, duplicates {run.duplicates}, "
            f"conflicts {run.conflicts}, rejected {run.rejected}, invalid {run.invalid}"
        )
    raise typer.Exit(0 if run.clean else 1)


@app.command()
def analyze(
    paths: Annotated[
        list[str] | None,
        typer.Argument(help="Record files or folders to analyse without a database.", show_default=False),
    ] = None,
    db: DbOption = None,
    json_out: Annotated[bool, typer.Option("--json", help="Files: one JSON object per record on stdout.")] = False,
    workers: Annotated[
        int, typer.Option("--workers", "-w", min=1, help="Worker processes for the store (default: 1).")
    ] = 1,
    max_cards: Annotated[
        int,
        typer.Option("--max-cards", min=1, max=13, help="Solve only deals of at most this many cards a hand."),
    ] = 13,
) -> None:
    """Double-dummy values of each deal and the cost of each play.

    With files: print them.  Without: fill dd_deals and dd_plays for every stored
    deal lacking them (resumable; each batch of games commits on its own).
    Exit status: 0 ok, 1 when a record or deal could not be analysed, 2 usage or store error.
    """
    from backalley.analysis import Scope, analyse_files, analyse_store
    from backalley.store import StoreError, default_db

    if paths:
        if db is not None:
            raise fail("give files or --db, not both")
        clean = True
        try:
            for where, game in analyse_files(paths, Scope(max_cards)):
                clean = clean and not game.error and not any(d.skipped and not d.deferred for d in game.deals)
                if json_out:
                    sys.stdout.buffer.write(orjson.dumps(game.as_dict()) + b"\n")
                else:
                    out.print(_analysis_text(where, game), markup=False)
        except SourceError as exc:
            raise fail(str(exc)) from None
        raise typer.Exit(0 if clean else 1)
    show = sys.stderr.isatty()
    try:
        with Progress(
            TextColumn("analysing"),
            BarColumn(),
            TextColumn("{task.completed}/{task.total} games"),
            TimeElapsedColumn(),
            console=err,
            transient=True,
            disable=not show,
        ) as bar:
            task = bar.add_task("", total=None)
            summary = analyse_store(
                db if db is not None else default_db(),
                workers=workers,
                max_cards=max_cards,
                progress=lambda done, total: bar.update(task, completed=done, total=total),
            )
    except StoreError as exc:
        raise fail(str(exc)) from None
    out.print(f"analyze: {summary}", markup=False)


def _analysis_text(where: str, game: Any) -> str:
    lines = [f"{where}  {game.game_id or '(no game_id)'}"]
    if game.error:
        lines.append(f"    not analysed: {game.error}")
    for d in game.deals:
        if d.pass_out:
            lines.append(f"    deal {d.deal} (number {d.number}): passed out")
        elif d.values is None:
            lines.append(f"    deal {d.deal} (number {d.number}): not analysed: {d.skipped}")
        else:
            v = d.values
            lost = [sum(c for s, c in zip(v.seats, v.costs, strict=True) if s & 1 == t) for t in (0, 1)]
            lines.append(
                f"    deal {d.deal} (number {d.number}): makeable NS {v.dd[0]} EW {v.dd[1]}; "
                f"tricks lost in play NS {lost[0]} EW {lost[1]}"
            )
    return "\n".join(lines)


class QueryFormat(StrEnum):
    table = "table"
    csv = "csv"
    json = "json"
    parquet = "parquet"


@app.command()
def query(
    sql: Annotated[str | None, typer.Argument(help="The SQL to run (or use --file).", show_default=False)] = None,
    file: Annotated[
        Path | None, typer.Option("--file", "-f", help="Read the SQL from this file.", show_default=False)
    ] = None,
    fmt: Annotated[QueryFormat, typer.Option("--format", "-F", help="Output format.")] = QueryFormat.table,
    out_file: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Write the result to this file (required for parquet).", show_default=False),
    ] = None,
    max_rows: Annotated[
        int, typer.Option("--max-rows", min=1, help="Rows shown in table format (csv, json, parquet: all).")
    ] = 100,
    db: DbOption = None,
) -> None:
    """Run SQL on a read-only connection to the database and print the result.

    Any statement that would change the database (or write a file) is refused
    and nothing changes. Tables and views are described in docs/database.md.

    Exit status: 0 on success, 2 for a bad query or database error.
    """
    import polars as pl

    from backalley.store import Store, StoreError, default_db

    if (sql is None) == (file is None):
        raise fail("give the SQL either as an argument or with --file, not both")
    if file is not None:
        try:
            sql = file.read_text(encoding="utf-8")
        except OSError as exc:
            raise fail(f"{file}: {exc.strerror or exc}") from None
    assert sql is not None
    if fmt is QueryFormat.parquet and out_file is None:
        raise fail("--format parquet needs --out FILE")
    try:
        with Store.open_readonly(db if db is not None else default_db()) as store:
            result = store.query(sql)
    except StoreError as exc:
        raise fail(str(exc)) from None
    frame = pl.DataFrame(pl.from_arrow(result)) if result.num_columns else pl.DataFrame()
    if fmt is QueryFormat.parquet:
        assert out_file is not None
        frame.write_parquet(out_file)
    elif fmt is QueryFormat.csv:
        text = frame.write_csv()
        _emit(text, out_file)
    elif fmt is QueryFormat.json:
        text = frame.write_json() + "\n"
        _emit(text, out_file)
    else:
        _emit(_table_text(frame, max_rows, out_file is None), out_file)


def _emit(text: str, out_file: Path | None) -> None:
    if out_file is None:
        sys.stdout.write(text)
    else:
        out_file.write_text(text, encoding="utf-8")


def _table_text(frame: Any, max_rows: int, color: bool) -> str:
    from rich.table import Table

    shown = frame.head(max_rows)
    table = Table(*[str(c) for c in frame.columns], show_lines=False, header_style="bold")
    cells = [["NULL" if v is None else str(v) for v in row] for row in shown.iter_rows()]
    for row in cells:
        table.add_row(*row)
    widths = [max([len(str(c)), *(len(r[k]) for r in cells)]) for k, c in enumerate(frame.columns)]
    width = sum(widths) + 3 * len(widths) + 1
    if color and sys.stdout.isatty():
        width = min(width, Console().width)
    console = Console(record=True, width=max(40, width), file=io.StringIO())
    console.print(table)
    if frame.height > max_rows:
        console.print(f"({frame.height} rows, {max_rows} shown; --max-rows or --format csv for all)", soft_wrap=True)
    else:
        console.print(f"({frame.height} rows)", soft_wrap=True)
    return console.export_text(styles=color and sys.stdout.isatty())


@app.command()
def export(
    out_dir: Annotated[Path, typer.Argument(help="Folder to write <table>/… Parquet files into.", show_default=False)],
    db: DbOption = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an earlier export in this folder.")] = False,
) -> None:
    """Write every table as Parquet (DIR/<table>/…), for Spark, Trino, polars or a warehouse.

    The per-game tables are partitioned by game_bucket (a hash of game_id), so
    files stay moderate; DIR/manifest.json lists the row counts.

    Exit status: 0 on success, 2 for a database or file error.
    """
    from backalley.store import Store, StoreError, default_db
    from backalley.store import export as export_tables

    try:
        with Store.open_readonly(db if db is not None else default_db(), external_access=True) as store:
            manifest = export_tables(store, out_dir, force=force)
    except (StoreError, OSError) as exc:
        raise fail(str(exc)) from None
    for name, info in manifest["tables"].items():
        out.print(f"  {name:<12}{info['rows']:>12} rows")
    out.print(f"exported to {out_dir}")


def main() -> None:  # pragma: no cover - console entry point
    app(prog_name="backalley")


__all__ = ["app", "default_workers", "main"]

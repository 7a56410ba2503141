"""The ``backalley`` command line: parse arguments, call one library function, print.

Library errors become exit codes only here: 0 success, 1 some input invalid or
rejected, 2 usage or environment errors.
"""

import os
import re
import sys
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar, cast

import orjson
import typer
from typer.core import TyperCommand

from backalley.cli import PROGRESS_MIN_BYTES
from backalley.display import printable, safe
from backalley.records.sources import InputFile, Item, SourceError, dumps, expand, label
from backalley.store import ROW_WORKER_PRELOAD
from backalley.validate import UNCHECKED, Checked, Summary, default_workers, validate_files, worker_count
from backalley.workers import WorkerDied, start_pool_server

if TYPE_CHECKING:  # the ingest (DuckDB, numpy) is imported by the commands that run it
    from backalley.analysis.dd import AnalyzeSummary
    from backalley.simulate.bots import Player
    from backalley.store.database import Store
    from backalley.store.ingest import RunSummary

T = TypeVar("T")

app = typer.Typer(
    name="backalley",
    help="Check, score and analyse played games of Back Alley.",
    no_args_is_help=True,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress


class _LazyConsole:
    """A rich ``Console`` made on first use: importing rich.console is a large share of start-up."""

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._console: Console | None = None

    def real(self) -> "Console":
        if self._console is None:
            from rich.console import Console

            self._console = Console(**self._options)
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real(), name)


def real_console(console: "Console") -> "Console":
    """The rich ``Console`` behind ``err`` or ``out`` (for rich objects that want the real one)."""
    return console.real() if isinstance(console, _LazyConsole) else console


err = cast("Console", _LazyConsole(stderr=True, soft_wrap=True))
out = cast("Console", _LazyConsole(highlight=False, soft_wrap=True))


def version_text() -> str:
    """``backalley --version``: the package, the record formats it reads, the rulesets it knows."""
    import backalley
    from backalley.analysis import solver
    from backalley.records import models as record

    build = "compiled (mypyc)" if backalley.compiled() else "pure Python"
    formats = ", ".join(str(v) for v in record.FORMAT_VERSIONS)
    rulesets = ", ".join(record.RULESETS)
    search = "C" if solver.NATIVE else "pure Python"
    return (
        f"backalley {backalley.__version__}\nrecord formats: {formats}\nrulesets: {rulesets}\nreplay: {build}\n"
        f"solver search: {search}\n"
    )


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


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print ``error: message`` (data in it shown literally, line breaks kept) and return the exit."""
    text = "\n".join(safe(line) for line in message.splitlines())
    err.print(f"[bold red]error:[/] {text}", highlight=False)
    return typer.Exit(code)


def note(message: str) -> None:
    """One line on stderr, printed literally."""
    err.print(printable(message), markup=False, highlight=False)


class _HiddenBar:
    """What the commands call on a progress bar, doing nothing: a hidden bar."""

    def __enter__(self) -> "_HiddenBar":
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def add_task(self, description: str, **fields: Any) -> int:
        return 0

    def update(self, task: int, **fields: Any) -> None:
        return None


def progress_bar(what: str, *, show: bool, of_total: bool = False, detail: str | None = None) -> "Progress":
    """A progress bar on stderr: what, bar, count (``n/total`` or ``n records``), ``detail``, rate, time left.

    ``of_total`` counts items against the task's total; otherwise the total is in
    bytes and the count is the ``records`` field.  ``detail`` formats the task's fields
    (e.g. ``"{task.fields[deals]:,} deals"``).  Hidden unless ``show`` (then rich is not even imported).
    """
    if not show:
        return cast("Progress", _HiddenBar())
    from backalley.cli.progress import rich_bar

    return rich_bar(what, of_total=of_total, console=real_console(err), detail=detail)


def report_problems(files: list[InputFile]) -> None:
    """Say on stderr which paths found are not read (each is also a ``JSON`` error in the results)."""
    for f in files:
        if f.problem is not None:
            note(f"{f.source}: {f.problem}")


MaxRecordBytes = Annotated[
    str | None,
    typer.Option(
        "--max-record-bytes",
        metavar="SIZE",
        help="Larger records are not read but reported as too large, e.g. 4MB (default: 1MB; a 25-deal game "
        "is about 23 kB).",
        show_default=False,
    ),
]


def record_limit(text: str | None) -> int:
    """``--max-record-bytes`` in bytes (a usage error unless it is a size of at least one byte)."""
    from backalley.sizes import parse_size
    from backalley.validate import MAX_RECORD_BYTES

    if text is None:
        return MAX_RECORD_BYTES
    try:
        size = parse_size(text)
    except ValueError as exc:
        raise fail(f"--max-record-bytes {exc}") from None
    if size < 1:
        raise fail(f"--max-record-bytes {text!r}: must be at least one byte")
    return size


Paths = Annotated[
    list[str],
    typer.Argument(
        help="Files (.json: one record; .jsonl: one per line; .csv: score sheets, a game per run of rows), folders "
        "(searched recursively for *.json, *.jsonl and *.csv, any case) or - (standard input, one record per line).",
        show_default=False,
    ),
]


@app.command()
def validate(
    paths: Paths,
    json_out: Annotated[
        bool, typer.Option("--json", help="Write the JSON Lines report (docs/record-format.md) to stdout.")
    ] = False,
    workers: Annotated[
        int,
        typer.Option(
            "--workers",
            "-w",
            min=1,
            help="Worker processes for the replay (default: 1; at most the CPU count and the record count).",
        ),
    ] = 1,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="Human output: only invalid records and the summary.")
    ] = False,
    max_record_bytes: MaxRecordBytes = None,
) -> None:
    """Replay every record and report each rule violation with its location.

    Exit status: 0 when every record is valid, 1 when any is not, 2 for a usage
    error (an unknown option, or a path that does not exist or cannot be read).
    """
    limit = record_limit(max_record_bytes)
    try:
        files = expand(paths)
    except SourceError as exc:
        raise fail(str(exc)) from None
    report_problems(files)
    summary = Summary()
    total = sum(f.size for f in files)
    workers = worker_count(workers, files)
    write = sys.stdout.buffer.write
    with progress_bar("validating", show=sys.stderr.isatty() and total >= PROGRESS_MIN_BYTES) as bar:
        task = bar.add_task("", total=total or None, records=0)
        try:
            for piece in validate_files(files, workers, json_out, not quiet, limit):
                summary.add_piece(piece)
                bar.update(task, advance=piece.size, records=summary.records)
                write(piece.output)
                for item, result in piece.shown:
                    show_result(item, result)
        except WorkerDied as exc:
            raise fail(f"{exc}; {UNCHECKED}") from None
    if summary.records == 0:
        raise fail(f"no records in {', '.join(paths)} (no .json, .jsonl or .csv file, or only blank lines)")
    if not json_out:
        out.print()
        out.print(
            f"{summary.records} records: {summary.by_status['valid']} valid, "
            f"{summary.by_status['incomplete']} incomplete, {summary.by_status['invalid']} invalid"
        )
        for code, n in sorted(summary.by_code.items(), key=lambda kv: (-kv[1], kv[0])):
            out.print(f"  {code:<22}{n:>8}")
    raise typer.Exit(0 if summary.all_valid else 1)


MARKS = {"valid": "[green]valid     [/]", "incomplete": "[yellow]incomplete[/]", "invalid": "[red]invalid   [/]"}


def deal_of_pointer(pointer: str | None) -> int | None:
    """The deal (1-based, as every line says it) a JSON pointer into ``/deals`` (0-based) points at."""
    found = re.match(r"/deals/(\d{1,9})(?:/|$)", pointer or "")
    return int(found[1]) + 1 if found else None


def show_result(item: Item, result: Checked) -> None:
    """The human lines of one record: status, where, game id, then each violation (data shown literally)."""
    where = item.source if item.line is None else f"{item.source}:{item.line}"
    out.print(f"{MARKS[result.status]} {safe(where)}  {safe(result.game_id or '(no game_id)')}")
    for v in result.violations:
        deal = v.deal or deal_of_pointer(v.path)
        parts = (f"deal {deal}" if deal else "", f"trick {v.trick}" if v.trick else "", v.seat or "")
        loc = ", ".join(p for p in parts if p)
        out.print(
            f"    {v.code}{' (' + safe(loc) + ')' if loc else ''}: {safe(v.message)}  [dim]{safe(v.path or '/')}[/]"
        )


@app.command()
def schema(
    format_version: Annotated[
        int, typer.Option("--format-version", min=1, max=2, help="Record format: 1 (standard) or 2 (rulesets).")
    ] = 1,
) -> None:
    """Print the JSON Schema (draft 2020-12) of game-record format v1 (or v2 with --format-version 2)."""
    from backalley.records import models as record

    sys.stdout.write(record.json_schema_text(format_version))


@app.command()
def rulesets() -> None:
    """List every ruleset and house option, one line each."""
    from backalley.rules import describe_rulesets

    for line in describe_rulesets():
        out.print(line, markup=False)


def _simulate_pool(players: str) -> "int | list[Player]":
    """``simulate --players``: a pool size (at least 4), or the players' list; exit 2 with the reason."""
    from backalley.simulate.strength import MAX_PLAYERS, PlayersError, parse_players

    text = players.strip()
    if text.isascii() and text.isdecimal():
        size = int(text) if len(text) <= len(str(MAX_PLAYERS)) else MAX_PLAYERS + 1
        if not 4 <= size <= MAX_PLAYERS:
            raise fail(f"--players {text}: a pool of 4 to {MAX_PLAYERS} players")
        return size
    try:
        return parse_players(players)
    except PlayersError as exc:
        raise fail(f"--players: {exc}") from None


@app.command()
def simulate(
    out_file: Annotated[Path, typer.Option("--out", "-o", help="Where to write the games (JSON Lines).")] = Path(
        "data/simulated.jsonl"
    ),
    games: Annotated[int, typer.Option("--games", "-n", min=1, help="How many complete games to play.")] = 100,
    seed: Annotated[int, typer.Option("--seed", help="Random seed: the same seed gives the same bytes.")] = 1,
    players: Annotated[
        str,
        typer.Option(
            "--players",
            help="The pool: its size (named players of basic strength), or NAME:LEVEL,... with LEVEL "
            "random, basic or strong (default basic); each game seats four of the pool at random.",
        ),
    ] = "12",
    faults: Annotated[
        float, typer.Option("--faults", min=0.0, max=1.0, help="Share of games that get one injected rule violation.")
    ] = 0.0,
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers",
            "-w",
            min=1,
            help="Processes playing the games (default: the CPU count, one per 50 games at most); "
            "the output is the same whatever the number.",
            show_default=False,
        ),
    ] = None,
    ruleset: Annotated[str, typer.Option("--ruleset", help="The ruleset to play (see `backalley rulesets`).")] = (
        "standard"
    ),
    options: Annotated[
        str, typer.Option("--options", help="House options, comma-separated (e.g. no_jokers,short_deck).")
    ] = "",
    sheet: Annotated[
        bool,
        typer.Option(
            "--sheet",
            help="Write each game as its score sheet (bids and each player's tricks, no cards); "
            "as CSV when --out ends in .csv. Injected faults are then only those a sheet can show.",
        ),
    ] = False,
) -> None:
    """Play complete, legal games between bots and write them as JSON Lines.

    The --out file is replaced if it exists, unless it is the database ($BACKALLEY_DB or
    data/backalley.duckdb), its WAL or its lake: those are never written.
    """
    from backalley.rules import RulesetError, find_ruleset
    from backalley.simulate import write_games
    from backalley.store.database import default_db
    from backalley.store.outputs import OutputError, protected

    try:
        rules = find_ruleset(ruleset, [o.strip() for o in options.split(",") if o.strip()])
    except RulesetError as exc:
        raise fail(str(exc)) from None
    pool = _simulate_pool(players)
    if out_file.is_dir():
        raise fail(f"--out {out_file}: is a folder; give the name of the file to write")
    if out_file.name.lower().endswith(".csv") and not sheet:
        raise fail(f"--out {out_file}: a .csv file holds score sheets: add --sheet, or name a .jsonl file")
    try:
        protected(default_db()).check_file(out_file, "--out")
    except OutputError as exc:
        raise fail(str(exc)) from None
    try:
        out_file.parent.mkdir(parents=True, exist_ok=True)
        with progress_bar("simulating", show=sys.stderr.isatty(), of_total=True) as bar:
            task = bar.add_task("games", total=games)

            def progress(done: int) -> None:
                bar.update(task, completed=done)

            summary = write_games(
                out_file,
                games=games,
                seed=seed,
                players=pool,
                faults=faults,
                workers=workers,
                progress=progress,
                rules=rules,
                sheet=sheet,
            )
    except OSError as exc:
        raise fail(f"--out {out_file}: {exc.strerror or exc}") from None
    except WorkerDied as exc:
        raise fail(f"{exc}; {out_file} holds the games before it") from None
    note(f"wrote {summary} to {out_file}")


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
    ruleset: Annotated[
        str | None,
        typer.Option("--ruleset", help="Report on the games of this ruleset only (see `backalley rulesets`)."),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option("--since", metavar="DATE", help="Report on games played on or after this day (YYYY-MM-DD)."),
    ] = None,
    until: Annotated[
        str | None,
        typer.Option("--until", metavar="DATE", help="Report on games played on or before this day (YYYY-MM-DD)."),
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers",
            "-w",
            min=1,
            help="Processes rendering player pages (default: the CPU count).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Write HTML reports (index.html, players/*.html) and summary.md from the store.

    Exit status: 0 on success, 2 when the store is missing, unusable or holds no games
    (of that --event, --ruleset or period), the ruleset or the player is unknown, or a date is not one.
    """
    from backalley.reporting import PeriodError, ReportError, period, write_reports
    from backalley.reporting.metrics import ReportLockedError
    from backalley.store.database import default_db

    try:
        days = period(since, until)
    except PeriodError as exc:
        raise fail(str(exc)) from None
    db = db if db is not None else default_db()

    with progress_bar("report:", show=sys.stderr.isatty(), of_total=True) as bar:
        task = bar.add_task("queries", total=None)

        def progress(done: int, total: int, what: str) -> None:
            bar.update(task, description=what, completed=done, total=total)

        try:
            summary = write_reports(
                db,
                out_dir,
                player=player,
                event=event,
                progress=progress,
                workers=workers,
                ruleset=ruleset,
                period=days,
            )
        except ReportLockedError as exc:
            raise fail(held_advice(db, exc, "Its pages are served live at {url}/players")) from None
        except ReportError as exc:
            raise fail(str(exc)) from None
    note(f"report: {summary}")
    out.print(printable(summary.index.resolve()), markup=False)


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
            help="Worker processes for the replay (default and most: the CPU count; no more than the records).",
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
    no_ratings: Annotated[
        bool,
        typer.Option(
            "--no-ratings",
            help="Do not refresh the ratings after storing (on a large store that takes longer than the ingest: "
            "run `backalley ratings` once after a series of ingests).",
        ),
    ] = False,
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
    max_record_bytes: MaxRecordBytes = None,
    cluster: Annotated[
        str | None,
        typer.Option(
            "--cluster",
            metavar="dask://HOST:PORT|local[:N]",
            help="Run on a Dask cluster (a scheduler, or a local one of N workers) and write a Delta Lake "
            "(with --lake; see docs/scale-out.md).",
            show_default=False,
        ),
    ] = None,
    lake: Annotated[
        str | None,
        typer.Option(
            "--lake",
            metavar="DIR_OR_URL",
            help="The Delta Lake folder or URL the cluster writes (with --cluster).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Replay every record and store it in the DuckDB database, with its violations.

    Valid, invalid and unreadable inputs all leave a trace: games (valid or not)
    in `games` and the detail tables, everything else in `rejects`. The same
    record ingested twice is stored once; a run killed at any moment can simply
    be run again. The ratings (table `ratings`) of each ruleset and options whose
    games changed are refitted afterwards, the others kept (--no-ratings: none). With --cluster and --lake the same
    runs on Dask into a Delta Lake (query it after `backalley attach`).

    Exit status: 0 when every record was stored and valid, 1 when some were
    invalid, conflicting or rejected (still recorded), 2 for usage or database errors.
    """
    if cluster is not None or lake is not None:
        if db is not None or replace or workers is not None or memory_limit is not None:
            raise fail("--cluster/--lake write a lake: --db, --replace, --workers and --memory-limit do not apply")
        run = ingest_lake(paths, cluster, lake, record_limit(max_record_bytes))
        print_run(run, json_out)
        raise typer.Exit(0 if run.clean else 1)
    try:
        files = expand(paths)
    except SourceError as exc:
        raise fail(str(exc)) from None
    if not files:
        raise fail(f"no records in {', '.join(paths)} (no .json, .jsonl or .csv file)")
    n_workers = worker_count(workers if workers is not None else default_workers(), files)
    if n_workers > 1:  # the workers' server imports the row builder while this process imports the store
        start_pool_server(ROW_WORKER_PRELOAD)
    from backalley.store.database import Store, StoreError, default_db
    from backalley.store.ingest import INGEST_MEMORY_LIMIT, check_memory_limit, ingest_files

    memory_limit = memory_limit or INGEST_MEMORY_LIMIT
    try:
        check_memory_limit(memory_limit)
    except ValueError as exc:
        raise fail(f"--memory-limit {exc}") from None
    limit = record_limit(max_record_bytes)
    report_problems(files)
    db_path = db if db is not None else default_db()
    total = sum(f.size for f in files)
    try:
        with Store.open(db_path) as store, progress_bar("ingesting", show=sys.stderr.isatty()) as bar:
            task = bar.add_task("", total=total or None, records=0)
            done = [0]

            def progress(records: int, nbytes: int) -> None:
                done[0] += records
                bar.update(task, advance=nbytes, records=done[0])

            run = ingest_files(
                store,
                files,
                [label(p) for p in paths],
                workers=n_workers,
                replace=replace,
                progress=progress,
                memory_limit=memory_limit,
                max_record_bytes=limit,
            )
            if run.records and not no_ratings:
                _refresh_ratings(store)
    except StoreError as exc:
        raise fail(str(exc)) from None
    except WorkerDied as exc:
        raise fail(f"{exc}; the run is marked failed, the chunks committed before it stay stored") from None
    if run.records == 0:
        raise fail(f"no records in {', '.join(paths)} (only blank lines)")
    print_run(run, json_out)
    raise typer.Exit(0 if run.clean else 1)


def _refresh_ratings(store: "Store") -> None:
    """After an ingest: the ratings of the rulesets and options whose games changed refitted (docs/metrics.md,
    "Ratings"), saying which, or a note on stderr saying why not."""
    import duckdb

    from backalley.analysis.ratings import RatingError, refresh_if_stale
    from backalley.store.database import one_line

    try:
        rows = refresh_if_stale(store.con)
    except (RatingError, duckdb.Error) as exc:
        note(f"ratings not refreshed: {one_line(exc)}")
        return
    if rows:
        pairs = sum(r.kind == "pair" for r in rows)
        groups = sorted({"+".join([r.ruleset, *[o for o in r.options.split(",") if o]]) for r in rows})
        note(f"ratings refreshed: {pairs:,} partnerships, {len(rows) - pairs:,} players of {', '.join(groups)}")


def print_run(run: "RunSummary", json_out: bool) -> None:
    """An ingest run's summary: its counters as JSON on stdout, or two lines."""
    if json_out:
        sys.stdout.buffer.write(orjson.dumps(run.as_dict()) + b"\n")
        return
    out.print(
        f"ingest run {run.run_id} into {safe(run.db)}: {run.files} files, {run.records} records in {run.seconds:.1f} s "
        f"({run.rate:,.0f} records/s)\n"
        f"  inserted {run.inserted}, replaced {run.replaced}, duplicates {run.duplicates}, "
        f"conflicts {run.conflicts}, rejected {run.rejected}, invalid {run.invalid}"
    )


def ingest_lake(paths: list[str], cluster: str | None, lake: str | None, max_record_bytes: int) -> "RunSummary":
    """``ingest --cluster … --lake …``: the run on Dask into a Delta Lake (usage and cluster errors exit 2)."""
    from backalley.store.lake import LakeError, check_cluster, connect
    from backalley.store.lake import ingest as run_on

    if cluster is None or lake is None:
        raise fail("--cluster and --lake go together: the cluster writes the lake (see docs/scale-out.md)")
    try:
        check_cluster(cluster)
        files = expand(paths)
        if not files:
            raise fail(f"no records in {', '.join(paths)} (no .json, .jsonl or .csv file)")
        report_problems(files)
        with connect(cluster) as client:
            run = run_on(paths, lake, client, max_record_bytes=max_record_bytes).summary
    except (LakeError, SourceError, OSError) as exc:
        raise fail(str(exc)) from None
    if run.records == 0:
        raise fail(f"no records in {', '.join(paths)} (only blank lines)")
    return run


@app.command()
def attach(
    lake: Annotated[str, typer.Argument(metavar="LAKE", help="A Delta Lake folder or URL written by ingest --lake.")],
    db: DbOption = None,
) -> None:
    """Create views in a DuckDB file over the lake's tables, so query and report read it.

    A lake's files change with every ingest: attach again after one. Exit status:
    2 when the lake or the database cannot be used.
    """
    from backalley.store.database import StoreError, default_db
    from backalley.store.lake import LakeError
    from backalley.store.lake import attach as attach_lake

    target = db if db is not None else default_db()
    try:
        views = attach_lake(lake, target)
    except (LakeError, StoreError, OSError) as exc:
        raise fail(str(exc)) from None
    out.print(f"attached {safe(lake)} to {safe(str(target))}: {len(views)} tables, {sum(views.values())} files")


@app.command()
def analyze(
    paths: Annotated[
        list[str] | None,
        typer.Argument(help="Record files or folders to analyse without a database.", show_default=False),
    ] = None,
    db: DbOption = None,
    json_out: Annotated[bool, typer.Option("--json", help="Files: one JSON object per record on stdout.")] = False,
    workers: Annotated[
        int | None,
        typer.Option("--workers", "-w", min=1, help="Worker processes for the store (default: 1).", show_default=False),
    ] = None,
    max_cards: Annotated[
        int,
        typer.Option("--max-cards", min=1, max=13, help="Solve only deals of at most this many cards a hand."),
    ] = 13,
    cluster: Annotated[
        str | None,
        typer.Option(
            "--cluster",
            metavar="dask://HOST:PORT|local[:N]",
            help="Run the store's analysis as tasks on a Dask cluster (a scheduler, or a local one of N workers; "
            "see docs/scale-out.md).",
            show_default=False,
        ),
    ] = None,
    lake: Annotated[
        str | None,
        typer.Option(
            "--lake",
            metavar="DIR_OR_URL",
            help="Analyse the Delta Lake written by ingest --lake, into its dd tables (with --cluster).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Double-dummy values of each deal and the cost of each play.

    With files: print them.  Without: fill dd_deals, dd_deal_sides (every side's value:
    teams, or each seat without partnerships) and dd_plays for every stored deal
    lacking them (resumable; each batch of games commits on its own), with --cluster
    on Dask, and with --lake into a lake's tables (`backalley attach` shows them).
    Exit status: 0 ok, 1 when a record or deal could not be analysed, 2 usage, store or cluster error.
    """
    from backalley.analysis.dd import Scope, analyse_files

    if paths:
        if db is not None or cluster is not None or lake is not None:
            raise fail("give files, or --db/--cluster/--lake, not both")
        clean = True
        try:
            for where, game in analyse_files(paths, Scope(max_cards)):
                clean = clean and not game.error and not any(d.skipped and not d.deferred for d in game.deals)
                if json_out:
                    sys.stdout.buffer.write(dumps(game.as_dict()) + b"\n")
                else:
                    out.print(_analysis_text(where, game), markup=False)
        except SourceError as exc:
            raise fail(str(exc)) from None
        raise typer.Exit(0 if clean else 1)
    summary = _analyse_stored(db, workers, max_cards, cluster, lake)
    out.print(f"analyze: {summary}", markup=False)
    if summary.failed:
        raise typer.Exit(1)


def _analyse_stored(
    db: Path | None, workers: int | None, max_cards: int, cluster: str | None, lake: str | None
) -> "AnalyzeSummary":
    """``analyze`` of the store (or, with --lake, of a lake): in worker processes, or on a Dask cluster."""
    from backalley.analysis.dd import analyse_store
    from backalley.store.database import StoreError, default_db

    if lake is not None and (cluster is None or db is not None):
        raise fail("--lake needs --cluster, and --db does not apply: the cluster analyses the lake")
    if cluster is not None and workers is not None:
        raise fail("--cluster runs the analysis on the cluster's workers: --workers does not apply")
    with progress_bar(
        "analysing", show=sys.stderr.isatty(), of_total=True, detail="{task.fields[deals]:,} deals solved"
    ) as bar:
        task = bar.add_task("games", total=None, deals=0)

        def progress(done: int, total: int, deals: int) -> None:
            bar.update(task, completed=done, total=total, deals=deals)

        target = db if db is not None else default_db()
        if cluster is not None:
            return _analyse_on(cluster, lake, target, max_cards, progress)
        try:
            return analyse_store(target, workers=workers or 1, max_cards=max_cards, progress=progress)
        except StoreError as exc:
            raise fail(str(exc)) from None


def _analyse_on(
    cluster: str, lake: str | None, db: Path, max_cards: int, progress: Callable[[int, int, int], None]
) -> "AnalyzeSummary":
    """``analyze --cluster``: the store's analysis, or with ``lake`` the lake's, on Dask (errors exit 2)."""
    from backalley.analysis.cluster import analyse_lake, analyse_store_on
    from backalley.store.database import StoreError
    from backalley.store.lake import LakeError, check_cluster, connect

    try:
        check_cluster(cluster)
        with connect(cluster) as client:
            if lake is not None:
                return analyse_lake(client, lake, max_cards=max_cards, progress=progress)
            return analyse_store_on(client, db, max_cards=max_cards, progress=progress)
    except (LakeError, StoreError, OSError) as exc:
        raise fail(str(exc)) from None


@app.command()
def ratings(db: DbOption = None) -> None:
    """Refit the ratings (TrueSkill Through Time) of every partnership and player, per ruleset and options,
    store them (table `ratings`) and print them.

    Exit status: 0 ok, 2 store error or a fit that failed.
    """
    from backalley.analysis.ratings import RatingError, ratings_lines
    from backalley.store.database import default_db

    try:
        lines = ratings_lines(db if db is not None else default_db())
    except RatingError as exc:
        raise fail(str(exc)) from None
    for line in lines:
        out.print(line, markup=False)


def _analysis_text(where: str, game: Any) -> str:
    lines = [f"{printable(where)}  {printable(game.game_id or '(no game_id)')}"]
    if game.error:
        lines.append(f"    not analysed: {game.error}")
    for d in game.deals:
        if d.pass_out:
            lines.append(f"    deal {d.deal} (number {d.number}): passed out")
        elif d.values is None:
            lines.append(f"    deal {d.deal} (number {d.number}): not analysed: {d.skipped}")
        else:
            v = d.values
            names = v.sides.names
            makeable = " ".join(f"{name} {value}" for name, value in zip(names, v.dd, strict=True))
            lost = " ".join(f"{name} {value}" for name, value in zip(names, v.lost(), strict=True))
            lines.append(f"    deal {d.deal} (number {d.number}): makeable {makeable}; tricks lost in play {lost}")
    return "\n".join(lines)


class QueryFormat(StrEnum):
    """The formats of :class:`backalley.store.query.Format` (not imported here: it loads DuckDB)."""

    table = "table"
    csv = "csv"
    json = "json"
    ndjson = "ndjson"
    parquet = "parquet"


class _NameValueCommand(TyperCommand):
    """``--param NAME VALUE``, repeatable: click's ``multiple`` with ``nargs=2``, which typer cannot declare.

    Each pair reaches the command as one string, ``NAME`` and ``VALUE`` joined by
    a NUL (which no command-line argument can contain).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for p in self.params:
            if p.name == "param":
                p.multiple = True
                p.nargs = 2
                p.process_value = _join_pairs  # type: ignore[method-assign]


def _join_pairs(ctx: Any, value: Any) -> list[str]:
    return [f"{name}\0{v}" for name, v in value or ()]


@app.command(cls=_NameValueCommand)
def query(
    sql: Annotated[str | None, typer.Argument(help="The SQL to run (or use --file).", show_default=False)] = None,
    file: Annotated[
        Path | None, typer.Option("--file", "-f", help="Read the SQL from this file.", show_default=False)
    ] = None,
    fmt: Annotated[
        QueryFormat, typer.Option("--format", "-F", help="Output format (json: one array; ndjson: one object a line).")
    ] = QueryFormat.table,
    param: Annotated[
        list[str] | None,
        typer.Option(
            "--param", "-p", metavar="NAME VALUE", help="A value for $NAME in the SQL (repeatable).", show_default=False
        ),
    ] = None,
    out_file: Annotated[
        Path | None,
        typer.Option(
            "--out", "-o", help="Write the result to this new file (required for parquet).", show_default=False
        ),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Overwrite an existing --out file (never the database or its WAL).")
    ] = False,
    max_rows: Annotated[
        int, typer.Option("--max-rows", min=1, help="Rows shown in table format (csv, json, parquet: all).")
    ] = 100,
    memory_limit: Annotated[
        str | None,
        typer.Option(
            "--memory-limit",
            metavar="SIZE",
            help="DuckDB's memory cap for the query, e.g. 2GB (default: 1GB).",
            show_default=False,
        ),
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            min=0.001,
            help="Seconds the query may run before it is interrupted (default: 60).",
            show_default=False,
        ),
    ] = None,
    db: DbOption = None,
) -> None:
    """Run SQL on a read-only connection to the database and print the result.

    Any statement that would change the database (or write a file) is refused
    and nothing changes. Tables and views are described in docs/database.md.

    Exit status: 0 on success, 2 for a bad query or database error.
    """
    from backalley.analysis.relations import registered
    from backalley.store.database import StoreError, StoreLockedError, default_db
    from backalley.store.ingest import check_memory_limit
    from backalley.store.query import QUERY_MEMORY_LIMIT, QUERY_TIMEOUT, Format, run_query, write_query

    memory_limit = memory_limit or QUERY_MEMORY_LIMIT
    timeout = timeout or QUERY_TIMEOUT

    if (sql is None) == (file is None):
        raise fail("give the SQL either as an argument or with --file, not both")
    if file is not None:
        try:
            sql = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise fail(f"{file}: {getattr(exc, 'strerror', None) or exc}") from None
    assert sql is not None
    if fmt is QueryFormat.parquet and out_file is None:
        raise fail("--format parquet needs --out FILE")
    try:
        check_memory_limit(memory_limit)
    except ValueError as exc:
        raise fail(f"--memory-limit {exc}") from None
    pairs = [(name, value) for name, _, value in (p.partition("\0") for p in param or [])]
    names = [name for name, _ in pairs]
    if len(set(names)) != len(names):
        raise fail("--param: a name is given twice")
    options: dict[str, Any] = {
        "params": dict(pairs),
        "fmt": Format(fmt.value),
        "max_rows": max_rows,
        "memory_limit": memory_limit,
        "timeout": timeout,
    }
    db_path = db if db is not None else default_db()
    try:
        try:
            if out_file is not None:
                write_query(db_path, sql, out_file, force=force, relations=registered, **options)
            else:
                run_query(db_path, sql, dest=sys.stdout.buffer, relations=registered, **_terminal(), **options)
                sys.stdout.flush()
        except StoreLockedError as exc:  # `backalley serve` holds it: asked through the service
            from backalley.service.client import query_served, write_served

            del options["memory_limit"]  # (the service's own cap holds)
            if out_file is not None:
                write_served(db_path, exc, sql, out_file, force=force, **options)
            else:
                query_served(db_path, exc, sql, dest=sys.stdout.buffer, **_terminal(), **options)
                sys.stdout.flush()
    except BrokenPipeError:  # the reader stopped early (`| head`): not an error of the query
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise typer.Exit(0) from None
    except (StoreError, OSError) as exc:
        raise fail(str(exc)) from None


def held_advice(db: Path, exc: Exception, what: str) -> str:
    """The lock error of a command that cannot ask the service holding ``db``, with what to do instead."""
    from backalley.service.client import held_advice as advice

    return advice(db, what) or str(exc)


def _terminal() -> dict[str, Any]:
    """How a table is drawn on standard output: its width and colours when it is a terminal."""
    if not sys.stdout.isatty():
        return {"width": None, "styles": False}
    from rich.console import Console

    return {"width": Console().width, "styles": not os.environ.get("NO_COLOR")}


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
    from backalley.store.database import Store, StoreError, StoreLockedError, default_db
    from backalley.store.export import export as export_tables

    db = db if db is not None else default_db()
    try:
        with Store.open_readonly(db, external_access=True) as store:
            manifest = export_tables(store, out_dir, force=force)
    except StoreLockedError as exc:
        also = f'While it runs, `backalley query --db {db} "SELECT * FROM games" --format parquet --out games.parquet`'
        raise fail(held_advice(db, exc, also + " writes one table (the service answers it)")) from None
    except (StoreError, OSError) as exc:
        raise fail(str(exc)) from None
    for name, info in manifest["tables"].items():
        out.print(f"  {name:<12}{info['rows']:>12} rows")
    out.print(f"exported to {printable(out_dir)}", markup=False)


# --- the service: serve, show, token ---------------------------------------------------------


@app.command()
def serve(
    db: DbOption = None,
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port to listen on.")] = 8000,
    tokens: Annotated[
        Path | None,
        typer.Option("--tokens", help="A file of API tokens, one per line (or create them: backalley token create)."),
    ] = None,
    private: Annotated[bool, typer.Option("--private", help="Reading pages and the API needs a token too.")] = False,
    allowed_host: Annotated[
        list[str] | None,
        typer.Option(
            "--allowed-host",
            help="A host name the service answers for (repeat it for more; * for any). Default: 127.0.0.1,"
            " localhost, ::1 and --host. Requests naming another host in their Host header get 400"
            " (DNS rebinding, forged redirects).",
            show_default=False,
        ),
    ] = None,
    public_validate: Annotated[
        bool,
        typer.Option(
            "--public-validate",
            help="POST /api/v1/validate (it stores nothing) without a token; each request is bounded all the same"
            " (see docs/service.md). Not with --private.",
        ),
    ] = False,
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers",
            "-w",
            min=1,
            help="Processes that replay uploads (default and most: the CPU count); with more than one, one more"
            " computes a stored game's pages when first read (with one, the service does).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Serve the upload API (/api/v1/) and the pages (games, deals, players) on the database.

    The service is the database's only writer while it runs. Exit status: 2 when
    the database or the tokens file cannot be used.
    """
    from backalley.service import ServiceError, Settings, read_tokens_file
    from backalley.service import serve as run
    from backalley.store.database import StoreError, default_db

    try:
        given = read_tokens_file(tokens) if tokens is not None else frozenset()
        err.print(f"backalley serve: http://{host}:{port}/ on {db or default_db()}", highlight=False, markup=False)
        settings = Settings(
            db=db if db is not None else default_db(),
            tokens=given,
            private=private,
            public_validate=public_validate,
            allowed_hosts=allowed_hosts(allowed_host, host),
            workers=min(workers, default_workers()) if workers is not None else default_workers(),
        )
        run(settings, host, port)
    except (ServiceError, StoreError) as exc:
        raise fail(str(exc)) from None


def allowed_hosts(given: list[str] | None, host: str) -> tuple[str, ...]:
    """The hosts ``serve`` answers for: those given, else the local names and the address it listens on."""
    from backalley.service.settings import ALLOWED_HOSTS

    if given:
        return tuple(h.strip().lower() for h in given if h.strip())
    extra = () if host in ("0.0.0.0", "::", "") or host in ALLOWED_HOSTS else (host.strip("[]").lower(),)
    return ALLOWED_HOSTS + extra


@app.command()
def show(
    game_id: Annotated[str, typer.Argument(help="The game to show.", show_default=False)],
    deal: Annotated[
        int | None, typer.Option("--deal", "-d", min=1, help="Show this deal (1-based position) in full.")
    ] = None,
    db: DbOption = None,
) -> None:
    """Print a stored game, or one deal of it (hands, bids, tricks, faults, result by side), for any ruleset.

    Exit status: 0 on success, 2 when the database, game or deal cannot be found.
    """
    from urllib.parse import quote

    from backalley.cli.show import show as render
    from backalley.store.database import Store, StoreError, StoreLockedError, default_db

    db = db if db is not None else default_db()
    try:
        with Store.open_readonly(db) as store:
            found = render(store.con, game_id, deal)
    except StoreLockedError as exc:
        page = "{url}/games/" + quote(game_id, safe="") + (f"/deals/{deal}" if deal is not None else "")
        raise fail(held_advice(db, exc, f"The service shows the same at {page}")) from None
    except StoreError as exc:
        raise fail(str(exc)) from None
    if found is None:
        raise fail(f"no game {game_id!r} is stored" if deal is None else f"game {game_id!r} has no deal {deal}")
    out.print(found)


@app.command()
def raw(
    game_id: Annotated[str, typer.Argument(help="The stored game whose input to write.", show_default=False)],
    db: DbOption = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to this file instead of stdout.", show_default=False)
    ] = None,
    force: Annotated[
        bool,
        typer.Option("--force", help="Overwrite the --output file if it exists (never the database, its WAL or lake)."),
    ] = False,
) -> None:
    """Write the exact bytes a stored game was read from (its line or file, as ingested) to stdout or a file.

    Exit status: 0 on success, 2 when the database or game cannot be found or the file cannot be written.
    """
    from backalley.store.database import StoreError, default_db
    from backalley.store.export import read_raw
    from backalley.store.outputs import write_raw

    db_path = db if db is not None else default_db()
    try:
        if output is not None:
            write_raw(db_path, game_id, output, force=force)
            return
        sys.stdout.buffer.write(read_raw(db_path, game_id))
        sys.stdout.buffer.flush()
    except (StoreError, OSError) as exc:
        raise fail(str(exc)) from None


sheet_app = typer.Typer(
    help="Score sheets for a table that plays on paper: a CSV to fill in, a page to print.", no_args_is_help=True
)
app.add_typer(sheet_app, name="sheet")
SheetRuleset = Annotated[str, typer.Option("--ruleset", help="The ruleset (see `backalley rulesets`).")]
SheetOptions = Annotated[str, typer.Option("--options", help="House options, comma-separated (e.g. short_deck).")]
SheetPlayers = Annotated[
    str, typer.Option("--players", help="The players at N, E, S and W, comma-separated (e.g. Ann,Bo,Cy,Di).")
]


def _sheet_setup(ruleset: str, options: str, players: str) -> tuple[Any, tuple[str, str, str, str]]:
    """The ruleset and the four players of a `sheet` command; a clear error for either."""
    from backalley.rules import RulesetError, find_ruleset

    try:
        rules = find_ruleset(ruleset, [o.strip() for o in options.split(",") if o.strip()])
    except RulesetError as exc:
        raise fail(str(exc)) from None
    names = [p.strip() for p in players.split(",")] if players else ["", "", "", ""]
    if len(names) != 4:
        raise fail(f"--players: {len(names)} names; give 4, for N, E, S and W, comma-separated")
    if any(len(n) > 64 or not n.isprintable() for n in names):
        raise fail("--players: a player id is at most 64 printable characters")
    return rules, (names[0], names[1], names[2], names[3])


@sheet_app.command("template")
def sheet_template(ruleset: SheetRuleset = "standard", options: SheetOptions = "", players: SheetPlayers = "") -> None:
    """Print a CSV score sheet to fill in: the header and the 4 rows of every deal of the schedule.

    Rows are in bidding order for N dealing first (reorder a dealing's rows if another seat deals;
    the dealer of deal 1 is left empty). Fill in game_id, bid, tricks and (optionally) points, then
    `backalley validate FILE.csv` or `backalley ingest FILE.csv`.
    """
    from backalley.records.sheets import template_csv

    rules, names = _sheet_setup(ruleset, options, players)
    sys.stdout.write(template_csv(rules, names))


@sheet_app.command("print")
def sheet_print(
    out: Annotated[Path, typer.Option("--out", "-o", help="The HTML file to write.")] = Path("sheet.html"),
    ruleset: SheetRuleset = "standard",
    options: SheetOptions = "",
    players: SheetPlayers = "",
) -> None:
    """Write a blank score sheet as one self-contained HTML page that prints on one A4 or Letter page."""
    from backalley.reporting.printsheet import sheet_html
    from backalley.store.database import default_db
    from backalley.store.outputs import OutputError, protected

    rules, names = _sheet_setup(ruleset, options, players)
    if out.is_dir():
        raise fail(f"--out {out}: is a folder; give the name of the file to write")
    try:
        protected(default_db()).check_file(out, "--out")
        out.write_text(sheet_html(rules, names), encoding="utf-8")
    except OutputError as exc:
        raise fail(str(exc)) from None
    except OSError as exc:
        raise fail(f"--out {out}: {exc.strerror or exc}") from None
    note(f"wrote the score sheet of {rules.label()} to {out}")


token_app = typer.Typer(help="API tokens for uploads to `backalley serve`.", no_args_is_help=True)
app.add_typer(token_app, name="token")


@token_app.command("create")
def token_create(
    name: Annotated[str, typer.Argument(help="Who or what the token is for.", show_default=False)],
    db: DbOption = None,
) -> None:
    """Create an API token (printed once; the database keeps only its hash).

    While `backalley serve` runs it holds the database: stop it, create the token, start it again (or list
    tokens in a file given to `serve --tokens`). Exit status: 2 when the name is taken or the database
    cannot be used.
    """
    from backalley.service.auth import create_token

    token = _on_tokens(db, lambda store: create_token(store, name))
    sys.stdout.write(token + "\n")


@token_app.command("list")
def token_list(db: DbOption = None) -> None:
    """The tokens created in the database: name and creation time (the tokens themselves are not kept)."""
    from backalley.service.auth import list_tokens

    for name, at in _on_tokens(db, list_tokens):
        sys.stdout.write(f"{name}\t{at.isoformat()}\n")


@token_app.command("revoke")
def token_revoke(
    name: Annotated[str, typer.Argument(help="The token's name (as `backalley token list` shows it).")],
    db: DbOption = None,
) -> None:
    """Revoke a token: uploads showing it are refused (401) from then on.

    Exit status: 2 when no token has that name or the database cannot be used.
    """
    from backalley.service.auth import revoke_token

    _on_tokens(db, lambda store: revoke_token(store, name))
    err.print(f"revoked the token {name!r}", highlight=False, markup=False)


def _on_tokens(db: Path | None, work: "Callable[[Store], T]") -> T:
    """``work`` on the database opened for writing; a clear error (exit 2) when it cannot be, saying what to do
    when ``backalley serve`` holds it."""
    from backalley.service import ServiceError
    from backalley.store.database import Store, StoreError, StoreLockedError, default_db

    try:
        with Store.open(db if db is not None else default_db()) as store:
            return work(store)
    except StoreLockedError as exc:
        raise fail(
            f"{exc}. If `backalley serve` runs on it, stop the service, run this command, and start it again"
            " (tokens listed in a file given to `serve --tokens` need no stop: the file is read at start)"
        ) from None
    except (ServiceError, StoreError) as exc:
        raise fail(str(exc)) from None


record_app = typer.Typer(help="Record games played elsewhere, as they are played.", no_args_is_help=True)
app.add_typer(record_app, name="record")

#: The public bab-online server (its web client connects there).
BAB_ONLINE_SERVER = "https://bab-online-production.up.railway.app"


@record_app.command("bab-online")
def record_bab_online(
    user: Annotated[str, typer.Option("--user", help="Your account on the server (a spectator must sign in).")] = "",
    password_file: Annotated[
        Path | None, typer.Option("--password-file", help="A file whose first line is the account's password.")
    ] = None,
    game: Annotated[list[str], typer.Option("--game", help="Watch this game (its id; repeatable).")] = [],  # noqa: B006
    every_game: Annotated[bool, typer.Option("--all", help="Watch every game in progress, and each new one.")] = False,
    out: Annotated[
        Path | None, typer.Option("--out", help="Append each game's record to this JSON Lines file.")
    ] = None,
    upload: Annotated[
        str | None, typer.Option("--upload", help="Upload each record to this `backalley serve` (its root URL).")
    ] = None,
    token_file: Annotated[
        Path | None, typer.Option("--token-file", help="A file whose first line is the API token for --upload.")
    ] = None,
    save_transcript: Annotated[
        Path | None, typer.Option("--save-transcript", help="Keep each game's raw event stream in this folder.")
    ] = None,
    replay: Annotated[
        bool, typer.Option("--replay", help="Turn the saved transcripts FILE... into records (no server).")
    ] = False,
    files: Annotated[
        list[Path] | None, typer.Argument(help="Transcripts (.jsonl, .jsonl.gz) to read, with --replay.")
    ] = None,
    server: Annotated[str, typer.Option("--server", help="The bab-online server.")] = BAB_ONLINE_SERVER,
) -> None:
    """Watch games on bab-online as a spectator and write each as a `bab-online` record (docs/recording.md).

    Each game's whole dealings are written when it ends (or when the recorder stops: Ctrl-C). Exit status:
    1 when the server cannot be reached or refuses the sign-in, 2 for bad options.
    """
    from backalley.recorder.command import Request
    from backalley.recorder.command import record_bab_online as record

    def say(line: str) -> None:
        err.print(line, highlight=False, markup=False, soft_wrap=True)

    if bool(files) != replay:
        say("--replay reads the transcripts named after it: give both, or neither")
        raise typer.Exit(2)
    req = Request(
        "" if replay else server, user, password_file, list(game), every_game, out, upload, token_file,
        save_transcript, list(files or []),
    )  # fmt: skip
    raise typer.Exit(record(req, say))


def main() -> None:  # pragma: no cover - console entry point
    app(prog_name="backalley")


__all__ = ["app", "default_workers", "main"]

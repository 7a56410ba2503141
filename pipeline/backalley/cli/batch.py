"""The ``backalley`` command's entry point: ``validate --json`` started without the command-line framework.

A site checks every upload with ``backalley validate --json``, often one small
file at a time, so its start-up is most of the work: importing typer and building
the command line takes about 30 ms of the 110 ms.  :func:`main` recognises one
plain form of that command (:func:`parse_batch`) and runs it directly; every other
command line, and anything this form cannot answer the way the full command does
(a path that cannot be read, no records, a progress bar, a usage error), goes to
the full command line (:mod:`backalley.cli.app`), which has the last word.  A test
keeps :func:`parse_batch` equal to what typer passes to ``validate``.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass

from backalley.cli import PROGRESS_MIN_BYTES

#: A worker count as ``--workers`` takes it here (typer also takes ``+2``, `` 2``, ``0x``...: it answers those).
_COUNT = re.compile(r"[1-9][0-9]{0,5}")


@dataclass(frozen=True, slots=True)
class Batch:
    """``validate --json``'s arguments, as typer gives them to the command."""

    paths: list[str]
    workers: int = 1
    quiet: bool = False
    max_record_bytes: str | None = None


def parse_batch(args: list[str]) -> Batch | None:
    """``args`` (after the program name) as :class:`Batch` when they are ``validate --json`` in plain form, else ``None``.

    The plain form: ``validate``, then in any order ``--json``, ``--quiet``/``-q``,
    ``--workers N``/``-w N`` and ``--max-record-bytes SIZE`` (each at most once,
    ``--json`` required) and one or more paths (``-`` is standard input).
    Anything else (``--opt=value``, ``--``, an unknown option, a path that starts
    with ``-``, a repeated option) is ``None``: the full command line answers it.
    """
    if len(args) < 3 or args[0] != "validate":
        return None
    paths: list[str] = []
    seen: dict[str, str] = {}
    rest = iter(args[1:])
    for arg in rest:
        name = _OPTIONS.get(arg)
        if name is None:
            if arg.startswith("-") and arg != "-":
                return None
            paths.append(arg)
        elif name in seen:
            return None
        elif name in _FLAGS:
            seen[name] = ""
        else:
            value = next(rest, None)
            if value is None or value.startswith("-"):
                return None
            seen[name] = value
    if "json" not in seen or not paths:
        return None
    workers = seen.get("workers", "1")
    if not _COUNT.fullmatch(workers):
        return None
    return Batch(paths, int(workers), "quiet" in seen, seen.get("max_record_bytes"))


_OPTIONS = {
    "--json": "json",
    "--quiet": "quiet",
    "-q": "quiet",
    "--workers": "workers",
    "-w": "workers",
    "--max-record-bytes": "max_record_bytes",
}
_FLAGS = frozenset({"json", "quiet"})


def run_batch(batch: Batch) -> int | None:
    """Run ``validate --json`` for ``batch``: its exit status, or ``None`` (nothing written) for the full command.

    ``None`` before any output when the full command would say something first:
    a size it does not take, a path that does not exist or cannot be read, a
    progress bar (standard error is a terminal and the input large); and when
    there is no record at all, which the full command reports as an error.
    """
    from backalley.records.sources import SourceError, expand
    from backalley.sizes import parse_size
    from backalley.validate import MAX_RECORD_BYTES, UNCHECKED, Summary, validate_files, worker_count
    from backalley.workers import WorkerDied

    limit = MAX_RECORD_BYTES
    if batch.max_record_bytes is not None:
        try:
            limit = parse_size(batch.max_record_bytes)
        except ValueError:
            return None
        if limit < 1:
            return None
    try:
        files = expand(batch.paths)
    except SourceError:
        return None
    if any(f.problem is not None for f in files) or (
        sys.stderr.isatty() and sum(f.size for f in files) >= PROGRESS_MIN_BYTES
    ):
        return None
    summary = Summary()
    write = sys.stdout.buffer.write
    try:
        for piece in validate_files(files, worker_count(batch.workers, files), True, not batch.quiet, limit):
            summary.add_piece(piece)
            write(piece.output)
    except WorkerDied as exc:
        from backalley.display import printable

        sys.stderr.write(f"error: {printable(exc)}; {UNCHECKED}\n")
        return 2
    if summary.records == 0:
        return None
    return 0 if summary.all_valid else 1


#: What the command sets in its own environment before numpy or pyarrow is loaded (a value given in the
#: environment is kept): numpy's OpenBLAS starts a thread per CPU that spins at numpy's import (about
#: 60 ms of CPU, and backalley does no linear algebra), and pyarrow's default pool (mimalloc) takes its
#: memory afresh from the system chunk after chunk, zeroing huge pages in the ingest writer, where the
#: system allocator reuses it (docs/performance.md, "Ingest").  Worker processes inherit both.
PROCESS_ENV = {"OPENBLAS_NUM_THREADS": "1", "ARROW_DEFAULT_MEMORY_POOL": "system"}


def process_env() -> None:
    """Set :data:`PROCESS_ENV` where the environment does not say otherwise."""
    for name, value in PROCESS_ENV.items():
        os.environ.setdefault(name, value)


def main() -> None:
    """The ``backalley`` command (``python -m backalley`` too)."""
    process_env()
    batch = parse_batch(sys.argv[1:])
    if batch is not None and (status := _run(batch)) is not None:
        sys.exit(status)
    from backalley.cli.app import app

    app(prog_name="backalley")


def _run(batch: Batch) -> int | None:
    """:func:`run_batch`, with what the full command line does on Ctrl-C and on a reader that stopped early."""
    try:
        status = run_batch(batch)
        if status is not None:
            sys.stdout.flush()
        return status
    except KeyboardInterrupt:
        sys.stderr.write("\nAborted!\n")
        return 1
    except BrokenPipeError:  # `| head`: exit 1 with no message, and nothing left to flush at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1

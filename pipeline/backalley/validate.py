"""Validation of many inputs: parse, schema, replay; optionally in worker processes.

:func:`check` is the whole check of one raw input.  :func:`validate_files`, what
``backalley validate`` runs, checks every record of the inputs in order and gives a
result per piece of input: with several workers each reads and checks its own
pieces of the files (memory stays bounded), so this process has little to do per
record.
"""

from __future__ import annotations

import atexit
import functools
import gc
import os
import sys
import threading
from collections import Counter, deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import TYPE_CHECKING, Any

import orjson

from backalley.records.fast import fast_decode_any
from backalley.records.sources import SPAN_BYTES, InputFile, Item, Span, dumps, parse, read_file, read_span, spans
from backalley.replay import Replay, Violation, json_error, replay, replay_checked, replay_sheet_csv
from backalley.workers import ordered_map
from backalley.workers import pool_context as forkserver_context

if TYPE_CHECKING:  # multiprocessing is imported only when workers start: one worker, or a single record, starts sooner
    from backalley.workers import ProcessContext

#: Allocations between collections of the youngest generation in a process that replays.
GC_THRESHOLD = 100_000
#: The largest record read, by default (``--max-record-bytes``): a 25-deal game is about 23 kB.
MAX_RECORD_BYTES = 1_000_000


def tune_gc() -> None:
    """Make the cyclic garbage collector run rarely in a process that replays records.

    A replay allocates many short-lived containers and keeps none in cycles;
    at the default threshold the collector costs about a third of the replay.
    """
    gc.set_threshold(GC_THRESHOLD, 50, 100)


@functools.cache
def freeze_at_exit() -> None:
    """Spare the interpreter's last collection the objects this process keeps to the end.

    As it exits, Python collects every tracked object once more and frees the cycles
    among them: the replay's memos (tens of thousands of objects, about 0.5 s of CPU after
    10,000 standard games in one process) and what the imports made (modules, classes,
    functions: about 30 ms).  Objects frozen by ``gc.freeze`` are left out of it, and the
    memory goes back with the process.  ``validate`` holds no file or database that needs
    a finaliser to run at exit (its output is standard output, which Python flushes in any
    case).  Registered once (``cache``), whatever the number of calls.
    """
    atexit.register(gc.freeze)


def check(raw: bytes) -> Replay:
    """Parse and replay one raw input; never raises on bad content.

    The fast path decodes and checks the format in one pass (msgspec); anything
    it refuses takes the full path, where pydantic has the last word.
    """
    rec = fast_decode_any(raw)
    if rec is not None:
        return replay_checked(rec)
    value, error = parse(raw)
    if error is not None:
        return json_error(error)
    return replay(value)


def too_large(size: int, limit: int) -> str | None:
    """The error for a record of ``size`` bytes when it is above ``limit``, else ``None``."""
    if size <= limit:
        return None
    return f"record too large: {size:,} bytes, more than the {limit:,} of --max-record-bytes"


def cap_records(items: Iterable[Item], limit: int) -> Iterator[Item]:
    """``items``, each record larger than ``limit`` bytes replaced by its ``JSON``-class error."""
    for item in items:
        error = too_large(len(item.raw), limit)
        yield item if error is None else Item(item.source, item.line, b"", error)


def check_item(item: Item) -> Replay:
    if item.read_error is not None:
        return json_error(item.read_error)
    if item.csv:
        return replay_sheet_csv(item.raw, item.line or 1)[1]
    return check(item.raw)


def default_workers() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def worker_count(requested: int, files: Sequence[InputFile]) -> int:
    """The worker processes worth starting: at most the CPU count, and at most one per input record."""
    cap = max(1, min(requested, default_workers()))
    return max(1, min(cap, records_up_to(files, cap)))


def records_up_to(files: Sequence[InputFile], limit: int) -> int:
    """The number of input records, counted only up to ``limit`` (so at most ``limit`` lines are read).

    A ``.json`` file, or a file that is not regular or cannot be read, counts as one.
    """
    n = 0
    for f in files:
        if n >= limit:
            break
        if not f.jsonl or not f.path.is_file():
            n += 1
            continue
        try:
            with f.path.open("rb") as fh:
                for line in fh:
                    if line.strip():
                        n += 1
                        if n >= limit:
                            break
        except OSError:
            n += 1
    return min(n, limit)


@dataclass(slots=True)
class Checked:
    """What ``validate`` keeps of one record: small, since it crosses processes."""

    game_id: str | None
    status: str
    violations: list[Violation]
    #: The record's JSON Lines report (docs/record-format.md), serialised, when asked for.
    report: bytes | None = None


def check_for_validate(item: Item, json_report: bool = False) -> Checked:
    """Check one input and keep only what the ``validate`` command shows."""
    r = check_item(item)
    report = report_bytes(r, item.source, item.line) if json_report else None
    return Checked(r.game_id, status(r), r.violations, report)


def report_bytes(r: Replay, source: str, line: int | None) -> bytes:
    """``report_json(r.report(source, line))``, written without the report's dicts for a record without violations.

    Each deal and the final score fill their sides' templates (:func:`_templates`).
    """
    if r.violations or r.final_score is None:
        return report_json(r.report(source, line))
    try:
        head = orjson.dumps({"source": source, "line": line, "game_id": r.game_id})
    except orjson.JSONEncodeError:  # a line number beyond 64 bits
        return report_json(r.report(source, line))
    deal, final = _templates(r.sides)
    deals = b",".join([deal % (d.tricks + d.points) for d in r.deals])
    done = b"true" if r.complete else b"false"
    return b"".join(
        (
            head[:-1],
            b',"valid":true,"complete":',
            done,
            b',"sheet":true' if r.sheet else b',"sheet":false',
            b',"violations":[],"deals":[',
            deals,
            b'],"final_score":',
            final % r.final_score,
            b"}",
        )
    )


_TEMPLATES: dict[tuple[str, ...], tuple[bytes, bytes]] = {}


def _templates(sides: tuple[str, ...]) -> tuple[bytes, bytes]:
    """A deal's report and the final score, as templates for ``sides``: ``deal % (tricks + points)``, ``final % score``.

    For two sides: ``{"tricks":{"NS":%d,"EW":%d},"points":{"NS":%d,"EW":%d}}`` and
    ``{"NS":%d,"EW":%d}``.  ``%d`` writes an integer of any size as JSON does; filling
    a template costs what a cache of serialised deals did on a hit, and never misses
    (four sides without partners give too many distinct deals to cache).
    """
    got = _TEMPLATES.get(sides)
    if got is None:
        keys = b",".join(orjson.dumps(side).replace(b"%", b"%%") + b":%d" for side in sides)
        got = _TEMPLATES[sides] = (b'{"tricks":{' + keys + b'},"points":{' + keys + b"}}", b"{" + keys + b"}")
    return got


def report_json(report: dict[str, Any]) -> bytes:
    """A report as one line of JSON; an integer of any size is written as it is (JSON has no limit)."""
    return dumps(report)  # orjson stops at 64 bits; a bid of 10**30 scores beyond them


@dataclass(slots=True)
class Piece:
    """The ``validate`` results of consecutive records, as one: what crosses processes per piece of input."""

    #: Bytes of input it covers (for progress).
    size: int = 0
    records: int = 0
    by_status: dict[str, int] = field(default_factory=dict)
    by_code: dict[str, int] = field(default_factory=dict)
    #: The JSON Lines reports of its records, one line each, when asked for.
    output: bytes = b""
    #: The records to show in human output (``raw`` dropped), with their results.
    shown: list[tuple[Item, Checked]] = field(default_factory=list)


def check_piece(items: Iterable[Item], json_report: bool, show_valid: bool, max_record_bytes: int) -> Piece:
    """Check consecutive records: their counts, their reports joined, and the records to show.

    With ``json_report`` every report is in ``output``; otherwise ``shown`` holds
    the invalid records, and the others too with ``show_valid``.
    """
    piece = Piece()
    out: list[bytes] = []
    by_status, by_code = piece.by_status, piece.by_code
    for item in cap_records(items, max_record_bytes):
        piece.records += 1
        r = check_item(item)
        st = status(r)
        by_status[st] = by_status.get(st, 0) + 1
        for v in r.violations:
            by_code[v.code] = by_code.get(v.code, 0) + 1
        if json_report:
            out.append(report_bytes(r, item.source, item.line))
            out.append(b"\n")
        elif show_valid or st == "invalid":
            piece.shown.append((Item(item.source, item.line, b""), Checked(r.game_id, st, r.violations)))
    piece.output = b"".join(out)
    return piece


#: What a validation stopped by a dead worker leaves (the end of its error message).
UNCHECKED = "the records after the last one reported were not checked"
#: Records per piece checked in this process (``workers=1``).
PIECE_RECORDS = 64
#: Spans at most per task (many small files go to a worker together).
TASK_SPANS = 256


def validate_files(
    files: Sequence[InputFile],
    workers: int = 1,
    json_report: bool = False,
    show_valid: bool = True,
    max_record_bytes: int = MAX_RECORD_BYTES,
    span_bytes: int = SPAN_BYTES,
) -> Iterator[Piece]:
    """Check every record of ``files``, in input order, as consecutive :class:`Piece` results.

    With one worker the records are read and checked here, a few at a time (one at
    a time from standard input or a pipe, so that each is reported as it comes).  With
    several, each worker reads and checks pieces of about ``span_bytes`` of input
    (:func:`~backalley.records.sources.spans`) and sends back their results as one
    (:func:`~backalley.workers.ordered_map`): this process, which runs no thread,
    only cuts large files at newlines and writes what comes back.
    A record above ``max_record_bytes`` is not parsed: it is a ``JSON`` error naming its size.
    """
    freeze_at_exit()
    if workers <= 1:
        tune_gc()
        for f in files:
            items = read_file(f)
            n = PIECE_RECORDS if f.size else 1  # standard input, a pipe: each record as it comes
            while batch := list(islice(items, n)):
                piece = check_piece(batch, json_report, show_valid, max_record_bytes)
                piece.size = sum(len(item.raw) + 1 for item in batch)
                yield piece
        return
    sizes: deque[int] = deque()  # each task's bytes of input, for its piece's progress

    def tasks() -> Iterator[tuple[list[Span], bool, bool, int]]:
        for task in _tasks(spans(files, span_bytes), span_bytes):
            sizes.append(sum(s.size for s in task))
            yield task, json_report, show_valid, max_record_bytes

    for piece in ordered_map(_check_task, tasks(), workers, pool_context(), initializer=tune_gc):
        piece.size = sizes.popleft()
        yield piece


def pool_context() -> ProcessContext:
    """How to start worker processes: ``fork`` on Linux when this process runs no other thread.

    A forked worker has the replay imported already and starts in about 10 ms;
    a ``forkserver`` one imports it again, about 0.3 s, a quarter of a 10,000-game
    run on two cores.  Forking is unsafe only with other threads (a lock held by
    one stays held in the child), such as a progress bar's: then ``forkserver``.
    """
    import multiprocessing

    if sys.platform == "linux" and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return forkserver_context()


def _tasks(parts: Iterable[Span], span_bytes: int) -> Iterator[list[Span]]:
    """Consecutive spans grouped into tasks of about ``span_bytes`` (or :data:`TASK_SPANS` spans) each."""
    task: list[Span] = []
    size = 0
    for span in parts:
        task.append(span)
        size += span.size
        if size >= span_bytes or len(task) >= TASK_SPANS:
            yield task
            task, size = [], 0
    if task:
        yield task


def _check_task(task: list[Span], json_report: bool, show_valid: bool, max_record_bytes: int) -> Piece:
    """A worker's task: read its spans and check their records as one piece."""
    items = (item for span in task for item in read_span(span))
    return check_piece(items, json_report, show_valid, max_record_bytes)


def status(r: Replay) -> str:
    """``valid`` (complete), ``incomplete`` (valid, fewer than 25 scored deals) or ``invalid``."""
    if not r.valid:
        return "invalid"
    return "valid" if r.complete else "incomplete"


@dataclass
class Summary:
    """Counts over a validation run."""

    records: int = 0
    by_status: Counter[str] = field(default_factory=Counter)
    by_code: Counter[str] = field(default_factory=Counter)

    def add_piece(self, piece: Piece) -> None:
        self.records += piece.records
        self.by_status.update(piece.by_status)
        self.by_code.update(piece.by_code)

    def add(self, r: Checked) -> None:
        self.records += 1
        self.by_status[r.status] += 1
        self.by_code.update(v.code for v in r.violations)

    @property
    def all_valid(self) -> bool:
        return self.by_status["invalid"] == 0

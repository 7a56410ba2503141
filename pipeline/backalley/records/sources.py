"""Reading game records from files and folders, one record at a time.

A path named on the command line is a ``.jsonl`` file (one record per line),
any other file (one record), ``-`` (standard input, one record per line), or a
folder (its ``*.json`` and ``*.jsonl`` files, any case, recursively, in sorted
order; see :func:`expand`).  Nothing is held beyond the record at hand, so
memory stays flat however large the input.  Each input becomes an
:class:`Item` carrying its raw bytes exactly as received; :func:`parse` turns
them into a JSON value or a ``JSON`` error message naming what is wrong (it
runs where the replay runs, so worker processes receive bytes, not objects).
"""

from __future__ import annotations

import io
import json
import os
import re
import stat
import sys
from collections.abc import Iterable, Iterator
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import orjson


class SourceError(ValueError):
    """A path that does not exist or cannot be read (a usage error)."""


@dataclass(slots=True)
class Item:
    """One input record: where it came from and its raw bytes (or why it could not be read)."""

    source: str
    line: int | None
    raw: bytes
    read_error: str | None = None
    #: Whether ``raw`` is one game of a CSV score sheet (its header and rows), not JSON.
    csv: bool = False

    def __reduce__(self) -> tuple[type[Item], tuple[str, int | None, bytes, str | None, bool]]:
        """Pickled as its fields, rebuilt by one call of the class (an ingest sends every input to a worker)."""
        return Item, (self.source, self.line, self.raw, self.read_error, self.csv)


@dataclass(frozen=True, slots=True)
class InputFile:
    """One input: a file to read, standard input (``-``), or a path found but not readable (``problem``)."""

    source: str
    path: Path
    jsonl: bool
    #: Why this path is not read (it becomes a ``JSON`` error / a reject naming the path).
    problem: str | None = None

    @property
    def csv(self) -> bool:
        """Whether the file holds score sheets as CSV (named ``*.csv``, any case)."""
        return self.source.lower().endswith(".csv")

    @property
    def stdin(self) -> bool:
        return self.source == STDIN

    @property
    def size(self) -> int:
        """Bytes to read (0 when unknown: standard input, a pipe, a path not read)."""
        if self.stdin or self.problem is not None:
            return 0
        try:
            st = self.path.stat()
        except OSError:
            return 0
        return st.st_size if stat.S_ISREG(st.st_mode) else 0


#: The path that names standard input (read as JSON Lines).
STDIN = "-"
#: A UTF-8 byte order mark, dropped from the start of a file.
BOM = b"\xef\xbb\xbf"
#: Extensions of the files read inside a folder (any case).
EXTENSIONS = (".json", ".jsonl", ".csv")


#: orjson turns integers beyond 64 bits into floats; such input takes the exact path.
_LONG_NUMBER = re.compile(rb"\d{19,}")


#: Digits of the longest integer read exactly.  Converting decimal text to an ``int`` takes time
#: quadratic in its length (Python refuses more than 4,300 digits by default, and no fewer than 640
#: can be configured); no field of the format needs more than 20.
MAX_INT_DIGITS = 640
#: What an integer of more digits is read as, with its sign: a number of :data:`MAX_INT_DIGITS`
#: digits, as far beyond every bound of the format as the one written, so that the rule it breaks
#: is reported at its path (docs/record-format.md).
HUGE_INT: int = 10 ** (MAX_INT_DIGITS - 1)


def _parse_int(text: str) -> int:
    """A JSON integer: exact up to :data:`MAX_INT_DIGITS` digits, else ``±HUGE_INT``."""
    if len(text) <= MAX_INT_DIGITS:
        return int(text)
    return -HUGE_INT if text.startswith("-") else HUGE_INT


def dumps(value: Any) -> bytes:
    """``value`` as JSON: orjson, or the standard library for an integer beyond orjson's 64 bits.

    Numbers in a record may be of any size (JSON has no limit): a bid of 10**30 is
    reported, stored and shown, and every answer written from a record's values goes
    through here.
    """
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse(raw: bytes) -> tuple[Any, str | None]:
    """``(value, None)`` for JSON text, ``(None, message)`` for anything else.

    orjson is the fast path; when it refuses, the standard library has the last
    word (it accepts integers of any size, which are JSON) and gives the message
    with line and column.
    """
    if not _LONG_NUMBER.search(raw):
        try:
            return orjson.loads(raw), None
        except orjson.JSONDecodeError:
            pass
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8 text (byte {exc.start})"
    if not text.strip():
        return None, "empty input: no JSON value"
    try:
        value = json.loads(text, parse_constant=_reject_constant, parse_int=_parse_int)
        return (None, _LONE_SURROGATE_ERROR) if _has_lone_surrogate(value) else (value, None)
    except json.JSONDecodeError as exc:
        return None, f"not JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
    except ValueError as exc:
        return None, f"not JSON: {exc}"
    except RecursionError:
        return None, "not JSON: nested too deeply"


_SURROGATE = re.compile("[\ud800-\udfff]")
_LONE_SURROGATE_ERROR = "not JSON text: a string holds a lone surrogate escape (such as \\ud800), which is no character"


def _has_lone_surrogate(value: Any) -> bool:
    """Whether a string or key in ``value`` holds a surrogate (the standard library decodes lone ``\\udXXX``)."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            if _SURROGATE.search(v):
                return True
        elif isinstance(v, list):
            stack += v
        elif isinstance(v, dict):
            stack += v.keys()
            stack += v.values()
    return False


def label(path: str) -> str:
    """A path as text that can always be shown and stored: bytes that are not UTF-8 become U+FFFD."""
    return os.fsencode(path).decode("utf-8", "replace")


def _is_jsonl(name: str) -> bool:
    return name.lower().endswith(".jsonl")


def expand(paths: Iterable[str]) -> list[InputFile]:
    """Resolve command-line paths into inputs, checking the given paths first.

    Raises :class:`SourceError` for a given path that does not exist or cannot
    be read, before anything is validated.  Inside a folder every ``*.json`` and
    ``*.jsonl`` (any case) is an input; what cannot be read there (a subfolder
    without permission, a FIFO or device, a broken link) is an input with a
    ``problem``, so it is reported, never silently left out.  A file reached
    twice (``x``, ``./x`` and ``/abs/x``; a symlink) is read once; a symlinked
    folder is followed once (a loop is cut).
    """
    out: list[InputFile] = []
    seen_files: set[str] = set()
    seen_dirs: set[tuple[int, int]] = set()
    for given in paths:
        if given == STDIN:
            if STDIN not in seen_files:
                seen_files.add(STDIN)
                out.append(InputFile(STDIN, Path(STDIN), True))
            continue
        p = Path(given)
        if p.is_dir():
            if not os.access(p, os.R_OK | os.X_OK):
                raise SourceError(f"{label(given)}: cannot read this folder")
            found: list[tuple[str, InputFile]] = []
            _walk(p, given, "", found, seen_dirs)
            for _, f in sorted(found, key=lambda rf: rf[0]):
                _add(out, seen_files, f)
        elif p.exists():
            if not os.access(p, os.R_OK):
                raise SourceError(f"{label(given)}: cannot read this file")
            # Named on the command line, a pipe or device is read as asked (``<(cat x.jsonl)``).
            _add(out, seen_files, InputFile(label(given), p, _is_jsonl(given)))
        else:
            raise SourceError(f"{label(given)}: no such file or folder")
    return out


def _add(out: list[InputFile], seen: set[str], f: InputFile) -> None:
    key = os.path.realpath(f.path)
    if key not in seen:
        seen.add(key)
        out.append(f)


def _walk(folder: Path, given: str, rel: str, found: list[tuple[str, InputFile]], seen: set[tuple[int, int]]) -> None:
    """Append ``(sort key, input)`` for every input under ``folder`` (``rel`` is its path below ``given``)."""
    try:
        st = folder.stat()
        seen.add((st.st_dev, st.st_ino))
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as exc:
        found.append((rel, InputFile(label(os.path.join(given, rel)), folder, False, _why("folder", exc))))
        return
    for entry in entries:
        sub = f"{rel}/{entry.name}" if rel else entry.name
        source = label(os.path.join(given, sub))
        wanted = entry.name.lower().endswith(EXTENSIONS)
        try:
            info = os.stat(entry.path)  # follows a symlink
        except OSError as exc:
            if wanted or entry.is_symlink():
                found.append((sub, InputFile(source, Path(entry.path), _is_jsonl(entry.name), _why("link", exc))))
            continue
        if stat.S_ISDIR(info.st_mode):
            if (info.st_dev, info.st_ino) not in seen:
                _walk(Path(entry.path), given, sub, found, seen)
        elif wanted and stat.S_ISREG(info.st_mode):
            found.append((sub, InputFile(source, Path(entry.path), _is_jsonl(entry.name))))
        elif wanted:
            problem = "not a regular file (a FIFO, device or socket): skipped"
            found.append((sub, InputFile(source, Path(entry.path), _is_jsonl(entry.name), problem)))


def _why(what: str, exc: OSError) -> str:
    reason = exc.strerror or str(exc)
    if what == "folder":
        return f"cannot read this folder: {reason}"
    return f"cannot read: {reason} (a broken or looping link?)"


#: The buffer of a file read a line at a time.  Python's line reading at the default 8 kB
#: costs 0.25-0.3 s of CPU (user and system) over 233 MB of 25-deal games (about 23 kB a
#: line), 0.1 s at 64 kB; at 1 MiB (this machine's L2 cache) the system time grew instead.
READ_BUFFER = 1 << 16


def read_file(f: InputFile) -> Iterator[Item]:
    """The records of one input; blank lines of JSON Lines are skipped, a leading UTF-8 BOM is dropped."""
    if f.problem is not None:
        yield Item(f.source, None, b"", f.problem)
        return
    try:
        if f.stdin:
            yield from _lines(f.source, sys.stdin.buffer)
        elif f.csv:
            from backalley.records.sheets import csv_items

            with f.path.open("rb", buffering=READ_BUFFER) as fh:
                yield from csv_items(f.source, fh)
        elif not f.jsonl:
            yield Item(f.source, None, f.path.read_bytes().removeprefix(BOM))
        else:
            with f.path.open("rb", buffering=READ_BUFFER) as fh:
                yield from _lines(f.source, fh)
    except OSError as exc:
        yield Item(f.source, None, b"", _cannot_read(exc))


def _lines(source: str, fh: Iterable[bytes], first: int = 1) -> Iterator[Item]:
    for number, line in enumerate(fh, first):
        raw = line.rstrip(b"\r\n")
        if number == 1:
            raw = raw.removeprefix(BOM)
        if raw and not raw.isspace():
            yield Item(source, number, raw)


#: Below this many bytes a line on average, :func:`count_lines` counts with one ``bytes.count``.
SHORT_LINE = 1024


def count_lines(data: bytes | bytearray, end: int) -> int:
    """The newlines in ``data[:end]``, as ``data.count(b"\\n", 0, end)`` gives them, faster for long lines.

    ``bytes.count`` of one byte looks at every byte in turn; ``find`` runs at ``memchr``'s speed,
    which for lines of kilobytes (a game is about 23 kB) is many times faster, and one Python
    call a line costs little.  Once the lines seen are short on average the rest is counted
    with ``count``.
    """
    n, pos, find = 0, 0, data.find
    while (nl := find(b"\n", pos, end)) >= 0:
        n, pos = n + 1, nl + 1
        if n >= 64 and pos < n * SHORT_LINE:
            return n + data.count(b"\n", pos, end)
    return n


def line_ranges(path: Path, size: int, block_bytes: int) -> Iterator[tuple[int, int, int]]:
    """``(start, end, first line)`` of byte ranges of about ``block_bytes`` of a file, cut after a newline.

    The file is read once, counting newlines, so every range knows its first line number.
    A read error ends the cutting: the rest of the file is one last range, whose reader
    meets the error itself (:func:`read_span` keeps the lines before it, as a whole read does).
    """
    start, line = 0, 1
    block = bytearray(block_bytes)  # one buffer read into again and again: no copy but the read's
    view = memoryview(block)
    try:
        with path.open("rb") as fh:
            while start < size:
                n = fh.readinto(view[: min(block_bytes, size - start)])
                if not n:
                    break
                rest = fh.readline() if start + n < size else b""  # to the end of the line the block stops in
                end = start + n + len(rest)
                yield start, end, line
                line += count_lines(block, n) + rest.count(b"\n")
                start = end
    except OSError:
        if start < size:
            yield start, size, line


#: The input bytes a worker reads at once when several validate (:func:`spans`): about 24 standard
#: games or 200 of ``pereulok``, 20 ms of work, so that the workers end together; the main
#: process spends about 1 ms a span (10,000 pereulok games: 0.08 s in 1 MB spans, 0.13 s in 256 kB).
SPAN_BYTES = 1 << 19


@dataclass(frozen=True, slots=True)
class Span:
    """A part of the input read as one (:func:`read_span`), in a worker process or this one.

    The whole ``file`` (``end is None``); bytes ``[start, end)`` of a regular
    ``.jsonl`` file, whose first line is ``first_line``; the ``data`` read
    already from standard input or a pipe; or ``error``, why the rest of the
    file could not be read.
    """

    file: InputFile
    #: Bytes of input it covers (0 when unknown), for progress.
    size: int = 0
    start: int = 0
    end: int | None = None
    first_line: int = 1
    data: bytes | None = None
    error: str | None = None


def spans(files: Iterable[InputFile], span_bytes: int = SPAN_BYTES) -> Iterator[Span]:
    """The inputs as spans of about ``span_bytes`` or less, in order: their records are :func:`read_file`'s.

    A regular file is read by :func:`read_span` (in a worker), except that a
    ``.jsonl`` file larger than ``span_bytes`` is read here once, to cut it into
    byte ranges at newlines and count its lines.  Standard input and pipes can
    only be read here: their bytes travel in the span.
    """
    for f in files:
        if f.problem is not None:
            yield Span(f)
            continue
        try:
            st = os.stat(f.path) if not f.stdin else None
        except OSError:  # read_span says why, as read_file does
            yield Span(f)
            continue
        if st is not None and stat.S_ISREG(st.st_mode):
            if not f.jsonl or st.st_size <= span_bytes:
                yield Span(f, st.st_size)
            else:
                yield from _file_spans(f, st.st_size, span_bytes)
        else:
            yield from _stream_spans(f, span_bytes)


def _file_spans(f: InputFile, size: int, span_bytes: int) -> Iterator[Span]:
    for start, end, line in line_ranges(f.path, size, span_bytes):
        yield Span(f, end - start, start, end, line)


def _stream_spans(f: InputFile, span_bytes: int) -> Iterator[Span]:
    """Standard input or a pipe, read here: in spans of whole lines (JSON Lines), else whole."""
    try:
        with nullcontext(sys.stdin.buffer) if f.stdin else f.path.open("rb", buffering=READ_BUFFER) as fh:
            if not f.jsonl:
                data = fh.read()
                yield Span(f, len(data), data=data)
                return
            yield from _line_spans(f, fh, span_bytes)
    except OSError as exc:
        yield Span(f, error=_cannot_read(exc))


def _line_spans(f: InputFile, fh: IO[bytes], span_bytes: int) -> Iterator[Span]:
    """Spans of whole lines of ``fh`` of about ``span_bytes``, read a line at a time, as
    :func:`read_file` reads them: a read error keeps the lines read before it (then raises)."""
    lines: list[bytes] = []
    size, first = 0, 1
    error: OSError | None = None
    try:
        for line in fh:
            lines.append(line)
            size += len(line)
            if size >= span_bytes:
                yield Span(f, size, first_line=first, data=b"".join(lines))
                first += len(lines)
                lines, size = [], 0
    except OSError as exc:
        error = exc
    if lines:
        yield Span(f, size, first_line=first, data=b"".join(lines))
    if error is not None:
        raise error


def read_span(span: Span) -> Iterator[Item]:
    """The records of a span, as :func:`read_file` gives them (the same line numbers and errors)."""
    f = span.file
    if span.error is not None:
        yield Item(f.source, None, b"", span.error)
    elif span.data is not None:
        if f.csv:
            from backalley.records.sheets import csv_items

            yield from csv_items(f.source, io.BytesIO(span.data))
        elif f.jsonl:
            yield from range_items(f.source, span.data, span.first_line)
        else:
            yield Item(f.source, None, span.data.removeprefix(BOM))
    elif span.end is None:
        yield from read_file(f)
    else:
        try:
            with f.path.open("rb") as fh:
                fh.seek(span.start)
                data = fh.read(span.end - span.start)
        except OSError:  # read again a line at a time: the lines before the error are kept, as in read_file
            yield from _range_lines(f, span.start, span.end - span.start, span.first_line)
            return
        yield from range_items(f.source, data, span.first_line)


def _range_lines(f: InputFile, start: int, size: int, first_line: int) -> Iterator[Item]:
    """The records of ``size`` bytes of a file from ``start``, read a line at a time, then the read error, if any."""
    try:
        with f.path.open("rb") as fh:
            fh.seek(start)
            yield from _lines(f.source, _upto(fh, size), first_line)
    except OSError as exc:
        yield Item(f.source, None, b"", _cannot_read(exc))


def _upto(fh: IO[bytes], size: int) -> Iterator[bytes]:
    """The lines of ``fh`` in its next ``size`` bytes."""
    while size > 0 and (line := fh.readline(size)):
        size -= len(line)
        yield line


def _cannot_read(exc: OSError) -> str:
    return f"cannot read: {exc.strerror or exc}"


def range_items(source: str, data: bytes, first_line: int) -> Iterator[Item]:
    """The records of ``data``, whole lines of a JSON Lines file whose first one is line ``first_line``.

    The lines are numbered and cleaned as :func:`read_file` does (a scale-out ingest
    reads a large file as byte ranges, one per task).
    """
    yield from _lines(source, io.BytesIO(data), first_line)


def read(paths: Iterable[str]) -> Iterator[Item]:
    """Every record under ``paths``, in order (raises :class:`SourceError` first if a path is bad)."""
    for f in expand(paths):
        yield from read_file(f)

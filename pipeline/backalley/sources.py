"""Reading game records from files and folders, one record at a time.

A path named on the command line is a ``.jsonl`` file (one record per line),
any other file (one record), or a folder (its ``*.json`` and ``*.jsonl`` files,
recursively, in sorted order).  Nothing is held beyond the record at hand, so
memory stays flat however large the input.  Each input becomes an
:class:`Item` carrying its raw bytes exactly as received; :func:`parse` turns
them into a JSON value or a ``JSON`` error message naming what is wrong (it
runs where the replay runs, so worker processes receive bytes, not objects).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


@dataclass(frozen=True, slots=True)
class InputFile:
    source: str
    path: Path
    jsonl: bool


#: orjson turns integers beyond 64 bits into floats; such input takes the exact path.
_LONG_NUMBER = re.compile(rb"\d{19,}")


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
        value = json.loads(text, parse_constant=_reject_constant)
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


def expand(paths: Iterable[str]) -> list[InputFile]:
    """Resolve command-line paths into input files, checking all of them first.

    Raises :class:`SourceError` for a path that does not exist or cannot be read,
    before anything is validated.
    """
    out: list[InputFile] = []
    for given in paths:
        p = Path(given)
        if p.is_dir():
            if not os.access(p, os.R_OK | os.X_OK):
                raise SourceError(f"{given}: cannot read this folder")
            found: list[str] = []
            for root, dirs, files in os.walk(p):
                dirs.sort()
                for name in files:
                    if name.endswith((".json", ".jsonl")):
                        found.append(os.path.relpath(os.path.join(root, name), p))
            for rel in sorted(found, key=lambda r: Path(r).as_posix()):
                out.append(InputFile(os.path.join(given, rel), p / rel, rel.endswith(".jsonl")))
        elif p.is_file():
            if not os.access(p, os.R_OK):
                raise SourceError(f"{given}: cannot read this file")
            out.append(InputFile(given, p, given.endswith(".jsonl")))
        elif p.exists():
            raise SourceError(f"{given}: not a regular file or folder")
        else:
            raise SourceError(f"{given}: no such file or folder")
    return out


def read_file(f: InputFile) -> Iterator[Item]:
    """The records of one input file; blank lines of a ``.jsonl`` file are skipped."""
    try:
        if not f.jsonl:
            yield Item(f.source, None, f.path.read_bytes())
            return
        with f.path.open("rb") as fh:
            for number, line in enumerate(fh, 1):
                raw = line.rstrip(b"\r\n")
                if raw and not raw.isspace():
                    yield Item(f.source, number, raw)
    except OSError as exc:
        yield Item(f.source, None, b"", f"cannot read: {exc.strerror or exc}")


def read(paths: Iterable[str]) -> Iterator[Item]:
    """Every record under ``paths``, in order (raises :class:`SourceError` first if a path is bad)."""
    for f in expand(paths):
        yield from read_file(f)

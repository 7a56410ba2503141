"""One watched event stream: its transcript kept, its games turned into records (live and offline alike)."""

from __future__ import annotations

import gzip
import json
import threading
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from backalley.recorder.sink import Sink
from backalley.records.observed import DISCONNECT, Transcriber, read_entry


def now() -> str:
    """The current time, RFC 3339 UTC to the millisecond (a record's ``played_at``)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Watch:
    """What one spectator connection (or one transcript file) receives, event by event.

    Each event is written to the transcript (if kept) with the time it arrived, then fed to a
    :class:`~backalley.records.observed.Transcriber`; each game it finishes goes to the sink.
    """

    def __init__(self, sink: Sink, transcript: Path | None = None, clock: Callable[[], str] | None = now) -> None:
        self.sink = sink
        self.clock = clock
        self.ended = False
        self._transcriber = Transcriber()
        self._lock = threading.Lock()
        self._file: IO[str] | None = None
        if transcript is not None:
            transcript.parent.mkdir(parents=True, exist_ok=True)
            self._file = transcript.open("a", encoding="utf-8")

    def event(self, name: Any, data: Any, at: str | None = None) -> None:
        with self._lock:
            at = at if at is not None or self.clock is None else self.clock()
            self._keep(name, data, at)
            for w in self._transcriber.feed(name, data, at):
                self.sink.write(w)
            if name == "gameEnd":
                self.ended = True

    def gap(self, why: str) -> None:
        """The connection was lost: whatever was in progress cannot be seen whole."""
        with self._lock:
            self._keep(DISCONNECT, {"reason": why}, self.clock() if self.clock else None)
            self._transcriber.cut(why)

    def close(self, why: str) -> None:
        """The stream ends: the game in progress is written as far as it was seen whole."""
        with self._lock:
            for w in self._transcriber.close(why):
                self.sink.write(w)
            if self._file is not None:
                self._file.close()
                self._file = None

    def _keep(self, name: Any, data: Any, at: str | None) -> None:
        if self._file is not None:
            entry = {"event": name, "data": data, **({"at": at} if at else {})}
            try:
                self._file.write(json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n")
                self._file.flush()
            except (OSError, TypeError, ValueError) as exc:
                self.sink.say(f"{self._file.name}: the transcript is not kept any more: {exc}")
                self._file = None


def replay_files(paths: Iterable[Path], sink: Sink) -> None:
    """Saved transcripts (``.jsonl`` or ``.jsonl.gz``) through the same :class:`Watch` as a live game."""
    for path in paths:
        watch = Watch(sink, clock=None)
        try:
            with _open(path) as f:
                for number, line in enumerate(f, 1):
                    _replay_line(watch, path, number, line)
        except (OSError, EOFError, UnicodeDecodeError) as exc:
            sink.say(f"{path}: cannot read it to the end: {getattr(exc, 'strerror', None) or exc}")
            watch.gap(f"{path} could not be read to the end")
        watch.close(f"{path} ends before gameEnd")


def _replay_line(watch: Watch, path: Path, number: int, line: str) -> None:
    if not line.strip():
        return
    entry = read_entry(line)
    if entry is None:
        watch.gap(f"{path}:{number} is not an event {{event, data}}")
        return
    at = entry.get("at")
    if entry["event"] == DISCONNECT:
        watch.gap(f"the connection was lost ({path}:{number})")
    else:
        watch.event(entry["event"], entry.get("data"), at if isinstance(at, str) else None)


def _open(path: Path) -> IO[str]:
    if path.name.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8")
    return path.open(encoding="utf-8")

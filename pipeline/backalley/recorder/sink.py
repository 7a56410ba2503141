"""Where a recorded game goes: appended to a JSON Lines file and/or uploaded to ``backalley serve``; a line on the terminal."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from backalley.records.observed import Written
from backalley.validate import check

#: Tries of one upload, and the pause before the first retry (doubled each time).
UPLOAD_TRIES = 4
UPLOAD_PAUSE = 1.0
#: Seconds an upload may take.
UPLOAD_TIMEOUT = 60.0


class SinkError(Exception):
    """A destination that cannot be used (its message says which and why)."""


@dataclass(frozen=True)
class Upload:
    """``backalley serve``'s upload API at ``url`` (its root), with an API token."""

    url: str
    token: str
    pause: float = UPLOAD_PAUSE

    def send(self, line: bytes) -> str:
        """Upload one record; its fate as the service says it (``stored``, ``duplicate``…), or why it failed."""
        request = urllib.request.Request(
            self.url.rstrip("/") + "/api/v1/games",
            data=line,
            method="POST",
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {self.token}"},
        )
        why = ""
        for k in range(UPLOAD_TRIES):
            if k:
                time.sleep(self.pause * 2 ** (k - 1))
            try:
                with urllib.request.urlopen(request, timeout=UPLOAD_TIMEOUT) as answer:
                    body = json.loads(answer.read())
                return str(body["results"][0]["fate"])
            except urllib.error.HTTPError as exc:
                why = f"HTTP {exc.code} {exc.reason}"
                if exc.code < 500:
                    break  # (a wrong token or address: trying again changes nothing)
            except (OSError, ValueError, LookupError, TypeError) as exc:
                why = str(getattr(exc, "reason", None) or exc) or type(exc).__name__
        return f"upload failed ({why})"


class Sink:
    """Writes each game handed to it (thread-safe: several games may end at once) and says what it did."""

    def __init__(self, out: Path | None, upload: Upload | None, say: Callable[[str], None]) -> None:
        self.out = out
        self.upload = upload
        self.say = say
        self.written = 0
        self._lock = threading.Lock()
        if out is not None:
            try:
                out.parent.mkdir(parents=True, exist_ok=True)
                out.open("ab").close()
            except OSError as exc:
                raise SinkError(f"{out}: cannot append to it: {exc.strerror or exc}") from None

    def write(self, w: Written) -> None:
        name = w.game_id or "a game"
        with self._lock:
            for note in w.notes:
                self.say(f"game {name}: {note}")
            if w.record is None:
                return
            line = json.dumps(w.record, ensure_ascii=False, separators=(",", ":")).encode()
            where = [self._append(line), *([self.upload.send(line)] if self.upload else [])]
            self.written += 1
            self.say(f"wrote game {name}: {_summary(line)}; {'; '.join(p for p in where if p)}")

    def _append(self, line: bytes) -> str:
        if self.out is None:
            return ""
        try:
            with self.out.open("ab") as f:
                f.write(line + b"\n")
        except OSError as exc:
            return f"NOT appended to {self.out}: {exc.strerror or exc}"
        return f"appended to {self.out}"


def _summary(line: bytes) -> str:
    """How many deals, and what ``backalley validate`` says of the record."""
    r = check(line)
    errors = sorted({v.code for v in r.violations if v.severity == "error"})
    state = "valid" if r.valid else "invalid: " + ", ".join(errors)
    whole = "complete" if r.complete else "incomplete"
    return f"{r.scored_deals} of {r.deals_to_play} deals ({len(r.deals)} dealings), {whole}, {state}"

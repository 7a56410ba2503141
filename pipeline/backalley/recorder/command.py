"""``backalley record bab-online``: what the command does, for the CLI to call (docs/recording.md)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from backalley.recorder.sink import Sink, SinkError, Upload

#: Exit statuses: done; the recorder stopped on an error (no answer, a refused sign-in); a bad option.
DONE, FAILED, USAGE = 0, 1, 2


@dataclass
class Request:
    """The command's options, as given."""

    url: str = ""
    user: str = ""
    password_file: Path | None = None
    games: list[str] = field(default_factory=list)
    every_game: bool = False
    out: Path | None = None
    upload: str | None = None
    token_file: Path | None = None
    transcripts: Path | None = None
    replay: Sequence[Path] = ()


def _secret(path: Path, what: str) -> str:
    """The first line of ``path`` (a password or a token file), stripped."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SinkError(f"{path}: cannot read the {what} file: {getattr(exc, 'strerror', None) or exc}") from None
    lines = text.splitlines()
    if not lines or not lines[0].strip():
        raise SinkError(f"{path}: the {what} file is empty (its first line is the {what})")
    return lines[0].strip()


def _check(req: Request) -> None:
    if req.out is None and req.upload is None:
        raise SinkError("say where the records go: --out FILE.jsonl and/or --upload URL --token-file FILE")
    if (req.upload is None) != (req.token_file is None):
        raise SinkError("--upload URL and --token-file FILE go together")
    if req.replay:
        if req.games or req.every_game or req.transcripts or req.url:
            raise SinkError("--replay reads transcripts: no server, --game, --all or --save-transcript with it")
        return
    if not req.url or not req.user or req.password_file is None:
        raise SinkError("give the server's address, --user NAME and --password-file FILE (or --replay FILE...)")
    if bool(req.games) == req.every_game:
        raise SinkError("say which games to watch: --game ID (repeatable) or --all")


def record_bab_online(req: Request, say: Callable[[str], None]) -> int:
    """Record games of a bab-online server (or replay saved transcripts); the exit status."""
    try:
        _check(req)
        upload = Upload(req.upload, _secret(req.token_file, "token")) if req.upload and req.token_file else None
        sink = Sink(req.out, upload, say)
        if req.replay:
            from backalley.recorder.watch import replay_files

            replay_files(req.replay, sink)
            say(f"{sink.written} game{'s' * (sink.written != 1)} written")
            return DONE
        assert req.password_file is not None
        password = _secret(req.password_file, "password")
    except SinkError as exc:
        say(str(exc))
        return USAGE
    from backalley.recorder.live import Options, Recorder, RecorderError

    try:
        recorder = Recorder(Options(req.url, req.user, password, req.games, req.transcripts), sink, say)
        recorder.run()
    except RecorderError as exc:
        say(str(exc))
        return FAILED
    return DONE

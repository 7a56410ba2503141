"""The live spectator: signs in to a bab-online server over Socket.IO and watches games.

bab-online's server (its Socket.IO events, as its own web client uses them):

- ``signIn {username, password}`` → ``signInResponse {success, message, sessionToken}``;
  ``restoreSession {username, sessionToken}`` → ``restoreSessionResponse {success, message}``
  signs a further connection in without the password (and without signing the others out);
- ``joinMainRoom`` → ``mainRoomJoined {inProgressGames}``, then ``lobbiesUpdated
  {inProgressGames}`` whenever games start or end (each game ``{gameId, players, …}``);
- ``joinAsSpectator {gameId}`` → ``spectatorJoined {…}`` and from then on every event of the
  game, or ``error {message}`` (``Game not found``).

The events of a game do not say which game they belong to, so every watched game has a
connection of its own (:class:`GameWatch`); the main connection signs in, and with ``--all``
listens for the games in progress. Every connection reconnects after it drops, with a backoff,
and a game's connection joins the game again: the dealing that was in progress is lost
(:meth:`Watch.gap`), the record goes on only if the next dealing fits.
"""

from __future__ import annotations

import contextlib
import random
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import engineio  # type: ignore[import-untyped]
import socketio  # type: ignore[import-untyped]

from backalley.recorder.sink import Sink
from backalley.recorder.watch import Watch

#: Seconds to wait for the server to answer a sign-in or a join.
ANSWER_TIMEOUT = 15.0
#: The most games watched at once (each is a connection).
MAX_GAMES = 64
#: Seconds Ctrl-C waits, in all, for the games' connections to close.
STOP_WAIT = 10.0
#: Why a game in progress ends its record when the recorder stops.
STOPPED = "the recorder stopped before the game ended"
#: A game id as bab-online makes them (a UUID); anything else is refused before it names a file.
GAME_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


class RecorderError(Exception):
    """The recorder cannot go on (its message says why): bad credentials, no answer, a bad option."""


@dataclass(frozen=True)
class Backoff:
    """Pauses between connection attempts: ``first``, doubling up to ``most`` seconds, ±25 % jitter."""

    first: float = 1.0
    most: float = 30.0

    def pause(self, attempt: int) -> float:
        base = min(self.most, self.first * 2 ** min(attempt, 30))
        return float(base * random.uniform(0.75, 1.25))


@dataclass
class Options:
    url: str
    user: str
    password: str
    games: list[str] = field(default_factory=list)  # empty: every game in progress (``--all``)
    transcripts: Path | None = None
    backoff: Backoff = field(default_factory=Backoff)
    #: Connection attempts before the first sign-in gives up (a server that answers nothing).
    first_tries: int = 5
    timeout: float = ANSWER_TIMEOUT


class _Answers:
    """Replies awaited on one connection: the first payload of each named event after :meth:`expect`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: dict[str, threading.Event] = {}
        self._got: dict[str, Any] = {}

    def expect(self, event: str) -> None:
        with self._lock:
            self._waiting[event] = threading.Event()
            self._got.pop(event, None)

    def offer(self, event: str, data: Any) -> bool:
        with self._lock:
            waiting = self._waiting.pop(event, None)
            if waiting is None:
                return False
            self._got[event] = data
            waiting.set()
            return True

    def wait(self, event: str, timeout: float) -> Any:
        with self._lock:
            waiting = self._waiting.get(event)
        if waiting is not None and not waiting.wait(timeout):
            raise RecorderError(f"the server answered nothing to {event.removesuffix('Response')} within {timeout:g} s")
        with self._lock:
            return self._got.pop(event, None)


class _InOrder(engineio.Client):  # type: ignore[misc]
    """Engine.IO's client, handling each message before it reads the next.

    Its own starts a thread per message, so that two events sent one after the other may be
    handled in the other order: a game's cards would then come out of turn. Only Socket.IO's
    event packets (type ``2``) are handled in the reading thread; the others (a disconnect, which
    joins that thread) as before. (Engine.IO's ``_trigger_event``; tests/test_recorder.py fails if
    this stops holding.)
    """

    def _trigger_event(self, event: str, *args: Any, **kwargs: Any) -> Any:
        if event == "message" and args and isinstance(args[0], str) and args[0][:1] == "2":
            kwargs["run_async"] = False
        return super()._trigger_event(event, *args, **kwargs)


class _Client(socketio.Client):  # type: ignore[misc]
    """A Socket.IO client that handles a connection's events in the order they came, and does not
    reconnect by itself (the recorder does, to rejoin its game)."""

    def _engineio_client_class(self) -> type[engineio.Client]:
        return _InOrder


def _client() -> Any:
    return _Client(reconnection=False, logger=False, engineio_logger=False)


def _why(exc: BaseException) -> str:
    """An exception as a short reason (a refused connection, not the HTTP library's whole chain)."""
    text = str(exc) or type(exc).__name__
    for short in ("Connection refused", "timed out", "Name or service not known", "No route to host"):
        if short in text:
            return short.lower()
    return text if len(text) <= 120 else text[:117] + "..."


def _ok(answer: Any) -> tuple[bool, str]:
    if isinstance(answer, dict) and answer.get("success") is True:
        return True, ""
    message = answer.get("message") if isinstance(answer, dict) else None
    return False, str(message or "no reason given")


class GameWatch:
    """One game watched on a connection of its own, rejoined after every drop until the game ends."""

    def __init__(self, recorder: Recorder, game_id: str) -> None:
        self.recorder = recorder
        self.game_id = game_id
        path = None
        if recorder.options.transcripts is not None:
            path = recorder.options.transcripts / f"bab-online-{game_id}.jsonl"
        self.watch = Watch(recorder.sink, path)
        self.done = threading.Event()
        self._dropped = threading.Event()
        self._answers = _Answers()
        self._joined = False
        self._refused: str | None = None
        self._stopped = False
        self.thread = threading.Thread(target=self._run, name=f"watch {game_id}", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        """Stop watching (Ctrl-C): the thread ends at its next step (:meth:`finish` writes what was seen whole)."""
        self._stopped = True
        self.done.set()
        self._dropped.set()

    def finish(self, deadline: float) -> None:
        """After :meth:`stop`: wait for the thread until ``deadline`` (monotonic), and write what was seen whole."""
        self.thread.join(max(0.0, deadline - time.monotonic()))
        self.watch.close(STOPPED)

    def _run(self) -> None:
        say, attempt = self.recorder.say, 0
        while not self.done.is_set():
            client = _client()
            client.on("*", self._on_event)
            client.on("disconnect", lambda *_: self._dropped.set())
            self._dropped.clear()
            self._joined = False
            try:
                why = self._join(client)
            except (socketio.exceptions.SocketIOError, RecorderError, OSError, ValueError) as exc:
                why = _why(exc)
            if why is None:
                attempt = 0
                self._dropped.wait()
                if not self.done.is_set():
                    self.watch.gap("the connection was lost")
                    why = "the connection was lost"
            self._disconnect(client)
            if self.done.is_set():
                break
            if why == "over":
                break
            pause = self.recorder.options.backoff.pause(attempt)
            attempt += 1
            say(f"game {self.game_id}: {why}; joining again in {pause:.1f} s")
            if self.done.wait(pause):
                break
        self.done.set()
        self.watch.close(STOPPED if self._stopped else "the game ended before gameEnd was seen")
        self.recorder.finished(self)

    def _join(self, client: Any) -> str | None:
        """Connect, sign in and join the game; ``None`` once watching, ``"over"`` if the game is gone, else why not."""
        opts = self.recorder.options
        client.connect(opts.url, wait_timeout=opts.timeout)
        self._answers.expect("restoreSessionResponse")
        client.emit("restoreSession", {"username": opts.user, "sessionToken": self.recorder.session_token})
        ok, message = _ok(self._answers.wait("restoreSessionResponse", opts.timeout))
        if not ok:
            self.recorder.say(f"game {self.game_id}: the server refused the session ({message}); not watching it")
            return "over"
        client.emit("joinAsSpectator", {"gameId": self.game_id})
        deadline = time.monotonic() + opts.timeout
        while not (self._joined or self._refused or self._dropped.is_set()) and time.monotonic() < deadline:
            time.sleep(0.02)
        if self._refused is not None:
            self.recorder.say(f"game {self.game_id}: the server says {self._refused!r}; not watching it")
            return "over"
        if not self._joined:
            return f"the server answered nothing to joinAsSpectator within {opts.timeout:g} s"
        self.recorder.say(f"watching game {self.game_id}")
        return None

    def _on_event(self, event: str, data: Any = None) -> None:
        if event == "error":
            message = data.get("message") if isinstance(data, dict) else None
            if not self._joined and message:
                self._refused = str(message)
            return
        if self._answers.offer(event, data) and event == "restoreSessionResponse":
            return
        if event == "spectatorJoined" and isinstance(data, dict) and "gameId" in data:
            self._joined = True
        if self._joined or event != "spectatorJoined":
            self.watch.event(event, data)
        if self.watch.ended:
            self.done.set()
            self._dropped.set()

    @staticmethod
    def _disconnect(client: Any) -> None:
        with contextlib.suppress(socketio.exceptions.SocketIOError, OSError, ValueError):
            client.disconnect()


class Recorder:
    """Signs in, finds the games to watch, watches each until it ends; :meth:`run` blocks until done."""

    def __init__(self, options: Options, sink: Sink, say: Callable[[str], None]) -> None:
        for game_id in options.games:
            if not GAME_ID.match(game_id):
                raise RecorderError(f"{game_id!r} is not a game id")
        self.options = options
        self.sink = sink
        self.say = say
        self.session_token = ""
        self.watches: dict[str, GameWatch] = {}
        self._lock = threading.Lock()
        self._all_done = threading.Event()
        self._stopping = False
        self._main: Any = None
        self._answers = _Answers()

    def run(self) -> None:
        """Watch until every game named has ended (``--all``: until Ctrl-C, which ends it cleanly)."""
        try:
            self._sign_in()
            if self.options.games:
                for game_id in self.options.games:
                    self._watch(game_id)
            else:
                self._listen()
            while not self._all_done.wait(0.2):
                pass
        except KeyboardInterrupt:
            self.say("stopping (Ctrl-C): writing what was seen whole")
        finally:
            self._stop()

    def finished(self, watch: GameWatch) -> None:
        with self._lock:
            if self.options.games and all(w.done.is_set() for w in self.watches.values()):
                self._all_done.set()

    # --- the main connection -------------------------------------------------------------------

    def _sign_in(self) -> None:
        opts = self.options
        for attempt in range(opts.first_tries):
            main = _client()
            main.on("*", self._on_main)
            try:
                main.connect(opts.url, wait_timeout=opts.timeout)
            except (socketio.exceptions.SocketIOError, OSError, ValueError) as exc:
                if attempt + 1 == opts.first_tries:
                    raise RecorderError(f"cannot connect to {opts.url}: {_why(exc)}") from None
                pause = opts.backoff.pause(attempt)
                self.say(f"cannot connect to {opts.url} ({_why(exc)}); trying again in {pause:.1f} s")
                time.sleep(pause)
                continue
            self._main = main
            break
        self._answers.expect("signInResponse")
        self._main.emit("signIn", {"username": opts.user, "password": opts.password})
        answer = self._answers.wait("signInResponse", opts.timeout)
        ok, message = _ok(answer)
        if not ok:
            raise RecorderError(f"{opts.url} refused the sign-in of {opts.user!r}: {message}")
        self.session_token = str(answer.get("sessionToken") or "")
        self.say(f"signed in to {opts.url} as {opts.user}")

    def _listen(self) -> None:
        """``--all``: the games in progress now, and each that starts later."""
        self._main.emit("joinMainRoom")
        self._main.on("disconnect", lambda *_: threading.Thread(target=self._rejoin_main, daemon=True).start())
        self.say("watching every game in progress, and each new one as it starts")

    def _rejoin_main(self) -> None:
        attempt = 0
        while not self._stopping:
            pause = self.options.backoff.pause(attempt)
            self.say(f"the connection to {self.options.url} was lost; connecting again in {pause:.1f} s")
            time.sleep(pause)
            attempt += 1
            main = _client()
            main.on("*", self._on_main)
            try:
                main.connect(self.options.url, wait_timeout=self.options.timeout)
                self._answers.expect("restoreSessionResponse")
                main.emit("restoreSession", {"username": self.options.user, "sessionToken": self.session_token})
                ok, message = _ok(self._answers.wait("restoreSessionResponse", self.options.timeout))
            except (socketio.exceptions.SocketIOError, RecorderError, OSError, ValueError):
                continue
            if not ok:
                self.say(f"the server refused the session ({message}); stopping")
                self._all_done.set()
                return
            self._main = main
            self._listen()
            return

    def _on_main(self, event: str, data: Any = None) -> None:
        if self._answers.offer(event, data):
            return
        if event in ("mainRoomJoined", "lobbiesUpdated") and isinstance(data, dict):
            for game in data.get("inProgressGames") or []:
                game_id = game.get("gameId") if isinstance(game, dict) else None
                if isinstance(game_id, str) and GAME_ID.match(game_id):
                    self._watch(game_id)

    def _watch(self, game_id: str) -> None:
        with self._lock:
            if game_id in self.watches or self._stopping:
                return
            if sum(1 for w in self.watches.values() if not w.done.is_set()) >= MAX_GAMES:
                self.say(f"game {game_id}: not watched, {MAX_GAMES} games are watched already")
                return
            watch = self.watches[game_id] = GameWatch(self, game_id)
        watch.start()

    def _stop(self) -> None:
        self._stopping = True
        running = [w for w in list(self.watches.values()) if not w.done.is_set()]
        for watch in running:
            watch.stop()
        deadline = time.monotonic() + STOP_WAIT
        for watch in running:
            watch.finish(deadline)
        if self._main is not None:
            GameWatch._disconnect(self._main)
        self.say(f"{self.sink.written} game{'s' * (self.sink.written != 1)} written")

"""A stand-in for a bab-online server in the tests: python-socketio's server replaying a fixture game.

It answers the events a spectator sends as bab-online's server does (``signIn``, ``restoreSession``,
``joinMainRoom``, ``joinAsSpectator``) and streams the fixture's events to each spectator from the
game's current point on. It can drop a spectator's connection at an event (and go on, after the
rejoin, from a later one: the events between are lost to it), start the game further on (a join
after it began) and hold the stream at an event (a game still running).
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import socketio
import uvicorn

PASSWORD = "correct horse"
TOKEN = "5f2b7a2e-0000-4000-8000-000000000001"


@dataclass
class Game:
    events: list[dict[str, Any]]
    start_at: int = 0
    drop_at: int | None = None  # drop the spectator's connection before sending this event
    resume_at: int | None = None  # after the drop, the game has gone on to this event
    hold_at: int | None = None  # send nothing from this event on
    cursor: int = 0
    dropped: bool = False
    joins: int = 0
    game_id: str = field(init=False)

    def __post_init__(self) -> None:
        self.events = [e for e in self.events if e["event"] != "spectatorJoined"]
        self.cursor = self.start_at
        self.game_id = next(e["data"]["gameId"] for e in self.events if e["event"] == "gameStart")


def server(game: Game) -> Any:
    sio = socketio.AsyncServer(async_mode="asgi", logger=False, engineio_logger=False)

    @sio.on("signIn")
    async def sign_in(sid: str, data: Any) -> None:
        ok = isinstance(data, dict) and data.get("password") == PASSWORD
        answer = {"success": True, "username": data["username"], "sessionToken": TOKEN} if ok else {
            "success": False, "message": "Invalid username or password!"
        }  # fmt: skip
        await sio.emit("signInResponse", answer, to=sid)

    @sio.on("restoreSession")
    async def restore(sid: str, data: Any) -> None:
        ok = isinstance(data, dict) and data.get("sessionToken") == TOKEN
        await sio.emit("restoreSessionResponse", {"success": ok, "message": None if ok else "Invalid session token"},
                       to=sid)  # fmt: skip

    @sio.on("joinMainRoom")
    async def main_room(sid: str, data: Any = None) -> None:
        live = [{"gameId": game.game_id, "players": []}] if game.cursor < len(game.events) else []
        await sio.emit("mainRoomJoined", {"messages": [], "lobbies": [], "inProgressGames": live}, to=sid)

    @sio.on("joinAsSpectator")
    async def join(sid: str, data: Any) -> None:
        if not isinstance(data, dict) or data.get("gameId") != game.game_id or game.cursor >= len(game.events):
            await sio.emit("error", {"message": "Game not found"}, to=sid)
            return
        game.joins += 1
        snapshot = {"gameId": game.game_id, "players": [], "phase": "playing", "bidding": False, "trump": None}
        await sio.emit("spectatorJoined", snapshot, to=sid)
        await sio.emit("spectatorJoined", {"username": "recorder", "spectatorCount": 1}, to=sid)
        sio.start_background_task(stream, sid)

    async def stream(sid: str) -> None:
        while game.cursor < len(game.events):
            k = game.cursor
            if k == game.hold_at:
                return
            if k == game.drop_at and not game.dropped:
                game.dropped = True
                game.cursor = game.resume_at if game.resume_at is not None else k
                await sio.disconnect(sid)
                return
            e = game.events[k]
            await sio.emit(e["event"], e["data"], to=sid)
            game.cursor = k + 1
            if k % 50 == 0:
                await asyncio.sleep(0)

    return socketio.ASGIApp(sio)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serving(app: Any) -> Iterator[str]:
    """``app`` served by uvicorn on 127.0.0.1 in a thread; its URL."""
    port = free_port()
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error", lifespan="off"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not srv.started and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        srv.should_exit = True
        thread.join(20)

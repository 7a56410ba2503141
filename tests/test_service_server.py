"""A real ``backalley serve`` on 127.0.0.1, for what only the server shows: clients that go away or stall."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from backalley.service.bodies import BodyLimit
from backalley.service.problems import Problem

TOKEN = "server-token-0123456789"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def request(port: int, raw: bytes, timeout: float = 20.0) -> bytes:
    """Send ``raw`` and read the answer until the server closes or stops sending."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(raw)
        s.shutdown(socket.SHUT_WR)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
        return out


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[int, subprocess.Popen[bytes], Path]]:
    tokens = tmp_path / "tokens"
    tokens.write_text(TOKEN + "\n")
    port = free_port()
    log = tmp_path / "serve.log"
    with log.open("wb") as err:
        args = ["serve", "--db", str(tmp_path / "s.duckdb"), "--port", str(port), "--tokens", str(tokens)]
        proc = subprocess.Popen(
            [sys.executable, "-m", "backalley", *args, "--workers", "1"],
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                try:
                    if request(port, b"GET /api/v1/openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").startswith(
                        b"HTTP/1.1 200"
                    ):
                        break
                except OSError:
                    time.sleep(0.2)
            else:
                pytest.fail("backalley serve did not start: " + log.read_text())
            yield port, proc, log
        finally:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)


def test_a_client_that_goes_away_mid_upload_is_one_log_line(server: tuple[int, Any, Path]) -> None:
    port, _, log = server
    head = (
        "POST /api/v1/games HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-ndjson\r\n"
        f"Authorization: Bearer {TOKEN}\r\nContent-Length: 100000\r\n\r\n"
    ).encode()
    for _ in range(3):
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(head + b'{"game_id": "x"')
        # the server notices the closed connection; what it logs is bounded
    time.sleep(1.5)
    ok = request(port, b"GET /api/v1/openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    assert ok.startswith(b"HTTP/1.1 200")
    text = log.read_text()
    assert "Traceback" not in text and "500" not in text
    gone = [x for x in text.splitlines() if "went away" in x]
    assert len(gone) == 3 and all(len(x) < 200 for x in gone), text


def test_serve_bounds_idle_connections_and_headers(server: tuple[int, Any, Path]) -> None:
    port, _, _ = server
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:  # kept alive, then idle: closed
        s.sendall(b"GET /api/v1/openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        start = time.monotonic()
        while s.recv(65536):
            pass
        assert time.monotonic() - start < 20
    rebound = request(port, b"GET /players HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n")
    assert rebound.startswith(b"HTTP/1.1 400") and b"evil.example/" not in rebound
    huge = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: " + b"a" * 40_000 + b"\r\n\r\n"
    try:
        answer = request(port, huge)
    except ConnectionResetError:
        answer = b""
    assert not answer.startswith(b"HTTP/1.1 200")


def test_half_sent_headers_are_cut_off(server: tuple[int, Any, Path]) -> None:
    """20,400 half-sent requests held the service's file descriptors until they closed."""
    from backalley.service.server import HEADER_TIMEOUT

    port, _, _ = server
    with socket.create_connection(("127.0.0.1", port), timeout=HEADER_TIMEOUT + 20) as s:
        s.sendall(b"GET /api/v1/openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # never the blank line
        start = time.monotonic()
        assert s.recv(65536) == b""  # closed by the server
        assert HEADER_TIMEOUT - 1 <= time.monotonic() - start < HEADER_TIMEOUT + 15


def test_token_create_while_serving_says_what_to_do(server: tuple[int, Any, Path], tmp_path: Path) -> None:
    locked = subprocess.run(
        [sys.executable, "-m", "backalley", "token", "create", "late", "--db", str(tmp_path / "s.duckdb")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert locked.returncode == 2 and "Traceback" not in locked.stderr
    assert "stop the service, run this command, and start it again" in " ".join(locked.stderr.split())


def test_a_body_that_stalls_is_answered_408() -> None:
    sent: list[dict[str, Any]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await receive()

    async def stall() -> dict[str, Any]:
        await asyncio.sleep(60)
        return {"type": "http.request", "body": b""}

    async def send(message: Any) -> None:
        sent.append(message)

    limit = BodyLimit(app, 1000, timeout=0.2)
    with pytest.raises(Problem) as caught:
        asyncio.run(limit({"type": "http", "path": "/api/v1/games", "headers": []}, stall, send))
    assert caught.value.status == 408 and "0.2 s" in caught.value.detail

"""Request bodies turned into input records, with the service's limits.

A body is one record (``application/json``), many (``application/x-ndjson``,
one per line), score sheets as CSV (``text/csv``, docs/sheets.md: each game one
record) or a file in a ``multipart/form-data`` form (field ``file``; a name
ending in ``.json`` holds one record, in ``.csv`` score sheets, anything else
one per line). Each
record becomes an :class:`~backalley.records.sources.Item` named ``source`` (and its
line), as ``backalley ingest`` names the records of a file.
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import orjson
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException
from starlette.formparsers import MultiPartException
from starlette.requests import Request

from backalley.records.sheets import csv_items, is_csv
from backalley.records.sources import Item
from backalley.service.problems import API_PREFIX, PROBLEM_TYPE, Problem, plain_error_page, problem_body

JSON = "application/json"
NDJSON = "application/x-ndjson"
MULTIPART = "multipart/form-data"
CSV = "text/csv"
ACCEPTED = (JSON, NDJSON, CSV, MULTIPART)

#: The source name of records sent in a request body (a multipart upload uses its file name).
UPLOAD_SOURCE = "upload"


def media_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";")[0].strip().lower()


#: The first bytes of a gzip stream.
GZIP_MAGIC = b"\x1f\x8b"


def check_encoding(request: Request) -> None:
    """A compressed body is refused (415): the service reads records as sent, never decompresses them."""
    coding = request.headers.get("content-encoding", "").strip().lower()
    if coding not in ("", "identity"):
        raise Problem(415, f"Content-Encoding {coding!r} is not accepted: send the body uncompressed")


def records(body: bytes, source: str, jsonl: bool, csv: bool = False) -> list[Item]:
    """The records of a body or file (a record over the size limit is the service's to refuse:
    :meth:`backalley.service.state.Service.upload`); a gzip-compressed one is refused (415).
    ``csv``: score sheets, each game one record."""
    if body.startswith(GZIP_MAGIC):
        raise Problem(415, f"{source}: the body is gzip-compressed, which is not accepted: send it uncompressed")
    if csv:
        return list(csv_items(source, io.BytesIO(body)))
    if not jsonl:
        return [Item(source, None, body)]
    items = []
    for number, line in enumerate(body.split(b"\n"), 1):
        raw = line.rstrip(b"\r")
        if raw and not raw.isspace():
            items.append(Item(source, number, raw))
    return items


async def form_file(request: Request) -> tuple[str, bytes, dict[str, str]]:
    """``(file name, content, other fields)`` of a multipart form with a ``file`` field; 400 when malformed."""
    try:
        form = await request.form()
    except (MultiPartException, HTTPException) as exc:
        raise Problem(400, f"malformed multipart body: {getattr(exc, 'detail', None) or exc}") from None
    upload = form.get("file")
    fields = {k: v for k, v in form.items() if isinstance(v, str)}
    if not isinstance(upload, UploadFile):
        raise Problem(400, "the multipart form has no file in a field named 'file'")
    content = await upload.read()
    name = upload.filename or UPLOAD_SOURCE
    await form.close()
    return name, content, fields


async def read_items(request: Request) -> list[Item]:
    """The records of an API request body (any of the three media types); 415 for any other."""
    check_encoding(request)
    kind = media_type(request)
    if kind not in ACCEPTED:
        raise Problem(415, f"content type {kind or '(none)'!r} is not accepted; send one of {', '.join(ACCEPTED)}")
    if kind == MULTIPART:
        name, content, _ = await form_file(request)
        return file_records(content, name)
    body = await request.body()
    return records(body, UPLOAD_SOURCE, kind == NDJSON, kind == CSV)


def file_records(content: bytes, name: str) -> list[Item]:
    """The records of an uploaded file, read by its name as ``backalley ingest`` reads a file."""
    return records(content, name, not name.lower().endswith(".json"), is_csv(name))


Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


async def refuse(scope: Scope, send: Send, p: Problem) -> None:
    """Answer ``p`` without running the application (and without reading the body)."""
    path = str(scope.get("path", ""))
    if path.startswith(API_PREFIX):
        body, kind = orjson.dumps(problem_body(p.status, p.detail, path)), PROBLEM_TYPE
    else:
        body, kind = plain_error_page(p.status, p.detail).encode(), "text/html; charset=utf-8"
    headers = [
        (b"content-type", kind.encode()),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
    ]
    await send({"type": "http.response.start", "status": p.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class BodyLimit:
    """ASGI middleware: a body over ``limit`` bytes (``paths[path]`` for the paths named there) is refused
    (413) before or while it is read."""

    def __init__(
        self,
        app: Callable[[Scope, Receive, Send], Awaitable[None]],
        limit: int,
        paths: dict[str, int] | None = None,
        timeout: float | None = None,
    ) -> None:
        self.app = app
        self.limit = limit
        self.paths = paths or {}
        self.timeout = timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.paths.get(str(scope.get("path", "")), self.limit)
        too_large = f"the request body is over the {limit:,}-byte limit"
        for name, value in scope.get("headers", []):
            if name == b"content-length" and value.isdigit() and int(value) > limit:
                await refuse(scope, send, Problem(413, too_large))
                return
        seen, done = 0, False

        async def limited() -> MutableMapping[str, Any]:
            nonlocal seen, done
            if done:  # the body is read: what comes next is the client's going away, whenever it does
                return await receive()
            try:
                message = await asyncio.wait_for(receive(), self.timeout)
            except TimeoutError:
                raise Problem(408, f"the request body did not arrive: nothing for {self.timeout:g} s") from None
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                done = not message.get("more_body", False)
                if seen > limit:
                    raise Problem(413, too_large)
            return message

        await self.app(scope, limited, send)

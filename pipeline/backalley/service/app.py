"""The ASGI application: the API and the pages on one :class:`~backalley.service.state.Service`."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractContextManager, asynccontextmanager, nullcontext
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect

import backalley
from backalley.service import api, keep, pages
from backalley.service.bodies import BodyLimit
from backalley.service.headers import Guard
from backalley.service.problems import API_PREFIX, Problem, problem_response
from backalley.service.settings import Settings
from backalley.service.state import Service
from backalley.store.database import StoreError

log = logging.getLogger("backalley.service")

#: How the database (or the system) says that the disk is full.
DISK_FULL = ("no space left on device", "disk is full", "not enough space")


def answer(request: Request, p: Problem) -> Response:
    """A problem document on the API, a plain page on the web side."""
    if request.url.path.startswith(API_PREFIX):
        return problem_response(p, request.url.path)
    response = pages.error_page(p.status, p.title, p.detail)
    response.headers.update(p.headers)
    return response


def create_app(
    settings: Settings, service: Service | None = None, running: Callable[[], AbstractContextManager[Any]] | None = None
) -> FastAPI:
    """The application; it opens the database (the only writer) now and closes it at shutdown.

    ``running()`` is entered for as long as the application runs (``serve``: the file beside the database
    that says where it runs; left in its shutdown, before uvicorn ends the process on a signal)."""
    svc = service if service is not None else Service(settings)
    svc.prepare_figures = pages.REPORT_PAGES.prepare

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        with running() if running is not None else nullcontext():
            svc.warm()  # the players' figures: computed from the start, in the background
            yield
        svc.close()

    app = FastAPI(
        title="backalley",
        version=backalley.__version__,
        description="Validate and store Back Alley game records; read games, deals and players.",
        openapi_url="/api/v1/openapi.json",
        docs_url=None,  # the interactive docs load scripts from another host
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.service = svc
    app.state.kept = keep.KeptFiles(svc.settings.db)
    app.include_router(api.router)
    app.include_router(pages.router)
    app.include_router(keep.router)
    app.add_middleware(
        BodyLimit,
        limit=settings.max_body,
        paths={api.VALIDATE: settings.validate_max_body},
        timeout=settings.body_timeout,
    )
    app.add_middleware(Guard, allowed=settings.allowed_hosts, private=settings.private)  # outermost

    @app.exception_handler(Problem)
    async def on_problem(request: Request, exc: Problem) -> Response:
        return answer(request, exc)

    @app.exception_handler(HTTPException)
    async def on_http(request: Request, exc: HTTPException) -> Response:
        detail = exc.detail if isinstance(exc.detail, str) else HTTPStatus(exc.status_code).phrase
        if exc.status_code == 404 and detail == "Not Found":
            detail = f"nothing at {request.url.path}"
        return answer(request, Problem(exc.status_code, detail, dict(exc.headers or {})))

    @app.exception_handler(RequestValidationError)
    async def on_invalid(request: Request, exc: RequestValidationError) -> Response:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()))
        return answer(
            request,
            Problem(400 if where.startswith(("body", "query")) else 404, f"{where}: {first.get('msg', 'invalid')}"),
        )

    @app.exception_handler(ClientDisconnect)
    async def on_gone(request: Request, _: ClientDisconnect) -> Response:
        """A client that went away mid-body: one line in the log; nobody reads the answer, nothing was stored."""
        client = request.client.host if request.client else "a client"
        log.warning("%s went away while sending %s %s: nothing stored", client, request.method, request.url.path)
        return Response(status_code=400)

    @app.exception_handler(StoreError)
    async def on_store(request: Request, exc: StoreError) -> Response:
        """The database failed while storing: said as it is (a full disk is a 507), never as stored."""
        said = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        log.error("%s %s: %s", request.method, request.url.path, said)
        kept = (
            "; what this upload committed before the failure stays (send it again: what is stored already"
            " is a duplicate, the rest is stored)"
        )
        if any(sign in said.lower() for sign in DISK_FULL):
            return answer(request, Problem(507, "the server's disk is full: this upload was not stored" + kept))
        return answer(request, Problem(503, "the database failed: this upload was not stored" + kept))

    @app.exception_handler(Exception)
    async def on_error(request: Request, exc: Exception) -> Response:
        log.exception("error answering %s %s", request.method, request.url.path)
        return answer(request, Problem(500, "the service failed to answer this request; it has been logged"))

    return app

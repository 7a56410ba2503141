"""The JSON API under ``/api/v1/`` (its OpenAPI description: ``/api/v1/openapi.json``)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response

from backalley.service import data
from backalley.service.auth import COOKIE, bearer
from backalley.service.bodies import ACCEPTED, NDJSON, read_items
from backalley.service.problems import PROBLEM_TYPE, Problem, unauthorized
from backalley.service.state import Service
from backalley.sources import dumps

router = APIRouter(prefix="/api/v1")

_BODY = {
    "requestBody": {
        "required": True,
        "description": "One record (application/json), one record per line (application/x-ndjson),"
        " or a file in the form field `file` (multipart/form-data; a name ending in .json holds one record).",
        "content": {kind: {"schema": {}} for kind in ACCEPTED},
    }
}
_PROBLEM = {"content": {PROBLEM_TYPE: {"schema": {"type": "object"}}}}
_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"description": "Malformed multipart body", **_PROBLEM},
    401: {"description": "Missing or wrong token", **_PROBLEM},
    413: {"description": "Body or record too large", **_PROBLEM},
    415: {"description": "Unsupported content type", **_PROBLEM},
}


def service(request: Request) -> Service:
    svc: Service = request.app.state.service
    return svc


def reader(request: Request) -> Service:
    """The service, for a read: in private mode the request needs a token (a header, or a signed-in browser's cookie)."""
    svc = service(request)
    if svc.settings.private:
        check_token(svc, request, cookie=True)
    return svc


def writer(request: Request) -> Service:
    """The service, for a write: the request needs a token."""
    svc = service(request)
    check_token(svc, request)
    return svc


def check_token(svc: Service, request: Request, cookie: bool = False) -> None:
    token = bearer(request.headers.get("authorization"))
    if token is None and cookie:
        token = request.cookies.get(COOKIE) or None
    if token is None:
        also = " (or sign in at /login in a browser)" if cookie else ""
        raise unauthorized(f"this needs an API token: send Authorization: Bearer <token>{also}")
    if not svc.token_ok(token):
        raise unauthorized("the API token is not known to this service")


@router.post(
    "/validate",
    summary="Validate records; stores nothing",
    response_class=Response,
    responses={200: {"description": "One JSON Lines report object per record", "content": {NDJSON: {}}}, **_ERRORS},
    openapi_extra=_BODY,
)
async def validate(request: Request, svc: Service = Depends(reader)) -> Response:
    items = await read_items(request, svc.settings.max_record)
    found = await run_in_threadpool(svc.reports, items)
    return Response(b"".join(dumps(r) + b"\n" for r in found), media_type=NDJSON)


@router.post(
    "/games",
    summary="Validate and store records",
    description="Per record its report and its fate: stored, duplicate, conflict (kept in `rejects`) or rejected"
    " (not a game). An upload of more records than the job threshold becomes a job: 202 and its address.",
    responses={202: {"description": "A job was started; poll its address"}, **_ERRORS},
    openapi_extra=_BODY,
)
async def upload(request: Request, svc: Service = Depends(writer)) -> Response:
    items = await read_items(request, svc.settings.max_record)
    if len(items) > svc.settings.job_threshold:
        job = svc.submit(items)
        href = f"/api/v1/jobs/{job.id}"
        return JSONResponse({**job.as_dict(), "href": href}, status_code=202, headers={"Location": href})
    result = await run_in_threadpool(svc.upload, items)
    return Response(dumps(result), media_type="application/json")


@router.get("/jobs/{job_id}", summary="An upload job: its progress, then its result", responses=_ERRORS)
def job(job_id: str, svc: Service = Depends(writer)) -> dict[str, Any]:
    found = svc.jobs.get(job_id)
    if found is None:
        raise Problem(404, f"no job {job_id!r} (jobs are kept in memory until the service stops)")
    return found.as_dict()


def _json(found: Any) -> Response:
    """A JSON answer written by orjson (FastAPI's own encoder walks every value in Python first)."""
    return Response(dumps(found), media_type="application/json")


_OBJECT: dict[int | str, dict[str, Any]] = {
    200: {"description": "Successful Response", "content": {"application/json": {"schema": {"type": "object"}}}}
}


@router.get(
    "/games/{game_id}",
    summary="A stored game: its figures, deals and violations",
    response_class=Response,
    responses=_OBJECT,
)
def game(game_id: str, svc: Service = Depends(reader)) -> Response:
    with svc.reader() as cur:
        found = svc.game_data(cur, game_id)
    if found is None:
        raise Problem(404, f"no game {game_id!r} is stored")
    return _json(found)


@router.get(
    "/games/{game_id}/deals/{n}",
    summary="One deal as recorded, with its replayed figures and violations",
    response_class=Response,
    responses=_OBJECT,
)
def deal(game_id: str, n: int, svc: Service = Depends(reader)) -> Response:
    with svc.reader() as cur:
        found = data.deal(cur, game_id, n, svc.record_text, svc.game_data, svc.trick_winners)
    if found is None:
        raise Problem(404, f"game {game_id!r} has no deal {n}")
    return _json(found.as_dict())


@router.get("/players/{player_id:path}", summary="A player's figures and games")
def player(player_id: str, svc: Service = Depends(reader)) -> dict[str, Any]:
    with svc.reader() as cur:
        found = data.player(cur, player_id)
    if found is None:
        raise Problem(404, f"no player {player_id!r} in the stored games")
    return found

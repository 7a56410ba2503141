"""The JSON API under ``/api/v1/`` (its OpenAPI description: ``/api/v1/openapi.json``)."""

from __future__ import annotations

import hmac
from typing import Annotated, Any
from urllib.parse import quote, urlencode

import pyarrow as pa
from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response

from backalley.records.sources import dumps
from backalley.replay import TOO_MANY
from backalley.rules import RULESETS
from backalley.service import data, downloads, listing
from backalley.service import sql as sqlrun
from backalley.service.auth import COOKIE, bearer
from backalley.service.bodies import ACCEPTED, NDJSON, read_items
from backalley.service.problems import PROBLEM_TYPE, Problem, unauthorized
from backalley.service.state import Service
from backalley.store.outcomes import DoubleDummy, double_dummy
from backalley.store.query import Format

router = APIRouter(prefix="/api/v1")

#: A deal's number in a path: digits only (``int()`` would read ``1_0`` as 10, `` 1`` or ``+1`` as 1).
DealNumber = Annotated[str, Path(pattern=r"^(0|[1-9][0-9]{0,8})$", description="1-based position in `deals`")]

_BODY = {
    "requestBody": {
        "required": True,
        "description": "One record (application/json), one record per line (application/x-ndjson),"
        " or a file in the form field `file` (multipart/form-data; a name ending in .json holds one record).",
        "content": {kind: {"schema": {}} for kind in ACCEPTED},
    }
}
_OBJECT: dict[int | str, dict[str, Any]] = {
    200: {"description": "Successful Response", "content": {"application/json": {"schema": {"type": "object"}}}}
}
_PROBLEM = {"content": {PROBLEM_TYPE: {"schema": {"type": "object"}}}}
_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"description": "Malformed multipart body", **_PROBLEM},
    401: {"description": "Missing or wrong token", **_PROBLEM},
    413: {
        "description": "Body too large (nothing stored), or records over the record limit: the problem names"
        " them, and its `records`, `fates`, `results` and `too_large` say what became of every record"
        " (the others are stored)",
        **_PROBLEM,
    },
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


def validator(request: Request) -> Service:
    """The service, for a validation: it needs a token unless the service runs with ``--public-validate``
    (and then still in private mode)."""
    svc = service(request)
    if not svc.settings.public_validate or svc.settings.private:
        check_token(svc, request)
    return svc


def check_token(svc: Service, request: Request, cookie: bool = False) -> None:
    token = bearer(request.headers.get("authorization"))
    if token is None and cookie:
        token = request.cookies.get(COOKIE) or None
    local = svc.settings.local_token
    if cookie and token is not None and local is not None and hmac.compare_digest(token.encode(), local.encode()):
        return  # the run's own read token (the file beside the database): reads only
    if token is None:
        also = " (or sign in at /login in a browser)" if cookie else ""
        raise unauthorized(f"this needs an API token: send Authorization: Bearer <token>{also}")
    if not svc.token_ok(token):
        raise unauthorized("the API token is not known to this service")


VALIDATE = "/api/v1/validate"


@router.post(
    "/validate",
    summary="Validate records; stores nothing",
    description="Needs a token, unless the service runs with `--public-validate`. Each request is bounded:"
    " its body (8 MiB), its records (5,000), the violations its reports list (10,000: the report past the"
    " bound ends with one `TOO_MANY` violation saying how many were left out, and later reports list none)"
    " and its answer (16 MiB); a request over a bound gets 413 and nothing is validated.",
    response_class=Response,
    responses={200: {"description": "One JSON Lines report object per record", "content": {NDJSON: {}}}, **_ERRORS},
    openapi_extra=_BODY,
)
async def validate(request: Request, svc: Service = Depends(validator)) -> Response:
    items = await read_items(request)
    most = svc.settings.validate_max_records
    if len(items) > most:
        raise Problem(413, f"{len(items):,} records: a validation takes at most {most:,}; send them in parts")
    found = await run_in_threadpool(svc.reports, items)
    answer = b"".join(dumps(r) + b"\n" for r in cap_violations(found, svc.settings.validate_max_violations))
    if len(answer) > svc.settings.validate_max_answer:
        raise Problem(
            413,
            f"the reports of these records come to {len(answer):,} bytes, over the"
            f" {svc.settings.validate_max_answer:,}-byte limit of an answer; send fewer records",
        )
    return Response(answer, media_type=NDJSON)


def cap_violations(reports: list[dict[str, Any]], most: int) -> list[dict[str, Any]]:
    """The reports, listing ``most`` violations in all: the report that reaches the bound ends with one
    ``TOO_MANY`` violation saying how many of its own were left out; later reports list none, each with
    its own ``TOO_MANY``. Their other fields (valid, complete, deals, score) are untouched. (Each report
    lists at most :data:`~backalley.replay.MAX_VIOLATIONS` and its own ``TOO_MANY`` already: the replay's cap.)"""
    left = most
    for r in reports:
        found = r["violations"]
        if len(found) > left:
            omitted = len(found) - left
            r["violations"] = [
                *found[:left],
                {
                    "code": TOO_MANY,
                    "severity": "error",
                    "message": f"{omitted:,} more violations left out: a validation lists at most {most:,}",
                    "path": "",
                    "deal": None,
                    "trick": None,
                    "seat": None,
                },
            ]
        left -= min(left, len(found))
    return reports


@router.post(
    "/games",
    summary="Validate and store records",
    description="Per record its report and its fate: stored, duplicate, conflict (kept in `rejects`) or rejected"
    " (not a game). An upload of more records than the job threshold becomes a job: 202 and its address.",
    responses={202: {"description": "A job was started; poll its address"}, **_ERRORS},
    openapi_extra=_BODY,
)
async def upload(request: Request, svc: Service = Depends(writer)) -> Response:
    items = await read_items(request)
    if len(items) > svc.settings.job_threshold:
        job = svc.submit(items)
        href = f"/api/v1/jobs/{job.id}"
        return JSONResponse({**job.as_dict(), "href": href}, status_code=202, headers={"Location": href})
    result = await run_in_threadpool(svc.upload, items)
    if result["too_large"]:
        raise Problem(413, too_large_detail(result["too_large"], svc.settings.max_record), **result)
    return Response(dumps(result), media_type="application/json")


def too_large_detail(where: list[str], limit: int) -> str:
    """The 413's one line: the records over the limit, and that the others were stored."""
    more = f" (and {len(where) - 1:,} more)" if len(where) > 1 else ""
    return (
        f"{where[0]}{more}: a record over the {limit:,}-byte limit is not read (it is kept as the reject"
        " too_large); every other record of the upload was stored or rejected as `results` says"
    )


@router.get(
    "/jobs/{job_id}",
    summary="An upload job: its progress, then its result",
    description="Jobs live until the service stops, and at most the 200 latest finished ones, with 512 MiB of"
    " results in all, are kept (the oldest finished are forgotten first: 404). A result over 256 KiB of JSON"
    " is kept on disk, not in memory.",
    response_class=Response,
    responses={**_OBJECT, **_ERRORS},
)
def job(job_id: str, svc: Service = Depends(writer)) -> Response:
    found = svc.jobs.get(job_id)
    if found is None:
        raise Problem(404, f"no job {job_id!r} (finished jobs are forgotten, the oldest first, and at a restart)")
    return Response(found.as_json(), media_type="application/json")


def _json(found: Any) -> Response:
    """A JSON answer written by orjson (FastAPI's own encoder walks every value in Python first)."""
    return Response(dumps(found), media_type="application/json")


def list_problem(exc: listing.ListError) -> Problem:
    return Problem(400, str(exc))


def game_filters(request: Request) -> listing.GameFilters:
    """The index's filters of a request (400 naming the bad one)."""
    wanted = ("player", "partner", "event", "ruleset", "status", "since", "until")
    try:
        return listing.GameFilters.parse({k: request.query_params.get(k) for k in wanted}, tuple(RULESETS))
    except listing.ListError as exc:
        raise list_problem(exc) from None


def games_list(
    svc: Service, filters: listing.GameFilters, sort: str | None, order: str | None, limit: int, after: str | None
) -> tuple[listing.Page, str, str]:
    """A page of the games index (400 for a bad sort or cursor), its sort and order."""
    try:
        key, direction = listing.read_sort(sort, order)
        with svc.reader() as cur:
            return listing.games_page(cur, svc.cursors, filters, key, direction, limit, after), key, direction
    except listing.ListError as exc:
        raise list_problem(exc) from None


def next_link(path: str, query: dict[str, str], cursor: str | None) -> str | None:
    return None if cursor is None else f"{path}?{urlencode({**query, 'after': cursor})}"


_LIST_LIMIT = Query(
    listing.DEFAULT_LIMIT, ge=1, le=listing.MAX_LIMIT, description=f"Rows of the page (1 to {listing.MAX_LIMIT})."
)
_AFTER = Query(
    None,
    max_length=listing.MAX_CURSOR_CHARS,
    description="The cursor of the page before, as its `next` link gives it (a cursor this service did not issue,"
    " or one of other filters, is refused: 400).",
)


@router.get(
    "/games",
    summary="The stored games, newest first: filtered, sorted, a page at a time",
    description='Keyset pagination: follow `next` (also a `Link: <…>; rel="next"` header) until it is null.'
    " Each game has its `href`. A bad filter, sort, limit or cursor is answered 400 (a problem document).",
    response_class=Response,
    responses={**_OBJECT, 400: {"description": "A bad filter, sort, limit or cursor", **_PROBLEM}},
)
def games_index(
    request: Request,
    player: str | None = Query(None, description="Games this player played (any seat)."),
    partner: str | None = Query(None, description="With `player`: the games where these two sat as partners."),
    event: str | None = Query(None, description="Games of this event."),
    ruleset: str | None = Query(None, description=f"Games of this ruleset ({', '.join(RULESETS)})."),
    status: str | None = Query(None, description=f"Games of this status ({', '.join(listing.STATUSES)})."),
    since: str | None = Query(None, description="Played at or after this date (YYYY-MM-DD) or ISO 8601 time."),
    until: str | None = Query(None, description="Played before the end of this date, or before this time."),
    sort: str | None = Query(None, description=f"Sort by: {', '.join(listing.SORTS)} (default played_at)."),
    order: str | None = Query(None, description="desc or asc (default: desc for dates and deals, else asc)."),
    limit: int = _LIST_LIMIT,
    after: str | None = _AFTER,
    svc: Service = Depends(reader),
) -> Response:
    filters = game_filters(request)
    page, key, direction = games_list(svc, filters, sort, order, limit, after)
    query = {**filters.query(), "sort": key, "order": direction, "limit": str(limit)}
    link = next_link("/api/v1/games", query, page.next)
    for g in page.rows:
        g["href"] = f"/api/v1/games/{quote(g['game_id'], safe='')}"
    body = {"games": page.rows, "count": len(page.rows), "next": link}
    return Response(dumps(body), media_type="application/json", headers=_link_header(link))


def _link_header(link: str | None) -> dict[str, str]:
    return {} if link is None else {"Link": f'<{link}>; rel="next"'}


@router.get(
    "/players",
    summary="The players of the stored games by name, with their number of games, a page at a time",
    description="Keyset pagination as `/games`: follow `next` until it is null. Each player has the `href` of"
    " their figures and `games_href`, their games in the index.",
    response_class=Response,
    responses={**_OBJECT, 400: {"description": "A bad limit or cursor", **_PROBLEM}},
)
def players_index(limit: int = _LIST_LIMIT, after: str | None = _AFTER, svc: Service = Depends(reader)) -> Response:
    try:
        with svc.reader() as cur:
            page = listing.players_page(cur, svc.cursors, limit, after)
    except listing.ListError as exc:
        raise list_problem(exc) from None
    for p in page.rows:
        name = quote(p["player"], safe="")
        p["href"], p["games_href"] = f"/api/v1/players/{name}", f"/api/v1/games?player={name}"
    link = next_link("/api/v1/players", {"limit": str(limit)}, page.next)
    body = {"players": page.rows, "count": len(page.rows), "next": link}
    return Response(dumps(body), media_type="application/json", headers=_link_header(link))


def table_format(format: str) -> Format:
    if format not in downloads.TABLE_FORMATS:
        raise Problem(400, f"format: {format[:20]!r} is not one of {', '.join(downloads.TABLE_FORMATS)}")
    return Format(format)


def table_answer(svc: Service, table: pa.Table, fmt: Format, stem: str) -> Response:
    body = sqlrun.encode(table, fmt, svc.settings.memory_limit)
    if fmt is Format.json and not body:  # (no columns: DuckDB writes nothing)
        body = b"[]"
    return Response(body, media_type=downloads.TABLE_FORMATS[fmt.value], headers=downloads.attachment(stem, fmt.value))


_TABLE_FORMAT = Query("csv", description="csv or json (one array)")


@router.get(
    "/export/games",
    summary="Every game the index's filters select, as CSV or JSON (a player's games: `player=`)",
    description=f"The filters of `GET /api/v1/games`; newest first; at most {downloads.MAX_GAMES:,} games (more: 413).",
    response_class=Response,
    responses={200: {"description": "The games", "content": {t: {} for t in downloads.TABLE_FORMATS.values()}}},
)
def export_games(
    request: Request,
    format: str = _TABLE_FORMAT,
    player: str | None = Query(None, description="Games this player played (any seat)."),
    partner: str | None = Query(None, description="With `player`: the games where these two sat as partners."),
    event: str | None = Query(None),
    ruleset: str | None = Query(None),
    status: str | None = Query(None),
    since: str | None = Query(None),
    until: str | None = Query(None),
    svc: Service = Depends(reader),
) -> Response:
    fmt, filters = table_format(format), game_filters(request)
    with svc.reader() as cur:
        table = downloads.games(cur, filters)
    return table_answer(svc, table, fmt, "games" + (f"-{filters.player}" if filters.player else ""))


@router.get(
    "/games/{game_id}/raw",
    summary="The exact bytes a stored game was read from (as `backalley raw` writes them)",
    response_class=Response,
    responses={200: {"description": "The record", "content": {"application/json": {}}}},
)
def raw_record(game_id: str, svc: Service = Depends(reader)) -> Response:
    with svc.reader() as cur:
        found = downloads.raw_record(cur, game_id)
    if found is None:
        raise Problem(404, f"no game {game_id!r} is stored")
    return Response(found, media_type="application/json", headers=downloads.attachment(game_id, "json"))


@router.get(
    "/games/{game_id}/deals",
    summary="A stored game's deals (its rows of the `deals` view) as CSV or JSON",
    response_class=Response,
    responses={200: {"description": "The deals", "content": {t: {} for t in downloads.TABLE_FORMATS.values()}}},
)
def game_deals(game_id: str, format: str = _TABLE_FORMAT, svc: Service = Depends(reader)) -> Response:
    fmt = table_format(format)
    with svc.reader() as cur:
        table = downloads.game_deals(cur, game_id)
    if table is None:
        raise Problem(404, f"no game {game_id!r} is stored")
    return table_answer(svc, table, fmt, f"{game_id}-deals")


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
    summary="One deal as recorded, with its replayed figures, violations and double-dummy figures",
    description="`double_dummy` is null until `backalley analyze` has analysed the deal; then its `values`"
    " (the tricks each side would take if everyone saw all four hands) and each play's `cost` to its side"
    " against perfect play (`analysed` false: the deal breaks a rule of play, so it has none).",
    response_class=Response,
    responses=_OBJECT,
)
def deal(game_id: str, n: DealNumber, svc: Service = Depends(reader)) -> Response:
    with svc.reader() as cur:
        found = data.deal(cur, game_id, int(n), svc.record_text, svc.game_data, svc.trick_winners)
        dd = double_dummy(cur, game_id, int(n)) if found is not None else None
    if found is None:
        raise Problem(404, f"game {game_id!r} has no deal {n}")
    return _json({**found.as_dict(), "double_dummy": dd_json(dd)})


SQL_FORMATS = {f.value: f for f in sqlrun.FORMATS}


def run_sql(svc: Service, q: str, params: dict[str, object], timeout: float) -> pa.Table:
    """A visitor's query run read-only on the service's store (:class:`~backalley.service.sql.SqlError` else)."""
    if not q.strip():
        raise sqlrun.SqlError(400, "q: no SQL given")
    with svc.reader() as cur:
        return svc.sql.run(cur, q, params, min(timeout, sqlrun.SQL_TIMEOUT))


@router.get(
    "/sql",
    summary="Run read-only SQL on the store (as `backalley query`) and download the result",
    description="The same sandbox as `backalley query`: only statements that read, no file but the database,"
    " a time limit (60 s), the service's memory cap, one query at a time; the API tokens' table is not readable."
    " Named parameters: `$name=value` (or `p.name=value`) gives `$name` in the SQL its value (a string, as"
    " `query -p`). A query that writes, attaches or reads a file is 403, bad SQL or the time limit 400, an answer"
    " over 64 MiB or out of memory 413: each a problem document; the database is never changed.",
    response_class=Response,
    responses={
        200: {"description": "The result", "content": {t: {} for t in sqlrun.FORMATS.values()}},
        400: {"description": "Bad SQL, parameters or format; the time limit", **_PROBLEM},
        403: {"description": "A statement that does not only read", **_PROBLEM},
        413: {"description": "An answer too large, or out of memory", **_PROBLEM},
    },
)
def sql(
    request: Request,
    q: str = Query(..., description="The SQL (the last statement's rows are the answer)."),
    format: str = Query("json", description="json (one array), ndjson, csv or parquet."),
    timeout: float = Query(sqlrun.SQL_TIMEOUT, gt=0, le=sqlrun.SQL_TIMEOUT, description="Seconds (at most 60)."),
    svc: Service = Depends(reader),
) -> Response:
    fmt = SQL_FORMATS.get(format)
    if fmt is None:
        raise Problem(400, f"format: {format[:20]!r} is not one of {', '.join(SQL_FORMATS)}")
    table = run_sql(svc, q, sqlrun.request_params(request.query_params), timeout)
    body = sqlrun.encode(table, fmt, svc.settings.memory_limit)
    name = f"query.{'json' if fmt is Format.ndjson else fmt.value}"
    return Response(body, media_type=sqlrun.FORMATS[fmt], headers={"Content-Disposition": f'inline; filename="{name}"'})


def dd_json(dd: DoubleDummy | None) -> dict[str, Any] | None:
    """A deal's double-dummy figures for the API: ``None`` when it has not been analysed."""
    if dd is None:
        return None
    costs = [{"trick": t, "position": p, "cost": c} for (t, p), c in sorted(dd.costs.items())]
    return {"analysed": dd.analysed, "values": dd.values, "costs": costs}


@router.get("/players/{player_id:path}", summary="A player's figures, ratings and games")
def player(player_id: str, svc: Service = Depends(reader)) -> dict[str, Any]:
    with svc.reader() as cur:
        found = data.player(cur, player_id)
    if found is None:
        raise Problem(404, f"no player {player_id!r} in the stored games")
    return found

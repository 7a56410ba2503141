"""Errors as answers: RFC 9457 problem documents on the API, a plain page on the web side."""

from __future__ import annotations

import html
from http import HTTPStatus
from typing import Any

from fastapi.responses import JSONResponse

PROBLEM_TYPE = "application/problem+json"
#: Paths under this prefix answer errors as problem documents; all others as a page.
API_PREFIX = "/api/"


class Problem(Exception):
    """An error with its HTTP status and a one-line detail for the client."""

    def __init__(self, status: int, detail: str, headers: dict[str, str] | None = None, **extra: Any) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.headers = headers or {}
        self.extra = extra

    @property
    def title(self) -> str:
        return HTTPStatus(self.status).phrase


def unauthorized(detail: str) -> Problem:
    return Problem(401, detail, {"WWW-Authenticate": 'Bearer realm="backalley"'})


def problem_body(status: int, detail: str, instance: str, **extra: Any) -> dict[str, Any]:
    return {
        "type": "about:blank",
        "title": HTTPStatus(status).phrase,
        "status": status,
        "detail": detail,
        "instance": instance,
        **extra,
    }


def problem_response(p: Problem, instance: str) -> JSONResponse:
    return JSONResponse(
        problem_body(p.status, p.detail, instance, **p.extra),
        status_code=p.status,
        headers=p.headers,
        media_type=PROBLEM_TYPE,
    )


def plain_error_page(status: int, detail: str) -> str:
    """A minimal error page (the full one comes from the templates; this one needs nothing)."""
    title = f"{status} {HTTPStatus(status).phrase}"
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>'
        f"{html.escape(title)}</title></head><body><h1>{html.escape(title)}</h1>"
        f'<p>{html.escape(detail)}</p><p><a href="/">Back to the upload page</a></p></body></html>\n'
    )

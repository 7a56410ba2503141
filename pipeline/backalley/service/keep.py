"""The score keeper's pages (``/keep``): a table keeps a game's score sheet on a phone, deal by deal.

Each game is kept from its start in a file of its own beside the database (``<db>.keep/``), named by a
hash of the game's secret key; the key is in the page's address (the keeper link), so that address
resumes the game anywhere and is what lets a phone write to it. Starting a game needs an API token (the
form's field, or a signed-in browser's cookie). Every answer to a form is a redirect to the game's page
(a reload sends nothing twice); a form made for an earlier point of the game is refused (409).
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.datastructures import FormData

from backalley.records.sources import Item
from backalley.replay import SEAT_NAMES
from backalley.rules import RULESETS
from backalley.service import keeper
from backalley.service.api import reader
from backalley.service.auth import COOKIE
from backalley.service.pages import render
from backalley.service.problems import Problem, unauthorized
from backalley.service.state import Service

router = APIRouter(include_in_schema=False)

#: Games kept beside one database at most (stored ones included: their pages still answer).
MAX_KEPT = 10_000
#: A keeper key: 24 URL-safe characters (144 random bits).
KEY = re.compile(r"[A-Za-z0-9_-]{24}")
#: A kept game's file holds at most this many bytes (far more than 100 dealings take).
MAX_FILE = 1 << 20
#: Games being kept that the start page lists to a signed-in browser at most (the latest changed first).
LISTED = 50
#: Form fields are read up to this many characters.
MAX_FIELD = 200
#: The keeper link is a secret: no page of a kept game sends it on as a referrer, or is kept by a cache.
NO_REFERRER = {"Referrer-Policy": "no-referrer", "Cache-Control": "no-store"}


class KeptFiles:
    """The kept games of one database: a JSON file each, written whole (a new file renamed over the old)."""

    def __init__(self, db: Path) -> None:
        self.folder = db.with_name(db.name + ".keep")
        self.lock = threading.Lock()

    def path(self, key: str) -> Path:
        return self.folder / (hashlib.sha256(key.encode("ascii")).hexdigest()[:40] + ".json")

    def create(self, kept: keeper.Kept) -> str:
        """Keep a new game; its key."""
        with self.lock:
            if self.folder.is_dir() and sum(1 for _ in self.folder.glob("*.json")) >= MAX_KEPT:
                raise keeper.KeepError(f"this service keeps at most {MAX_KEPT:,} games", 507)
            kept.key = secrets.token_urlsafe(18)
            self._write(kept.key, kept)
        return kept.key

    def latest(self) -> list[keeper.Kept]:
        """The games being kept (not stored), the latest changed first: :data:`LISTED` at most."""
        with self.lock:
            found = sorted(self.folder.glob("*.json"), key=_changed, reverse=True) if self.folder.is_dir() else []
            out: list[keeper.Kept] = []
            for path in found:
                kept = _read(path)
                if kept is not None and kept.stored is None and kept.key:
                    out.append(kept)
                if len(out) >= LISTED:
                    break
        return out

    def load(self, key: str) -> keeper.Kept:
        """The game kept under ``key``; a 404 for a key of no game (a forged or mistyped address)."""
        kept = _read(self.path(key)) if KEY.fullmatch(key) else None
        if kept is None:
            raise keeper.KeepError("no game is kept at this address (check the link)", 404)
        return kept

    @contextmanager
    def changing(self, key: str) -> Iterator[keeper.Kept]:
        """The game kept under ``key``, written back after the block (unless it raised)."""
        with self.lock:
            kept = self.load(key)
            yield kept
            self._write(key, kept)

    def _write(self, key: str, kept: keeper.Kept) -> None:
        """Write the game whole (a new file renamed over the old: a failure leaves the old one)."""
        path = self.path(key)
        tmp = path.with_suffix(".tmp")
        try:
            self.folder.mkdir(exist_ok=True)
            tmp.write_bytes(orjson.dumps(kept.as_json()))
            os.replace(tmp, path)
        except OSError as exc:
            raise keeper.KeepError(
                f"the server could not keep this change ({exc.strerror}); nothing was changed", 507
            ) from None


def _read(path: Path) -> keeper.Kept | None:
    """The game kept in ``path`` (``None`` when there is no such file)."""
    try:
        raw = path.read_bytes() if path.stat().st_size <= MAX_FILE else None
    except OSError:
        return None
    return None if raw is None else keeper.Kept.from_json(orjson.loads(raw))


def _changed(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def files(request: Request) -> KeptFiles:
    """The kept games of the service's database (made with the application: :func:`backalley.service.app.create_app`)."""
    found: KeptFiles = request.app.state.kept
    return found


async def form_fields(request: Request) -> FormData:
    try:
        return await request.form()
    except Exception:  # a malformed form is the client's error, answered as such
        raise Problem(400, "malformed form body") from None


def field(form: FormData, name: str) -> str:
    value = form.get(name)
    return value[:MAX_FIELD] if isinstance(value, str) else ""


def number(form: FormData, name: str) -> int:
    text = field(form, name).strip()
    if not (text.isascii() and text.isdigit() and len(text) <= 4):
        raise keeper.KeepError(f"the form's {name!r} is not a number of this game: reload the page")
    return int(text)


def refused(exc: keeper.KeepError) -> Problem:
    return Problem(exc.status, exc.detail, NO_REFERRER)


def page(kept: keeper.Kept, key: str, code: int = 200, error: str | None = None) -> HTMLResponse:
    """The game's page: the sheet so far with its points and running score, then what to enter next."""
    scored = keeper.score(kept)
    rules = kept.rules
    current, closed = None, None
    if kept.stored is None:
        try:
            s, index = keeper.open_dealing(kept)
            d = kept.dealings[index] if index < len(kept.dealings) else keeper.Dealing()
            at = s.placed[index] if index < len(s.placed) else s.upcoming
            assert at is not None
            legal = keeper.legal_bids(rules, at, d.bids) if len(d.bids) < 4 else []
            current = {
                "index": index,
                "at": at,
                "bids": d.bids,
                "legal": [keeper.bid_word(b) for b in legal],
                "rainbow": rules.rainbow and rules.rainbow_deal(at.n),
            }
        except keeper.KeepError as exc:  # every deal entered, or the most a kept game holds
            closed = exc.detail
    response = render(
        "keep.html",
        code,
        kept=kept,
        key=key,
        rules=rules,
        seats=SEAT_NAMES,
        rows=rows(kept, scored),
        totals=scored.replayed.final_score or (),
        violations=[v for v in scored.replayed.violations if v.code != "INCOMPLETE"],
        current=current,
        closed=closed,
        error=error,
    )
    response.headers.update(NO_REFERRER)
    return response


def rows(kept: keeper.Kept, scored: keeper.Scored) -> list[dict[str, Any]]:
    """Each complete dealing as the page's table shows it: where it fell, bids and tricks by seat, points
    and the running score by side."""
    out, running = [], [0] * len(kept.rules.sides)
    for i, outcome in enumerate(scored.replayed.deals):
        at, d = scored.placed[i], kept.dealings[i]
        by_seat = dict(zip(at.order, d.bids, strict=True))
        running = [r + p for r, p in zip(running, outcome.points, strict=True)]
        out.append(
            {
                "at": at,
                "bids": [by_seat[s] for s in range(4)],
                "tricks": d.tricks,
                "pass_out": outcome.pass_out,
                "points": outcome.points,
                "running": running,
            }
        )
    return out


def may_start(svc: Service, request: Request, form: FormData) -> bool:
    """A new game needs an API token: the form's field, or a signed-in browser's cookie."""
    token = field(form, "token").strip() or request.cookies.get(COOKIE) or None
    return svc.token_ok(token)


@router.get("/keep", response_class=HTMLResponse)
def start_form(request: Request) -> HTMLResponse:
    """The start form; to a browser signed in with an API token, the games being kept too (a lost link
    is found again there)."""
    svc = reader(request)
    token = request.cookies.get(COOKIE) or None
    kept = files(request).latest() if token is not None and svc.token_ok(token) else []
    return start_page(request, kept=kept)


def start_page(
    request: Request, code: int = 200, error: str | None = None, form: Any = None, kept: list[keeper.Kept] | None = None
) -> HTMLResponse:
    options = sorted({o for cls in RULESETS.values() for o in cls.known_options})
    return render(
        "keep_start.html",
        code,
        rulesets=list(RULESETS),
        options=options,
        seats=SEAT_NAMES,
        signed_in=bool(request.cookies.get(COOKIE)),
        error=error,
        form=form or {},
        kept=kept or [],
    )


@router.post("/keep", response_class=HTMLResponse)
async def start(request: Request) -> Response:
    svc: Service = request.app.state.service
    form = await form_fields(request)
    if not await run_in_threadpool(may_start, svc, request, form):
        raise unauthorized("starting a kept game needs an API token (the form's field, or sign in at /login)")
    now = datetime.now(UTC)
    given = {k: field(form, k) for k in ("game_id", "ruleset", "first_dealer", "event", *SEAT_NAMES)}
    game_id = given["game_id"].strip() or f"keep-{now:%Y-%m-%d}-{secrets.token_hex(4)}"
    try:
        kept = keeper.new_game(
            game_id,
            given["ruleset"],
            [o for o in form.getlist("options") if isinstance(o, str)][:8],
            [given[s] for s in SEAT_NAMES],
            given["first_dealer"],
            now.strftime("%Y-%m-%dT%H:%M:%SZ"),
            given["event"].strip() or None,
        )
        key = await run_in_threadpool(files(request).create, kept)
    except keeper.KeepError as exc:
        return start_page(request, exc.status, exc.detail, given)
    return RedirectResponse(f"/keep/{key}", status_code=303, headers=NO_REFERRER)


@router.get("/keep/{key}", response_class=HTMLResponse)
def game(key: str, request: Request) -> HTMLResponse:
    try:
        return page(files(request).load(key), key)
    except keeper.KeepError as exc:
        raise refused(exc) from None


async def change(request: Request, key: str, what: Any) -> Response:
    """Apply ``what(kept, form)`` to the game kept under ``key``; then its page (or the page with the error)."""
    form = await form_fields(request)
    kept_files = files(request)

    def run() -> Response:
        try:
            with kept_files.changing(key) as kept:
                what(kept, form)
        except keeper.KeepError as exc:
            if exc.status == 404 and not KEY.fullmatch(key):
                raise refused(exc) from None
            try:
                return page(kept_files.load(key), key, exc.status, exc.detail)
            except keeper.KeepError:
                raise refused(exc) from None
        return RedirectResponse(f"/keep/{key}", status_code=303, headers=NO_REFERRER)

    return await run_in_threadpool(run)


@router.post("/keep/{key}/bid", response_class=HTMLResponse)
async def bid(key: str, request: Request) -> Response:
    return await change(
        request, key, lambda k, f: keeper.add_bid(k, number(f, "at"), number(f, "position"), field(f, "bid"))
    )


@router.post("/keep/{key}/tricks", response_class=HTMLResponse)
async def tricks(key: str, request: Request) -> Response:
    return await change(
        request,
        key,
        lambda k, f: keeper.add_tricks(k, number(f, "at"), {s: field(f, s) for s in SEAT_NAMES}, rainbows(f)),
    )


def rainbows(form: FormData) -> list[str]:
    """The seats the form's ``rainbow`` boxes mark (at most a few: they are checked by the keeper)."""
    return [v[:2] for v in form.getlist("rainbow")[:8] if isinstance(v, str)]


@router.post("/keep/{key}/restart", response_class=HTMLResponse)
async def restart(key: str, request: Request) -> Response:
    return await change(request, key, lambda k, f: keeper.restart_bidding(k, number(f, "at")))


@router.post("/keep/{key}/take-back", response_class=HTMLResponse)
async def take_back(key: str, request: Request) -> Response:
    return await change(request, key, lambda k, f: keeper.take_back(k, number(f, "entered")))


@router.get("/keep/{key}/deals/{index}", response_class=HTMLResponse)
def correction_form(key: str, index: str, request: Request) -> HTMLResponse:
    """A form to correct one entered deal: its four bids and the tricks."""
    try:
        kept = files(request).load(key)
        i = deal_index(kept, index)
    except keeper.KeepError as exc:
        raise refused(exc) from None
    scored = keeper.score(kept)
    at, d = scored.placed[i], kept.dealings[i]
    response = render(
        "keep_fix.html",
        kept=kept,
        key=key,
        index=i,
        at=at,
        d=d,
        words=[keeper.bid_word(b) for b in kept.rules.legal_bids(at.n)],
        rainbow=kept.rules.rainbow and kept.rules.rainbow_deal(at.n),
        seats=SEAT_NAMES,
    )
    response.headers.update(NO_REFERRER)
    return response


def deal_index(kept: keeper.Kept, index: str) -> int:
    """The 0-based index of entered deal ``index`` (1-based in the address); a 404 for any other."""
    complete = sum(1 for d in kept.dealings if keeper.done(d, kept.rules))
    if not (index.isascii() and index.isdigit() and len(index) <= 4 and 1 <= int(index) <= complete):
        shown = index[:12]
        raise keeper.KeepError(f"no entered deal {shown!r} in this game (deals 1 to {complete})", 404)
    return int(index) - 1


@router.post("/keep/{key}/deals/{index}", response_class=HTMLResponse)
async def correct(key: str, index: str, request: Request) -> Response:
    def fix(kept: keeper.Kept, form: FormData) -> None:
        i = deal_index(kept, index)
        tricks = {s: field(form, s) for s in SEAT_NAMES}
        keeper.correct(kept, i, [field(form, f"bid{k}") for k in range(4)], tricks, rainbows(form))

    return await change(request, key, fix)


@router.post("/keep/{key}/store", response_class=HTMLResponse)
async def store(key: str, request: Request) -> Response:
    """Store the sheet entered so far through the uploads' ingest path (finished, or incomplete)."""
    svc: Service = request.app.state.service

    def put(kept: keeper.Kept, form: FormData) -> None:
        if kept.stored is not None:
            raise keeper.KeepError(f"this game was stored as {kept.stored!r} already", 409)
        record = keeper.score(kept).record
        if not record["deals"]:
            raise keeper.KeepError("no deal is entered yet: there is nothing to store", 409)
        result = svc.upload([Item("score keeper", None, orjson.dumps(record))])
        found = result["results"][0]
        if found["fate"] not in ("stored", "duplicate"):
            raise keeper.KeepError(f"the game was not stored ({found['fate']}): {found['message'] or ''}", 409)
        kept.stored = kept.game_id

    svc.check_file()
    return await change(request, key, put)

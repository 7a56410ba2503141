"""The web pages: server-rendered (Jinja2, autoescaped), no outside assets, usable without JavaScript."""

from __future__ import annotations

import secrets
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup

from backalley.reporting.blocks import stylesheet
from backalley.reporting.html import index_page, metrics_page, page_files, player_page
from backalley.reporting.metrics import BOARD_LEVEL_NAMES, Metrics
from backalley.rules import RULESETS
from backalley.service import data, listing
from backalley.service import sql as sqlrun
from backalley.service.api import DealNumber, game_filters, games_list, list_problem, next_link, reader, run_sql
from backalley.service.auth import COOKIE
from backalley.service.bodies import MULTIPART, check_encoding, file_records, form_file, media_type
from backalley.service.problems import Problem, unauthorized
from backalley.service.state import Service
from backalley.store.outcomes import DD_MEANING, dd_parts, double_dummy, double_dummy_values

router = APIRouter(include_in_schema=False)

#: The package's templates, read once: ``auto_reload`` would look at their files' times at every page
#: (restart the service after editing one).
TEMPLATES = Environment(
    loader=FileSystemLoader(Path(__file__).parent / "templates"),
    autoescape=select_autoescape(["html"], default_for_string=True),
    trim_blocks=True,
    lstrip_blocks=True,
    auto_reload=False,
)


def contract(kind: Any, value: Any, level: Any) -> str:
    """``7``, ``board``, ``double board``; ``—`` for none."""
    if kind == "board":
        name = BOARD_LEVEL_NAMES.get(int(level), f"level-{level}") if level is not None else "board"
        return name if name == "board" else f"{name} board"
    return "—" if value is None else str(value)


def cardspan(card: Any, fault: str | None = None) -> Markup:
    """A card as the deal viewer draws it: its text in its colour, outlined with the codes of its faults
    as its title (every piece of record text escaped). A function, not a template macro: a deal page
    draws some ninety cards, and a macro call cost about 20 µs of the page's 4–5 ms."""
    title = Markup(' title="{}"').format(fault) if fault else ""
    fault_class = " fault" if fault else ""
    return Markup('<span class="c {}{}"{}>{}</span>').format(
        data.card_color(card), fault_class, title, data.card_text(card)
    )


#: The site's menu, the same on every page: the service's own (base.html) and the report's pages it serves.
SITE_MENU = (
    ("/games", "Games"),
    ("/players", "Players"),
    ("/sql", "SQL"),
    ("/keep", "Keep score"),
    ("/", "Upload"),
    ("/metrics.html", "Definitions"),
    ("/api/v1/openapi.json", "API"),
)
SITE_NAV = Markup(
    '<nav class="site" style="display:flex;flex-wrap:wrap;gap:4px 12px;font-size:.9rem;margin-top:4px">'
    + "".join(f'<a href="{href}">{label}</a>' for href, label in SITE_MENU)
    + "</nav>"
)


def with_menu(page: str) -> str:
    """A page of the report with the site's menu under its title."""
    at = page.find("</h1>")
    return page if at < 0 else page[: at + 5] + str(SITE_NAV) + page[at + 5 :]


TEMPLATES.filters["u"] = lambda v: quote(str(v), safe="")
TEMPLATES.globals["site_nav"] = SITE_NAV
TEMPLATES.filters["card"] = data.card_text
TEMPLATES.filters["color"] = data.card_color
TEMPLATES.globals["contract"] = contract
TEMPLATES.globals["cardspan"] = cardspan
#: One stylesheet for the service's pages and the report's (reporting/templates/style.css), inlined in each.
TEMPLATES.globals["stylesheet"] = stylesheet()


def csp(nonce: str | None = None) -> str:
    script = f"'nonce-{nonce}'" if nonce else "'none'"
    return (
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
        f"script-src {script}; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    )


def render(name: str, code: int = 200, **context: Any) -> HTMLResponse:
    nonce = secrets.token_urlsafe(12)
    text = TEMPLATES.get_template(name).render(nonce=nonce, **context)
    return HTMLResponse(text, status_code=code, headers={"Content-Security-Policy": csp(nonce)})


def error_page(status: int, phrase: str, detail: str) -> HTMLResponse:
    return render("error.html", status, status=status, phrase=phrase, detail=detail)


@router.get("/", response_class=HTMLResponse)
def index() -> HTMLResponse:
    return render("index.html", result=None)


@router.post("/upload", response_class=HTMLResponse)
async def upload(request: Request) -> HTMLResponse:
    svc: Service = request.app.state.service
    check_encoding(request)
    if media_type(request) != MULTIPART:
        raise Problem(415, "the upload form sends multipart/form-data")
    name, content, fields = await form_file(request)
    if not await run_in_threadpool(svc.token_ok, fields.get("token", "").strip() or None):
        raise unauthorized("the API token is missing or not known to this service; nothing was stored")
    items = file_records(content, name)
    result = await run_in_threadpool(svc.upload, items)
    return render("index.html", 413 if result["too_large"] else 200, result=result)


def _local(path: str) -> str:
    """``path`` if it is a path of this site, else ``/`` (a sign-in never sends the browser elsewhere)."""
    ok = path.startswith("/") and not path.startswith("//") and "\\" not in path and all(c >= " " for c in path)
    return path if ok else "/"


@router.get("/login", response_class=HTMLResponse)
def login_form(next: str = "/") -> HTMLResponse:
    return render("login.html", next=_local(next), message=None)


@router.post("/login", response_class=HTMLResponse)
async def login(request: Request) -> Response:
    """Check the token and keep it in an HttpOnly cookie; then back to the page asked for."""
    svc: Service = request.app.state.service
    try:
        form = await request.form()
    except Exception:  # a malformed form is the client's error, answered as such
        raise Problem(400, "malformed form body") from None
    token, target = str(form.get("token") or "").strip(), _local(str(form.get("next") or "/"))
    if not await run_in_threadpool(svc.token_ok, token or None):
        return render("login.html", 401, next=target, message="This token is not known to this service.")
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(COOKIE, token, httponly=True, samesite="strict", path="/")
    return response


@router.post("/logout")
def logout() -> Response:
    response = RedirectResponse("/", status_code=303)
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
    return response


def _limit(request: Request) -> int:
    try:
        return listing.read_limit(request.query_params.get("limit"))
    except listing.ListError as exc:
        raise list_problem(exc) from None


@router.get("/games", response_class=HTMLResponse)
def games(request: Request) -> HTMLResponse:
    """The games index: a filter form, the table (its column heads sort it) and the next page's link."""
    svc = reader(request)
    filters, limit, q = game_filters(request), _limit(request), request.query_params
    page, sort, order = games_list(svc, filters, q.get("sort"), q.get("order"), limit, q.get("after"))
    query = {**filters.query(), "sort": sort, "order": order, "limit": str(limit)}
    raw = {k: v for k, v in q.items() if k in ("player", "partner", "event", "ruleset", "status", "since", "until")}
    flip = {"desc": "asc", "asc": "desc"}
    links = {
        col: "/games?" + urlencode({**raw, "sort": col, "order": flip[order] if col == sort else ""})
        for col in listing.SORTS
    }
    api = "/api/v1/games?" + urlencode({**query, **({"after": q["after"]} if q.get("after") else {})})
    return render(
        "games.html",
        games=page.rows,
        next=next_link("/games", query, page.next),
        sort_links=links,
        sort=sort,
        order=order,
        q=raw,
        rulesets=list(RULESETS),
        statuses=listing.STATUSES,
        api=api,
        export="/api/v1/export/games?" + urlencode(filters.query()),
    )


@router.get("/sql", response_class=HTMLResponse)
def sql_page(request: Request, q: str = "", params: str = "") -> HTMLResponse:
    """A query box, the result as a table with its downloads, example queries, the tables and views."""
    svc = reader(request)
    given, error, answer, code = _form_params(params), None, None, 200
    if isinstance(given, str):
        error, code, given = given, 400, {}
    elif q.strip():
        try:
            answer = sqlrun.answer_page(run_sql(svc, q, given, sqlrun.SQL_TIMEOUT))
        except sqlrun.SqlError as exc:
            error, code = exc.detail, exc.status
    with svc.reader() as cur:
        tables = sqlrun.schema(cur)
    query = [("q", q), *((f"${k}", str(v)) for k, v in given.items())]
    return render(
        "sql.html",
        code,
        q=q,
        params_text=params,
        error=error,
        answer=answer,
        downloads={
            f: "/api/v1/sql?" + urlencode([*query, ("format", f)]) for f in ("csv", "json", "ndjson", "parquet")
        },
        examples=sqlrun.EXAMPLES,
        example_links=[
            urlencode({"q": text, **({"params": "player="} if "$player" in text else {})})
            for _, text in sqlrun.EXAMPLES
        ],
        tables=tables,
    )


def _form_params(text: str) -> dict[str, object] | str:
    """The form's named parameters (``name=value`` a line), or what is wrong with them."""
    out: dict[str, object] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        name, eq, value = line.partition("=")
        name = name.strip().lstrip("$")
        if not eq or not name.isidentifier():
            return f"parameters, line {n}: write name=value (a name of letters, digits and _)"
        out[name] = value
    return out


@router.get("/games/{game_id}", response_class=HTMLResponse)
def game(game_id: str, request: Request) -> HTMLResponse:
    svc = reader(request)
    with svc.reader() as cur:
        found = svc.game_data(cur, game_id)
        dd = double_dummy_values(cur, game_id) if found is not None else {}
    if found is None:
        raise Problem(404, f"no game {game_id!r} is stored")
    return game_page(found, dd)


def game_page(found: dict[str, Any], dd: dict[int, dict[str, int]] | None = None) -> HTMLResponse:
    """The game page of what :func:`backalley.service.data.game` says of a game; ``dd``: the double-dummy
    values of its analysed deals (:func:`backalley.store.outcomes.double_dummy_values`: a column when any)."""
    # Each dealing's line and its sides by name, for the table's rows to look up (a filter in the
    # template for each row and side took some 6 ms a page).
    lines = {line["deal"]: line for line in (found.get("by_side") or {}).get("deals", [])}
    sides = {n: {r["side"]: r for r in line["sides"]} for n, line in lines.items()}
    dd = dd or {}
    dd_sides = list(next(iter(dd.values()), {}))
    return render("game.html", g=found, lines=lines, line_sides=sides, dd=dd, dd_sides=dd_sides)


@router.get("/games/{game_id}/deals/{n}", response_class=HTMLResponse)
def deal(game_id: str, n: DealNumber, request: Request) -> HTMLResponse:
    svc = reader(request)
    with svc.reader() as cur:
        found = data.deal(cur, game_id, int(n), svc.record_text, svc.game_data, svc.trick_winners)
        dd = double_dummy(cur, game_id, int(n)) if found is not None else None
    if found is None:
        raise Problem(404, f"game {game_id!r} has no deal {n}")
    sides = [r["side"] for r in found.sides]
    replayed_play = found.result is not None and not found.result.get("pass_out")
    return render(
        "deal.html",
        d=found,
        dd=dd,
        costs=dd.costs if dd is not None else {},
        dd_line=dd_parts(dd, seats=len(sides) == 4) if dd is not None or replayed_play else [],
        dd_meaning=DD_MEANING,
    )


def _report_page(text: str) -> HTMLResponse:
    return HTMLResponse(with_menu(text), headers={"Content-Security-Policy": csp()})


@router.get("/metrics.html", response_class=HTMLResponse)
def definitions() -> HTMLResponse:
    """How every figure is defined (``backalley report``'s metrics.html, where the report's pages link)."""
    return _report_page(METRICS_PAGE)


class _ReportPages:
    """The report pages rendered from one set of figures (charts included), kept until the figures change.

    The index page of new figures is rendered by :meth:`prepare`, in the thread that computed them,
    before they are served: on a large store it takes a second or more, which a request for
    ``/players`` would otherwise wait for after every refresh of the figures."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.metrics: Metrics | None = None
        self.pages: dict[str | None, str] = {}
        self._ready: tuple[Metrics, str] | None = None  # the index of figures not served yet

    def get(self, m: Metrics, player: str | None) -> str:
        """The index page (``player`` None) or a player's page, of figures ``m``."""
        with self.lock:
            if self.metrics is not m:
                ready = self._ready
                self.metrics, self.pages = m, {None: ready[1]} if ready is not None and ready[0] is m else {}
                self._ready = None
            text = self.pages.get(player)
        if text is None:
            text = _render(m, player)
            with self.lock:
                if self.metrics is m:
                    self.pages[player] = text
        return text

    def prepare(self, m: Metrics) -> None:
        """Render the index page of figures ``m`` now, for when they are first served."""
        text = _render(m, None)
        with self.lock:
            if self.metrics is m:
                self.pages.setdefault(None, text)
            else:
                self._ready = (m, text)


def _render(m: Metrics, player: str | None) -> str:
    """The report's index page (``player`` None) or a player's page, of figures ``m``."""
    linked = page_files(m.players["player"].to_list())
    return index_page(m, linked) if player is None else player_page(m, player, linked)


REPORT_PAGES = _ReportPages()
#: The definitions page: the package's docs/metrics.md, rendered once.
METRICS_PAGE = metrics_page()


@router.get("/players", response_class=HTMLResponse)
def players(request: Request) -> HTMLResponse:
    """The report's index page (``backalley report``'s index.html), from the live database."""
    return _report_page(REPORT_PAGES.get(reader(request).metrics(), None))


@router.get("/index.html")
def report_index() -> Response:
    """Where a report page's "all players" link points."""
    return RedirectResponse("/players", status_code=308)


@router.get("/players/{player_id:path}", response_class=HTMLResponse)
def player(player_id: str, request: Request) -> HTMLResponse:
    """A player's report page, by id, or by the report's file name (``<slug>.html``, as its links give)."""
    svc = reader(request)
    m = svc.metrics()
    name = _player_named(m, player_id)
    if name is None:  # perhaps a player of games stored since the figures were computed
        m = svc.current_metrics()
        name = _player_named(m, player_id)
    if name is None:
        raise Problem(404, f"no player {player_id!r} in the stored games{_as_of(svc)}")
    return _report_page(with_games(REPORT_PAGES.get(m, name), player_games(svc, name)))


def player_games(svc: Service, name: str) -> str:
    """The section of a player's page listing their partners and latest games (the index's first page)."""
    filters = listing.GameFilters(player=name)
    with svc.reader() as cur:
        page = listing.games_page(cur, svc.cursors, filters, limit=listing.DEFAULT_LIMIT)
        found = listing.partners(cur, name)
    query = {**filters.query(), "sort": "played_at", "order": "desc", "limit": str(listing.DEFAULT_LIMIT)}
    return TEMPLATES.get_template("player_games.html").render(
        player=name, partners=found, games=page.rows, next=next_link("/games", query, page.next), sort_links=None
    )


def with_games(report: str, section: str) -> str:
    """A report's player page with the section of their games before its footer."""
    at = report.rfind("<footer>")
    return report if at < 0 else report[:at] + section + report[at:]


def _player_named(m: Metrics, player_id: str) -> str | None:
    """The player a ``/players/…`` path names in the figures ``m``: by id, or by the page's file name."""
    linked = page_files(m.players["player"].to_list())
    if player_id in linked:
        return player_id
    if player_id.endswith(".html"):
        return next((p for p, file in linked.items() if file == f"players/{player_id}"), None)
    return None


def _as_of(svc: Service) -> str:
    """When the players' figures were computed, if the store changed since (they lag behind uploads)."""
    at = svc.figures_time()
    if at is None or not svc.figures_behind():
        return ""
    stamp = time.strftime("%H:%M:%S", time.localtime(at))
    return f" as of {stamp} (the players' figures are recomputed in the background after uploads)"

"""The games index and the players list: filters, sortable columns, keyset pagination.

A page is the ``limit`` rows after a cursor, in the order of one sort key and
``game_id`` (never ``OFFSET``: a page costs the same however deep it is, and a
game stored meanwhile does not shift the pages after it). A cursor is the last
row's key, signed by the service (:class:`Cursors`) together with the filters
and the sort it belongs to: a cursor the service never issued, or one used
with other filters, is refused (400) before any SQL runs. Every filter is a
bound parameter; none is ever put into the SQL's text.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from dataclasses import dataclass, fields
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    import duckdb

#: Rows of a page unless ``limit`` says otherwise, and the most a page may have.
DEFAULT_LIMIT = 50
MAX_LIMIT = 500
#: The longest filter value and cursor accepted (characters).
MAX_FILTER_CHARS = 200
MAX_CURSOR_CHARS = 1_000
#: The statuses a stored game has (``games.status``).
STATUSES = ("valid", "incomplete", "invalid")
#: The columns of the index: ``games``' own, read together.
GAME_LIST_COLUMNS = (
    *("game_id", "played_at", "event", "ruleset", "options", "player_n", "player_e", "player_s", "player_w"),
    *("status", "scored_deals", "score_ns", "score_ew", "winner"),
)
#: The sortable columns: a key that is never NULL (a game without a date sorts as the oldest, one
#: without an event or ruleset as the empty name) and its SQL type (a cursor's value is cast to it).
SORTS: dict[str, tuple[str, str]] = {
    "played_at": ("coalesce(played_at, TIMESTAMPTZ '0001-01-01 00:00:00+00')", "TIMESTAMPTZ"),
    "game_id": ("game_id", "VARCHAR"),
    "event": ("coalesce(event, '')", "VARCHAR"),
    "ruleset": ("coalesce(ruleset, '')", "VARCHAR"),
    "status": ("status", "VARCHAR"),
    "deals": ("coalesce(scored_deals, -1)", "INTEGER"),
}
ORDERS = ("desc", "asc")


class ListError(ValueError):
    """A bad filter, sort, limit or cursor: the client's error (400), said in one line naming the parameter."""


def _text(name: str, value: str | None) -> str | None:
    if value is None or value == "":
        return None
    if len(value) > MAX_FILTER_CHARS:
        raise ListError(f"{name}: at most {MAX_FILTER_CHARS} characters")
    if not value.isprintable():
        raise ListError(f"{name}: control characters are not allowed")
    return value


def _moment(name: str, value: str | None, end: bool) -> datetime | None:
    """A date (``2026-11-30``: the day's start, or the next day's for ``until``) or an ISO 8601 time (UTC if no zone)."""
    value = _text(name, value)
    if value is None:
        return None
    try:
        if len(value) == 10:
            day = date.fromisoformat(value)
            at = datetime(day.year, day.month, day.day, tzinfo=UTC)
            return at + timedelta(days=1) if end else at
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise ListError(f"{name}: {value!r} is not a date (YYYY-MM-DD) or an ISO 8601 time") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


@dataclass(frozen=True)
class GameFilters:
    """Which games the index lists; ``None`` leaves a filter out."""

    player: str | None = None
    partner: str | None = None
    event: str | None = None
    ruleset: str | None = None
    status: str | None = None
    since: datetime | None = None
    #: Exclusive: a date ``until`` is read as the start of the next day.
    until: datetime | None = None

    @classmethod
    def parse(cls, params: dict[str, str | None], rulesets: tuple[str, ...]) -> GameFilters:
        """The filters of a request's query parameters, each checked (:class:`ListError` names the bad one)."""
        found = cls(
            player=_text("player", params.get("player")),
            partner=_text("partner", params.get("partner")),
            event=_text("event", params.get("event")),
            ruleset=_text("ruleset", params.get("ruleset")),
            status=_text("status", params.get("status")),
            since=_moment("since", params.get("since"), end=False),
            until=_moment("until", params.get("until"), end=True),
        )
        if found.partner is not None and found.player is None:
            raise ListError("partner: give player too (the games where these two sat as partners)")
        if found.ruleset is not None and found.ruleset not in rulesets:
            raise ListError(f"ruleset: {found.ruleset!r} is not one of {', '.join(rulesets)}")
        if found.status is not None and found.status not in STATUSES:
            raise ListError(f"status: {found.status!r} is not one of {', '.join(STATUSES)}")
        return found

    def where(self) -> tuple[list[str], list[Any]]:
        """The SQL conditions (on ``games``) and their parameters, in order."""
        conds: list[str] = []
        params: list[Any] = []
        if self.player is not None and self.partner is None:
            conds.append("? IN (player_n, player_e, player_s, player_w)")
            params.append(self.player)
        if self.partner is not None:
            # Partners sit opposite in a game played by two teams (its sides are NS and EW).
            conds.append(
                "((player_n = ? AND player_s = ?) OR (player_s = ? AND player_n = ?)"
                " OR (player_e = ? AND player_w = ?) OR (player_w = ? AND player_e = ?))"
                " AND game_id IN (SELECT game_id FROM game_sides WHERE side = 'NS')"
            )
            params.extend([self.player, self.partner] * 4)
        for column in ("event", "ruleset", "status"):
            value = getattr(self, column)
            if value is not None:
                conds.append(f"{column} = ?")
                params.append(value)
        if self.since is not None:
            conds.append("played_at >= ?")
            params.append(self.since)
        if self.until is not None:
            conds.append("played_at < ?")
            params.append(self.until)
        return conds, params

    def query(self) -> dict[str, str]:
        """The filters as query parameters again (for the links of the next page and the sort headers)."""
        out: dict[str, str] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, datetime):
                value = value.isoformat()
            if value is not None:
                out[f.name] = str(value)
        return out


class Cursors:
    """Cursors signed with a key of this service's run (HMAC-SHA256): it reads back only what it issued."""

    def __init__(self, key: bytes | None = None) -> None:
        self.key = key if key is not None else secrets.token_bytes(32)

    def _mac(self, body: bytes) -> bytes:
        return hmac.new(self.key, body, hashlib.sha256).digest()[:16]

    def issue(self, context: str, value: Any, last_id: str) -> str:
        body = orjson.dumps([context, value, last_id])
        return _b64(body) + "." + _b64(self._mac(body))

    def read(self, context: str, cursor: str) -> tuple[Any, str]:
        """The key and id a cursor holds; :class:`ListError` unless this service issued it for ``context``."""
        if len(cursor) > MAX_CURSOR_CHARS or cursor.count(".") != 1:
            raise ListError("after: not a cursor of this service (take the `next` link of a page)")
        body_text, mac_text = cursor.split(".")
        try:
            body, mac = _unb64(body_text), _unb64(mac_text)
        except (binascii.Error, ValueError):
            raise ListError("after: not a cursor of this service (take the `next` link of a page)") from None
        if not hmac.compare_digest(mac, self._mac(body)):
            raise ListError(
                "after: this cursor was not issued by this service (or it restarted since): start from the first page"
            )
        issued_for, value, last_id = orjson.loads(body)
        if issued_for != context:
            raise ListError("after: this cursor belongs to other filters or another sort: start from the first page")
        return value, str(last_id)


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    if not text.isascii():
        raise ValueError(text)
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def read_limit(value: str | None) -> int:
    """``limit``: 1 to :data:`MAX_LIMIT` (default :data:`DEFAULT_LIMIT`)."""
    if value is None or value == "":
        return DEFAULT_LIMIT
    if not value.isdigit() or len(value) > 9 or not 1 <= int(value) <= MAX_LIMIT:
        raise ListError(f"limit: a whole number from 1 to {MAX_LIMIT}, not {value[:20]!r}")
    return int(value)


def read_sort(sort: str | None, order: str | None) -> tuple[str, str]:
    sort = sort or "played_at"
    order = order or ("asc" if sort in ("game_id", "event", "ruleset", "status") else "desc")
    if sort not in SORTS:
        raise ListError(f"sort: {sort[:40]!r} is not one of {', '.join(SORTS)}")
    if order not in ORDERS:
        raise ListError(f"order: {order[:40]!r} is not one of {', '.join(ORDERS)}")
    return sort, order


@dataclass
class Page:
    """One page of rows, and the cursor of the next (``None`` on the last page)."""

    rows: list[dict[str, Any]]
    next: str | None


def _json_value(v: Any) -> Any:
    return v.isoformat() if isinstance(v, datetime | date) else v


def games_page(
    cur: duckdb.DuckDBPyConnection,
    cursors: Cursors,
    filters: GameFilters,
    sort: str = "played_at",
    order: str = "desc",
    limit: int = DEFAULT_LIMIT,
    after: str | None = None,
) -> Page:
    """The games ``filters`` select, sorted by ``sort`` then ``game_id`` in ``order``, ``limit`` after ``after``."""
    expr, kind = SORTS[sort]
    context = orjson.dumps([sort, order, filters.query()], option=orjson.OPT_SORT_KEYS).decode()
    conds, params = filters.where()
    if after is not None:
        value, last_id = cursors.read(context, after)
        op = "<" if order == "desc" else ">"
        conds.append(f"({expr} {op} CAST(? AS {kind}) OR ({expr} = CAST(? AS {kind}) AND game_id {op} ?))")
        params.extend([value, value, last_id])
    where = f"WHERE {' AND '.join(conds)}" if conds else ""
    sql = (
        f"SELECT {', '.join(GAME_LIST_COLUMNS)}, {expr} AS sort_key FROM games {where}"
        f" ORDER BY sort_key {order}, game_id {order} LIMIT {limit + 1}"
    )
    rel = cur.execute(sql, params)
    names = [d[0] for d in rel.description or []]
    found = [dict(zip(names, row, strict=True)) for row in rel.fetchall()]
    more = len(found) > limit
    found = found[:limit]
    next_cursor = None
    if more and found:
        last = found[-1]
        next_cursor = cursors.issue(context, _json_value(last["sort_key"]), last["game_id"])
    rows = []
    for r in found:
        r.pop("sort_key")
        rows.append({k: _json_value(v) for k, v in r.items()})
    return Page(rows, next_cursor)


#: Every seat's player of every stored game, one row each.
_SEATED = (
    "SELECT player_n AS player, game_id FROM games UNION ALL SELECT player_e, game_id FROM games"
    " UNION ALL SELECT player_s, game_id FROM games UNION ALL SELECT player_w, game_id FROM games"
)


def players_page(cur: duckdb.DuckDBPyConnection, cursors: Cursors, limit: int, after: str | None) -> Page:
    """The players of the stored games by name, each with how many games they played, ``limit`` after ``after``."""
    conds, params = ["player IS NOT NULL"], []
    if after is not None:
        _, last = cursors.read("players", after)
        conds.append("player > ?")
        params.append(last)
    sql = (
        f"SELECT player, count(DISTINCT game_id) AS games FROM ({_SEATED}) WHERE {' AND '.join(conds)}"
        f" GROUP BY player ORDER BY player LIMIT {limit + 1}"
    )
    found = [{"player": p, "games": int(n)} for p, n in cur.execute(sql, params).fetchall()]
    more = len(found) > limit
    found = found[:limit]
    return Page(found, cursors.issue("players", None, found[-1]["player"]) if more and found else None)


def partners(cur: duckdb.DuckDBPyConnection, player: str) -> list[dict[str, Any]]:
    """Whom ``player`` sat opposite as a partner (games of two teams), with how many games, the most first."""
    rows = cur.execute(
        "SELECT CASE WHEN player_n = $p THEN player_s WHEN player_s = $p THEN player_n"
        " WHEN player_e = $p THEN player_w ELSE player_e END AS partner, count(*) AS games"
        " FROM games WHERE $p IN (player_n, player_e, player_s, player_w)"
        " AND game_id IN (SELECT game_id FROM game_sides WHERE side = 'NS')"
        " GROUP BY partner HAVING partner IS NOT NULL ORDER BY games DESC, partner LIMIT 200",
        {"p": player},
    ).fetchall()
    return [{"partner": p, "games": int(n)} for p, n in rows]

"""What the pages show of a game the service has stored, computed by a worker from its rows.

The service keeps what its pages show of the games it stores in memory
(:class:`backalley.service.cache.RecordCache`): reading one game back from the
file costs 40–50 ms of DuckDB's time. That page data used to be read, after
each commit, from a copy of the new rows in a database in memory, by the
store's own views: about 1.6 ms of CPU a game (the views' planning, and the
Python objects built from their rows), on the one thread every upload waits
for. Here a worker process computes it from the :class:`~backalley.store.rows.Built`
rows of the game, replayed from the raw text the service keeps in memory, when
a page first asks for it (:meth:`backalley.service.state.Service.fresh_page`):

- :func:`view_rows` names the rows' small-int codes exactly as the store's
  views name the narrow tables' codes, with the same lists
  (:data:`backalley.store.rows.SEAT_CODES`, ``CARD_CODES``, ``SUIT_CODES``,
  ``CONTRACT_KINDS``, ``SIDE_NAMES``): a row here is the row the view gives
  for that game once it is stored;
- :func:`page` hands them to the same assembly as a read from the file
  (:func:`backalley.service.data.games_from_rows`,
  :func:`backalley.store.outcomes.figures_from_rows`,
  :func:`backalley.store.outcomes.deal_lines`).

The worker also compresses the JSON (a zstd frame, as the service's cache
keeps it), with ``null`` as the time of the ingest (``ingested_at``); the
service prefixes the cache entry with the time the game was stored
(:meth:`Page.entry`), and :func:`unpack_page` puts it in when the page is read.
A test keeps a page equal, byte for byte, to what the file answers for the
same game, on every registered ruleset and option set and on faulty games.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, tzinfo
from functools import lru_cache
from typing import Any
from zoneinfo import ZoneInfo

import orjson

from backalley.cards import NO_TRUMP
from backalley.records.sources import Item, dumps
from backalley.service import data
from backalley.store import raw as raw_codec
from backalley.store.outcomes import deal_lines, figures_from_rows
from backalley.store.rows import (
    CARD_CODES,
    CONTRACT_KINDS,
    DEAL_INTS,
    GAME_FIELDS,
    SEAT_CODES,
    SIDE_INTS,
    SIDE_NAMES,
    SUIT_CODES,
    Built,
)

_G = {f: k for k, f in enumerate(GAME_FIELDS)}
_ND, _NS = len(DEAL_INTS), len(SIDE_INTS)
#: The games columns of a page, by where each is found: the worker's game tuple, or the input.
_FROM_INPUT = {"source", "line", "ingested_at"}
_STAMP = b'"ingested_at":null'


@dataclass(frozen=True, slots=True)
class Page:
    """A stored game's page data as JSON in zstd frames: :func:`backalley.service.data.game` and its
    trick winners."""

    #: What :func:`~backalley.service.data.game` says, with ``"ingested_at":null``.
    game: bytes
    #: Its trick winners as the service caches them (:func:`~backalley.service.data.winners_json`).
    winners: bytes

    def entry(self, ingested_at: str) -> bytes:
        """The cache entry of :attr:`game` ingested at ``ingested_at`` (ISO 8601, as the file answers it)."""
        return ingested_at.encode("ascii") + b"\n" + self.game


def pack_page(text: bytes) -> bytes:
    """The cache entry of a game's page data read from the file (its time is in it)."""
    return b"\n" + raw_codec.compress(text)


def unpack_page(entry: bytes) -> bytes:
    """The page data of a cache entry (:meth:`Page.entry`, :func:`pack_page`), with its time of ingest.

    ``"ingested_at":null`` appears once in the JSON: as a key, not inside a string value,
    where its quotes would be escaped."""
    stamp, _, frame = entry.partition(b"\n")
    text = raw_codec.decompress(frame)
    return text.replace(_STAMP, b'"ingested_at":' + orjson.dumps(stamp.decode("ascii")), 1) if stamp else text


@dataclass(slots=True)
class ViewRows:
    """One game's rows as the store's views give them once it is stored (``game_id`` first in each)."""

    games: list[tuple[Any, ...]]  # data.GAME_COLUMNS
    figure_games: list[tuple[Any, ...]]  # outcomes.FIGURE_GAME_COLUMNS
    game_sides: list[tuple[Any, ...]]  # outcomes.FIGURE_SIDE_COLUMNS
    deals: list[dict[str, Any]]  # data.DEAL_COLUMNS
    line_deals: list[tuple[Any, ...]]  # outcomes.LINE_DEAL_COLUMNS
    line_sides: list[tuple[Any, ...]]  # outcomes.LINE_SIDE_COLUMNS
    violations: list[tuple[Any, ...]]  # game_id, data.VIOLATION_COLUMNS
    winners: data.Winners


@lru_cache(maxsize=8)
def zone(name: str) -> tzinfo:
    """The time zone DuckDB gives times in (its ``TimeZone`` setting)."""
    return ZoneInfo(name)


#: The view's ``codes[code + 1]`` as a look-up: NULL for a NULL code or one past the list (codes are
#: never negative).
_Names = dict[int | None, Any]
_SEAT: _Names = dict(enumerate(SEAT_CODES))
_CARD: _Names = dict(enumerate(CARD_CODES))
_SUIT: _Names = dict(enumerate(SUIT_CODES))
_KIND: _Names = dict(enumerate(CONTRACT_KINDS))
_SIDE: _Names = dict(enumerate(SIDE_NAMES))
#: The deal fields :func:`view_rows` reads, in :data:`~backalley.store.rows.DEAL_INTS` order (its first nine and last).
_DEAL_HEAD: tuple[str, ...] = ("number", "hand_size", "dealer", "trump_card", "trump", "joker_swap_seat")
_DEAL_HEAD += ("joker_swap_drawn", "pass_out", "opening_leader")
assert DEAL_INTS[: len(_DEAL_HEAD)] == _DEAL_HEAD and DEAL_INTS[-1] == "tricks"
#: The columns of a deal :func:`view_rows` reads: its head, then its replayed tricks.
_DEAL_READ = (*range(len(_DEAL_HEAD)), len(DEAL_INTS) - 1)
assert SIDE_INTS[:2] == ("side", "contract_kind") and SIDE_INTS[7] == "made"
_NO_SIDE = (None,) * 8


def _columns(packed: bytes, nulls: bytes, width: int, wanted: Sequence[int]) -> list[Sequence[int | None]]:
    """Columns ``wanted`` of packed int64 rows of ``width`` values (native order, as :mod:`backalley.store.rows`
    packs them), NULLs as ``None``: each column is one slice, and only a column holding a NULL is walked."""
    ints: list[int] = memoryview(packed).cast("q").tolist()
    out: list[Sequence[int | None]] = []
    for c in wanted:
        column, mask = ints[c::width], nulls[c::width]
        out.append([None if null else x for x, null in zip(column, mask, strict=True)] if 1 in mask else column)
    return out


def _bool(v: int | None) -> bool | None:
    """A BOOLEAN column of a packed int, as the store's tables take it (any non-zero is true)."""
    return None if v is None else bool(v)


def _side(row: tuple[int | None, ...], gid: str, deal: int) -> tuple[Any, ...]:
    """A ``deal_sides`` row (:data:`backalley.store.outcomes.LINE_SIDE_COLUMNS`) of a packed side row."""
    side, kind, contract, multiplier, level, tricks, points, made, rt, rp = row
    made_bool = _bool(made)
    return (gid, deal, _SIDE.get(side), _KIND.get(kind), contract, multiplier, level, tricks, points, made_bool, rt, rp)


def _team(side: tuple[Any, ...] | None) -> tuple[Any, ...]:
    """The deals view's eight columns of one team from its ``deal_sides`` row (all NULL without one):
    contract kind, contract (NULL for a board), board level, tricks, points, made, recorded tricks and points."""
    if side is None:
        return _NO_SIDE
    _, _, _, kind, contract, _, level, tricks, points, made, rt, rp = side
    return (kind, None if kind == CONTRACT_KINDS[0] else contract, level, tricks, points, made, rt, rp)


def _deal_row(
    n: int, v: tuple[int | None, ...], ns: tuple[Any, ...] | None, ew: tuple[Any, ...] | None
) -> dict[str, Any]:
    """One row of the ``deals`` view (:data:`backalley.service.data.DEAL_COLUMNS`, in that order)."""
    number, hand_size, dealer, trump_card, trump, swap_seat, swap_drawn, pass_out, _ = v[: len(_DEAL_HEAD)]
    n_kind, n_contract, n_level, n_tricks, n_points, n_made, n_rt, n_rp = _team(ns)
    e_kind, e_contract, e_level, e_tricks, e_points, e_made, e_rt, e_rp = _team(ew)
    return {
        "deal": n,
        "number": number,
        "hand_size": hand_size,
        "dealer": _SEAT.get(dealer),
        "trump_card": _CARD.get(trump_card),
        "trump_suit": _SUIT.get(trump),
        "no_trump": None if trump is None else trump == NO_TRUMP,
        "joker_swap_seat": _SEAT.get(swap_seat),
        "joker_swap_drawn": _CARD.get(swap_drawn),
        "pass_out": _bool(pass_out),
        "ns_contract_kind": n_kind,
        "ns_contract": n_contract,
        "ns_board_level": n_level,
        "ew_contract_kind": e_kind,
        "ew_contract": e_contract,
        "ew_board_level": e_level,
        "tricks_ns": n_tricks,
        "tricks_ew": e_tricks,
        "points_ns": n_points,
        "points_ew": e_points,
        "ns_made": n_made,
        "ew_made": e_made,
        "recorded_tricks_ns": n_rt,
        "recorded_tricks_ew": e_rt,
        "recorded_points_ns": n_rp,
        "recorded_points_ew": e_rp,
    }


def _game_rows(item: Item, built: Built, zone_name: str) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """The game's rows of ``games``: as a page shows it (``ingested_at`` NULL), and as its figures read it."""
    g = built.game
    columns: list[Any] = []
    for name in data.GAME_COLUMNS:
        if name in _FROM_INPUT:
            columns.append(None if name == "ingested_at" else getattr(item, name))
        else:
            columns.append(g[_G[name]])
    played = columns[_PLAYED_AT]
    if isinstance(played, datetime):
        columns[_PLAYED_AT] = played.astimezone(zone(zone_name))
    figure_game = (built.game_id, *(g[_G[f]] for f in ("status", "ruleset", "options", "winner")))
    return tuple(columns), figure_game + tuple(g[_G[f"player_{s}"]] for s in "nesw")


_PLAYED_AT = data.GAME_COLUMNS.index("played_at")
_LEADER = _DEAL_HEAD.index("opening_leader")


def view_rows(item: Item, built: Built, zone_name: str) -> ViewRows:
    """The rows the store's views give of this game once it is stored (``ingested_at`` NULL)."""
    gid = str(built.game_id)
    game_row, figure_game = _game_rows(item, built, zone_name)
    rows = ViewRows([game_row], [figure_game], [tuple(s) for s in built.game_sides], [], [], [], [], {})
    rows.violations = [(gid, *v[1:]) for v in sorted(built.violations, key=lambda v: v[1])]
    nsides = max(built.nsides, 1)
    per_deal: dict[int, dict[str | None, tuple[Any, ...]]] = {}
    for r, row in enumerate(zip(*_columns(built.sides, built.side_nulls, _NS, range(_NS)), strict=True)):
        side = _side(row, gid, r // nsides + 1)
        rows.line_sides.append(side)
        per_deal.setdefault(side[1], {})[side[2]] = side
    tricks: list[tuple[int, int]] = []  # (deal, trick) of each replayed trick, in order
    for k, v in enumerate(zip(*_columns(built.deals, built.deal_nulls, _ND, _DEAL_READ), strict=True)):
        n = k + 1
        teams = per_deal.get(n, {})
        d = _deal_row(n, v, teams.get(SIDE_NAMES[0]), teams.get(SIDE_NAMES[1]))
        rows.deals.append(d)
        leader = _SEAT.get(v[_LEADER])
        line = (
            gid,
            n,
            d["number"],
            d["hand_size"],
            d["dealer"],
            d["trump_card"],
            d["trump_suit"],
            d["pass_out"],
            leader,
        )
        rows.line_deals.append(line)
        tricks += [(n, t) for t in range(1, (v[-1] or 0) + 1)]
    rows.winners = dict(zip(tricks, map(SEAT_CODES.__getitem__, built.winners), strict=True))
    return rows


def page(item: Item, built: Built, zone_name: str) -> Page | None:
    """What the pages show of this game once it is stored; ``None`` for an input that is not a game."""
    if built.reject is not None or built.game_id is None:
        return None
    gid = built.game_id
    rows = view_rows(item, built, zone_name)
    figures = figures_from_rows(rows.figure_games, rows.game_sides)
    figures[gid].deals = deal_lines(figures, rows.line_deals, rows.line_sides)[gid]
    deals = {gid: rows.deals}
    count = data.deal_count(item.raw)
    game = data.games_from_rows(rows.games, deals, rows.violations, figures, lambda _gid: count)[gid]
    return Page(raw_codec.compress(dumps(game)), raw_codec.compress(data.winners_json(rows.winners)))


__all__ = ["Page", "ViewRows", "pack_page", "page", "unpack_page", "view_rows", "zone"]

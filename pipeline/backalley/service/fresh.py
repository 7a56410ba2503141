"""What the pages show of a game, computed by a worker from the rows it has just built for it.

The service keeps what its pages show of the games it stores in memory
(:class:`backalley.service.cache.RecordCache`): reading one game back from the
file costs 40–50 ms of DuckDB's time. That page data used to be read, after
each commit, from a copy of the new rows in a database in memory, by the
store's own views: about 1.6 ms of CPU a game (the views' planning, and the
Python objects built from their rows), on the one thread every upload waits
for. Here a worker process computes it right after the replay, from the
:class:`~backalley.rows.Built` rows it sends the writer anyway:

- :func:`view_rows` names the rows' small-int codes exactly as the store's
  views name the narrow tables' codes, with the same lists
  (:data:`backalley.rows.SEAT_CODES`, ``CARD_CODES``, ``SUIT_CODES``,
  ``CONTRACT_KINDS``, ``SIDE_NAMES``): a row here is the row the view gives
  for that game once it is stored;
- :func:`page` hands them to the same assembly as a read from the file
  (:func:`backalley.service.data.games_from_rows`,
  :func:`backalley.outcomes.figures_from_rows`,
  :func:`backalley.outcomes.deal_lines`).

The worker also compresses the JSON (a zstd frame, as the service's cache
keeps it). The time of the ingest (``ingested_at``) is not known yet: the JSON
holds ``null`` there; the writer prefixes the cache entry with its time once
the game is stored (:meth:`Page.entry`), and :func:`unpack_page` puts it in
when the page is read. A test keeps a page equal, byte for byte, to what the
file answers for the same game, on every ruleset and option set and on faulty
games.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, tzinfo
from functools import lru_cache
from typing import Any
from zoneinfo import ZoneInfo

import orjson

from backalley import raw as raw_codec
from backalley.outcomes import deal_lines, figures_from_rows
from backalley.rows import (
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
from backalley.service import data
from backalley.sources import Item

_G = {f: k for k, f in enumerate(GAME_FIELDS)}
_D = {f: k for k, f in enumerate(DEAL_INTS)}
_S = {f: k for k, f in enumerate(SIDE_INTS)}
_ND, _NS = len(DEAL_INTS), len(SIDE_INTS)
#: The games columns of a page, by where each is found: the worker's game tuple, or the input.
_FROM_INPUT = {"source", "line", "ingested_at"}
_STAMP = b'"ingested_at":null'
#: The code of no trump in the deals' ``trump`` (the views' ``no_trump``).
_NO_TRUMP = len(SUIT_CODES) - 1


@dataclass(frozen=True, slots=True)
class Page:
    """A stored game's page data as JSON in zstd frames: :func:`backalley.service.data.game` and its
    trick winners."""

    #: What :func:`~backalley.service.data.game` says, with ``"ingested_at":null``.
    game: bytes
    #: ``[[deal, trick, winner], ...]``, as the service caches :func:`~backalley.service.data.trick_winners`.
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
    winners: list[tuple[int, int, str | None]]  # deal, trick, winner


@lru_cache(maxsize=8)
def zone(name: str) -> tzinfo:
    """The time zone DuckDB gives times in (its ``TimeZone`` setting)."""
    return ZoneInfo(name)


def _name(codes: tuple[Any, ...], code: int | None) -> Any:
    """The view's ``codes[code + 1]``: NULL for a NULL code or one past the list (codes are never negative)."""
    return None if code is None or not 0 <= code < len(codes) else codes[code]


def _unpack(packed: bytes, nulls: bytes, width: int) -> list[list[int | None]]:
    """Packed int64 rows (native order, as :mod:`backalley.rows` packs them), NULLs as ``None``."""
    ints: list[int | None] = list(memoryview(packed).cast("q").tolist())
    out = [ints[k : k + width] for k in range(0, len(ints), width)]
    if nulls:
        for r, row in enumerate(out):
            for k in range(width):
                if nulls[r * width + k]:
                    row[k] = None
    return out


def _bool(v: int | None) -> bool | None:
    return None if v is None else bool(v)


def _side(row: list[int | None], gid: str, deal: int) -> tuple[Any, ...]:
    s = _S
    return (
        gid,
        deal,
        _name(SIDE_NAMES, row[s["side"]]),
        _name(CONTRACT_KINDS, row[s["contract_kind"]]),
        row[s["contract"]],
        row[s["multiplier"]],
        row[s["board_level"]],
        row[s["tricks"]],
        row[s["points"]],
        _bool(row[s["made"]]),
        row[s["recorded_tricks"]],
        row[s["recorded_points"]],
    )


def _team(side: tuple[Any, ...] | None, prefix: str) -> dict[str, Any]:
    """The deals view's columns of one team from its ``deal_sides`` row (all NULL without one)."""
    if side is None:
        kind = contract = level = None
        tricks = points = made = rt = rp = None
    else:
        _, _, _, kind, contract, _, level, tricks, points, made, rt, rp = side
        contract = None if kind == CONTRACT_KINDS[0] else contract
    t = prefix
    return {
        f"{t}_contract_kind": kind,
        f"{t}_contract": contract,
        f"{t}_board_level": level,
        f"tricks_{t}": tricks,
        f"points_{t}": points,
        f"{t}_made": made,
        f"recorded_tricks_{t}": rt,
        f"recorded_points_{t}": rp,
    }


def _deal_row(n: int, v: list[int | None], ns: tuple[Any, ...] | None, ew: tuple[Any, ...] | None) -> dict[str, Any]:
    """One row of the ``deals`` view (:data:`backalley.service.data.DEAL_COLUMNS`, in that order)."""
    d = _D
    trump = v[d["trump"]]
    found: dict[str, Any] = {
        "deal": n,
        "number": v[d["number"]],
        "hand_size": v[d["hand_size"]],
        "dealer": _name(SEAT_CODES, v[d["dealer"]]),
        "trump_card": _name(CARD_CODES, v[d["trump_card"]]),
        "trump_suit": _name(SUIT_CODES, trump),
        "no_trump": None if trump is None else trump == _NO_TRUMP,
        "joker_swap_seat": _name(SEAT_CODES, v[d["joker_swap_seat"]]),
        "joker_swap_drawn": _name(CARD_CODES, v[d["joker_swap_drawn"]]),
        "pass_out": _bool(v[d["pass_out"]]),
        **_team(ns, "ns"),
        **_team(ew, "ew"),
    }
    return {k: found[k] for k in data.DEAL_COLUMNS}


def view_rows(item: Item, built: Built, zone_name: str) -> ViewRows:
    """The rows the store's views give of this game once it is stored (``ingested_at`` NULL)."""
    gid = built.game_id
    g = built.game
    tz = zone(zone_name)
    columns: list[Any] = []
    for name in data.GAME_COLUMNS:
        if name in _FROM_INPUT:
            columns.append(None if name == "ingested_at" else getattr(item, name))
        else:
            columns.append(g[_G[name]])
    played = columns[data.GAME_COLUMNS.index("played_at")]
    if isinstance(played, datetime):
        columns[data.GAME_COLUMNS.index("played_at")] = played.astimezone(tz)
    figure_game = (gid, *(g[_G[f]] for f in ("status", "ruleset", "options", "winner")))
    figure_game += tuple(g[_G[f"player_{s}"]] for s in "nesw")
    rows = ViewRows([tuple(columns)], [figure_game], [tuple(s) for s in built.game_sides], [], [], [], [], [])
    rows.violations = [(gid, *v[1:]) for v in sorted(built.violations, key=lambda v: v[1])]
    nsides = max(built.nsides, 1)
    sides = _unpack(built.sides, built.side_nulls, _NS)
    per_deal: dict[int, dict[str | None, tuple[Any, ...]]] = {}
    for r, row in enumerate(sides):
        side = _side(row, str(gid), r // nsides + 1)
        rows.line_sides.append(side)
        per_deal.setdefault(side[1], {})[side[2]] = side
    trick = 0
    for k, v in enumerate(_unpack(built.deals, built.deal_nulls, _ND)):
        n = k + 1
        teams = per_deal.get(n, {})
        rows.deals.append(_deal_row(n, v, teams.get(SIDE_NAMES[0]), teams.get(SIDE_NAMES[1])))
        d = _D
        rows.line_deals.append(
            (
                gid,
                n,
                v[d["number"]],
                v[d["hand_size"]],
                _name(SEAT_CODES, v[d["dealer"]]),
                _name(CARD_CODES, v[d["trump_card"]]),
                _name(SUIT_CODES, v[d["trump"]]),
                _bool(v[d["pass_out"]]),
                _name(SEAT_CODES, v[d["opening_leader"]]),
            )
        )
        for t in range(1, (v[d["tricks"]] or 0) + 1):
            rows.winners.append((n, t, _name(SEAT_CODES, built.winners[trick])))
            trick += 1
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
    winners = orjson.dumps([list(w) for w in rows.winners])
    return Page(raw_codec.compress(orjson.dumps(game)), raw_codec.compress(winners))


__all__ = ["Page", "ViewRows", "pack_page", "page", "unpack_page", "view_rows", "zone"]

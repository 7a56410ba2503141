"""The row data of many games -> one Arrow table per narrow store table (in the writer).

:func:`game_tables` turns the compact row data the workers send
(:class:`backalley.store.rows.Built`: tuples, packed int64 fields, per-trick bytes and
the raw text compressed) into the Arrow tables of the narrow schema
(:data:`backalley.store.schema.NARROW_TABLES`) column-wise, with numpy: an integer game
key per game, small integer codes for seats, cards, suits, kinds and sides, and
one row per trick with its four cards. It is the one way from built rows to
stored rows: the embedded store inserts these tables, and anything else that
keeps the same tables gets them from here.

The writer runs it, not the workers: built in the workers (tasks of 128
games, sent back as Arrow IPC streams and re-keyed by the writer) the writer's
CPU fell by 0.04-0.10 ms a game but the workers' rose by 0.08-0.14 (Arrow's
fixed cost per table and column paid per task, and pyarrow imported by the
forkserver), so the whole ingest cost more (see docs/performance.md).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np
import pyarrow as pa

from backalley.cards import NUM_CARDS
from backalley.records.sources import Item
from backalley.rules import find_ruleset
from backalley.rules.base import TRUMPS
from backalley.store import raw as raw_codec
from backalley.store.rows import (
    BID_INTS,
    DEAL_INTS,
    GAME_FIELDS,
    GAME_SIDE_FIELDS,
    SIDE_INTS,
    SIDE_NAMES,
    VIOLATION_FIELDS,
    Built,
)

_STR = pa.string()
_I32 = pa.int32()
_I64 = pa.int64()
_BOOL = pa.bool_()
_I8 = pa.int8()
_TS = pa.timestamp("us", tz="UTC")

GAME_TYPES: dict[str, Any] = {
    "game_id": _STR,
    "format_version": _I64,
    "ruleset": _STR,
    "played_at": _TS,
    "event": _STR,
    "player_n": _STR,
    "player_e": _STR,
    "player_s": _STR,
    "player_w": _STR,
    "valid": _BOOL,
    "complete": _BOOL,
    "status": _STR,
    "schema_ok": _BOOL,
    "dealings": _I32,
    "scored_deals": _I32,
    "pass_outs": _I32,
    "errors": _I32,
    "warnings": _I32,
    "score_ns": _I32,
    "score_ew": _I32,
    "recorded_score_ns": _I64,
    "recorded_score_ew": _I64,
    "winner": _STR,
    "options": _STR,
    "sheet": _BOOL,
}
GAME_SIDE_TYPES: dict[str, Any] = {"game_id": _STR, "side": _STR, "score": _I32, "recorded_score": _I64}
VIOLATION_TYPES: dict[str, Any] = {
    "game_id": _STR,
    "ordinal": _I32,
    "code": _STR,
    "severity": _STR,
    "message": _STR,
    "path": _STR,
    "deal": _I32,
    "trick": _I32,
    "seat": _STR,
}
assert tuple(GAME_TYPES) == GAME_FIELDS and tuple(VIOLATION_TYPES) == VIOLATION_FIELDS
assert tuple(GAME_SIDE_TYPES) == GAME_SIDE_FIELDS

#: The code of each side name (:data:`~backalley.store.rows.SIDE_NAMES`).
SIDE_CODE = {name: k for k, name in enumerate(SIDE_NAMES)}


@lru_cache(maxsize=64)
def ruleset_arrays(label: str) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """A ruleset's (by its label) flat look-ups by ``trump * NUM_CARDS + card``: the suit a card counts
    as (int8), and whether it is trump (uint8 0/1).

    Both come from the ruleset's own methods, so a stored ``led_suit`` or
    ``is_trump`` is what the replay used.
    """
    name, *options = label.split("+")
    rules = find_ruleset(name, tuple(options))
    cards = range(NUM_CARDS)
    suit = np.array([rules.suit_of(c, t) for t in TRUMPS for c in cards], dtype=np.int8)
    trump = np.array([rules.is_trump(c, t) for t in TRUMPS for c in cards], dtype=np.uint8)
    return suit, trump


def _by_rules(built: list[Built]) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Each game's offset into the chunk's rulesets' look-ups (:func:`ruleset_arrays`, one after another),
    and those look-ups."""
    labels = list(dict.fromkeys(b.rules for b in built))
    index = {label: k for k, label in enumerate(labels)}
    arrays = [ruleset_arrays(label) for label in labels]
    size = len(TRUMPS) * NUM_CARDS
    game_rules = np.array([index[b.rules] * size for b in built], dtype=np.int32)
    return game_rules, np.concatenate([a[0] for a in arrays]), np.concatenate([a[1] for a in arrays])


_D = {f: k for k, f in enumerate(DEAL_INTS)}
_B = {f: k for k, f in enumerate(BID_INTS)}


def game_tables(games: list[tuple[Item, Built]], first_key: int = 1) -> dict[str, pa.Table]:
    """The rows of these games (each with its input) in every narrow table, in insert order.

    The one way from built rows to the store's tables (:data:`backalley.store.schema.NARROW_TABLES`):
    the games get the keys ``first_key``, ``first_key + 1``, ... in order, and
    ``g_games`` gets everything but ``run_id`` and ``ingested_at``, which the writer adds.
    """
    if not games:
        return {}
    built = [b for _, b in games]
    keys = np.arange(first_key, first_key + len(built), dtype=np.int64)
    g = rows_table([b.game for b in built], GAME_TYPES)
    g = g.add_column(0, "game_key", pa.array(keys, _I32))
    g = g.append_column("content_hash", pa.array([b.sha for b in built], _STR))
    g = g.append_column("source", pa.array([it.source for it, _ in games], _STR))
    g = g.append_column("line", pa.array([it.line for it, _ in games], _I32))
    zipped = [b.raw_zstd or raw_codec.compress(it.raw) for it, b in games]
    g = g.append_column("raw_zstd", pa.array(zipped, pa.binary()))
    out = {"g_games": g, **_deal_tables(built, keys)}
    out["g_violations"] = _keyed([b.violations for b in built], keys, VIOLATION_TYPES)
    out["g_game_sides"] = _keyed(
        [[(s, SIDE_CODE[name], score, rv) for s, name, score, rv in b.game_sides] for b in built],
        keys,
        {"game_id": _STR, "side": _I8, "score": _I32, "recorded_score": _I64},
    )
    sides = _side_table(built, keys)
    if sides is not None:
        out["g_deal_sides"] = sides
    return out


def _keyed(rows: list[list[tuple[Any, ...]]], keys: _IntArray, types: dict[str, Any]) -> pa.Table:
    """Each game's rows (``game_id`` first) as a table keyed by the game's key instead."""
    t = rows_table([r for per_game in rows for r in per_game], types)
    counts = np.array([len(r) for r in rows], dtype=np.int64)
    return t.set_column(0, "game_key", pa.array(np.repeat(keys, counts), _I32))


_SIDE_COLUMNS: dict[str, Any] = {
    "side": _I8,
    "contract_kind": _I8,
    "contract": _I64,
    "multiplier": _I32,
    "board_level": _I32,
    "tricks": _I32,
    "points": _I64,
    "made": _BOOL,
    "recorded_tricks": _I64,
    "recorded_points": _I64,
}
assert tuple(_SIDE_COLUMNS) == SIDE_INTS


def _side_table(built: list[Built], keys: _IntArray) -> pa.Table | None:
    """``g_deal_sides`` of a chunk's games: ``nsides`` rows per deal, from the packed data."""
    width = len(SIDE_INTS)
    rows = np.array([len(b.sides) // (8 * width) for b in built], dtype=np.int64)
    if not rows.any():
        return None
    values, mask = _packed([b.sides for b in built], [b.side_nulls for b in built], width)
    nsides = np.repeat(np.array([b.nsides for b in built], dtype=np.int64), rows)
    cols: dict[str, pa.Array] = {
        "game_key": pa.array(np.repeat(keys, rows), _I32),
        "deal": pa.array(((_within(rows) - 1) // nsides + 1).astype(np.int32)),
    }
    for k, (name, how) in enumerate(_SIDE_COLUMNS.items()):
        cols[name] = _column(values[:, k], None if mask is None else mask[:, k], how)
    return pa.table(cols)


def rows_table(rows: list[tuple[Any, ...]], types: dict[str, Any]) -> pa.Table:
    """Row tuples as an Arrow table with these columns (names and types, in tuple order)."""
    names = list(types)
    if not rows:
        return pa.table({k: pa.array([], t) for k, t in types.items()})
    cols = list(zip(*rows, strict=True))
    return pa.table({k: pa.array(c, types[k]) for k, c in zip(names, cols, strict=True)})


_IntArray = np.ndarray[Any, np.dtype[np.int64]]
_BoolArray = np.ndarray[Any, np.dtype[np.bool_]]


def _packed(data: list[bytes], nulls: list[bytes], width: int) -> tuple[_IntArray, _BoolArray | None]:
    """The packed int64 fields of many games as one ``(rows, width)`` array, and the null mask."""
    ints = np.frombuffer(b"".join(data), dtype=np.int64).reshape(-1, width)
    if not any(nulls):
        return ints, None
    mask = b"".join(m or bytes(len(d) // 8) for d, m in zip(data, nulls, strict=True))
    return ints, np.frombuffer(mask, dtype=np.bool_).reshape(-1, width)


def _column(values: _IntArray, mask: _BoolArray | None, how: pa.DataType) -> pa.Array:
    """One column of this type from packed ints (codes stay ints: the views name them)."""
    m = mask if mask is not None and mask.any() else None
    arr = values.astype(bool) if how == _BOOL else values.astype(how.to_pandas_dtype())
    return pa.array(arr, type=how, mask=m)


def _within(counts: _IntArray) -> _IntArray:
    """1, 2, ... within each group of consecutive rows of the given sizes."""
    total = int(counts.sum())
    starts = np.cumsum(counts) - counts
    return np.arange(total, dtype=np.int64) - np.repeat(starts, counts) + 1


#: The ``g_deals`` columns from the packed deal fields (all but the game key and deal number).
_DEAL_COLUMNS: dict[str, Any] = {
    "number": _I32,
    "hand_size": _I32,
    "dealer": _I8,
    "trump_card": _I8,
    "trump": _I8,
    "joker_swap_seat": _I8,
    "joker_swap_drawn": _I8,
    "pass_out": _BOOL,
    "opening_leader": _I8,
    "won_n": _I32,
    "won_e": _I32,
    "won_s": _I32,
    "won_w": _I32,
}


def _deal_tables(built: list[Built], keys: _IntArray) -> dict[str, pa.Table]:
    """``g_deals``, ``g_bids`` and ``g_tricks`` of a chunk's games, column-wise from the packed data."""
    nd = len(DEAL_INTS)
    per_game = np.array([len(b.deals) // (8 * nd) for b in built], dtype=np.int64)
    if not per_game.any():
        return {}
    deals, dmask = _packed([b.deals for b in built], [b.deal_nulls for b in built], nd)
    deal_game = np.repeat(np.arange(len(built), dtype=np.int64), per_game)
    deal_no = _within(per_game)
    deal_cols: dict[str, pa.Array] = {"game_key": pa.array(keys[deal_game], _I32), "deal": pa.array(deal_no, _I32)}
    for name, how in _DEAL_COLUMNS.items():
        k = _D[name]
        deal_cols[name] = _column(deals[:, k], None if dmask is None else dmask[:, k], how)
    out = {"g_deals": pa.table(deal_cols)}

    bids, bmask = _packed([b.bids for b in built], [b.bid_nulls for b in built], len(BID_INTS))
    bid_deal = np.repeat(np.arange(len(deals), dtype=np.int64), 4)

    def bcol(f: str, how: Any) -> pa.Array:
        return _column(bids[:, _B[f]], None if bmask is None else bmask[:, _B[f]], how)

    out["g_bids"] = pa.table(
        {
            "game_key": pa.array(keys[deal_game[bid_deal]], _I32),
            "deal": pa.array(deal_no[bid_deal], _I32),
            "position": pa.array(np.tile(np.arange(1, 5, dtype=np.int8), len(deals))),
            "seat": bcol("seat", _I8),
            "kind": bcol("kind", _I8),
            "value": bcol("value", _I64),
            "board_level": bcol("board_level", _I32),
            "multiplier": bcol("multiplier", _I32),
            "side": bcol("side", _I8),
            "rainbow": bcol("rainbow", _BOOL),
        }
    )
    tricks = _trick_table(built, keys, deals, deal_game, deal_no)
    if tricks is not None:
        out["g_tricks"] = tricks
    return out


def _trick_table(
    built: list[Built], keys: _IntArray, deals: _IntArray, deal_game: _IntArray, deal_no: _IntArray
) -> pa.Table | None:
    """``g_tricks``: one row a trick, its four cards in play order as four columns."""
    per_deal = deals[:, _D["tricks"]]
    if not per_deal.any():
        return None
    trick_deal = np.repeat(np.arange(len(deals), dtype=np.int64), per_deal)
    trick_game = deal_game[trick_deal]
    game_rules, suit_of, is_trump = _by_rules(built)
    # Each trick's offset into the look-ups: its game's ruleset, then its deal's trump.
    at = game_rules[trick_game] + deals[trick_deal, _D["trump"]].astype(np.int32) * NUM_CARDS
    # Seats, cards and flags are single bytes: read as they came, no conversion.
    leader = np.frombuffer(b"".join([b.leaders for b in built]), dtype=np.int8)
    winner = np.frombuffer(b"".join([b.winners for b in built]), dtype=np.int8)
    broken = np.frombuffer(b"".join([b.broken for b in built]), dtype=np.bool_)
    c4 = np.frombuffer(b"".join([b.cards for b in built]), dtype=np.int8).reshape(-1, 4).T.copy()  # one row a card
    trumps = is_trump[at + c4[0]]
    for k in (1, 2, 3):
        trumps |= is_trump[at + c4[k]] << k
    return pa.table(
        {
            "game_key": pa.array(keys[trick_game], _I32),
            "deal": pa.array(deal_no[trick_deal], _I32),
            "trick": pa.array(_within(per_deal), _I32),
            "leader": pa.array(leader),
            "winner": pa.array(winner),
            "led_suit": pa.array(suit_of[at + c4[0]]),
            "trumps": pa.array(trumps.view(np.int8)),
            "broken": pa.array(broken),
            "card1": pa.array(c4[0]),
            "card2": pa.array(c4[1]),
            "card3": pa.array(c4[2]),
            "card4": pa.array(c4[3]),
        }
    )


__all__ = ["game_tables", "rows_table"]

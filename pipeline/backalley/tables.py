"""The row data of many games -> one Arrow table per store table (in the writer).

:func:`game_tables` turns the compact row data the workers send
(:class:`backalley.rows.Built`: tuples, packed int64 fields and per-trick bytes)
into Arrow tables column-wise: numpy for the derived columns, and string
columns as dictionary arrays over small lookup tables (seat, card and suit
names, the chunk's game ids and players), so that no string is copied.

The writer runs it, not the workers: built per worker task (a few dozen
games) the tables cost about 0.3 ms a game, against about 0.1 ms in the writer
over a whole chunk, and every worker would have to import pyarrow and numpy.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np
import pyarrow as pa

from backalley.cards import CARD_NAMES, CARD_RANK, CARD_SUIT, NO_TRUMP, NUM_CARDS, SUITS
from backalley.rows import (
    BID_FIELDS,
    BID_INTS,
    BID_KINDS,
    CONTRACT_KINDS,
    DEAL_FIELDS,
    DEAL_INTS,
    GAME_FIELDS,
    GAME_SIDE_FIELDS,
    SIDE_INTS,
    SIDE_NAMES,
    VIOLATION_FIELDS,
    Built,
)
from backalley.rules import find_ruleset
from backalley.rules.base import TRUMPS
from backalley.sources import Item

_STR = pa.string()
_I32 = pa.int32()
_I64 = pa.int64()
_BOOL = pa.bool_()
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
_DEAL_STR = {
    "game_id",
    "dealer",
    "trump_card",
    "trump_suit",
    "joker_swap_seat",
    "joker_swap_drawn",
    "opening_leader",
    "ns_contract_kind",
    "ew_contract_kind",
}
_DEAL_BOOL = {"no_trump", "pass_out", "ns_made", "ew_made"}
_DEAL_I64 = {
    "ns_contract",
    "ew_contract",
    "points_ns",
    "points_ew",
    "recorded_tricks_ns",
    "recorded_tricks_ew",
    "recorded_points_ns",
    "recorded_points_ew",
}
DEAL_TYPES: dict[str, Any] = {
    f: _STR if f in _DEAL_STR else _BOOL if f in _DEAL_BOOL else _I64 if f in _DEAL_I64 else _I32 for f in DEAL_FIELDS
}
BID_TYPES: dict[str, Any] = {
    "game_id": _STR,
    "deal": _I32,
    "position": _I32,
    "seat": _STR,
    "player": _STR,
    "kind": _STR,
    "value": _I64,
    "board_level": _I32,
    "multiplier": _I32,
    "side": _STR,
    "rainbow": _BOOL,
}
assert tuple(GAME_TYPES) == GAME_FIELDS and tuple(VIOLATION_TYPES) == VIOLATION_FIELDS
assert tuple(BID_TYPES) == BID_FIELDS and tuple(GAME_SIDE_TYPES) == GAME_SIDE_FIELDS

#: Lookup arrays indexed by small ints.
SEAT_ARRAY = pa.array(list("NESW"), _STR)
CARD_ARRAY = pa.array(CARD_NAMES, _STR)
#: Natural suit letter of each card; NULL for the jokers.
CARD_SUIT_ARRAY = pa.array([SUITS[s] if s < 4 else None for s in CARD_SUIT], _STR)
#: Suit letter of a suit index 0..3; NULL for 4 (no trump, or a joker led in a no-trump deal).
SUIT_ARRAY = pa.array([*SUITS, None], _STR)
CONTRACT_KIND_ARRAY = pa.array(CONTRACT_KINDS, _STR)
BID_KIND_ARRAY = pa.array(BID_KINDS, _STR)
SIDE_ARRAY = pa.array(SIDE_NAMES, _STR)
#: Rank 2..14 for two..ace; 15 for the Little and 16 for the Big Blooper.
RANK_VALUES = np.array([r + 2 for r in CARD_RANK], dtype=np.int32)


@lru_cache(maxsize=64)
def ruleset_arrays(label: str) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """``[trump, card]`` arrays of a ruleset (by its label): the suit a card counts as, and whether it is trump.

    Both come from the ruleset's own methods, so a stored ``led_suit`` or
    ``is_trump`` is what the replay used.
    """
    name, *options = label.split("+")
    rules = find_ruleset(name, tuple(options))
    cards = range(NUM_CARDS)
    suit = np.array([[rules.suit_of(c, t) for c in cards] for t in TRUMPS], dtype=np.int64)
    trump = np.array([[rules.is_trump(c, t) for c in cards] for t in TRUMPS], dtype=np.bool_)
    return suit, trump


def _by_rules(built: list[Built]) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Each game's index into stacked ``(ruleset, trump, card)`` suit and trump arrays."""
    labels = list(dict.fromkeys(b.rules for b in built))
    index = {label: k for k, label in enumerate(labels)}
    arrays = [ruleset_arrays(label) for label in labels]
    game_rules = np.array([index[b.rules] for b in built], dtype=np.int64)
    return game_rules, np.stack([a[0] for a in arrays]), np.stack([a[1] for a in arrays])


_D = {f: k for k, f in enumerate(DEAL_INTS)}
_B = {f: k for k, f in enumerate(BID_INTS)}
#: How each packed deal field becomes its column: a type, or a lookup array for strings.
_DEAL_COLUMNS: dict[str, tuple[str, Any]] = {
    "number": ("number", _I32),
    "hand_size": ("hand_size", _I32),
    "dealer": ("dealer", SEAT_ARRAY),
    "trump_card": ("trump_card", CARD_ARRAY),
    "trump_suit": ("trump", SUIT_ARRAY),
    "joker_swap_seat": ("joker_swap_seat", SEAT_ARRAY),
    "joker_swap_drawn": ("joker_swap_drawn", CARD_ARRAY),
    "pass_out": ("pass_out", _BOOL),
    "opening_leader": ("opening_leader", SEAT_ARRAY),
    "ns_contract_kind": ("ns_contract_kind", CONTRACT_KIND_ARRAY),
    "ns_contract": ("ns_contract", _I64),
    "ns_board_level": ("ns_board_level", _I32),
    "ew_contract_kind": ("ew_contract_kind", CONTRACT_KIND_ARRAY),
    "ew_contract": ("ew_contract", _I64),
    "ew_board_level": ("ew_board_level", _I32),
    **{f: (f, DEAL_TYPES[f]) for f in DEAL_FIELDS[18:]},
}
assert all(DEAL_TYPES[f] == t for f, (_, t) in _DEAL_COLUMNS.items() if isinstance(t, pa.DataType))


def game_tables(games: list[tuple[Item, Built]]) -> dict[str, pa.Table]:
    """The rows of these games (each with its input) in every per-game table, in insert order.

    ``games`` gets everything but ``run_id`` and ``ingested_at``, which the writer adds.
    """
    if not games:
        return {}
    built = [b for _, b in games]
    g = rows_table([b.game for b in built], GAME_TYPES)
    g = g.append_column("content_hash", pa.array([b.sha for b in built], _STR))
    g = g.append_column("source", pa.array([it.source for it, _ in games], _STR))
    g = g.append_column("line", pa.array([it.line for it, _ in games], _I32))
    g = g.append_column("raw", _text([it.raw for it, _ in games]))
    out = {"games": g, **_deal_tables(built)}
    out["violations"] = rows_table([r for b in built for r in b.violations], VIOLATION_TYPES)
    out["game_sides"] = rows_table([r for b in built for r in b.game_sides], GAME_SIDE_TYPES)
    sides = _side_table(built)
    if sides is not None:
        out["deal_sides"] = sides
    return out


_SIDE_COLUMNS: dict[str, Any] = {
    "side": SIDE_ARRAY,
    "contract_kind": CONTRACT_KIND_ARRAY,
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


def _side_table(built: list[Built]) -> pa.Table | None:
    """``deal_sides`` of a chunk's games: ``nsides`` rows per deal, from the packed data."""
    width = len(SIDE_INTS)
    rows = np.array([len(b.sides) // (8 * width) for b in built], dtype=np.int64)
    if not rows.any():
        return None
    ids = pa.array([b.game_id for b in built], _STR)
    values, mask = _packed([b.sides for b in built], [b.side_nulls for b in built], width)
    game = np.repeat(np.arange(len(built), dtype=np.int64), rows)
    nsides = np.repeat(np.array([b.nsides for b in built], dtype=np.int64), rows)
    cols: dict[str, pa.Array] = {
        "game_id": _names(ids, game),
        "deal": pa.array(((_within(rows) - 1) // nsides + 1).astype(np.int32)),
    }
    for k, (name, how) in enumerate(_SIDE_COLUMNS.items()):
        cols[name] = _column(values[:, k], None if mask is None else mask[:, k], how)
    return pa.table(cols)


def _text(raws: list[bytes]) -> pa.Array:
    """Raw inputs as one string column over their joined bytes (a stored game is UTF-8: it parsed as JSON)."""
    offsets = np.zeros(len(raws) + 1, dtype=np.int64)
    np.cumsum([len(r) for r in raws], out=offsets[1:])
    arr = pa.Array.from_buffers(
        pa.large_string(), len(raws), [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(raws))]
    )
    try:
        arr.validate(full=True)  # checks the UTF-8 without a Python str of the chunk
    except pa.ArrowInvalid:
        return pa.array([r.decode("utf-8", errors="replace") for r in raws], pa.large_string())
    return arr


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


def _column(values: _IntArray, mask: _BoolArray | None, how: Any) -> pa.Array:
    """One column from packed ints: a type, or a lookup array (strings) the ints index."""
    m = mask if mask is not None and mask.any() else None
    if isinstance(how, pa.DataType):
        arr = values.astype(bool) if how == _BOOL else values.astype(how.to_pandas_dtype())
        return pa.array(arr, type=how, mask=m)
    return _names(how, values, m)


def _names(dictionary: pa.Array, indices: Any, mask: Any = None) -> pa.Array:
    """``dictionary[indices]`` as a dictionary-encoded column: no string is copied, and
    DuckDB reads it into a VARCHAR column as it would the plain strings."""
    return pa.DictionaryArray.from_arrays(pa.array(np.asarray(indices, dtype=np.int32), mask=mask), dictionary)


def _within(counts: _IntArray) -> _IntArray:
    """1, 2, ... within each group of consecutive rows of the given sizes."""
    total = int(counts.sum())
    starts = np.cumsum(counts) - counts
    return np.arange(total, dtype=np.int64) - np.repeat(starts, counts) + 1


def _deal_tables(built: list[Built]) -> dict[str, pa.Table]:
    """``deals``, ``bids``, ``tricks`` and ``plays`` of a chunk's games, column-wise from the packed data."""
    nd = len(DEAL_INTS)
    ids = pa.array([b.game_id for b in built], _STR)
    players = pa.array([p for b in built for p in b.game[5:9]], _STR)
    per_game = np.array([len(b.deals) // (8 * nd) for b in built], dtype=np.int64)
    if not per_game.any():
        return {}
    deals, dmask = _packed([b.deals for b in built], [b.deal_nulls for b in built], nd)
    deal_game = np.repeat(np.arange(len(built), dtype=np.int64), per_game)
    deal_no = _within(per_game)
    deal_cols: dict[str, pa.Array] = {"game_id": _names(ids, deal_game), "deal": pa.array(deal_no, _I32)}
    for name, (src, how) in _DEAL_COLUMNS.items():
        k = _D[src]
        deal_cols[name] = _column(deals[:, k], None if dmask is None else dmask[:, k], how)
    deal_cols["no_trump"] = pa.array(deals[:, _D["trump"]] == NO_TRUMP)
    out = {"deals": pa.table({f: deal_cols[f] for f in DEAL_FIELDS})}

    bids, bmask = _packed([b.bids for b in built], [b.bid_nulls for b in built], len(BID_INTS))
    bid_deal = np.repeat(np.arange(len(deals), dtype=np.int64), 4)
    bid_game = deal_game[bid_deal]
    bid_seat = bids[:, _B["seat"]]

    def bcol(f: str, how: Any) -> pa.Array:
        return _column(bids[:, _B[f]], None if bmask is None else bmask[:, _B[f]], how)

    out["bids"] = pa.table(
        {
            "game_id": _names(ids, bid_game),
            "deal": pa.array(deal_no[bid_deal], _I32),
            "position": pa.array(np.tile(np.arange(1, 5, dtype=np.int32), len(deals))),
            "seat": bcol("seat", SEAT_ARRAY),
            "player": _names(players, bid_game * 4 + bid_seat),
            "kind": bcol("kind", BID_KIND_ARRAY),
            "value": bcol("value", _I64),
            "board_level": bcol("board_level", _I32),
            "multiplier": bcol("multiplier", _I32),
            "side": bcol("side", SIDE_ARRAY),
            "rainbow": bcol("rainbow", _BOOL),
        }
    )

    per_deal = deals[:, _D["tricks"]]
    if not per_deal.any():
        return out
    trick_deal = np.repeat(np.arange(len(deals), dtype=np.int64), per_deal)
    trick_game = deal_game[trick_deal]
    trump = deals[trick_deal, _D["trump"]]
    game_rules, suit_of, is_trump = _by_rules(built)
    trick_rules = game_rules[trick_game]
    leader = np.frombuffer(b"".join(b.leaders for b in built), dtype=np.uint8).astype(np.int64)
    winner = np.frombuffer(b"".join(b.winners for b in built), dtype=np.uint8).astype(np.int64)
    broken = np.frombuffer(b"".join(b.broken for b in built), dtype=np.bool_)
    cards = np.frombuffer(b"".join(b.cards for b in built), dtype=np.uint8).astype(np.int64)
    ntr = len(leader)
    c4 = cards.reshape(ntr, 4)
    led = c4[:, 0]
    trick_deal_no = deal_no[trick_deal].astype(np.int32)
    trick_no = _within(per_deal).astype(np.int32)
    out["tricks"] = pa.table(
        {
            "game_id": _names(ids, trick_game),
            "deal": pa.array(trick_deal_no),
            "trick": pa.array(trick_no),
            "leader": _names(SEAT_ARRAY, leader),
            "leader_player": _names(players, trick_game * 4 + leader),
            "winner": _names(SEAT_ARRAY, winner),
            "winner_player": _names(players, trick_game * 4 + winner),
            "led_card": _names(CARD_ARRAY, led),
            "led_suit": _names(SUIT_ARRAY, suit_of[trick_rules, trump, led]),
            "winning_card": _names(CARD_ARRAY, c4[np.arange(ntr), (winner - leader) & 3]),
            "trump_broken_before": pa.array(broken),
        }
    )
    play_trick = np.repeat(np.arange(ntr, dtype=np.int64), 4)
    play_game = trick_game[play_trick]
    seat = (leader[play_trick] + np.tile(np.arange(4, dtype=np.int64), ntr)) & 3
    out["plays"] = pa.table(
        {
            "game_id": _names(ids, play_game),
            "deal": pa.array(np.repeat(trick_deal_no, 4)),
            "trick": pa.array(np.repeat(trick_no, 4)),
            "position": pa.array(np.tile(np.arange(1, 5, dtype=np.int32), ntr)),
            "seat": _names(SEAT_ARRAY, seat),
            "player": _names(players, play_game * 4 + seat),
            "card": _names(CARD_ARRAY, cards),
            "suit": _names(CARD_SUIT_ARRAY, cards),
            "rank": pa.array(RANK_VALUES[cards]),
            "is_trump": pa.array(is_trump[trick_rules[play_trick], trump[play_trick], cards]),
        }
    )
    return out


__all__ = ["game_tables", "rows_table"]

"""One raw input -> the row data the store keeps of it (runs in worker processes).

:func:`build_item` decodes and replays one :class:`~backalley.sources.Item` the
way :func:`backalley.validate.check` does (the msgspec fast path, and the full
parse + pydantic path for anything it refuses) and turns the record and its
replay into compact row data, cheap to send between processes:

* the ``games`` row and the ``violations`` rows as tuples (one and usually none);
* ``deals`` and ``bids`` as packed int64 fields plus a null mask
  (:data:`DEAL_INTS`, :data:`BID_INTS`);
* ``tricks`` and ``plays`` as the replay's own per-trick bytes (leader, winner,
  trump broken before, and the four cards in play order).

The single writer in the parent process expands these column-wise
(:mod:`backalley.ingest`).  Nothing here touches DuckDB or Arrow, so it is cheap
to import in a worker.  Every record that fits the schema goes through the one
row builder, :func:`build_game`, from the msgspec Structs of
:mod:`backalley.record`; a record with a usable ``game_id`` that does not fit
the schema only gets its ``games`` and ``violations`` rows.

An input that cannot become a ``games`` row (not JSON, not an object, no
string ``game_id``, or a ``game_id`` that does not fit the format) comes back
as a reject with its reason (``json``, ``no_game_id``, ``schema_no_id``, ``ruleset``).
"""

from __future__ import annotations

import codecs
import hashlib
from array import array
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from itertools import chain
from typing import Any

from msgspec import UNSET

from backalley.cards import CARD_INDEX
from backalley.record import FastBid, FastRecord, FastTeamInts, fast_decode, instant, nfc, to_fast
from backalley.replay import ERROR, SEAT_INDEX, SEAT_NAMES, Replay, replay, replay_checked
from backalley.rules import BOARD, HAND_SIZE, PASS, Contract, made
from backalley.sources import Item, parse
from backalley.validate import status, too_large, tune_gc

#: The int64 fields packed per deal in :attr:`Built.deals`, in this order.  Seats, cards and
#: suits are small ints (``trump``: 0..3, or 4 for no trump); a contract kind is 0 for
#: ``board`` and 1 for ``number``; booleans are 0/1; ``tricks`` is the number of
#: replayed tricks (the deal's entries in :attr:`Built.cards` and friends).
DEAL_INTS = (
    "number",
    "hand_size",
    "dealer",
    "trump_card",
    "trump",
    "joker_swap_seat",
    "joker_swap_drawn",
    "pass_out",
    "opening_leader",
    "ns_contract_kind",
    "ns_contract",
    "ns_board_level",
    "ew_contract_kind",
    "ew_contract",
    "ew_board_level",
    "tricks_ns",
    "tricks_ew",
    "points_ns",
    "points_ew",
    "ns_made",
    "ew_made",
    "won_n",
    "won_e",
    "won_s",
    "won_w",
    "recorded_tricks_ns",
    "recorded_tricks_ew",
    "recorded_points_ns",
    "recorded_points_ew",
    "tricks",
)
#: The int64 fields packed per bid in :attr:`Built.bids` (four bids per deal, in bidding
#: order): seat 0..3; kind 0 ``board``, 1 ``pass``, 2 ``number``; value; board level.
BID_INTS = ("seat", "kind", "value", "board_level")
#: Bid kinds by the code of :data:`BID_INTS`.
BID_KINDS = ("board", "pass", "number")
#: Contract kinds by the code of :data:`DEAL_INTS`.
CONTRACT_KINDS = ("board", "number")
#: Longest reject message kept (the raw text is kept whole, but for a record too large).
MAX_MESSAGE = 2000
#: Bytes of a too-large record's raw text kept in ``rejects`` (see :func:`oversized`).
RAW_PREFIX = 4096
_I32 = 2**31
_I64 = 2**63
_NO_RESULT = (None, None, None, None)


@dataclass(slots=True)
class Built:
    """What a worker sends back for one input (bytes and small tuples: cheap to pickle)."""

    sha: str
    game_id: str | None = None
    #: ``None`` for a game; else the reject reason (``json``, ``no_game_id``, ``schema_no_id``, ``too_large``).
    reject: str | None = None
    message: str = ""
    valid: bool = False
    #: Set by the writer's pre-check: this content is stored already (nothing else is filled in).
    stored: bool = False
    #: The ``games`` columns of :data:`GAME_FIELDS`, in that order.
    game: tuple[Any, ...] = ()
    violations: list[tuple[Any, ...]] = field(default_factory=list)
    #: ``len(DEAL_INTS)`` int64 values per deal (native byte order); empty unless the schema holds.
    deals: bytes = b""
    #: One byte per value of :attr:`deals`: 1 where the value is NULL (empty: none is).
    deal_nulls: bytes = b""
    #: ``len(BID_INTS)`` int64 values per bid, four bids per deal.
    bids: bytes = b""
    #: One byte per value of :attr:`bids`: 1 where the value is NULL (empty: none is).
    bid_nulls: bytes = b""
    #: Per replayed trick, deal after deal: the leader's seat, the winner's seat, and
    #: whether trump was broken before it (0/1), one byte each.
    leaders: bytes = b""
    winners: bytes = b""
    broken: bytes = b""
    #: Four card ints per replayed trick, in play order.
    cards: bytes = b""


#: Worker-built ``games`` columns (the writer adds hash, source, line, run and time, raw text).
GAME_FIELDS = (
    "game_id",
    "format_version",
    "ruleset",
    "played_at",
    "event",
    "player_n",
    "player_e",
    "player_s",
    "player_w",
    "valid",
    "complete",
    "status",
    "schema_ok",
    "dealings",
    "scored_deals",
    "pass_outs",
    "errors",
    "warnings",
    "score_ns",
    "score_ew",
    "recorded_score_ns",
    "recorded_score_ew",
    "winner",
)
VIOLATION_FIELDS = ("game_id", "ordinal", "code", "severity", "message", "path", "deal", "trick", "seat")
DEAL_FIELDS = (
    "game_id",
    "deal",
    "number",
    "hand_size",
    "dealer",
    "trump_card",
    "trump_suit",
    "no_trump",
    "joker_swap_seat",
    "joker_swap_drawn",
    "pass_out",
    "opening_leader",
    "ns_contract_kind",
    "ns_contract",
    "ns_board_level",
    "ew_contract_kind",
    "ew_contract",
    "ew_board_level",
    "tricks_ns",
    "tricks_ew",
    "points_ns",
    "points_ew",
    "ns_made",
    "ew_made",
    "won_n",
    "won_e",
    "won_s",
    "won_w",
    "recorded_tricks_ns",
    "recorded_tricks_ew",
    "recorded_points_ns",
    "recorded_points_ew",
)
BID_FIELDS = ("game_id", "deal", "position", "seat", "player", "kind", "value", "board_level")


#: A worker process replays: see :func:`backalley.validate.tune_gc`.
worker_init = tune_gc


def content_hash(raw: bytes) -> str:
    """The content hash of a raw input: SHA-256 of its bytes, hex."""
    return hashlib.sha256(raw).hexdigest()


def _i64(v: Any) -> int | None:
    """An integer that fits BIGINT, else ``None`` (absurd values stay only in the raw text)."""
    return v if isinstance(v, int) and not isinstance(v, bool) and -_I64 <= v < _I64 else None


def _i32(v: int | None) -> int | None:
    return v if v is not None and -_I32 <= v < _I32 else None


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def _timestamp(v: Any) -> datetime | None:
    """An RFC 3339 date-time with offset -> aware UTC datetime (a leap second: the next second); else None."""
    if not isinstance(v, str):
        return None
    try:
        return instant(v).astimezone(UTC)
    except (ValueError, OverflowError):
        return None


def _fast_team(v: FastTeamInts | Any) -> tuple[int | None, int | None]:
    if v is UNSET:
        return None, None
    return _i64(v.NS), _i64(v.EW)


def build_item(item: Item) -> Built:
    """Decode, replay and turn one input into row data; never raises on bad content."""
    sha = content_hash(item.raw)
    if item.read_error is not None:
        return Built(sha, reject="json", message=item.read_error)
    rec = fast_decode(item.raw)
    if rec is not None:
        return build_game(rec, replay_checked(rec), sha)
    value, error = parse(item.raw)
    if error is not None:
        return Built(sha, reject="json", message=error)
    if not isinstance(value, dict):
        r = replay(value)
        return Built(sha, reject="no_game_id", message=r.violations[0].message)
    gid = value.get("game_id")
    if not isinstance(gid, str):
        why = (
            "the record has no game_id"
            if "game_id" not in value
            else f"game_id is {'null' if gid is None else type(gid).__name__}, not a string"
        )
        return Built(sha, reject="no_game_id", message=why)
    r = replay(value)
    if any(v.code == "SCHEMA" and v.path == "/game_id" for v in r.violations):
        msg = "; ".join(v.message for v in r.violations if v.code == "SCHEMA")
        return Built(sha, game_id=gid, reject="schema_no_id", message=msg[:MAX_MESSAGE])
    if not any(v.code == "SCHEMA" for v in r.violations):
        if value.get("format_version") == 2:  # the store's tables are those of format 1 (yet)
            msg = f"format 2 records (ruleset {value.get('ruleset')}) are validated but not stored yet"
            return Built(sha, game_id=gid, reject="ruleset", message=msg)
        return build_game(to_fast(value), r, sha)
    return build_schema_invalid(value, r, sha)


def oversized(item: Item, limit: int) -> tuple[Item, Built] | None:
    """A record above ``limit`` bytes, as the reject ``too_large`` (never parsed), else ``None``.

    The reject keeps the content hash of the whole record and, as its raw text,
    the first :data:`RAW_PREFIX` bytes (cut at a character boundary).
    """
    error = too_large(len(item.raw), limit)
    if error is None:
        return None
    kept = item.raw[:RAW_PREFIX]
    if len(item.raw) > RAW_PREFIX:  # not the first bytes of a character cut in two
        decoder = codecs.getincrementaldecoder("utf-8")(errors="surrogateescape")
        decoder.decode(kept, final=False)
        kept = kept[: len(kept) - len(decoder.getstate()[0])]
    message = f"{error}; the raw text keeps its first {len(kept):,} bytes"
    return Item(item.source, item.line, kept), Built(content_hash(item.raw), reject="too_large", message=message)


def build(raw: bytes) -> Built:
    """:func:`build_item` for raw bytes (tests and tools)."""
    return build_item(Item("", None, raw))


def _game_row(
    r: Replay,
    format_version: Any,
    ruleset: Any,
    played_at: Any,
    event: Any,
    players: list[str | None],
    schema_ok: bool,
    recorded: tuple[int | None, int | None],
) -> tuple[Any, ...]:
    errors = sum(1 for v in r.violations if v.severity == ERROR)
    final = r.final_score
    winner = None
    if final is not None:
        winner = "NS" if final[0] > final[1] else "EW" if final[1] > final[0] else "tie"
    return (
        r.game_id,
        _i64(format_version),
        _str(ruleset),
        _timestamp(played_at),
        _str(event),
        *players,
        r.valid,
        r.complete,
        status(r),
        schema_ok,
        len(r.deals) if schema_ok else None,
        r.scored_deals if schema_ok else None,
        sum(1 for d in r.deals if d.pass_out) if schema_ok else None,
        errors,
        len(r.violations) - errors,
        None if final is None else _i32(final[0]),
        None if final is None else _i32(final[1]),
        *recorded,
        winner,
    )


def _violation_rows(r: Replay) -> list[tuple[Any, ...]]:
    gid = r.game_id
    return [
        (gid, k, v.code, v.severity, v.message, v.path, v.deal, v.trick, v.seat) for k, v in enumerate(r.violations, 1)
    ]


def build_schema_invalid(rec: dict[str, Any], r: Replay, sha: str) -> Built:
    """The ``games`` and ``violations`` rows of a record with a usable ``game_id`` that fails the schema."""
    assert r.game_id is not None
    players_in = rec.get("players")
    given = [_str(players_in.get(s)) if isinstance(players_in, dict) else None for s in SEAT_NAMES]
    players = [None if p is None else nfc(p) for p in given]
    out = Built(sha, game_id=r.game_id, valid=r.valid)
    out.game = _game_row(
        r,
        rec.get("format_version"),
        rec.get("ruleset"),
        rec.get("played_at"),
        rec.get("event"),
        players,
        False,
        (None, None),
    )
    out.violations = _violation_rows(r)
    return out


def _contract(c: Contract, pass_out: bool) -> tuple[int | None, int | None, int | None]:
    if pass_out:
        return None, None, None
    return (0, None, c.value) if c.board else (1, c.value, None)


@lru_cache(maxsize=1 << 14)
def _bid_ints(bids: tuple[tuple[str, int | str], ...]) -> tuple[int | None, ...]:
    """The :data:`BID_INTS` of a deal's four bids, flat (memoised: there are few distinct biddings).

    A number outside BIGINT is kept here and becomes NULL when packed (:func:`_pack`).
    """
    out: list[int | None] = []
    claims = 0
    for seat, bid in bids:
        if bid == BOARD:
            claims += 1
            out += (SEAT_INDEX[seat], 0, None, claims)
        elif bid == PASS:
            out += (SEAT_INDEX[seat], 1, 0, None)
        else:
            assert isinstance(bid, int)
            out += (SEAT_INDEX[seat], 2, bid, None)
    return tuple(out)


def _pack(values: list[int | None]) -> tuple[bytes, bytes]:
    """int64 bytes of ``values`` (NULL as 0) and their null mask (``b""`` when nothing is NULL).

    An integer outside BIGINT becomes NULL (as :func:`_i64` makes it): the values
    are packed unchecked first, and only a pack that overflows is redone.
    """
    try:
        if None not in values:
            return array("q", values).tobytes(), b""  # type: ignore[type-var]
        return array("q", [0 if v is None else v for v in values]).tobytes(), bytes([v is None for v in values])
    except OverflowError:
        return _pack([v if v is None or -_I64 <= v < _I64 else None for v in values])


def _bid_key(b: FastBid) -> tuple[str, int | str]:
    return b.seat, b.bid


def build_game(rec: FastRecord, r: Replay, sha: str) -> Built:
    """Row data for a record that fits the schema (decoded as Structs) and its replay."""
    gid = rec.game_id
    p = rec.players
    out = Built(sha, game_id=gid, valid=r.valid)
    out.game = _game_row(
        r,
        rec.format_version,
        rec.ruleset,
        None if rec.played_at is UNSET else rec.played_at,
        None if rec.event is UNSET else rec.event,
        [p.N, p.E, p.S, p.W],
        True,
        _fast_team(rec.final_score),
    )
    if r.violations:
        out.violations = _violation_rows(r)
    ci = CARD_INDEX
    si = SEAT_INDEX
    deal_vals: list[int | None] = []
    bid_vals: list[int | None] = []
    outcomes = r.deals
    for d, o in zip(rec.deals, outcomes, strict=True):
        n = HAND_SIZE[d.number]
        con = o.contracts
        po = o.pass_out
        swap = d.joker_swap
        ws = o.winners
        res = d.result
        tns, tew = o.tricks
        deal_vals += (
            d.number,
            n,
            si[d.dealer],
            ci[d.trump_card],
            o.trump,
            None if swap is UNSET else si[swap.seat],
            None if swap is UNSET else ci[swap.drawn],
            po,
            con.opening_leader,
            *_contract(con.ns, po),
            *_contract(con.ew, po),
            tns,
            tew,
            *o.points,
            None if po else made(con.ns, tns, n),
            None if po else made(con.ew, tew, n),
            ws.count(0),
            ws.count(1),
            ws.count(2),
            ws.count(3),
            *(_NO_RESULT if res is UNSET else (res.tricks.NS, res.tricks.EW, res.points.NS, res.points.EW)),
            len(ws),
        )
        bid_vals += _bid_ints(tuple(map(_bid_key, d.bids)))
    out.deals, out.deal_nulls = _pack(deal_vals)
    out.bids, out.bid_nulls = _pack(bid_vals)
    out.leaders = bytes(chain.from_iterable(o.leaders for o in outcomes))
    out.winners = bytes(chain.from_iterable(o.winners for o in outcomes))
    out.broken = bytes(chain.from_iterable(o.broken_before for o in outcomes))
    out.cards = bytes(chain.from_iterable(o.cards for o in outcomes))
    return out


__all__ = [
    "BID_FIELDS",
    "BID_INTS",
    "BID_KINDS",
    "CONTRACT_KINDS",
    "DEAL_FIELDS",
    "DEAL_INTS",
    "GAME_FIELDS",
    "VIOLATION_FIELDS",
    "Built",
    "build",
    "build_game",
    "build_item",
    "build_schema_invalid",
    "content_hash",
    "oversized",
    "worker_init",
]

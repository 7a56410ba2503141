"""One raw input -> the row data the store keeps of it (runs in worker processes).

:func:`build_item` decodes and replays one :class:`~backalley.records.sources.Item` the
way :func:`backalley.validate.check` does (the msgspec fast path, and the full
parse + pydantic path for anything it refuses) and turns the record and its
replay into compact row data, cheap to send between processes:

* the ``games`` row, its ``game_sides`` rows and the ``violations`` rows as
  tuples (one, one per side, and usually none);
* ``deals``, ``deal_sides`` and ``bids`` as packed int64 fields plus a null mask
  (:data:`DEAL_INTS`, :data:`SIDE_INTS`, :data:`BID_INTS`);
* ``tricks`` and ``plays`` as the replay's own per-trick bytes (leader, winner,
  trump broken before, and the four cards in play order).

The single writer in the parent process expands these column-wise
(:mod:`backalley.store.ingest`).  Nothing here touches DuckDB or Arrow, so it is cheap
to import in a worker.  Every record that fits the schema (format 1 or 2, any
ruleset) goes through the one row builder, :func:`build_game`, from the msgspec
Structs of :mod:`backalley.records.fast`, asking the record's ruleset
(:func:`backalley.replay.ruleset_of`) for hand sizes, sides and contracts; a record with a usable ``game_id`` that does not fit
the schema only gets its ``games`` and ``violations`` rows.

An input that cannot become a ``games`` row (not JSON, not an object, no
string ``game_id``, or a ``game_id`` that does not fit the format) comes back
as a reject with its reason (``json``, ``no_game_id``, ``schema_no_id``).
"""

from __future__ import annotations

import codecs
import hashlib
import struct
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache, lru_cache
from typing import Any, cast

from msgspec import UNSET

from backalley.cards import CARD_INDEX, CARD_NAMES, CARD_RANK, CARD_SUIT, NO_TRUMP, SEATS, SUITS
from backalley.records.fast import (
    AnyFastRecord,
    FastHands,
    FastSheetDeal,
    FastSheetRecord,
    FastTeamInts,
    fast_decode_any,
    instant,
    nfc,
    to_fast_any,
)
from backalley.records.sources import Item, parse
from backalley.replay import (
    ERROR,
    SEAT_INDEX,
    SEAT_NAMES,
    UNKNOWN_TRUMP,
    BidDeal,
    DealOutcome,
    Replay,
    replay,
    replay_checked,
    replay_sheet_csv,
    ruleset_of,
)
from backalley.rules import BOARD, PASS, RULESETS, Bid, Contract, Ruleset, RulesetError, canonical_options
from backalley.rules.bab_online import BORE_MULT, bore_level
from backalley.rules.pereulok import multiplier
from backalley.store import raw as raw_codec
from backalley.validate import status, too_large, tune_gc

try:
    from backalley import _fastplay
except ImportError:  # no C build: the Python row builder does every game, with the same rows
    _fastplay = None  # type: ignore[assignment]

#: The int64 fields packed per deal in :attr:`Built.deals`, in this order.  Seats, cards and
#: suits are small ints (``trump``: 0..3, or 4 for no trump); booleans are 0/1; ``tricks`` is
#: the number of replayed tricks (the deal's entries in :attr:`Built.cards` and friends).  A
#: side's contract, tricks, points and recorded figures are in :attr:`Built.sides` only (the
#: views read the teams' columns from there).
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
    "won_n",
    "won_e",
    "won_s",
    "won_w",
    "tricks",
)
#: The int64 fields packed per bid in :attr:`Built.bids` (four bids per deal, in bidding
#: order): seat 0..3; kind 0 ``board`` (a board claim, or a bore of any level), 1 ``pass``,
#: 2 ``number``, 3 ``declaration`` (pereulok); value; board level; multiplier; side
#: (an index into :data:`SIDE_NAMES`); rainbow (0/1: the bidder's hand as dealt earned the
#: ruleset's hand bonus, bab-online's rainbow; NULL where the ruleset has none).
BID_INTS = ("seat", "kind", "value", "board_level", "multiplier", "side", "rainbow")
#: Bid kinds by the code of :data:`BID_INTS`.
BID_KINDS = ("board", "pass", "number", "declaration")
#: Contract kinds by the code of :data:`DEAL_INTS` and :data:`SIDE_INTS`: ``none`` is a
#: pereulok side that did not declare.
CONTRACT_KINDS = ("board", "number", "declaration", "none")
# The names of the small-int codes of the rows (the store's views name the narrow tables' codes
# by these lists, and so do the service's pages of games just stored).
#: Seat codes 0..3.
SEAT_CODES = tuple(SEATS)
#: Card codes 0..53 (:data:`backalley.cards.CARD_NAMES`), each card's natural suit letter (NULL
#: for a joker) and rank (2..14, 15 and 16 for the Little and Big Blooper).
CARD_CODES = tuple(CARD_NAMES)
CARD_SUIT_CODES = tuple(SUITS[s] if s < NO_TRUMP else None for s in CARD_SUIT)
CARD_RANKS = tuple(r + 2 for r in CARD_RANK)
#: Suit codes 0..3; 4 (:data:`backalley.cards.NO_TRUMP`) is no suit (no trump, or a joker led in
#: a no-trump deal), NULL in the views.
SUIT_CODES = (*SUITS, None)
#: Every side name: the teams, then the seats (the sides of a game without partnerships).
SIDE_NAMES = ("NS", "EW", "N", "E", "S", "W")
_SIDE_CODE = {name: k for k, name in enumerate(SIDE_NAMES)}
#: The int64 fields packed per side of a deal in :attr:`Built.sides` (the ruleset's sides in
#: order, deal after deal): side (index into :data:`SIDE_NAMES`), contract kind, contract
#: (tricks undertaken: the hand size for a board), multiplier, board level, tricks, points,
#: made, and the recorded tricks and points.
SIDE_INTS = (
    "side",
    "contract_kind",
    "contract",
    "multiplier",
    "board_level",
    "tricks",
    "points",
    "made",
    "recorded_tricks",
    "recorded_points",
)
#: Longest reject message kept (the raw text is kept whole, but for a record too large).
MAX_MESSAGE = 2000
#: Bytes of a too-large record's raw text kept in ``rejects`` (see :func:`oversized`).
RAW_PREFIX = 4096
_I32 = 2**31
_I64 = 2**63


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
    #: The ruleset's label (``standard``, ``pereulok+no_jokers``): how the tricks were played.
    rules: str = "standard"
    #: ``len(SIDE_INTS)`` int64 values per side per deal; ``nsides`` sides per deal.
    sides: bytes = b""
    side_nulls: bytes = b""
    nsides: int = 2
    #: The ``game_sides`` rows (:data:`GAME_SIDE_FIELDS`), one per side.
    game_sides: list[tuple[Any, ...]] = field(default_factory=list)
    #: The raw input compressed (:func:`backalley.store.raw.compress`), for a game that will be stored
    #: (not a row: left out of comparisons of what two builders made of a record).
    raw_zstd: bytes = field(default=b"", compare=False)

    def __reduce__(self) -> tuple[type[Built], tuple[Any, ...]]:
        """Pickled as its fields in order, rebuilt by one call of the class: the hand-off from a worker
        pickles thousands a second, and the state functions of a slots dataclass took about 20 µs a
        game to pickle and 12 to unpickle."""
        return Built, (
            self.sha, self.game_id, self.reject, self.message, self.valid, self.stored, self.game, self.violations,
            self.deals, self.deal_nulls, self.bids, self.bid_nulls, self.leaders, self.winners, self.broken,
            self.cards, self.rules, self.sides, self.side_nulls, self.nsides, self.game_sides, self.raw_zstd,
        )  # fmt: skip


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
    "options",
    "sheet",
)
GAME_SIDE_FIELDS = ("game_id", "side", "score", "recorded_score")
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
BID_FIELDS = (
    "game_id",
    "deal",
    "position",
    "seat",
    "player",
    "kind",
    "value",
    "board_level",
    "multiplier",
    "side",
    "rainbow",
)


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


def build_item(item: Item, sha: str | None = None) -> Built:
    """Decode, replay and turn one input into row data, its raw text compressed; never raises on bad content.

    ``sha`` is the input's content hash when the caller has it already (else it is computed)."""
    return with_raw(build_rows(item, sha), item)


def build_rows(item: Item, sha: str | None = None) -> Built:
    """:func:`build_item` without compressing the raw text (for what only reads the rows)."""
    return _build_item(item, content_hash(item.raw) if sha is None else sha)


def with_raw(built: Built, item: Item) -> Built:
    """``built`` with ``item``'s raw text compressed if it is a game (to be stored), as a worker sends it."""
    if built.reject is None and built.game_id is not None:
        built.raw_zstd = raw_codec.compress(item.raw)
    return built


def _build_item(item: Item, sha: str) -> Built:
    if item.read_error is not None:
        return Built(sha, reject="json", message=item.read_error)
    if item.csv:
        return _build_value(*replay_sheet_csv(item.raw, item.line or 1), sha)
    rec = fast_decode_any(item.raw)
    if rec is not None:
        return build_game(rec, replay_checked(rec), sha)
    value, error = parse(item.raw)
    if error is not None:
        return Built(sha, reject="json", message=error)
    if not isinstance(value, dict):
        r = replay(value)
        return Built(sha, reject="no_game_id", message=r.violations[0].message)
    return _build_value(value, replay(value), sha)


def _build_value(value: dict[str, Any], r: Replay, sha: str) -> Built:
    """Row data of a parsed JSON object and its replay (a game, or the reject it is)."""
    gid = value.get("game_id")
    if not isinstance(gid, str):
        why = (
            "the record has no game_id"
            if "game_id" not in value
            else f"game_id is {'null' if gid is None else type(gid).__name__}, not a string"
        )
        return Built(sha, reject="no_game_id", message=why)
    if any(v.code == "SCHEMA" and v.path == "/game_id" for v in r.violations):
        msg = "; ".join(v.message for v in r.violations if v.code == "SCHEMA")
        return Built(sha, game_id=gid, reject="schema_no_id", message=msg[:MAX_MESSAGE])
    if not any(v.code == "SCHEMA" for v in r.violations):
        return build_game(to_fast_any(value), r, sha)
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
    ruleset: str | None,
    options: str,
    played_at: Any,
    event: Any,
    players: list[str | None],
    schema_ok: bool,
    recorded: tuple[int | None, ...],
) -> tuple[Any, ...]:
    """The ``games`` columns of :data:`GAME_FIELDS`; ``recorded`` is the final score by side."""
    errors = sum(1 for v in r.violations if v.severity == ERROR)
    final = r.final_score
    teams = r.sides == ("NS", "EW")
    return (
        r.game_id,
        _i64(format_version),
        ruleset,
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
        _i32(final[0]) if final is not None and teams else None,
        _i32(final[1]) if final is not None and teams else None,
        *(recorded if teams and recorded else (None, None)),
        None if final is None else _winner(r.sides, final),
        options,
        r.sheet,
    )


def _winner(sides: tuple[str, ...], final: tuple[int, ...]) -> str:
    """The side with the most points, or ``tie`` when several share the most."""
    best = max(final)
    top = [s for s, v in zip(sides, final, strict=True) if v == best]
    return top[0] if len(top) == 1 else "tie"


def _violation_rows(r: Replay) -> list[tuple[Any, ...]]:
    gid = r.game_id
    return [
        (gid, k, v.code, v.severity, v.message, v.path, v.deal, v.trick, v.seat) for k, v in enumerate(r.violations, 1)
    ]


def checked_ruleset(rec: dict[str, Any]) -> tuple[str | None, str]:
    """The ruleset a parsed record is checked under and its canonical options (``a,b``; ``""`` for none).

    Format 1 is ``standard``; format 2 names its ruleset (``None`` when it names
    none that exists); options that cannot be read are ``""``.
    """
    version = rec.get("format_version")
    if not (version == 2 and type(version) is int):
        return "standard", ""
    name = rec.get("ruleset")
    if not isinstance(name, str) or name not in RULESETS:
        return None, ""
    opts = rec.get("options")
    if not isinstance(opts, list) or not all(isinstance(o, str) for o in opts):
        return name, ""
    try:
        return name, ",".join(canonical_options(name, opts))
    except RulesetError:
        return name, ""


def build_schema_invalid(rec: dict[str, Any], r: Replay, sha: str) -> Built:
    """The ``games`` and ``violations`` rows of a record with a usable ``game_id`` that fails the schema."""
    assert r.game_id is not None
    players_in = rec.get("players")
    given = [_str(players_in.get(s)) if isinstance(players_in, dict) else None for s in SEAT_NAMES]
    players = [None if p is None else nfc(p) for p in given]
    out = Built(sha, game_id=r.game_id, valid=r.valid)
    ruleset, options = checked_ruleset(rec)
    out.game = _game_row(
        r,
        rec.get("format_version"),
        ruleset,
        options,
        rec.get("played_at"),
        rec.get("event"),
        players,
        False,
        (),
    )
    out.violations = _violation_rows(r)
    return out


#: Codes of :data:`CONTRACT_KINDS`.
_BOARD_K, _NUMBER_K, _DECLARATION_K, _NONE_K = range(4)
#: Codes of :data:`BID_KINDS`.
_BOARD_B, _PASS_B, _NUMBER_B, _DECLARATION_B = range(4)


def _side_contract(rules: Ruleset, c: Contract, n: int, level: int) -> tuple[int, int | None, int | None, int | None]:
    """A side's contract as stored: kind, tricks undertaken, multiplier, board level.

    ``level`` is the side's highest bore level (bab-online; 0 without one).
    """
    if rules.auction == "declarations":
        return (_DECLARATION_K, c.value, c.mult, None) if c.mult else (_NONE_K, None, None, None)
    if rules.levelled_boards:
        return (_BOARD_K if level else _NUMBER_K), c.value, c.mult, level or None
    if c.board:  # standard: value is the claim's multiplier
        return _BOARD_K, n, c.value, c.value
    return _NUMBER_K, c.value, 1, None


@lru_cache(maxsize=1 << 14)
def _bid_ints(rules: Ruleset, seats: tuple[str, ...], values: tuple[Bid, ...]) -> tuple[int | None, ...]:
    """The :data:`BID_INTS` of a deal's four bids (their seats and values as recorded), flat (memoised:
    there are few distinct biddings).

    A number outside BIGINT is kept here and becomes NULL when packed (:func:`_pack`).
    """
    out: list[int | None] = []
    claims = 0
    previous = 0
    declarations = rules.auction == "declarations"
    for seat_name, bid in zip(seats, values, strict=True):
        seat = SEAT_INDEX[seat_name]
        side = _SIDE_CODE[rules.sides[rules.side_of[seat]]]
        level = bore_level(bid) if rules.levelled_boards else 0
        if level:
            out += (seat, _BOARD_B, None, level, BORE_MULT[level], side, None)
        elif bid == BOARD:
            claims += 1
            out += (seat, _BOARD_B, None, claims, claims, side, None)
        elif bid == PASS or not isinstance(bid, int):
            out += (seat, _PASS_B, 0, None, None, side, None)
        elif declarations:
            out += (seat, _DECLARATION_B, bid, None, multiplier(bid, previous), side, None)
            previous = bid
        else:
            out += (seat, _NUMBER_B, bid, None, None, side, None)
    return tuple(out)


@lru_cache(maxsize=1 << 14)
def _packed_bids(rules: Ruleset, seats: tuple[str, ...], values: tuple[Bid, ...]) -> tuple[bytes, bytes]:
    """:func:`_bid_ints` packed (:func:`_part`), memoised alike: most biddings recur."""
    return _part(list(_bid_ints(rules, seats, values)))


def _part(values: list[int | None]) -> tuple[bytes, bytes]:
    """int64 bytes of ``values`` (NULL as 0) and their full null mask (a 0/1 byte per value).

    ``values`` is consumed (its NULLs become 0).  An integer outside BIGINT becomes
    NULL (as :func:`_i64` makes it): the values are packed unchecked first, and only a
    pack that overflows is redone.  ``struct`` packs a list about three times as fast as
    ``array``.  The NULLs are found by one loop that mypyc compiles to pointer compares,
    and only they are touched after it (``list.index(None)`` compared every int with
    ``None`` through both types' rich comparison).
    """
    mask = bytearray(len(values))
    for k in [k for k, v in enumerate(values) if v is None]:
        mask[k] = 1
        values[k] = 0
    try:
        return struct.pack(f"{len(values)}q", *values), bytes(mask)
    except struct.error:
        return _part([None if mask[k] or not -_I64 <= (v or 0) < _I64 else v for k, v in enumerate(values)])


def _joined(parts: list[tuple[bytes, bytes]]) -> tuple[bytes, bytes]:
    """The parts of :func:`_part` joined as :func:`_pack` packs them whole (``b""``: no NULL at all)."""
    nulls = b"".join(p[1] for p in parts)
    return b"".join(p[0] for p in parts), nulls if 1 in nulls else b""


def _rainbows(rules: Ruleset, d: BidDeal, o: DealOutcome, bid_ints: tuple[int | None, ...]) -> tuple[int | None, ...]:
    """``bid_ints`` with each bidder's hand bonus (0/1) filled in, asked of the ruleset hand by hand
    (a score sheet's deal names the seats dealt a rainbow)."""
    if not rules.has_bonus or o.pass_out:  # (a passed-out deal may be recorded without its hands)
        return bid_ints
    out = list(bid_ints)
    n = rules.hand_size(d.number)
    width = len(BID_INTS)
    for k in range(0, len(out), width):
        seat = out[k]
        if seat is None:
            continue
        if isinstance(d, FastSheetDeal):
            named = d.rainbows is not UNSET and SEAT_NAMES[seat] in d.rainbows
            bonus = rules.rainbow_bonus([seat] if named else [], n)
        else:
            alone = [0, 0, 0, 0]
            hd = cast("FastHands", d.hands)
            for name in (hd.N, hd.E, hd.S, hd.W)[seat]:
                alone[seat] |= 1 << CARD_INDEX[name]
            bonus = rules.bonus(alone, o.trump, n)
        out[k + width - 1] = int(bonus[rules.side_of[seat]] > 0)
    return tuple(out)


def _pack(values: list[int | None]) -> tuple[bytes, bytes]:
    """:func:`_part`, with ``b""`` for a mask without NULL."""
    data, nulls = _part(values)
    return data, nulls if 1 in nulls else b""


def _recorded(values: FastTeamInts | dict[Any, int] | Any, sides: tuple[str, ...]) -> tuple[int | None, ...]:
    """Recorded figures by side (format 1: ``{NS, EW}`` Structs; format 2: a dict); NULLs when absent."""
    if values is UNSET:
        return (None,) * len(sides)
    if isinstance(values, FastTeamInts):
        return values.NS, values.EW  # the schema's ints; one outside BIGINT becomes NULL when packed
    return tuple(values.get(s) for s in sides)


def build_game(rec: AnyFastRecord, r: Replay, sha: str) -> Built:
    """Row data for a record that fits the schema (decoded as Structs) and its replay."""
    rules = ruleset_of(rec)
    sides = rules.sides
    gid = rec.game_id
    p = rec.players
    out = Built(sha, game_id=gid, valid=r.valid, rules=rules.label(), nsides=len(sides))
    recorded = tuple(_i64(v) for v in _recorded(rec.final_score, sides))
    out.game = _game_row(
        r,
        rec.format_version,
        rules.name,
        ",".join(rules.options),
        None if rec.played_at is UNSET else rec.played_at,
        None if rec.event is UNSET else rec.event,
        [p.N, p.E, p.S, p.W],
        True,
        recorded,
    )
    final = r.final_score or (None,) * len(sides)
    out.game_sides = [(gid, s, _i32(v), rv) for s, v, rv in zip(sides, final, recorded, strict=True)]
    if r.violations:
        out.violations = _violation_rows(r)
    outcomes = r.deals
    deals = cast("list[BidDeal]", rec.deals)
    got = None
    if _fastplay is not None and not isinstance(rec, FastSheetRecord):
        got = _fast_rows(rules, deals, outcomes)
    if got is None:
        got = _python_rows(rules, deals, outcomes)
    out.deals, out.deal_nulls, out.sides, out.side_nulls, out.bids, out.bid_nulls = got
    out.leaders, out.winners, out.broken, out.cards = _trick_bytes(outcomes)
    return out


_Rows = tuple[bytes, bytes, bytes, bytes, bytes, bytes]


def _python_rows(rules: Ruleset, deals: list[BidDeal], outcomes: list[DealOutcome]) -> _Rows:
    """The packed deal, side and bid rows of a game's dealings, field by field (the reference the C row
    builder is tested against, and what a pure-Python install runs)."""
    deal_vals: list[int | None] = []
    side_vals: list[int | None] = []
    bid_parts: list[tuple[bytes, bytes]] = []
    for d, o in zip(deals, outcomes, strict=True):
        _add_sides(side_vals, rules, o)
        deal_vals += _deal_ints(d, o)
        bid_parts.append(_bid_part(rules, d, o))
    deal_data, deal_nulls = _pack(deal_vals)
    side_data, side_nulls = _pack(side_vals)
    bid_data, bid_nulls = _joined(bid_parts)
    return deal_data, deal_nulls, side_data, side_nulls, bid_data, bid_nulls


def _bid_part(rules: Ruleset, d: BidDeal, o: DealOutcome) -> tuple[bytes, bytes]:
    """A dealing's packed bid rows (with each bid's rainbow where the ruleset has the bonus)."""
    seats, values = o.bid_seats, o.bid_values
    if rules.has_bonus:
        return _part(list(_rainbows(rules, d, o, _bid_ints(rules, seats, values))))
    return _packed_bids(rules, seats, values)


def _fast_rows(rules: Ruleset, deals: list[BidDeal], outcomes: list[DealOutcome]) -> _Rows | None:
    """:func:`_python_rows` with the deal and side rows written by ``_fastplay.rows``, each side's contract
    fields copied from its template (:func:`_side_template`); ``None`` when it leaves the game to the
    Python builder."""
    templates: list[bytes] = []
    bid_parts: list[tuple[bytes, bytes]] = []
    levelled = rules.levelled_boards
    nsides = len(rules.sides)
    passed = [_PASSED] * nsides
    for d, o in zip(deals, outcomes, strict=True):
        if o.pass_out:
            templates += passed
        else:
            n = o.hand_size
            levels = _levels(rules, _bid_ints(rules, o.bid_seats, o.bid_values)) if levelled else None
            by_side = o.contracts.by_side
            for s in range(nsides):
                c = by_side[s]
                level = levels[s] if levels is not None else 0
                t = _SIDE_TEMPLATES.get((rules, c.board, c.value, c.mult, n, level))
                templates.append(_side_template(rules, c, n, level) if t is None else t)
        bid_parts.append(_bid_part(rules, d, o))
    got = _fastplay.rows(outcomes, templates, _side_code_bytes(rules))
    if got is None:
        return None
    bid_data, bid_nulls = _joined(bid_parts)
    return got[0], got[1], got[2], got[3], bid_data, bid_nulls


#: The widest trick count a side template's mask of made contracts covers (0..62: an int64's bits).
_MADE_BITS = 63
#: The side template of a passed-out deal: every contract field NULL.
_PASSED = struct.pack("6q", 0, 0, 0, 0, 0, 31)
_SIDE_TEMPLATES: dict[tuple[object, ...], bytes] = {}


def _side_template(rules: Ruleset, c: Contract, n: int, level: int) -> bytes:
    """A side's contract fields for ``_fastplay.rows``, memoised by the contract, hand size and bore level
    (there are few distinct ones).

    Six int64: the contract's kind, tricks undertaken, multiplier and board level
    (:func:`_side_contract`), a mask of the trick counts 0..62 that make it (bit ``t``:
    ``rules.made(c, t, n)``), and NULL bits (1 kind, 2 contract, 4 multiplier, 8 board level,
    16 made).  Everything in it is asked of the ruleset, as :func:`_add_sides` asks it.
    """
    fields = _side_contract(rules, c, n, level)
    made = 0
    nulls = 16
    if fields[0] != _NONE_K:
        nulls = 0
        for t in range(_MADE_BITS):
            if rules.made(c, t, n):
                made |= 1 << t
    ints: list[int] = []
    for k, v in enumerate(fields):
        if v is None or not -_I64 <= v < _I64:  # NULL, as :func:`_part` packs it
            nulls |= 1 << k
            v = 0
        ints.append(v)
    got = struct.pack("6q", *ints, made, nulls)
    if len(_SIDE_TEMPLATES) > 1 << 14:
        _SIDE_TEMPLATES.clear()
    _SIDE_TEMPLATES[(rules, c.board, c.value, c.mult, n, level)] = got
    return got


@cache
def _side_code_bytes(rules: Ruleset) -> bytes:
    """The :data:`SIDE_NAMES` code of each of the ruleset's sides, a byte each."""
    return bytes(_side_codes(rules))


def _trick_bytes(outcomes: list[DealOutcome]) -> tuple[bytes, bytes, bytes, bytes]:
    """Every replayed trick's leader, winner and broken-before flag, and its four cards, deal after deal."""
    return (
        b"".join([o.leaders for o in outcomes]),
        b"".join([o.winners for o in outcomes]),
        b"".join([o.broken_before for o in outcomes]),
        b"".join([o.cards for o in outcomes]),
    )


def _levels(rules: Ruleset, bid_ints: tuple[int | None, ...]) -> list[int]:
    """Each side's highest bore level in a bab-online deal (0 without one; all 0 elsewhere)."""
    levels = [0] * len(rules.sides)
    if rules.levelled_boards:
        width = len(BID_INTS)
        for k in range(0, len(bid_ints), width):
            seat, kind, _, level = bid_ints[k : k + 4]
            if kind == _BOARD_B and seat is not None and level is not None:
                side = rules.side_of[seat]
                levels[side] = max(levels[side], level)
    return levels


@cache
def _side_codes(rules: Ruleset) -> tuple[int, ...]:
    """The :data:`SIDE_NAMES` code of each of the ruleset's sides."""
    return tuple(_SIDE_CODE[name] for name in rules.sides)


def _add_sides(out: list[int | None], rules: Ruleset, o: DealOutcome) -> None:
    """Add to ``out`` the :data:`SIDE_INTS` of each side of one dealing (its replay's outcome)."""
    tricks, points = o.tricks, o.points
    n = o.hand_size
    rec_tricks: tuple[int | None, ...] = o.recorded_tricks
    rec_points: tuple[int | None, ...] = o.recorded_points
    if not rec_tricks:  # no result recorded
        rec_tricks = rec_points = (None,) * len(tricks)
    codes = _side_codes(rules)
    if o.pass_out:
        for s, code in enumerate(codes):
            out += (code, None, None, None, None, tricks[s], points[s], None, rec_tricks[s], rec_points[s])
        return
    levels = _levels(rules, _bid_ints(rules, o.bid_seats, o.bid_values)) if rules.levelled_boards else None
    by_side = o.contracts.by_side
    for s, code in enumerate(codes):
        c = by_side[s]
        kind, contract, mult, level = _side_contract(rules, c, n, levels[s] if levels else 0)
        made = None if kind == _NONE_K else rules.made(c, tricks[s], n)
        out += (code, kind, contract, mult, level, tricks[s], points[s], made, rec_tricks[s], rec_points[s])


def _deal_ints(d: BidDeal, o: DealOutcome) -> list[int | None]:
    """The :data:`DEAL_INTS` of one dealing: what its replay noted of it (``d``, the record's dealing, is read
    only on a score sheet, for each player's tricks as written)."""
    ws = o.winners
    if isinstance(d, FastSheetDeal):  # no cards: each player's tricks as written
        w = d.tricks_won
        won = (0, 0, 0, 0) if w is UNSET else (w.N, w.E, w.S, w.W)
    else:
        won = (ws.count(0), ws.count(1), ws.count(2), ws.count(3))
    return [
        o.number,
        o.hand_size,
        o.dealer,
        None if o.trump_card < 0 else o.trump_card,
        None if o.trump == UNKNOWN_TRUMP else o.trump,
        None if o.swap_seat < 0 else o.swap_seat,
        None if o.swap_drawn < 0 else o.swap_drawn,
        o.pass_out,
        o.contracts.opening_leader,
        *won,
        len(ws),
    ]


__all__ = [
    "BID_FIELDS",
    "BID_INTS",
    "BID_KINDS",
    "CONTRACT_KINDS",
    "DEAL_FIELDS",
    "DEAL_INTS",
    "GAME_FIELDS",
    "GAME_SIDE_FIELDS",
    "SIDE_INTS",
    "SIDE_NAMES",
    "VIOLATION_FIELDS",
    "Built",
    "build",
    "build_game",
    "build_item",
    "build_rows",
    "build_schema_invalid",
    "checked_ruleset",
    "content_hash",
    "oversized",
    "with_raw",
    "worker_init",
]

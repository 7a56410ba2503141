"""One raw input -> the row data the store keeps of it (runs in worker processes).

:func:`build` parses and replays one :class:`~pipeline.sources.Item` and turns
the record and its replay into compact row data: tuples for the small tables
(``games``, ``deals``, ``bids``, ``violations``) and packed integer bytes for
the big ones (``tricks``, ``plays``), which the single writer in the parent
process expands column-wise (:mod:`pipeline.ingest`).  Nothing here touches
DuckDB or Arrow, so it is cheap to import in a worker.

An input that cannot become a ``games`` row (not JSON, not an object, no
string ``game_id``, or a ``game_id`` that does not fit the format) comes back
as a reject with its reason (``json``, ``no_game_id``, ``schema_no_id``).
"""

from __future__ import annotations

import hashlib
from array import array
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pipeline.cards import CARD_INDEX, EFFECTIVE_SUIT, IS_TRUMP, NO_TRUMP, SUITS
from pipeline.replay import ERROR, SEAT_INDEX, SEAT_NAMES, Replay, replay
from pipeline.rules import BOARD, HAND_SIZE, PASS, Contract, made
from pipeline.sources import Item, parse
from pipeline.validate import status

#: Fields per trick in :attr:`Built.tricks` (int32): deal, trick, leader, winner, led card,
#: led suit (0..3, 4 = a joker in a no-trump deal), winning card, trump broken before.
TRICK_FIELDS = 8
#: Fields per play in :attr:`Built.plays` (int8): card, is trump.
PLAY_FIELDS = 2
#: Longest reject message kept (the raw text is kept whole).
MAX_MESSAGE = 2000
_I32 = 2**31
_I64 = 2**63


@dataclass(slots=True)
class Built:
    """What a worker sends back for one input."""

    sha: str
    game_id: str | None = None
    #: ``None`` for a game; else the reject reason (``json``, ``no_game_id``, ``schema_no_id``).
    reject: str | None = None
    message: str = ""
    valid: bool = False
    #: Set by the writer's pre-check: this content is stored already (nothing else is filled in).
    stored: bool = False
    #: The ``games`` columns of :data:`GAME_FIELDS`, in that order.
    game: tuple[Any, ...] = ()
    violations: list[tuple[Any, ...]] = field(default_factory=list)
    deals: list[tuple[Any, ...]] = field(default_factory=list)
    bids: list[tuple[Any, ...]] = field(default_factory=list)
    #: ``TRICK_FIELDS`` int32 values per trick.
    tricks: bytes = b""
    #: ``PLAY_FIELDS`` int8 values per play, four plays per trick, in trick order.
    plays: bytes = b""


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
    """An RFC 3339 date-time with offset -> aware UTC datetime; anything else -> None."""
    if not isinstance(v, str):
        return None
    try:
        t = datetime.fromisoformat(v.upper().replace("Z", "+00:00"))
        return t.astimezone(UTC) if t.tzinfo is not None else None
    except (ValueError, OverflowError):
        return None


def _team_ints(v: Any) -> tuple[int | None, int | None]:
    if isinstance(v, dict):
        return _i64(v.get("NS")), _i64(v.get("EW"))
    return None, None


def _contract_cols(c: Contract, pass_out: bool) -> tuple[str | None, int | None, int | None]:
    if pass_out:
        return None, None, None
    return ("board", None, c.value) if c.board else ("number", _i64(c.value), None)


def build_item(item: Item) -> Built:
    """Parse, replay and turn one input into row data; never raises on bad content."""
    sha = content_hash(item.raw)
    if item.read_error is not None:
        return Built(sha, reject="json", message=item.read_error)
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
    return build_game(value, r, sha)


def build(raw: bytes) -> Built:
    """:func:`build_item` for raw bytes (tests and tools)."""
    return build_item(Item("", None, raw))


def build_game(rec: dict[str, Any], r: Replay, sha: str) -> Built:
    """Row data for a record with a usable ``game_id`` and its replay."""
    gid = r.game_id
    assert gid is not None
    schema_ok = not any(v.code == "SCHEMA" for v in r.violations)
    players_in = rec.get("players")
    players: list[str | None] = [_str(players_in.get(s)) if isinstance(players_in, dict) else None for s in SEAT_NAMES]
    errors = sum(1 for v in r.violations if v.severity == ERROR)
    out = Built(sha, game_id=gid, valid=r.valid)
    out.violations = [
        (gid, k, v.code, v.severity, v.message, v.path, v.deal, v.trick, v.seat) for k, v in enumerate(r.violations, 1)
    ]
    final = r.final_score
    winner = None
    if final is not None:
        winner = "NS" if final[0] > final[1] else "EW" if final[1] > final[0] else "tie"
    rec_ns, rec_ew = _team_ints(rec.get("final_score")) if schema_ok else (None, None)
    out.game = (
        gid,
        _i64(rec.get("format_version")),
        _str(rec.get("ruleset")),
        _timestamp(rec.get("played_at")),
        _str(rec.get("event")),
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
        rec_ns,
        rec_ew,
        winner,
    )
    if schema_ok:
        _deal_rows(rec, r, players, out)
    return out


def _deal_rows(rec: dict[str, Any], r: Replay, players: list[str | None], out: Built) -> None:
    gid = r.game_id
    deals = out.deals
    bids_out = out.bids
    tricks = array("i")
    plays = array("b")
    for di, (d, o) in enumerate(zip(rec["deals"], r.deals, strict=True)):
        dn = di + 1
        number: int = d["number"]
        n = HAND_SIZE[number]
        trump = o.trump
        con = o.contracts
        swap = d.get("joker_swap")
        won = [0, 0, 0, 0]
        for w in o.winners:
            won[w] += 1
        res = d.get("result")
        rt = _team_ints(res.get("tricks")) if isinstance(res, dict) else (None, None)
        rp = _team_ints(res.get("points")) if isinstance(res, dict) else (None, None)
        po = o.pass_out
        deals.append(
            (
                gid,
                dn,
                number,
                n,
                d["dealer"],
                d["trump_card"],
                None if trump == NO_TRUMP else SUITS[trump],
                trump == NO_TRUMP,
                swap["seat"] if swap else None,
                swap["drawn"] if swap else None,
                po,
                SEAT_NAMES[con.opening_leader] if con.opening_leader is not None else None,
                *_contract_cols(con.ns, po),
                *_contract_cols(con.ew, po),
                o.tricks[0],
                o.tricks[1],
                _i64(o.points[0]),
                _i64(o.points[1]),
                None if po else made(con.ns, o.tricks[0], n),
                None if po else made(con.ew, o.tricks[1], n),
                *won,
                *rt,
                *rp,
            )
        )
        claims = 0
        for k, b in enumerate(d["bids"]):
            seat = b["seat"]
            bid = b["bid"]
            if bid == BOARD:
                claims += 1
                kind, val, level = "board", None, claims
            elif bid == PASS:
                kind, val, level = "pass", 0, None
            else:
                kind, val, level = "number", (bid if -_I64 <= bid < _I64 else None), None
            bids_out.append((gid, dn, k + 1, seat, players[SEAT_INDEX[seat]], kind, val, level))
        if not o.winners:
            continue
        is_trump = IS_TRUMP[trump]
        eff = EFFECTIVE_SUIT[trump]
        for j, (t, w, broken) in enumerate(zip(d["tricks"], o.winners, o.broken_before, strict=False)):
            leader = SEAT_INDEX[t["leader"]]
            cards = [CARD_INDEX[c] for c in t["cards"]]
            tricks.extend((dn, j + 1, leader, w, cards[0], eff[cards[0]], cards[(w - leader) & 3], broken))
            c0, c1, c2, c3 = cards
            plays.extend((c0, is_trump[c0], c1, is_trump[c1], c2, is_trump[c2], c3, is_trump[c3]))
    out.tricks = tricks.tobytes()
    out.plays = plays.tobytes()


__all__ = [
    "BID_FIELDS",
    "DEAL_FIELDS",
    "GAME_FIELDS",
    "PLAY_FIELDS",
    "TRICK_FIELDS",
    "VIOLATION_FIELDS",
    "Built",
    "build",
    "build_item",
    "content_hash",
]

"""The fast path of the record formats: msgspec Structs the replay reads, decoded in one pass.

Decoding JSON bytes straight into these Structs parses and checks the format
in one pass, several times faster than parsing and then running pydantic.
pydantic (:mod:`backalley.records.models`) stays the authority: any input the fast
decoder refuses is parsed again and checked there, whose messages are the ones
reported, and the tests check that both accept exactly the same records.

This module imports no pydantic (nor anything slow to import): ``validate``,
the replay and every worker process start without it, and load the models
only for a record that fails.  Its annotations are objects, not strings (no
``from __future__ import annotations``): msgspec evaluates string annotations when it
builds the decoders, about 5 ms of every command's start-up.
"""

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Annotated, Any, Literal

import msgspec

from backalley.rules import PLAIN, RULESETS, RulesetError, all_rulesets, find_ruleset

CARD_PATTERN = r"^(?:[2-9TJQKA][SHDC]|BJ|LJ)$"
GAME_ID_PATTERN = r"^[A-Za-z0-9._:-]{1,128}$"
#: 1-64 characters, none of Unicode category Cc (U+0000-U+001F, U+007F-U+009F).
PLAYER_PATTERN = r"^[^\x00-\x1f\x7f-\x9f]{1,64}$"
#: Checked with ``fullmatch``: Python's ``$`` also matches before a final newline.
_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})")


def python_pattern(pattern: str) -> str:
    """A ``^...$`` pattern for Python's ``re.search`` (as msgspec runs it), anchored at the very end.

    The ``^...$`` patterns above are the ones the JSON Schema publishes and pydantic
    checks (ECMA-262 and Rust regex: ``$`` is the end of the text).  In Python's
    ``re`` a ``$`` also matches before a final newline, so ``"g1\\n"`` would pass;
    ``\\Z`` is the end of the text there.
    """
    if not (pattern.startswith("^") and pattern.endswith("$")):
        raise ValueError(f"pattern {pattern!r} is not anchored at both ends")
    return rf"\A(?:{pattern[1:-1]})\Z"


def nfc(player: str) -> str:
    """A player id in Unicode normal form C: ids that differ only by normalisation are one player."""
    return player if unicodedata.is_normalized("NFC", player) else unicodedata.normalize("NFC", player)


Seat = Literal["N", "E", "S", "W"]


def instant(value: str) -> datetime:
    """The aware instant of an RFC 3339 date-time with offset; raises ``ValueError`` if it is none.

    RFC 3339 allows a leap second (``23:59:60``), which ``datetime`` cannot hold:
    it is read as the second after ``23:59:59`` (``2016-12-31T23:59:60Z`` is
    ``2017-01-01T00:00:00Z``), so that it is stored, not dropped.
    """
    if not _RFC3339.fullmatch(value):
        raise ValueError("must be an RFC 3339 date-time with an offset, e.g. 2026-01-31T19:05:00Z")
    return _matched_instant(value)


def _matched_instant(value: str) -> datetime:
    """:func:`instant` of a value that matches ``_RFC3339`` already (the fast decoder's pattern is it)."""
    if value[10] == "T" and value[19:] == "Z" and value[17:19] != "60":  # the usual form, read as it is
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            raise ValueError(f"{value!r} is not a real date and time") from None
    text = value.upper().replace("Z", "+00:00")
    leap = text[17:19] == "60"
    if leap:
        text = text[:17] + "59" + text[19:]
    try:
        at = datetime.fromisoformat(text)
        return at + timedelta(seconds=1) if leap else at
    except (ValueError, OverflowError):
        raise ValueError(f"{value!r} is not a real date and time") from None


def _check_datetime(value: str) -> str:
    instant(value)
    return value


CardName = Literal[
    "2S", "3S", "4S", "5S", "6S", "7S", "8S", "9S", "TS", "JS", "QS", "KS", "AS",
    "2H", "3H", "4H", "5H", "6H", "7H", "8H", "9H", "TH", "JH", "QH", "KH", "AH",
    "2D", "3D", "4D", "5D", "6D", "7D", "8D", "9D", "TD", "JD", "QD", "KD", "AD",
    "2C", "3C", "4C", "5C", "6C", "7C", "8C", "9C", "TC", "JC", "QC", "KC", "AC",
    "LJ", "BJ",
]  # fmt: skip
_PlayerId = Annotated[str, msgspec.Meta(pattern=python_pattern(PLAYER_PATTERN))]


class _FastStrict(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """Untracked by the garbage collector (``gc=False``): a decoded record holds no reference cycle.

    A game decodes to about a thousand Structs; not tracking them saves about 5 %
    of the decode's instructions (callgrind), and the collections they would cause.
    """


class FastPlayers(_FastStrict):
    N: _PlayerId
    E: _PlayerId
    S: _PlayerId
    W: _PlayerId


class FastHands(_FastStrict):
    N: list[CardName]
    E: list[CardName]
    S: list[CardName]
    W: list[CardName]


class FastJokerSwap(_FastStrict):
    seat: Seat
    drawn: CardName


class FastBid(_FastStrict):
    seat: Seat
    bid: int | Literal["pass", "board"]


class FastTrick(_FastStrict):
    leader: Seat
    cards: Annotated[list[CardName], msgspec.Meta(min_length=4, max_length=4)]


class FastTeamInts(_FastStrict):
    NS: int
    EW: int


class FastDealResult(_FastStrict):
    tricks: FastTeamInts
    points: FastTeamInts


class FastDeal(_FastStrict):
    number: Annotated[int, msgspec.Meta(ge=1, le=25)]
    dealer: Seat
    hands: FastHands
    trump_card: CardName
    bids: Annotated[list[FastBid], msgspec.Meta(min_length=4, max_length=4)]
    tricks: list[FastTrick]
    stock: list[CardName] | msgspec.UnsetType = msgspec.UNSET
    joker_swap: FastJokerSwap | msgspec.UnsetType = msgspec.UNSET
    result: FastDealResult | msgspec.UnsetType = msgspec.UNSET


#: The fields every record format shares: the game id, when it was played, the event.
_GameId = Annotated[str, msgspec.Meta(pattern=python_pattern(GAME_ID_PATTERN))]
_PlayedAt = Annotated[str, msgspec.Meta(pattern=rf"\A(?:{_RFC3339.pattern})\Z")]
_EventName = Annotated[str, msgspec.Meta(max_length=128)]
#: A figure of each side, keyed by the side names of any ruleset (which: :func:`v2_problems`).
_SideFigures = dict[Literal["NS", "EW", "N", "E", "S", "W"], int]
#: The ruleset of format 1: plain ``standard``.
PlainName: Any = Literal[PLAIN.name]


class FastRecord(_FastStrict):
    format_version: Literal[1]
    game_id: _GameId
    ruleset: PlainName
    players: FastPlayers
    deals: list[FastDeal]
    played_at: _PlayedAt | msgspec.UnsetType = msgspec.UNSET
    event: _EventName | msgspec.UnsetType = msgspec.UNSET
    final_score: FastTeamInts | msgspec.UnsetType = msgspec.UNSET


_FAST_DECODER = msgspec.json.Decoder(FastRecord)


def fast_decode(raw: bytes) -> FastRecord | None:
    """The record when ``raw`` is a record that fits the format, else ``None``.

    ``None`` means "ask pydantic": the input may be non-JSON, may not fit the
    format, or may be something only the full check can judge.
    """
    try:
        rec = _FAST_DECODER.decode(raw)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None
    return rec if _common_ok(rec) else None


def to_fast(value: dict[str, Any]) -> FastRecord:
    """A record pydantic has accepted, as the Structs the replay reads (player ids in NFC)."""
    rec = msgspec.convert(value, FastRecord, strict=True)
    _nfc_players(rec)
    return rec


def _nfc_players(rec: "FastRecord | FastRecordV2 | FastSheetRecord") -> FastPlayers:
    """Put the record's player ids in NFC, in place (the replay, the store and reports see these)."""
    p = rec.players
    if not (p.N.isascii() and p.E.isascii() and p.S.isascii() and p.W.isascii()):  # ASCII is NFC already
        p.N, p.E, p.S, p.W = nfc(p.N), nfc(p.E), nfc(p.S), nfc(p.W)
    return p


# --- format version 2 (docs/rules.md §14) ------------------------------------------------------

#: Every option any ruleset takes, and every ruleset's record name (the registry's, in its order).
OptionName: Any = Literal[tuple(dict.fromkeys(o for cls in RULESETS.values() for o in cls.known_options))]
RulesetName: Any = Literal[tuple(RULESETS)]
_OptionList = Annotated[list[OptionName], msgspec.Meta(min_length=1)]
Suit = Literal["S", "H", "D", "C"]
SIDE_KEYS: tuple[tuple[str, ...], ...] = (("NS", "EW"), ("N", "E", "S", "W"))
BORES = ("board", "board2", "board3", "board4")


def v2_problems(rec: Any) -> list[tuple[tuple[int | str, ...], str]]:
    """What a version-2 record breaks beyond its ruleset's model: ``(location, message)`` pairs.

    ``rec`` is a record that its model (or the fast decoder) accepted; both
    have the same attribute names.  Checks the version rule, the options, the
    deal numbers and the side keys the options imply, and (for the fast
    decoder, whose structs are a superset) the fields each ruleset forbids.
    """
    name = rec.ruleset
    given = getattr(rec, "options", None)
    options = [] if given is None or given is msgspec.UNSET else list(given)
    shape = _SHAPES.get(name)
    if shape is not None and not shape.takes_options and given is not msgspec.UNSET and given is not None:
        return [(("options",), f"ruleset {name} takes no options")]
    try:
        rules = find_ruleset(name, tuple(options))
    except RulesetError as exc:
        return [(("options",), str(exc))]
    out: list[tuple[tuple[int | str, ...], str]] = []
    if rules.format_version == 1:
        out.append((("format_version",), f"a plain {name} record (no options) is format_version 1"))
    sides = rules.sides
    limits = (_SHAPES[name], rules.scored_deals, frozenset(sides))
    for i, d in enumerate(rec.deals):
        if not _deal_v2_ok(limits, d):
            out += [(("deals", i, *loc), msg) for loc, msg in _deal_v2_problems(name, limits, sides, d)]
    fs = rec.final_score
    if fs is not None and fs is not msgspec.UNSET and set(fs) != set(sides):
        out.append((("final_score",), _sides_message(sides)))
    return out


@dataclass(frozen=True, slots=True)
class _Shape:
    """What the records of one ruleset hold under any of its options, as its rulesets answer it."""

    #: The deal fields its records never have.
    forbidden: tuple[str, ...]
    #: What a bid may be besides a number.
    words: tuple[str, ...]
    #: Whether every deal turns a card (so every deal records its ``trump_card``).
    turned: bool
    #: Whether the ruleset takes any house option.
    takes_options: bool
    #: The most scored deals under any of its options.
    most_deals: int
    #: Whether the ruleset without options is record format 1's (so a format-2 record names options).
    plain_in_v1: bool


def _shape(name: str) -> _Shape:
    variants = [r for r in all_rulesets() if r.name == name]
    base = find_ruleset(name)
    # A ruleset that names trump turns no card: its records have no trump_card, hence no joker swap.
    forbidden = ("trump_card", "joker_swap") if base.trump_named else ("trump",)
    turned = all(r.turns_card(r.hand_size(k)) for r in variants for k in range(1, r.scored_deals + 1))
    most = max(r.scored_deals for r in variants)
    return _Shape(forbidden, base.bid_words, turned, bool(base.known_options), most, base.format_version == 1)


#: Each registered ruleset's record shape, by its record name.
_SHAPES = {name: _shape(name) for name in RULESETS}
_ABSENT = (None, msgspec.UNSET)
_Limits = tuple[_Shape, int, frozenset[str]]


def _deal_v2_ok(limits: _Limits, d: Any) -> bool:
    """True when :func:`_deal_v2_problems` finds nothing (the common case, checked without building messages)."""
    shape, deals, sides = limits
    if d.number > deals:
        return False
    for fld in shape.forbidden:
        if getattr(d, fld, None) not in _ABSENT:
            return False
    if shape.turned and getattr(d, "trump_card", None) in _ABSENT:
        return False
    if d.hands in _ABSENT and not _passed_out(d):
        return False
    words = shape.words
    for b in d.bids:
        if isinstance(b.bid, str) and b.bid not in words:
            return False
    res = d.result
    return res in _ABSENT or (res.tricks.keys() == sides and res.points.keys() == sides)


def _deal_v2_problems(
    name: str, limits: _Limits, sides: tuple[str, ...], d: Any
) -> list[tuple[tuple[int | str, ...], str]]:
    shape, deals, _ = limits
    out: list[tuple[tuple[int | str, ...], str]] = []
    if d.number > deals:
        out.append((("number",), f"Input should be less than or equal to {deals}"))
    for fld in shape.forbidden:
        if getattr(d, fld, None) not in (None, msgspec.UNSET):
            out.append(((fld,), f"{name} records have no {fld}"))
    if shape.turned and getattr(d, "trump_card", None) in (None, msgspec.UNSET):
        out.append((("trump_card",), "Field required"))
    if d.hands in _ABSENT and not _passed_out(d):
        out.append((("hands",), "Field required (only a deal passed out by four passes may leave out its hands)"))
    words = shape.words
    for k, b in enumerate(d.bids):
        if isinstance(b.bid, str) and b.bid not in words:
            out.append((("bids", k, "bid"), f"a bid is {', '.join(words)} or an integer"))
    res = d.result
    if res is not None and res is not msgspec.UNSET:
        for part in ("tricks", "points"):
            if set(getattr(res, part)) != set(sides):
                out.append((("result", part), _sides_message(sides)))
    return out


def _passed_out(d: Any) -> bool:
    """Whether all four bids of the deal are ``"pass"``: the one kind of deal that may leave out its hands."""
    return all(b.bid == "pass" for b in d.bids)


def _sides_message(sides: tuple[str, ...]) -> str:
    return f"keyed {', '.join(sides)} for this ruleset and options"


class FastBidV2(_FastStrict):
    seat: Seat
    bid: int | Literal["pass", "board", "board2", "board3", "board4"]


class FastSideResult(_FastStrict):
    tricks: _SideFigures
    points: _SideFigures


class _FastDealHead(_FastStrict, kw_only=True):
    """What every format-2 deal starts with, with every card or on a score sheet."""

    number: Annotated[int, msgspec.Meta(ge=1, le=25)]
    dealer: Seat
    bids: Annotated[list[FastBidV2], msgspec.Meta(min_length=4, max_length=4)]


class FastDealV2(_FastDealHead, kw_only=True):
    """Every field of every ruleset's deal (the ruleset's own limits: :func:`v2_problems`)."""

    tricks: list[FastTrick]
    hands: FastHands | msgspec.UnsetType = msgspec.UNSET
    trump_card: CardName | msgspec.UnsetType = msgspec.UNSET
    trump: Suit | msgspec.UnsetType = msgspec.UNSET
    stock: list[CardName] | msgspec.UnsetType = msgspec.UNSET
    joker_swap: FastJokerSwap | msgspec.UnsetType = msgspec.UNSET
    result: FastSideResult | msgspec.UnsetType = msgspec.UNSET


class _FastGameV2(_FastStrict, kw_only=True):
    """The game fields of every format-2 record, with every card or a score sheet."""

    format_version: Literal[2]
    game_id: _GameId
    ruleset: RulesetName
    players: FastPlayers
    options: _OptionList | msgspec.UnsetType = msgspec.UNSET
    played_at: _PlayedAt | msgspec.UnsetType = msgspec.UNSET
    event: _EventName | msgspec.UnsetType = msgspec.UNSET
    final_score: _SideFigures | msgspec.UnsetType = msgspec.UNSET


class FastRecordV2(_FastGameV2, kw_only=True):
    deals: list[FastDealV2]
    #: ``false`` is a record with every card, as when it is left out (``true``: :class:`FastSheetRecord`).
    sheet: bool | msgspec.UnsetType = msgspec.UNSET


# --- score sheets (docs/sheets.md): bids and each player's tricks, no cards ---------------------

#: The most tricks one player can take (the hand size itself is a rule: ``TRICK_TOTAL``).
MOST_TRICKS = 13
SheetTrump = Literal["S", "H", "D", "C", "none"]
_Tricks = Annotated[int, msgspec.Meta(ge=0, le=MOST_TRICKS)]


class FastSeatTricks(_FastStrict):
    N: _Tricks
    E: _Tricks
    S: _Tricks
    W: _Tricks


class FastSheetDeal(_FastDealHead, kw_only=True):
    """A deal of a score sheet: the bidding and each player's tricks (the ruleset's limits: :func:`sheet_problems`)."""

    tricks_won: FastSeatTricks | msgspec.UnsetType = msgspec.UNSET
    trump: SheetTrump | msgspec.UnsetType = msgspec.UNSET
    rainbows: list[Seat] | msgspec.UnsetType = msgspec.UNSET
    result: FastSideResult | msgspec.UnsetType = msgspec.UNSET


class FastSheetRecord(_FastGameV2, kw_only=True):
    """A score sheet of any ruleset (format 2, ``"sheet": true``)."""

    sheet: bool
    deals: list[FastSheetDeal]


def sheet_problems(rec: Any) -> list[tuple[tuple[int | str, ...], str]]:
    """What a score sheet breaks beyond its model: ``(location, message)`` pairs (both decoders run it).

    ``rec`` is a sheet its model (or :class:`FastSheetRecord`) accepted: the options, then per
    deal the number, the bid words, the rainbows and the result's keys, and the final score's keys.
    """
    name = rec.ruleset
    given = getattr(rec, "options", None)
    options = () if given in _ABSENT else tuple(given)
    if options and name in _SHAPES and not _SHAPES[name].takes_options:
        return [(("options",), f"ruleset {name} takes no options")]
    try:
        rules = find_ruleset(name, options)
    except RulesetError as exc:
        return [(("options",), str(exc))]
    out: list[tuple[tuple[int | str, ...], str]] = []
    sides = set(rules.sides)
    for i, d in enumerate(rec.deals):
        out += [(("deals", i, *loc), msg) for loc, msg in _sheet_deal_problems(rules, sides, d)]
    fs = rec.final_score
    if fs not in _ABSENT and set(fs) != sides:
        out.append((("final_score",), _sides_message(rules.sides)))
    return out


def _sheet_deal_problems(rules: Any, sides: set[str], d: Any) -> list[tuple[tuple[int | str, ...], str]]:
    out: list[tuple[tuple[int | str, ...], str]] = []
    if d.number > rules.scored_deals:
        out.append((("number",), f"Input should be less than or equal to {rules.scored_deals}"))
    words = rules.bid_words
    for k, b in enumerate(d.bids):
        if isinstance(b.bid, str) and b.bid not in words:
            out.append((("bids", k, "bid"), f"a bid is {', '.join(words)} or an integer"))
    rainbows = getattr(d, "rainbows", None)
    if rainbows not in _ABSENT:
        if not rules.rainbow:
            out.append((("rainbows",), f"{rules.name} has no rainbow bonus"))
        elif d.number <= rules.scored_deals and not rules.rainbow_deal(rules.hand_size(d.number)):
            out.append((("rainbows",), f"deal {d.number} has no rainbow bonus"))
        if len(set(rainbows)) != len(rainbows):
            out.append((("rainbows",), "a seat is given twice"))
    res = d.result
    if res not in _ABSENT:
        for part in ("tricks", "points"):
            if set(getattr(res, part)) != sides:
                out.append((("result", part), _sides_message(rules.sides)))
    return out


def _sheet_ok(rec: Any) -> bool:
    return rec.sheet is True and not sheet_problems(rec)


def is_sheet(rec: Any) -> bool:
    """Whether a decoded record is a score sheet."""
    return isinstance(rec, FastSheetRecord)


AnyFastRecord = FastRecord | FastRecordV2 | FastSheetRecord


# --- one Struct per ruleset: its deal fields and bid words checked while decoding ------------
#
# ``FastDealV2`` holds every field of every ruleset's deal; on it, :func:`v2_problems`
# checks in Python what each ruleset forbids (about 1.3 µs a deal), as the full path
# does on its models.  The subclasses below narrow it to one ruleset, so that msgspec
# checks the same while it decodes: a field a ruleset does not have is typed
# ``UnsetType`` (present, it fails to decode), its bids are its own words, its deal
# numbers its own range.  They are subclasses, so the replay reads them as any
# ``FastDealV2``.  The tests check that both paths accept exactly the same records
# of every ruleset.

_Absent = msgspec.UnsetType


def _bid_struct(words: tuple[str, ...]) -> Any:
    return int | Literal[words]


def _deal_numbers(shape: _Shape) -> Any:
    """Deal numbers up to the most the ruleset scores with any options (the options' own limit: Python)."""
    return Annotated[int, msgspec.Meta(ge=1, le=shape.most_deals)]


def _narrow_struct(name: str, shape: _Shape) -> tuple[type[FastRecordV2], type[FastDealV2]]:
    """Ruleset ``name``'s record and deal Structs, as its :class:`_Shape` (its rulesets) says."""
    key = "".join(part.title() for part in re.split(r"\W+", name))
    bid = msgspec.defstruct(f"Fast{key}Bid", [("bid", _bid_struct(shape.words))], bases=(FastBidV2,), kw_only=True)
    deal_fields: list[Any] = [
        ("number", _deal_numbers(shape)),
        ("bids", Annotated[list[bid], msgspec.Meta(min_length=4, max_length=4)]),  # type: ignore[valid-type]
        *((f, _Absent, msgspec.UNSET) for f in shape.forbidden),
    ]
    if shape.turned:
        deal_fields.append(("trump_card", CardName))
    deal: Any = msgspec.defstruct(f"Fast{key}Deal", deal_fields, bases=(FastDealV2,), kw_only=True)
    record_fields: list[Any] = [("ruleset", Literal[name]), ("deals", list[deal])]
    if not shape.takes_options:
        record_fields.append(("options", _Absent, msgspec.UNSET))
    elif shape.plain_in_v1:  # (without options its records are format 1's)
        record_fields.append(("options", _OptionList))
    record: Any = msgspec.defstruct(f"Fast{key}RecordV2", record_fields, bases=(FastRecordV2,), kw_only=True)
    return record, deal


#: Each registered ruleset's record and deal Structs, by its record name.
NARROW: dict[str, tuple[type[FastRecordV2], type[FastDealV2]]] = {n: _narrow_struct(n, s) for n, s in _SHAPES.items()}


def _narrow_ok(rec: FastRecordV2) -> bool:
    """What a per-ruleset Struct leaves to Python: the options, and the numbers and side keys they imply."""
    limits = _limits(rec.ruleset, () if rec.options is msgspec.UNSET else rec.options)
    if limits is None:
        return False
    deals, sides = limits
    for d in rec.deals:
        res = d.result
        if d.number > deals or (res is not msgspec.UNSET and not (res.tricks.keys() == sides == res.points.keys())):
            return False
        if d.hands is msgspec.UNSET and not _passed_out(d):
            return False
    fs = rec.final_score
    return (fs is msgspec.UNSET or fs.keys() == sides) and rec.sheet is not True


#: The last ruleset asked of :func:`_limits` (name, options) and its answer: a file mostly holds one.
_last_limits: tuple[str, object, tuple[int, frozenset[str]] | None] = ("", None, None)


def _limits(name: str, options: Sequence[str]) -> tuple[int, frozenset[str]] | None:
    """The scored deals and the side keys of ruleset ``name`` with ``options``; ``None`` if there is none such."""
    global _last_limits
    last_name, last_options, got = _last_limits
    if name == last_name and options == last_options:
        return got
    try:
        rules = find_ruleset(name, options)
    except RulesetError:
        got = None
    else:
        got = rules.scored_deals, frozenset(rules.sides)
    _last_limits = name, options[:], got  # (a copy: the record's list is not this cache's)
    return got


#: The fast decoders, each with what it leaves to Python (beyond :func:`_common_ok`): format 1,
#: then each ruleset of format 2.
_DECODERS: tuple[tuple[msgspec.json.Decoder[Any], Any], ...] = (
    (_FAST_DECODER, None),
    *((msgspec.json.Decoder(record), _narrow_ok) for record, _ in NARROW.values()),
    (msgspec.json.Decoder(FastSheetRecord), _sheet_ok),
)
#: The decoder that took the last record: tried first (a file mostly holds one kind of record).
_last = 0


def fast_decode_any(raw: bytes) -> AnyFastRecord | None:
    """:func:`fast_decode` for record formats 1 and 2: ``None`` means "ask pydantic".

    The decoder that took the previous record is tried first; one that does not
    fit fails at ``format_version`` or ``ruleset``, usually the first keys.
    """
    decoder, ok = _DECODERS[_last]
    try:
        rec = decoder.decode(raw)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return _decode_other(raw)
    return rec if _common_ok(rec) and (ok is None or ok(rec)) else None


def _decode_other(raw: bytes) -> AnyFastRecord | None:
    """:func:`fast_decode_any` with the decoders other than the last one."""
    global _last
    for k, (decoder, ok) in enumerate(_DECODERS):
        if k == _last:
            continue
        try:
            rec = decoder.decode(raw)
        except (msgspec.ValidationError, msgspec.DecodeError):
            continue
        _last = k
        # (its format and ruleset fit no other decoder: the full check says what is wrong, if anything)
        return rec if _common_ok(rec) and (ok is None or ok(rec)) else None
    return None


def _common_ok(rec: AnyFastRecord) -> bool:
    """Four distinct players (after NFC) and a well-formed ``played_at``: what both formats check beyond
    their Structs."""
    p = _nfc_players(rec)
    if len({p.N, p.E, p.S, p.W}) < 4:
        return False
    if rec.played_at is not msgspec.UNSET:
        try:
            _matched_instant(rec.played_at)  # (its Struct's pattern is ``_RFC3339``)
        except ValueError:
            return False
    return True


def to_fast_any(value: dict[str, Any]) -> AnyFastRecord:
    """A record pydantic has accepted (format 1 or 2), as the Structs the replay reads."""
    if value.get("format_version") == 2:
        rec: FastRecordV2 | FastSheetRecord
        if value.get("sheet") is True:
            rec = msgspec.convert(value, FastSheetRecord, strict=True)
        else:
            rec = msgspec.convert(value, FastRecordV2, strict=True)
        _nfc_players(rec)
        return rec
    return to_fast(value)


def record_options(rec: AnyFastRecord) -> tuple[str, ...]:
    """The record's options (none for version 1)."""
    if isinstance(rec, FastRecordV2 | FastSheetRecord) and rec.options is not msgspec.UNSET:
        return tuple(rec.options)  # (find_ruleset puts them in order)
    return ()

"""The pydantic models of game-record format v1 (docs/record-format.md) and the JSON Schema export.

The models are the authority on the format; ``schemas/game-record.v1.schema.json``
is generated from them (``backalley schema``).  They are a gate only: once a
record passes, the replay works on the plain parsed JSON, never on these objects.
"""

from __future__ import annotations

import json
import re
import unicodedata
from datetime import datetime, timedelta
from typing import Annotated, Any, Literal

import msgspec
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainValidator,
    StringConstraints,
    field_validator,
    model_validator,
)
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import CoreSchema

from backalley.rules import RULESETS as RULESET_CLASSES
from backalley.rules import RulesetError, find_ruleset

FORMAT_VERSION = 1
#: Every record format version this package reads.
FORMAT_VERSIONS: tuple[int, ...] = (1, 2)
#: The rulesets a record may name (format 1 records are all `standard`).
RULESETS: tuple[str, ...] = tuple(RULESET_CLASSES)
SCHEMA_ID = "https://backalley.example/schemas/game-record.v1.schema.json"
SCHEMA_FILE = "game-record.v1.schema.json"
SCHEMA_ID_V2 = "https://backalley.example/schemas/game-record.v2.schema.json"
SCHEMA_FILES = {1: SCHEMA_FILE, 2: "game-record.v2.schema.json"}

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
Card = Annotated[str, StringConstraints(pattern=CARD_PATTERN)]
Team = Literal["NS", "EW"]


def _check_bid(value: Any) -> int | str:
    if value in ("pass", "board") and isinstance(value, str):
        return str(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise ValueError('a bid is "pass", "board" or an integer')


#: One error for a bad bid, whichever branch of the union it fails.
BidValue = Annotated[
    int | Literal["pass", "board"],
    PlainValidator(_check_bid, json_schema_input_type=int | Literal["pass", "board"]),
]


def _check_version(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError("format_version must be the integer 1")
    return value


def _not_null(value: Any) -> Any:
    if value is None:
        raise ValueError("may be left out, but not null")
    return value


def instant(value: str) -> datetime:
    """The aware instant of an RFC 3339 date-time with offset; raises ``ValueError`` if it is none.

    RFC 3339 allows a leap second (``23:59:60``), which ``datetime`` cannot hold:
    it is read as the second after ``23:59:59`` (``2016-12-31T23:59:60Z`` is
    ``2017-01-01T00:00:00Z``), so that it is stored, not dropped.
    """
    if not _RFC3339.fullmatch(value):
        raise ValueError("must be an RFC 3339 date-time with an offset, e.g. 2026-01-31T19:05:00Z")
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


DateTime = Annotated[str, AfterValidator(_check_datetime), Field(json_schema_extra={"format": "date-time"})]


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, defer_build=True)


#: A player id as given (1-64 characters, checked before normalisation), then in NFC.
PlayerId = Annotated[str, StringConstraints(pattern=PLAYER_PATTERN), AfterValidator(nfc)]


class Players(_Strict):
    """Who sat where: seat -> player id (1-64 characters, no control characters); ids are compared in Unicode NFC."""

    N: PlayerId
    E: PlayerId
    S: PlayerId
    W: PlayerId

    @model_validator(mode="after")
    def _one_seat_each(self) -> Players:
        ids = [self.N, self.E, self.S, self.W]
        for pid in ids:
            if ids.count(pid) > 1:
                raise ValueError(f"player {pid!r} sits in two seats")
        return self


class Hands(_Strict):
    """The hands as dealt, before any joker swap (any array of cards: size is HAND_SIZE)."""

    N: list[Card]
    E: list[Card]
    S: list[Card]
    W: list[Card]


class JokerSwap(_Strict):
    """The player who discarded the other joker, and the card they drew."""

    seat: Seat
    drawn: Card


class BidEntry(_Strict):
    seat: Seat
    bid: BidValue


class Trick(_Strict):
    leader: Seat
    cards: Annotated[list[Card], Field(min_length=4, max_length=4)]


class TeamInts(_Strict):
    NS: int
    EW: int


class DealResult(_Strict):
    tricks: TeamInts
    points: TeamInts


class Deal(_Strict):
    """One dealing (a pass-out included)."""

    number: Annotated[int, Field(ge=1, le=25)]
    dealer: Seat
    hands: Hands
    trump_card: Card
    stock: list[Card] | None = None
    joker_swap: JokerSwap | None = None
    bids: Annotated[list[BidEntry], Field(min_length=4, max_length=4)]
    tricks: list[Trick]
    result: DealResult | None = None

    _no_nulls = field_validator("stock", "joker_swap", "result", mode="before")(_not_null)


class GameRecord(_Strict):
    """A Back Alley game record, format version 1."""

    model_config = ConfigDict(
        strict=True,
        extra="forbid",
        frozen=True,
        defer_build=True,
        title="Back Alley game record v1",
        json_schema_extra={"$id": SCHEMA_ID},
    )

    format_version: Annotated[Literal[1], BeforeValidator(_check_version)]
    game_id: Annotated[str, StringConstraints(pattern=GAME_ID_PATTERN)]
    ruleset: Literal["standard"]
    players: Players
    played_at: DateTime | None = None
    event: Annotated[str, StringConstraints(max_length=128)] | None = None
    deals: list[Deal]
    final_score: TeamInts | None = None

    _no_nulls = field_validator("played_at", "event", "final_score", mode="before")(_not_null)


class _NoNullSchema(GenerateJsonSchema):
    """Optional fields are "may be absent", never "may be null": drop the null branch."""

    def nullable_schema(self, schema: CoreSchema) -> JsonSchemaValue:
        return self.generate_inner(schema["schema"])

    def default_schema(self, schema: CoreSchema) -> JsonSchemaValue:
        inner = self.generate_inner(schema["schema"])
        return inner


def json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of record format v1, generated from the models."""
    schema = GameRecord.model_json_schema(schema_generator=_NoNullSchema)
    head = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": schema.pop("$id"),
        "title": schema.pop("title"),
        "description": schema.pop("description", ""),
    }
    return {**head, **schema}


def json_schema_text(version: int = 1) -> str:
    """The JSON Schema of record format ``version`` (1 or 2), as written to ``schemas/``."""
    schema = json_schema() if version == 1 else json_schema_v2()
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


# --- the fast path ---------------------------------------------------------------------
#
# msgspec Structs that mirror the pydantic models above: decoding JSON bytes
# straight into them parses and checks the format in one pass, several times
# faster than parsing and then running pydantic.  They are the replay's input.
# pydantic stays the authority: any input the fast decoder refuses is parsed
# again and checked by pydantic, whose messages are the ones reported, and
# tests/test_record.py checks that both accept exactly the same records.

CardName = Literal[
    "2S", "3S", "4S", "5S", "6S", "7S", "8S", "9S", "TS", "JS", "QS", "KS", "AS",
    "2H", "3H", "4H", "5H", "6H", "7H", "8H", "9H", "TH", "JH", "QH", "KH", "AH",
    "2D", "3D", "4D", "5D", "6D", "7D", "8D", "9D", "TD", "JD", "QD", "KD", "AD",
    "2C", "3C", "4C", "5C", "6C", "7C", "8C", "9C", "TC", "JC", "QC", "KC", "AC",
    "LJ", "BJ",
]  # fmt: skip
_PlayerId = Annotated[str, msgspec.Meta(pattern=python_pattern(PLAYER_PATTERN))]


class _FastStrict(msgspec.Struct, forbid_unknown_fields=True):
    pass


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


class FastRecord(_FastStrict):
    format_version: Literal[1]
    game_id: Annotated[str, msgspec.Meta(pattern=python_pattern(GAME_ID_PATTERN))]
    ruleset: Literal["standard"]
    players: FastPlayers
    deals: list[FastDeal]
    played_at: Annotated[str, msgspec.Meta(pattern=rf"\A(?:{_RFC3339.pattern})\Z")] | msgspec.UnsetType = msgspec.UNSET
    event: Annotated[str, msgspec.Meta(max_length=128)] | msgspec.UnsetType = msgspec.UNSET
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
    p = _nfc_players(rec)
    if len({p.N, p.E, p.S, p.W}) < 4:
        return None
    if rec.played_at is not msgspec.UNSET:
        try:
            _check_datetime(rec.played_at)
        except ValueError:
            return None
    return rec


def to_fast(value: dict[str, Any]) -> FastRecord:
    """A record pydantic has accepted, as the Structs the replay reads (player ids in NFC)."""
    rec = msgspec.convert(value, FastRecord, strict=True)
    _nfc_players(rec)
    return rec


def _nfc_players(rec: FastRecord | FastRecordV2) -> FastPlayers:
    """Put the record's player ids in NFC, in place (the replay, the store and reports see these)."""
    p = rec.players
    p.N, p.E, p.S, p.W = nfc(p.N), nfc(p.E), nfc(p.S), nfc(p.W)
    return p


# --- format version 2 (RULESETS.md §4, RULESET-bab-online.md §9) --------------------------
#
# One model per ruleset (pydantic, authoritative), chosen by the record's
# ``ruleset`` field; what depends on the options (the deal numbers, the side
# keys) and the version rule (a plain standard record is version 1) are
# checked by :func:`v2_problems`, which both decoders run, so that they
# accept exactly the same records.

OptionName = Literal["no_jokers", "short_deck", "spades_trump", "no_partnerships"]
Suit = Literal["S", "H", "D", "C"]
SIDE_KEYS: tuple[tuple[str, ...], ...] = (("NS", "EW"), ("N", "E", "S", "W"))
BORES = ("board", "board2", "board3", "board4")


def _check_v2_version(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError("format_version must be the integer 2")
    return value


def _side_ints(value: Any) -> dict[str, int]:
    """``{NS, EW}`` or ``{N, E, S, W}`` -> integers (which one the options want is checked later)."""
    if (
        isinstance(value, dict)
        and set(value) in (set(k) for k in SIDE_KEYS)
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value.values())
    ):
        return dict(value)
    raise ValueError("an object with integer values keyed NS, EW (teams) or N, E, S, W (no_partnerships)")


class SeatInts(_Strict):
    N: int
    E: int
    S: int
    W: int


#: Integers keyed by the record's sides: one error, whichever form it fails.
SideInts = Annotated[dict[str, int], PlainValidator(_side_ints, json_schema_input_type=TeamInts | SeatInts)]


def _bid_checker(words: tuple[str, ...]) -> Any:
    def check(value: Any) -> int | str:
        if isinstance(value, str) and value in words:
            return str(value)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise ValueError(f"a bid is {', '.join(repr(w) for w in words)} or an integer".replace("'", '"'))

    return check


def _bid_type(words: tuple[str, ...]) -> Any:
    literal = Literal[words]  # type: ignore[valid-type]
    return Annotated[int | literal, PlainValidator(_bid_checker(words), json_schema_input_type=int | literal)]


class BidEntryStandardV2(_Strict):
    seat: Seat
    bid: _bid_type(("pass", "board"))  # type: ignore[valid-type]


class DeclarationEntry(_Strict):
    seat: Seat
    bid: _bid_type(("pass",))  # type: ignore[valid-type]


class BoreBidEntry(_Strict):
    seat: Seat
    bid: _bid_type(("pass", *BORES))  # type: ignore[valid-type]


class SideResult(_Strict):
    tricks: SideInts
    points: SideInts


class _DealV2(_Strict):
    dealer: Seat
    hands: Hands
    stock: list[Card] | None = None
    tricks: list[Trick]
    result: SideResult | None = None


class StandardDealV2(_DealV2):
    """A deal of ruleset ``standard`` with options: ``trump_card`` only where a card is turned."""

    number: Annotated[int, Field(ge=1, le=25)]
    trump_card: Card | None = None
    joker_swap: JokerSwap | None = None
    bids: Annotated[list[BidEntryStandardV2], Field(min_length=4, max_length=4)]

    _no_nulls = field_validator("stock", "joker_swap", "result", "trump_card", mode="before")(_not_null)


class PereulokDeal(_DealV2):
    """A game of ruleset ``pereulok``: named ``trump``, declarations, no turned card."""

    number: Annotated[int, Field(ge=1, le=2)]
    trump: Suit | None = None
    bids: Annotated[list[DeclarationEntry], Field(min_length=4, max_length=4)]

    _no_nulls = field_validator("stock", "result", "trump", mode="before")(_not_null)


class BabOnlineDeal(_DealV2):
    """A deal of ruleset ``bab-online``: always a turned card, bores ``board``…``board4``."""

    number: Annotated[int, Field(ge=1, le=13)]
    trump_card: Card
    joker_swap: JokerSwap | None = None
    bids: Annotated[list[BoreBidEntry], Field(min_length=4, max_length=4)]

    _no_nulls = field_validator("stock", "joker_swap", "result", mode="before")(_not_null)


def _check_options(value: Any) -> Any:
    if isinstance(value, list) and len(set(value)) != len(value):
        raise ValueError("an option is given twice")
    return value


Options = Annotated[list[OptionName], Field(min_length=1), AfterValidator(_check_options)]


class _RecordV2(_Strict):
    format_version: Annotated[Literal[2], BeforeValidator(_check_v2_version)]
    game_id: Annotated[str, StringConstraints(pattern=GAME_ID_PATTERN)]
    players: Players
    played_at: DateTime | None = None
    event: Annotated[str, StringConstraints(max_length=128)] | None = None
    final_score: SideInts | None = None


class StandardRecordV2(_RecordV2):
    """Ruleset ``standard`` with house options (a plain standard record is version 1)."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, defer_build=True, title="standard with options")
    ruleset: Literal["standard"]
    options: Options | None = None
    deals: list[StandardDealV2]

    _no_nulls = field_validator("played_at", "event", "final_score", "options", mode="before")(_not_null)


class PereulokRecordV2(_RecordV2):
    """Ruleset ``pereulok``: a match of 2 games, with or without options."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, defer_build=True, title="pereulok")
    ruleset: Literal["pereulok"]
    options: Options | None = None
    deals: list[PereulokDeal]

    _no_nulls = field_validator("played_at", "event", "final_score", "options", mode="before")(_not_null)


class BabOnlineRecordV2(_RecordV2):
    """Ruleset ``bab-online``: 13 deals 12→1→13, no options."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, defer_build=True, title="bab-online")
    ruleset: Literal["bab-online"]
    deals: list[BabOnlineDeal]

    _no_nulls = field_validator("played_at", "event", "final_score", mode="before")(_not_null)


#: The version-2 model of each ruleset.
MODELS_V2: dict[str, type[_RecordV2]] = {
    "standard": StandardRecordV2,
    "pereulok": PereulokRecordV2,
    "bab-online": BabOnlineRecordV2,
}
GameRecordV2 = Annotated[StandardRecordV2 | PereulokRecordV2 | BabOnlineRecordV2, Field(discriminator="ruleset")]


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
    out: list[tuple[tuple[int | str, ...], str]] = []
    if name == "standard" and not options:
        out.append((("format_version",), "a plain standard record (no options) is format_version 1"))
    if name == "bab-online" and given is not msgspec.UNSET and given is not None:
        out.append((("options",), "ruleset bab-online takes no options"))
        return out
    try:
        rules = find_ruleset(name, tuple(options))
    except RulesetError as exc:
        return [*out, (("options",), str(exc))]
    sides = rules.sides
    limits = (name, rules.scored_deals, sides, frozenset(sides))
    for i, d in enumerate(rec.deals):
        if not _deal_v2_ok(limits, d):
            out += [(("deals", i, *loc), msg) for loc, msg in _deal_v2_problems(name, rules.scored_deals, sides, d)]
    fs = rec.final_score
    if fs is not None and fs is not msgspec.UNSET and set(fs) != set(sides):
        out.append((("final_score",), _sides_message(sides)))
    return out


#: The deal fields each ruleset's records do not have, and the words its bids may be.
_FORBIDDEN = {"standard": ("trump",), "pereulok": ("trump_card", "joker_swap"), "bab-online": ("trump",)}
_BID_WORDS = {"standard": ("pass", "board"), "pereulok": ("pass",), "bab-online": ("pass", *BORES)}
_ABSENT = (None, msgspec.UNSET)


def _deal_v2_ok(limits: tuple[str, int, tuple[str, ...], frozenset[str]], d: Any) -> bool:
    """True when :func:`_deal_v2_problems` finds nothing (the common case, checked without building messages)."""
    name, deals, _, sides = limits
    if d.number > deals:
        return False
    for fld in _FORBIDDEN[name]:
        if getattr(d, fld, None) not in _ABSENT:
            return False
    if name == "bab-online" and getattr(d, "trump_card", None) in _ABSENT:
        return False
    words = _BID_WORDS[name]
    for b in d.bids:
        if isinstance(b.bid, str) and b.bid not in words:
            return False
    res = d.result
    return res in _ABSENT or (res.tricks.keys() == sides and res.points.keys() == sides)


def _deal_v2_problems(name: str, deals: int, sides: tuple[str, ...], d: Any) -> list[tuple[tuple[int | str, ...], str]]:
    out: list[tuple[tuple[int | str, ...], str]] = []
    if d.number > deals:
        out.append((("number",), f"Input should be less than or equal to {deals}"))
    forbidden = _FORBIDDEN[name]
    for fld in forbidden:
        if getattr(d, fld, None) not in (None, msgspec.UNSET):
            out.append(((fld,), f"{name} records have no {fld}"))
    if name == "bab-online" and getattr(d, "trump_card", None) in (None, msgspec.UNSET):
        out.append((("trump_card",), "Field required"))
    words = _BID_WORDS[name]
    for k, b in enumerate(d.bids):
        if isinstance(b.bid, str) and b.bid not in words:
            out.append((("bids", k, "bid"), f"a bid is {', '.join(words)} or an integer"))
    res = d.result
    if res is not None and res is not msgspec.UNSET:
        for part in ("tricks", "points"):
            if set(getattr(res, part)) != set(sides):
                out.append((("result", part), _sides_message(sides)))
    return out


def _sides_message(sides: tuple[str, ...]) -> str:
    return f"keyed {', '.join(sides)} for this ruleset and options"


def json_schema_v2() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of record format v2: ``oneOf`` on ``ruleset``."""
    from pydantic import TypeAdapter

    schema = TypeAdapter(GameRecordV2).json_schema(schema_generator=_NoNullSchema)
    head = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID_V2,
        "title": "Back Alley game record v2",
        "description": "A game record of a named ruleset (standard with options, pereulok, bab-online).",
    }
    defs = schema.get("$defs", {})
    for model, limit in (("StandardRecordV2", 19), ("PereulokRecordV2", None)):
        defs[model]["allOf"] = _option_conditions(limit)
    return {**head, **schema}


def _option_conditions(short_deck_limit: int | None) -> list[dict[str, Any]]:
    """``if``/``then`` on ``options``: side keys with ``no_partnerships``, deal numbers with ``short_deck``."""
    seats = {"required": ["N", "E", "S", "W"], "not": {"anyOf": [{"required": ["NS"]}, {"required": ["EW"]}]}}
    teams = {"required": ["NS", "EW"], "not": {"anyOf": [{"required": [s]} for s in "NESW"]}}

    def keyed(shape: dict[str, Any]) -> dict[str, Any]:
        result = {"properties": {"tricks": shape, "points": shape}}
        return {
            "properties": {
                "final_score": shape,
                "deals": {"items": {"properties": {"result": result}}},
            }
        }

    has = {"required": ["options"], "properties": {"options": {"contains": {"const": "no_partnerships"}}}}
    out: list[dict[str, Any]] = [{"if": has, "then": keyed(seats), "else": keyed(teams)}]
    if short_deck_limit is not None:
        short = {"required": ["options"], "properties": {"options": {"contains": {"const": "short_deck"}}}}
        number = {"properties": {"deals": {"items": {"properties": {"number": {"maximum": short_deck_limit}}}}}}
        out.append({"if": short, "then": number})
    return out


class FastBidV2(_FastStrict):
    seat: Seat
    bid: int | Literal["pass", "board", "board2", "board3", "board4"]


class FastSideResult(_FastStrict):
    tricks: dict[Literal["NS", "EW", "N", "E", "S", "W"], int]
    points: dict[Literal["NS", "EW", "N", "E", "S", "W"], int]


class FastDealV2(_FastStrict):
    """Every field of every ruleset's deal (the ruleset's own limits: :func:`v2_problems`)."""

    number: Annotated[int, msgspec.Meta(ge=1, le=25)]
    dealer: Seat
    hands: FastHands
    bids: Annotated[list[FastBidV2], msgspec.Meta(min_length=4, max_length=4)]
    tricks: list[FastTrick]
    trump_card: CardName | msgspec.UnsetType = msgspec.UNSET
    trump: Suit | msgspec.UnsetType = msgspec.UNSET
    stock: list[CardName] | msgspec.UnsetType = msgspec.UNSET
    joker_swap: FastJokerSwap | msgspec.UnsetType = msgspec.UNSET
    result: FastSideResult | msgspec.UnsetType = msgspec.UNSET


class FastRecordV2(_FastStrict):
    format_version: Literal[2]
    game_id: Annotated[str, msgspec.Meta(pattern=python_pattern(GAME_ID_PATTERN))]
    ruleset: Literal["standard", "pereulok", "bab-online"]
    players: FastPlayers
    deals: list[FastDealV2]
    options: Annotated[list[OptionName], msgspec.Meta(min_length=1)] | msgspec.UnsetType = msgspec.UNSET
    played_at: Annotated[str, msgspec.Meta(pattern=rf"\A(?:{_RFC3339.pattern})\Z")] | msgspec.UnsetType = msgspec.UNSET
    event: Annotated[str, msgspec.Meta(max_length=128)] | msgspec.UnsetType = msgspec.UNSET
    final_score: dict[Literal["NS", "EW", "N", "E", "S", "W"], int] | msgspec.UnsetType = msgspec.UNSET


_FAST_DECODER_V2 = msgspec.json.Decoder(FastRecordV2)
AnyFastRecord = FastRecord | FastRecordV2


def fast_decode_any(raw: bytes) -> AnyFastRecord | None:
    """:func:`fast_decode` for record formats 1 and 2 (version 1 tried first: it is the common case)."""
    rec = fast_decode(raw)
    if rec is not None:
        return rec
    try:
        rec2 = _FAST_DECODER_V2.decode(raw)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None
    if not _common_ok(rec2) or v2_problems(rec2):
        return None
    return rec2


def _common_ok(rec: FastRecordV2) -> bool:
    p = _nfc_players(rec)
    if len({p.N, p.E, p.S, p.W}) < 4:
        return False
    if rec.played_at is not msgspec.UNSET:
        try:
            _check_datetime(rec.played_at)
        except ValueError:
            return False
    return True


def to_fast_any(value: dict[str, Any]) -> AnyFastRecord:
    """A record pydantic has accepted (format 1 or 2), as the Structs the replay reads."""
    if value.get("format_version") == 2:
        rec = msgspec.convert(value, FastRecordV2, strict=True)
        _nfc_players(rec)
        return rec
    return to_fast(value)


def record_options(rec: AnyFastRecord) -> tuple[str, ...]:
    """The record's options (none for version 1)."""
    if isinstance(rec, FastRecordV2) and rec.options is not msgspec.UNSET:
        return tuple(rec.options)  # (find_ruleset puts them in order)
    return ()

"""The pydantic models of game-record format v1 (docs/record-format.md) and the JSON Schema export.

The models are the authority on the format; ``schemas/game-record.v1.schema.json``
is generated from them (``backalley schema``).  They are a gate only: once a
record passes, the replay works on the plain parsed JSON, never on these objects.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal, TypeVar, get_args

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

from backalley.records.fast import (  # the fast path, re-exported: see backalley.records.fast
    BORES,
    CARD_PATTERN,
    GAME_ID_PATTERN,
    MOST_TRICKS,
    PLAYER_PATTERN,
    SIDE_KEYS,
    AnyFastRecord,
    CardName,
    FastBid,
    FastBidV2,
    FastDeal,
    FastDealResult,
    FastDealV2,
    FastHands,
    FastJokerSwap,
    FastPlayers,
    FastRecord,
    FastRecordV2,
    FastSheetDeal,
    FastSheetRecord,
    FastSideResult,
    FastTeamInts,
    FastTrick,
    OptionName,
    PlainName,
    Seat,
    SheetTrump,
    Suit,
    _check_datetime,
    fast_decode,
    fast_decode_any,
    instant,
    is_sheet,
    nfc,
    python_pattern,
    record_options,
    sheet_problems,
    to_fast,
    to_fast_any,
    v2_problems,
)
from backalley.rules import RULESETS as RULESET_CLASSES
from backalley.rules import all_rulesets, find_ruleset

FORMAT_VERSION = 1
#: Every record format version this package reads.
FORMAT_VERSIONS: tuple[int, ...] = (1, 2)
#: The rulesets a record may name (format 1 records are all `standard`).
RULESETS: tuple[str, ...] = tuple(RULESET_CLASSES)
SCHEMA_ID = "https://backalley.example/schemas/game-record.v1.schema.json"
SCHEMA_FILE = "game-record.v1.schema.json"
SCHEMA_ID_V2 = "https://backalley.example/schemas/game-record.v2.schema.json"
SCHEMA_FILES = {1: SCHEMA_FILE, 2: "game-record.v2.schema.json"}

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
    ruleset: PlainName
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


# --- format version 2 (docs/rules.md §14) ------------------------------------------------------
#
# One model per ruleset (pydantic, authoritative), chosen by the record's
# ``ruleset`` field; what depends on the options (the deal numbers, the side
# keys) and the version rule (a plain standard record is version 1) are
# checked by :func:`v2_problems`, which both decoders run, so that they
# accept exactly the same records.


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


#: JSON Schema of the rule ``v2_problems`` checks: a deal without ``hands`` is one whose four bids pass.
_HANDS_UNLESS_PASSED_OUT: dict[str, Any] = {
    "anyOf": [
        {"required": ["hands"]},
        {"properties": {"bids": {"items": {"properties": {"bid": {"const": "pass"}}}}}},
    ]
}


class _DealV2(_Strict):
    model_config = ConfigDict(
        strict=True, extra="forbid", frozen=True, defer_build=True, json_schema_extra=_HANDS_UNLESS_PASSED_OUT
    )
    dealer: Seat
    #: Left out only by a deal passed out by four passes (checked by ``v2_problems``).
    hands: Hands | None = None
    stock: list[Card] | None = None
    tricks: list[Trick]
    result: SideResult | None = None

    _hands_not_null = field_validator("hands", mode="before")(_not_null)


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
    #: ``false``: a record with every card, as when left out (``true``: a score sheet, :data:`SHEET_MODELS`).
    sheet: Literal[False] | None = None

    _no_null_sheet = field_validator("sheet", mode="before")(_not_null)


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


_M = TypeVar("_M", bound=BaseModel)


def _by_ruleset(*models: type[_M]) -> dict[str, type[_M]]:
    """The models by the ruleset their ``ruleset`` field admits."""
    return {get_args(m.model_fields["ruleset"].annotation)[0]: m for m in models}


#: The version-2 model of each ruleset (each is named in the JSON Schema: its ``$defs``, title and description).
MODELS_V2 = _by_ruleset(StandardRecordV2, PereulokRecordV2, BabOnlineRecordV2)
GameRecordV2 = Annotated[StandardRecordV2 | PereulokRecordV2 | BabOnlineRecordV2, Field(discriminator="ruleset")]


# --- score sheets (docs/sheets.md) -------------------------------------------------------------

Tricks = Annotated[int, Field(ge=0, le=MOST_TRICKS)]


class SeatTricks(_Strict):
    """The tricks each player took."""

    N: Tricks
    E: Tricks
    S: Tricks
    W: Tricks


class _SheetDeal(_Strict):
    dealer: Seat
    tricks_won: SeatTricks | None = None
    trump: SheetTrump | None = None
    rainbows: list[Seat] | None = None
    result: SideResult | None = None

    _no_nulls = field_validator("tricks_won", "trump", "rainbows", "result", mode="before")(_not_null)


class StandardSheetDeal(_SheetDeal):
    """A deal of a ``standard`` score sheet: bids and tricks taken, no cards."""

    number: Annotated[int, Field(ge=1, le=25)]
    bids: Annotated[list[BidEntryStandardV2], Field(min_length=4, max_length=4)]


class PereulokSheetDeal(_SheetDeal):
    """A deal of a ``pereulok`` score sheet."""

    number: Annotated[int, Field(ge=1, le=2)]
    bids: Annotated[list[DeclarationEntry], Field(min_length=4, max_length=4)]


class BabOnlineSheetDeal(_SheetDeal):
    """A deal of a ``bab-online`` score sheet (``rainbows``: who was dealt one)."""

    number: Annotated[int, Field(ge=1, le=13)]
    bids: Annotated[list[BoreBidEntry], Field(min_length=4, max_length=4)]


def _check_sheet(value: Any) -> Any:
    if value is not True:
        raise ValueError("a score sheet has sheet: true")
    return value


class _SheetRecord(_Strict):
    format_version: Annotated[Literal[2], BeforeValidator(_check_v2_version)]
    sheet: Annotated[Literal[True], BeforeValidator(_check_sheet)]
    game_id: Annotated[str, StringConstraints(pattern=GAME_ID_PATTERN)]
    players: Players
    played_at: DateTime | None = None
    event: Annotated[str, StringConstraints(max_length=128)] | None = None
    final_score: SideInts | None = None


class StandardSheet(_SheetRecord):
    """A score sheet of ruleset ``standard``, with or without options."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, defer_build=True, title="standard sheet")
    ruleset: Literal["standard"]
    options: Options | None = None
    deals: list[StandardSheetDeal]

    _no_nulls = field_validator("played_at", "event", "final_score", "options", mode="before")(_not_null)


class PereulokSheet(_SheetRecord):
    """A score sheet of ruleset ``pereulok``."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, defer_build=True, title="pereulok sheet")
    ruleset: Literal["pereulok"]
    options: Options | None = None
    deals: list[PereulokSheetDeal]

    _no_nulls = field_validator("played_at", "event", "final_score", "options", mode="before")(_not_null)


class BabOnlineSheet(_SheetRecord):
    """A score sheet of ruleset ``bab-online``."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, defer_build=True, title="bab-online sheet")
    ruleset: Literal["bab-online"]
    deals: list[BabOnlineSheetDeal]

    _no_nulls = field_validator("played_at", "event", "final_score", mode="before")(_not_null)


#: The score-sheet model of each ruleset.
SHEET_MODELS = _by_ruleset(StandardSheet, PereulokSheet, BabOnlineSheet)
SheetRecord = Annotated[StandardSheet | PereulokSheet | BabOnlineSheet, Field(discriminator="ruleset")]


def json_schema_v2() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of record format v2: ``oneOf`` on ``ruleset``."""
    from pydantic import TypeAdapter

    schema = TypeAdapter(GameRecordV2 | SheetRecord).json_schema(schema_generator=_NoNullSchema)
    head = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID_V2,
        "title": "Back Alley game record v2",
        "description": (
            "A game record of a named ruleset (standard with options, pereulok, bab-online): "
            'every card, or a score sheet ("sheet": true: bids and each player\'s tricks).'
        ),
    }
    defs = schema.get("$defs", {})
    for name, cls in RULESET_CLASSES.items():
        conditions = _option_conditions(name) if cls.known_options else []
        for models in (MODELS_V2, SHEET_MODELS):
            if conditions:
                defs[models[name].__name__]["allOf"] = conditions
    # One flat ``oneOf``: a record with every card (``sheet`` false or absent) or a sheet (``sheet`` true).
    refs = [ref for branch in schema.pop("anyOf") for ref in branch["oneOf"]]
    return {**head, "oneOf": refs, **schema}


def _option_conditions(name: str) -> list[dict[str, Any]]:
    """``if``/``then`` on ``options``: the side keys an option changes, then the deal numbers it limits."""
    variants = [r for r in all_rulesets() if r.name == name]
    plain = find_ruleset(name)
    most = max(r.scored_deals for r in variants)
    out: list[dict[str, Any]] = []
    for option in plain.known_options:
        keys = find_ruleset(name, (option,)).sides
        if keys != plain.sides:
            then, other = _keyed(keys, plain.sides), _keyed(plain.sides, keys)
            out.append({"if": _has(option), "then": then, "else": other})
    for option in plain.known_options:
        limit = max(r.scored_deals for r in variants if option in r.options)
        if limit < most:
            number = {"properties": {"deals": {"items": {"properties": {"number": {"maximum": limit}}}}}}
            out.append({"if": _has(option), "then": number})
    return out


def _has(option: str) -> dict[str, Any]:
    return {"required": ["options"], "properties": {"options": {"contains": {"const": option}}}}


def _keyed(keys: tuple[str, ...], others: tuple[str, ...]) -> dict[str, Any]:
    """Results and the final score keyed by ``keys``, none of ``others``."""
    shape = {"required": list(keys), "not": {"anyOf": [{"required": [k]} for k in others]}}
    result = {"properties": {"tricks": shape, "points": shape}}
    return {"properties": {"final_score": shape, "deals": {"items": {"properties": {"result": result}}}}}


#: The fast path's names, re-exported for the callers that import them from here.
__all__ = [
    "BORES",
    "CARD_PATTERN",
    "GAME_ID_PATTERN",
    "PLAYER_PATTERN",
    "SIDE_KEYS",
    "AnyFastRecord",
    "CardName",
    "FastBid",
    "FastBidV2",
    "FastDeal",
    "FastDealResult",
    "FastDealV2",
    "FastHands",
    "FastJokerSwap",
    "FastPlayers",
    "FastRecord",
    "FastRecordV2",
    "FastSheetDeal",
    "FastSheetRecord",
    "FastSideResult",
    "FastTeamInts",
    "FastTrick",
    "OptionName",
    "Seat",
    "Suit",
    "fast_decode",
    "fast_decode_any",
    "instant",
    "is_sheet",
    "nfc",
    "python_pattern",
    "record_options",
    "sheet_problems",
    "to_fast",
    "to_fast_any",
    "v2_problems",
]

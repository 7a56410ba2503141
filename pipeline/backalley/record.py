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

FORMAT_VERSION = 1
#: Every record format version this package reads.
FORMAT_VERSIONS: tuple[int, ...] = (1,)
#: The rulesets the engine knows (format 1 records are all `standard`).
RULESETS: tuple[str, ...] = ("standard",)
SCHEMA_ID = "https://backalley.example/schemas/game-record.v1.schema.json"
SCHEMA_FILE = "game-record.v1.schema.json"

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
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


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


def json_schema_text() -> str:
    return json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"


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


def _nfc_players(rec: FastRecord) -> FastPlayers:
    """Put the record's player ids in NFC, in place (the replay, the store and reports see these)."""
    p = rec.players
    p.N, p.E, p.S, p.W = nfc(p.N), nfc(p.E), nfc(p.S), nfc(p.W)
    return p

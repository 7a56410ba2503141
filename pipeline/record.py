"""The pydantic models of game-record format v1 (RECORD.md) and the JSON Schema export.

The models are the authority on the format; ``schemas/game-record.v1.schema.json``
is generated from them (``backalley schema``).  They are a gate only: once a
record passes, the replay works on the plain parsed JSON, never on these objects.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Annotated, Any, Literal

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
SCHEMA_ID = "https://backalley.example/schemas/game-record.v1.schema.json"
SCHEMA_FILE = "game-record.v1.schema.json"

CARD_PATTERN = r"^(?:[2-9TJQKA][SHDC]|BJ|LJ)$"
GAME_ID_PATTERN = r"^[A-Za-z0-9._:-]{1,128}$"
#: 1-64 characters, none of Unicode category Cc (U+0000-U+001F, U+007F-U+009F).
PLAYER_PATTERN = r"^[^\x00-\x1f\x7f-\x9f]{1,64}$"
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})$")

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


def _check_datetime(value: str) -> str:
    if not _RFC3339.match(value):
        raise ValueError("must be an RFC 3339 date-time with an offset, e.g. 2026-01-31T19:05:00Z")
    try:
        datetime.fromisoformat(value.upper().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{value!r} is not a real date and time") from None
    return value


DateTime = Annotated[str, AfterValidator(_check_datetime), Field(json_schema_extra={"format": "date-time"})]


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class Players(_Strict):
    """Who sat where: seat -> player id (1-64 characters, no control characters)."""

    N: Annotated[str, StringConstraints(pattern=PLAYER_PATTERN)]
    E: Annotated[str, StringConstraints(pattern=PLAYER_PATTERN)]
    S: Annotated[str, StringConstraints(pattern=PLAYER_PATTERN)]
    W: Annotated[str, StringConstraints(pattern=PLAYER_PATTERN)]

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
        return self.generate_inner(schema["schema"])  # type: ignore[typeddict-item]

    def default_schema(self, schema: CoreSchema) -> JsonSchemaValue:
        inner = self.generate_inner(schema["schema"])  # type: ignore[typeddict-item]
        return inner


def json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of record format v1, generated from the models."""
    schema = GameRecord.model_json_schema(schema_generator=_NoNullSchema)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}


def json_schema_text() -> str:
    return json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"

"""The optional C trick loop (``_fastplay.c``); see ``backalley.replay._tricks``."""

from typing import Any

def play(
    tricks: list[Any],
    hand: list[int],
    won: list[int],
    cards: bytearray,
    leaders: bytearray,
    winners: bytearray,
    broken_before: bytearray,
    table: bytes,
    names: bytes,
    side_of: bytes,
    expected_leader: int,
    exempt: int,
    broken: bool,
    /,
) -> tuple[int, bool, int]: ...
def mask(names: list[Any], table: bytes, /) -> int: ...
def deal(
    north: list[Any],
    east: list[Any],
    south: list[Any],
    west: list[Any],
    stock: list[Any] | None,
    trump_card: str | None,
    n: int,
    deck: int,
    names: bytes,
    /,
) -> tuple[int, int, int, int, int, int, int, int] | None: ...
def rows(outcomes: list[Any], templates: list[bytes], codes: bytes, /) -> tuple[bytes, bytes, bytes, bytes] | None: ...

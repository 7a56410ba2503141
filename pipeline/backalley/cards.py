"""The 54 cards as small ints, hands as int bitmasks, and tables built at import.

Card ``c`` in ``0..51`` is ``suit * 13 + rank`` with suits ``S H D C`` (0..3) and
ranks ``2 .. A`` (0..12); ``LJ`` is 52 and ``BJ`` is 53.  A hand is an ``int``
whose bit ``c`` is set when the hand holds card ``c``.

The numbering is chosen so that, once the jokers join the trump suit, "higher
card index" means "higher rank" inside every suit: the highest trump in a hand
is its highest set bit among the trump mask and the lowest trump its lowest.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

SUITS = "SHDC"
RANKS = "23456789TJQKA"
SEATS = "NESW"

SPADES, HEARTS, DIAMONDS, CLUBS = 0, 1, 2, 3
#: The pseudo-suit index meaning "no trump" (and the suit of a joker in a no-trump deal).
NO_TRUMP = 4

LJ = 52
BJ = 53
NUM_CARDS = 54
JOKERS = (1 << LJ) | (1 << BJ)
FULL_DECK = (1 << NUM_CARDS) - 1

#: Card name -> card int, and back.
CARD_INDEX: dict[str, int] = {}
CARD_NAMES: list[str] = []
for _s in range(4):
    for _r in range(13):
        CARD_NAMES.append(RANKS[_r] + SUITS[_s])
CARD_NAMES += ["LJ", "BJ"]
for _i, _n in enumerate(CARD_NAMES):
    CARD_INDEX[_n] = _i

#: Natural suit of each card (jokers: ``NO_TRUMP``, i.e. a suit of their own).
CARD_SUIT: tuple[int, ...] = tuple([c // 13 for c in range(52)] + [NO_TRUMP, NO_TRUMP])
#: Rank of each card, 0 (two) .. 12 (ace); LJ 13, BJ 14.
CARD_RANK: tuple[int, ...] = tuple([c % 13 for c in range(52)] + [13, 14])

#: Bitmask of each natural suit; index ``NO_TRUMP`` holds the two jokers.
SUIT_MASK: tuple[int, ...] = tuple([((1 << 13) - 1) << (13 * s) for s in range(4)] + [JOKERS])

#: ``CARD_BIT[name]``: the one-card bitmask of a card name.
CARD_BIT: dict[str, int] = {name: 1 << i for i, name in enumerate(CARD_NAMES)}


class CardError(ValueError):
    """A string that is not a card in the record notation."""


def parse_card(name: str) -> int:
    """``"TH"`` -> 22; raises :class:`CardError` for anything that is not a card."""
    try:
        return CARD_INDEX[name]
    except (KeyError, TypeError):
        raise CardError(f"{name!r} is not a card") from None


def card_name(card: int) -> str:
    return CARD_NAMES[card]


def mask_of(cards: Iterable[int]) -> int:
    m = 0
    for c in cards:
        m |= 1 << c
    return m


def cards_of(mask: int) -> Iterator[int]:
    """The cards of a hand, lowest index first."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def count(mask: int) -> int:
    return mask.bit_count()


def highest(mask: int) -> int:
    """The highest-index card of a non-empty mask."""
    return mask.bit_length() - 1


def lowest(mask: int) -> int:
    """The lowest-index card of a non-empty mask."""
    return (mask & -mask).bit_length() - 1


def left_of(seat: int) -> int:
    """The next seat clockwise (N -> E -> S -> W -> N)."""
    return (seat + 1) & 3


def team_of(seat: int) -> int:
    """0 for NS, 1 for EW."""
    return seat & 1


TEAMS = ("NS", "EW")

"""Pure rule functions of ruleset ``standard`` (docs/rules.md), on small ints and bitmasks.

Everything here is shared by the engine (which plays legal games) and the
replay (which checks recorded ones), so a rule lives in exactly one place.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from backalley.cards import (
    BJ,
    CARD_SUIT,
    EFFECTIVE_SUIT,
    FOLLOW_MASK,
    IS_TRUMP,
    LJ,
    NO_TRUMP,
    TRUMP_MASK,
    WIN_KEY,
    highest,
    lowest,
    team_of,
)

RULESET = "standard"
SCORED_DEALS = 25
PLAYERS = 4

#: A bid as recorded: ``"pass"``, ``"board"`` or an integer (checked by :func:`bid_in_range`).
Bid = int | str
PASS: Literal["pass"] = "pass"
BOARD: Literal["board"] = "board"

#: Hand size of each deal number (index 0 unused): ``|k - 13| + 1``.
HAND_SIZE: tuple[int, ...] = (0, *(abs(k - 13) + 1 for k in range(1, SCORED_DEALS + 1)))


def hand_size(number: int) -> int:
    """Cards per hand in deal ``number`` (1..25): 13, 12, ..., 1, ..., 13."""
    return abs(number - 13) + 1


def stock_size(n: int) -> int:
    return 54 - 4 * n


def trump_of(trump_card: int) -> int:
    """The trump suit for a turned card; ``NO_TRUMP`` when a joker is turned."""
    return CARD_SUIT[trump_card]


# --- bidding -----------------------------------------------------------------


def legal_bids(n: int) -> list[Bid]:
    """Every bid a player may make with ``n`` cards: pass, 1..n-1, board."""
    return [PASS, *range(1, n), BOARD]


def bid_in_range(bid: Bid, n: int) -> bool:
    """A numeric bid must be 1..n-1; pass and board are always allowed."""
    if isinstance(bid, int):
        return 1 <= bid <= n - 1
    return bid in (PASS, BOARD)


def is_pass_out(bids: Sequence[Bid]) -> bool:
    """All four bids are ``pass``."""
    return len(bids) == PLAYERS and all(b == PASS for b in bids)


@dataclass(slots=True)
class Contract:
    """A team's contract: ``board`` with multiplier ``value``, or numeric ``value``."""

    board: bool
    value: int


@dataclass(slots=True)
class Contracts:
    """Both teams' contracts and the opening leader of one deal.

    Shared by :func:`contracts`'s memo: never change one.  (Not ``frozen``: a
    frozen dataclass compiled by mypyc cannot be unpickled, and replays travel
    from worker processes by pickle.)
    """

    ns: Contract
    ew: Contract
    #: Seat that leads trick 1, or ``None`` when nobody bid a board or a number >= 1.
    opening_leader: int | None
    #: Seats that claimed board in this deal (bitmask over seats).
    board_claimers: int

    def of(self, team: int) -> Contract:
        return self.ew if team else self.ns


@lru_cache(maxsize=1 << 16)
def contracts(bids: tuple[tuple[int, Bid], ...]) -> Contracts:
    """Contracts and opening leader from ``(seat, bid)`` pairs in bidding order (§6, §7).

    Memoised: the same bidding always gives the same (immutable) answer.

    Board claims are numbered in bidding order (board, double, triple,
    quadruple); a team with a claim holds a board contract at the highest
    multiplier among its members' claims and its numeric bids are ignored.
    Otherwise its contract is the sum of its members' numbers (a pass adds 0).
    The opening leader is the last board claimer, else the first highest
    number >= 1, else nobody.
    """
    sums = [0, 0]
    mult = [0, 0]
    claims = 0
    claimers = 0
    last_board: int | None = None
    best_num = 0
    best_seat: int | None = None
    for seat, bid in bids:
        team = team_of(seat)
        if bid == BOARD:
            claims += 1
            mult[team] = max(mult[team], claims)
            claimers |= 1 << seat
            last_board = seat
        elif isinstance(bid, int):
            sums[team] += bid
            if bid > best_num:
                best_num = bid
                best_seat = seat
    ns = Contract(True, mult[0]) if mult[0] else Contract(False, sums[0])
    ew = Contract(True, mult[1]) if mult[1] else Contract(False, sums[1])
    leader = last_board if last_board is not None else best_seat
    return Contracts(ns, ew, leader, claimers)


# --- play ----------------------------------------------------------------------


def legal_leads(hand: int, trump: int, broken: bool, claimed_board: bool) -> int:
    """Cards the leader may lead (§7 Leading).

    A trump may not be led while trump is unbroken, unless the leader claimed
    board this deal or holds nothing but trumps.
    """
    tmask = TRUMP_MASK[trump]
    if broken or claimed_board or not hand & ~tmask:
        return hand
    return hand & ~tmask


def is_blooper_lead(led: int, trump: int) -> bool:
    """A joker led in a trump deal: followers must play their highest/lowest trump."""
    return led >= LJ and trump != NO_TRUMP


def follow_suit_mask(led: int, trump: int) -> int:
    """The cards that count as following ``led`` (its suit; every trump if it is a trump)."""
    return FOLLOW_MASK[trump][EFFECTIVE_SUIT[trump][led]]


def legal_follows(hand: int, led: int, trump: int) -> int:
    """Cards a follower may play to a trick led with ``led`` (§7 Following)."""
    if is_blooper_lead(led, trump):
        trumps = hand & TRUMP_MASK[trump]
        if not trumps:
            return hand
        return 1 << (highest(trumps) if led == BJ else lowest(trumps))
    return hand & follow_suit_mask(led, trump) or hand


def follow_fault(led: int, trump: int) -> str:
    """The violation code for a follower's illegal card after ``led``."""
    if trump != NO_TRUMP and led == BJ:
        return "BIG_BLOOPER"
    if trump != NO_TRUMP and led == LJ:
        return "LITTLE_BLOOPER"
    return "REVOKE"


def trick_winner(cards: Sequence[int], trump: int) -> int:
    """Position (0 = leader) of the card that wins the trick (§7 Winning).

    The highest trump wins if any trump was played, else the highest card of
    the led suit (``WIN_KEY`` ranks every card for the led suit and trump).
    """
    key = WIN_KEY[trump][EFFECTIVE_SUIT[trump][cards[0]]]
    keys = [key[c] for c in cards]
    return keys.index(max(keys))


def has_trump(cards: Sequence[int], trump: int) -> bool:
    is_trump = IS_TRUMP[trump]
    return any(is_trump[c] for c in cards)


# --- scoring -------------------------------------------------------------------


def score(contract: Contract, tricks: int, n: int) -> int:
    """Points for one team in one deal (§8)."""
    if contract.board:
        made = tricks == n
        return (10 if made else -10) * n * contract.value
    bid = contract.value
    if tricks >= bid:
        return 5 * bid + (tricks - bid)
    return -5 * bid


def made(contract: Contract, tricks: int, n: int) -> bool:
    if contract.board:
        return tricks == n
    return tricks >= contract.value

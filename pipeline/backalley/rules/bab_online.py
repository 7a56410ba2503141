"""Ruleset ``bab-online``: the rules the web game bab-online's server enforces.

13 deals of 12, 10, …, 2, 1, 3, …, 13 cards; a turned trump card and no joker
swap (a turned joker leaves the other joker as the deal's only trump); bids
1…min(n, 12) and bores ``board``…``board4`` in escalation order; team values
added and capped at the hand size, bores ×2/×4/×8/×16 above it; no
board-claimer exception to the trump-lead rule; after a Big Blooper lead only
the leader's opponents must play their highest trump; 10·C·m scoring with a
+10 rainbow bonus on the 4-card deal; a redeal by the same dealer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from backalley.cards import BJ, CARD_SUIT, JOKERS, LJ, NO_TRUMP, SUIT_MASK
from backalley.rules.base import FREE, HIGHEST_TRUMP, PASS, PLAYERS, Bid, Contract, Contracts, Ruleset

#: The bore tokens by level (1..4) and their multipliers when they decide a contract.
BORES: tuple[str, ...] = ("board", "board2", "board3", "board4")
BORE_MULT: tuple[int, ...] = (1, 2, 4, 8, 16)
#: Hand size of each deal number (index 0 unused).
SCHEDULE: tuple[int, ...] = (0, 12, 10, 8, 6, 4, 2, 1, 3, 5, 7, 9, 11, 13)
#: The deal with the rainbow bonus: 4 cards.
RAINBOW_HAND = 4


def bore_level(bid: Bid) -> int:
    """1..4 for ``board``…``board4``, else 0."""
    if isinstance(bid, str) and bid in BORES:
        return BORES.index(bid) + 1
    return 0


def bid_value(bid: Bid) -> int:
    """bab-online's ``BID_RANKS``: pass 0, k for 1..12, bores 13..16; anything else 0 (docs/rules.md §14.3, "Contracts")."""
    level = bore_level(bid)
    if level:
        return 12 + level
    if isinstance(bid, int) and 1 <= bid <= 12:
        return bid
    return 0


class BabOnline(Ruleset):
    """docs/rules.md §14.3."""

    name: ClassVar[str] = "bab-online"
    board_word: ClassVar[str] = "bore"
    board_level_names: ClassVar[tuple[str, ...]] = ("board", "board2", "board3", "board4")
    rainbow: ClassVar[bool] = True
    levelled_boards: ClassVar[bool] = True
    bid_words: ClassVar[tuple[str, ...]] = (PASS, *BORES)
    summary: ClassVar[str] = (
        "the web game bab-online: 13 deals 12→1→13, bores ×2/×4/×8/×16, no joker swap, rainbow bonus"
    )
    scoring: ClassVar[str] = (
        "A team with contract C (multiplier m) that takes T ≥ C scores 10·C·m + (T − C), else −10·C·m; "
        "a contract of 0 scores T. +10 for each rainbow on the 4-card deal. A redeal scores 0."
    )

    def __init__(self, options: tuple[str, ...] = ()) -> None:
        super().__init__(options)
        self.scored_deals = 13
        self.has_joker_swap = False
        self.has_bonus = True
        self.extra_codes = ("BORE_LEVEL",)
        self.impossible_codes = ("LITTLE_BLOOPER",)

    # -- schedule -------------------------------------------------------------------

    def hand_size(self, number: int) -> int:
        """12, 10, 8, 6, 4, 2, 1, 3, 5, 7, 9, 11, 13 (docs/rules.md §14.3, "Schedule")."""
        return 14 - 2 * number if number <= 6 else 2 * number - 13

    def joker_swap(self, trump_card: int, hands: Sequence[int]) -> tuple[int, int]:
        """No swap: a turned joker leaves the other joker with its holder (docs/rules.md §14.3, "No joker swap")."""
        return (-1, -1)

    def swap_discard(self, trump_card: int) -> int:
        return -1

    def next_dealer(self, dealer: int, pass_out: bool, points: Sequence[int]) -> int:
        """Left of the dealer; the same dealer again after a redeal (docs/rules.md §14.3, "Schedule")."""
        return dealer if pass_out else (dealer + 1) & 3

    # -- trump -------------------------------------------------------------------------

    def trump_mask(self, trump: int) -> int:
        """With a joker turned the jokers are the only trumps, a suit of their own (docs/rules.md §14.3, "No joker swap")."""
        return SUIT_MASK[trump] | JOKERS if trump < NO_TRUMP else JOKERS

    def suit_of(self, card: int, trump: int) -> int:
        return trump if card >= LJ else CARD_SUIT[card]

    def follow_mask(self, led: int, trump: int) -> int:
        return self.trump_mask(trump) if self.suit_of(led, trump) == trump else SUIT_MASK[self.suit_of(led, trump)]

    def forced_follow(self, led: int, trump: int, pos: int) -> int:
        """Big Blooper led in a trump deal: the leader's opponents (positions 1, 3) play their highest trump."""
        if led == BJ and trump != NO_TRUMP and pos != 2:
            return HIGHEST_TRUMP
        return FREE

    # -- bidding -------------------------------------------------------------------------

    def legal_bids(self, n: int) -> list[Bid]:
        return [PASS, *range(1, min(n, 12) + 1), BORES[0]]

    def legal_bids_after(self, n: int, seat: int, bids: Sequence[tuple[int, Bid]]) -> list[Bid]:
        """Numbers 1…min(n, 12), and the one next bore level (docs/rules.md §14.3, "Bids")."""
        top = max((bore_level(b) for _, b in bids), default=0)
        bore = [BORES[top]] if top < 4 else []
        return [PASS, *range(1, min(n, 12) + 1), *bore]

    def bid_range(self, n: int) -> tuple[int, int]:
        return (1, min(n, 12))

    def bid_fault_reason(self, code: str) -> str:
        return "a bore level must follow the level below it and not repeat one (board, board2, board3, board4)"

    def bid_in_range(self, bid: Bid, n: int) -> bool:
        if isinstance(bid, int):
            return 1 <= bid <= min(n, 12)
        return bid == PASS or bid in BORES

    def bid_faults(self, n: int, bids: tuple[tuple[int, Bid], ...]) -> tuple[tuple[int, str], ...]:
        """BID_RANGE for a number outside 1…min(n, 12); BORE_LEVEL for a repeated or skipped level."""
        out: list[tuple[int, str]] = []
        levels: set[int] = set()
        for k, (_, b) in enumerate(bids):
            level = bore_level(b)
            if isinstance(b, int) and not self.bid_in_range(b, n):
                out.append((k, "BID_RANGE"))
            elif level and (level in levels or (level > 1 and level - 1 not in levels)):
                out.append((k, "BORE_LEVEL"))
            if level:
                levels.add(level)
        return tuple(out)

    def is_pass_out(self, bids: Sequence[Bid]) -> bool:
        """A redeal: all four values 0 (docs/rules.md §14.3, "Schedule", "Contracts")."""
        return len(bids) == PLAYERS and all(bid_value(b) == 0 for b in bids)

    def compute_contracts(self, bids: tuple[tuple[int, Bid], ...], n: int) -> Contracts:
        """docs/rules.md §14.3, "Contracts": value V per team; V ≤ n: contract V ×1; else n at the team's highest bore.

        The opening leader bid the highest value, the earliest among equals.
        """
        value = [0, 0]
        level = [0, 0]
        best = 0
        leader: int | None = None
        for seat, bid in bids:
            v = bid_value(bid)
            value[seat & 1] += v
            level[seat & 1] = max(level[seat & 1], bore_level(bid))
            if v > best:
                best, leader = v, seat
        teams = tuple(
            Contract(True, n, BORE_MULT[level[t]]) if value[t] > n else Contract(False, value[t]) for t in (0, 1)
        )
        return Contracts(teams, leader, sum(1 << s for s, b in bids if bore_level(b)), 0)

    # -- scoring ---------------------------------------------------------------------------

    def score(self, contract: Contract, tricks: int, n: int) -> int:
        """docs/rules.md §14.3, "Scoring" (without the rainbow bonus): 10·C·m + overtricks, or −10·C·m."""
        c = contract.value
        if tricks >= c:
            return 10 * c * contract.mult + tricks - c
        return -10 * c * contract.mult

    def made(self, contract: Contract, tricks: int, n: int) -> bool:
        return tricks >= contract.value

    def bonus(self, dealt: Sequence[int], trump: int, n: int) -> tuple[int, ...]:
        """+10 a rainbow: a 4-card hand as dealt holding all four suits (a joker: the trump suit)."""
        if n != RAINBOW_HAND:
            return (0, 0)
        seats = []
        for seat in range(PLAYERS):
            hand = dealt[seat]
            suits = {CARD_SUIT[c] for c in range(LJ) if hand >> c & 1}
            if hand & JOKERS and trump < NO_TRUMP:
                suits.add(trump)
            if len(suits) == 4:
                seats.append(seat)
        return self.rainbow_bonus(seats, n)

    def rainbow_deal(self, n: int) -> bool:
        return n == RAINBOW_HAND

    def rainbow_bonus(self, seats: Sequence[int], n: int) -> tuple[int, ...]:
        """+10 to a seat's side for each rainbow hand of the 4-card deal."""
        out = [0, 0]
        if n == RAINBOW_HAND:
            for seat in seats:
                out[self.side_of[seat]] += 10
        return (out[0], out[1])

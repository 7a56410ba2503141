"""Ruleset ``pereulok``: the game of seed 004 ("Глухой переулок"), docs/rules.md §14.2.

A match of 2 games, each one deal of 13 cards (10 with ``short_deck``); a
rising auction in which each team declares at most once and an exact double,
triple or quadruple of the previous declaration scores ×2/×3/×4; the highest
declarer names trump and leads; any card may be led; a big-joker lead forces
everyone's highest trump and a lead of the deck's lowest trump everyone's
lowest trump; a made declaration scores 10·m per trick taken, anything else 0;
the next game is dealt by the nearest player of the losing side.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from backalley.cards import BJ, NO_TRUMP, SPADES
from backalley.rules.base import FREE, HIGHEST_TRUMP, LOWEST_TRUMP, PASS, PLAYERS, Bid, Contract, Contracts, Ruleset
from backalley.rules.standard import OPTION_HELP, OPTION_NOTES, OPTIONS, deck_of, set_sides

#: Every seat may lead trump at any time (docs/rules.md §14.2, "Play").
ALL_SEATS = 0b1111


def multiplier(declaration: int, previous: int) -> int:
    """×2, ×3 or ×4 for an exact multiple of the previous declaration (≥ 1), else ×1 (docs/rules.md §14.2, "Auction")."""
    if previous >= 1:
        for m in (2, 3, 4):
            if declaration == m * previous:
                return m
    return 1


class Pereulok(Ruleset):
    """docs/rules.md §14.2, with the house options of §14.1."""

    name: ClassVar[str] = "pereulok"
    auction: ClassVar[str] = "declarations"
    bid_words: ClassVar[tuple[str, ...]] = (PASS,)
    summary: ClassVar[str] = (
        "seed 004: a match of 2 games of 13 cards, a rising team auction with ×2/×3/×4 doubles, named trump, 10·m a trick"
    )
    scoring: ClassVar[str] = (
        "A side whose declaration D (multiplier m) is made (T ≥ D) scores 10·m·T; a failed declaration, "
        "or none, scores 0. A pass-out scores 0; the match is the sum of 2 games."
    )
    known_options: ClassVar[tuple[str, ...]] = OPTIONS
    option_help: ClassVar[tuple[str, ...]] = OPTION_HELP
    option_notes: ClassVar[tuple[str, ...]] = OPTION_NOTES

    def __init__(self, options: tuple[str, ...] = ()) -> None:
        super().__init__(options)
        self.deck = deck_of(options)
        self.max_hand = self.deck.bit_count() // 4
        self.scored_deals = 2
        self.spades = "spades_trump" in options
        self.jokers = "no_jokers" not in options
        #: The rank (0 = two) of the lowest card of each suit: 2, or 5 with ``short_deck``.
        self.lowest_rank = 3 if "short_deck" in options else 0
        self.has_joker_swap = False
        self.trump_named = True
        set_sides(self, options)
        self.extra_codes = ("TRUMP", "BID_LOW", "BID_TWICE", "LOWEST_TRUMP") + (
            ("NOT_IN_DECK",) if self.deck != (1 << 54) - 1 else ()
        )
        self.impossible_codes = ("JOKER_SWAP", "TRUMP_LEAD", "LITTLE_BLOOPER") + (
            () if self.jokers else ("BIG_BLOOPER",)
        )

    # -- schedule ----------------------------------------------------------------------

    def hand_size(self, number: int) -> int:
        return self.max_hand

    def turns_card(self, n: int) -> bool:
        return False

    def names_trump(self) -> bool:
        return not self.spades

    def deal_trump(self, n: int, trump_card: int, stock_top: int, named: int) -> int:
        """Spades with ``spades_trump``; else the named trump, none when it is missing (a missing one is ``TRUMP``)."""
        if self.spades:
            return SPADES
        return named if named >= 0 else NO_TRUMP

    def next_dealer(self, dealer: int, pass_out: bool, points: Sequence[int]) -> int:
        """After a pass-out the left; after a game the nearest seat of a side with the fewest points (docs/rules.md §14.2, "Next dealer")."""
        if pass_out or not points:
            return (dealer + 1) & 3
        low = min(points)
        for step in range(1, PLAYERS + 1):
            seat = (dealer + step) & 3
            if points[self.side_of[seat]] == low:
                return seat
        return (dealer + 1) & 3  # pragma: no cover (some side has the fewest points)

    # -- the auction -----------------------------------------------------------------------

    def legal_bids(self, n: int) -> list[Bid]:
        return [PASS, *range(1, n + 1)]

    def legal_bids_after(self, n: int, seat: int, bids: Sequence[tuple[int, Bid]]) -> list[Bid]:
        """Pass; or, if the seat's side has not declared, any declaration above the previous one."""
        declared = {self.side_of[s] for s, b in bids if isinstance(b, int)}
        if self.side_of[seat] in declared:
            return [PASS]
        last = max((b for _, b in bids if isinstance(b, int)), default=0)
        return [PASS, *range(last + 1, n + 1)]

    def bid_range(self, n: int) -> tuple[int, int]:
        return (1, n)

    def bid_in_range(self, bid: Bid, n: int) -> bool:
        if isinstance(bid, int):
            return 1 <= bid <= n
        return bid == PASS

    def bid_fault_reason(self, code: str) -> str:
        if code == "BID_TWICE":
            return "this side has already declared in this deal"
        return "a declaration must be higher than the previous one"

    def bid_faults(self, n: int, bids: tuple[tuple[int, Bid], ...]) -> tuple[tuple[int, str], ...]:
        """Per call, the first of BID_RANGE, BID_TWICE, BID_LOW (docs/rules.md §14.2, "Auction"); declarations as recorded."""
        out: list[tuple[int, str]] = []
        declared: set[int] = set()
        previous: int | None = None
        for k, (seat, b) in enumerate(bids):
            if not isinstance(b, int):
                continue
            side = self.side_of[seat]
            if not 1 <= b <= n:
                out.append((k, "BID_RANGE"))
            elif side in declared:
                out.append((k, "BID_TWICE"))
            elif previous is not None and b <= previous:
                out.append((k, "BID_LOW"))
            declared.add(side)
            previous = b
        return tuple(out)

    def is_pass_out(self, bids: Sequence[Bid]) -> bool:
        return len(bids) == PLAYERS and all(b == PASS for b in bids)

    def compute_contracts(self, bids: tuple[tuple[int, Bid], ...], n: int) -> Contracts:
        """Each side's last declaration and its multiplier; the declarer made the highest (earliest among equals).

        A side without a declaration holds ``Contract(False, 0, 0)``: it scores 0.
        """
        by_side = [Contract(False, 0, 0) for _ in self.sides]
        previous = 0
        best = 0
        declarer: int | None = None
        for seat, b in bids:
            if not isinstance(b, int):
                continue
            by_side[self.side_of[seat]] = Contract(False, b, multiplier(b, previous))
            if declarer is None or b > best:
                best, declarer = b, seat
            previous = b
        return Contracts(tuple(by_side), declarer, 0, ALL_SEATS)

    # -- play -------------------------------------------------------------------------------

    def lowest_trump(self, trump: int) -> int:
        """The lowest trump of the deck: the 2 (5 with ``short_deck``) of the trump suit."""
        return trump * 13 + self.lowest_rank

    def forced_follow(self, led: int, trump: int, pos: int) -> int:
        if trump == NO_TRUMP:
            return FREE
        if led == BJ and self.jokers:
            return HIGHEST_TRUMP
        if led == self.lowest_trump(trump):
            return LOWEST_TRUMP
        return FREE

    def follow_fault(self, led: int, trump: int, pos: int) -> str:
        forced = self.forced_follow(led, trump, pos)
        if forced == HIGHEST_TRUMP:
            return "BIG_BLOOPER"
        if forced == LOWEST_TRUMP:
            return "LOWEST_TRUMP"
        return "REVOKE"

    # -- scoring ------------------------------------------------------------------------------

    def score(self, contract: Contract, tricks: int, n: int) -> int:
        """10·m per trick taken for a made declaration; 0 for a failed one or none (docs/rules.md §14.2, "Scoring")."""
        if contract.mult and tricks >= contract.value:
            return 10 * contract.mult * tricks
        return 0

    def made(self, contract: Contract, tricks: int, n: int) -> bool:
        return bool(contract.mult) and tricks >= contract.value

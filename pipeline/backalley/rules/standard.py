"""Ruleset ``standard`` (docs/rules.md §1-§13) and its four house options (docs/rules.md §14.1).

Without options this is the dialect of record format 1.  The options change
only what they name: ``no_jokers`` and ``short_deck`` the deck (and with it the
largest hand, the schedule and the stock), ``spades_trump`` how trump is fixed,
``no_partnerships`` the sides.
"""

from __future__ import annotations

from typing import ClassVar

from backalley.cards import JOKERS, SPADES
from backalley.rules.base import BOARD, Bid, Contract, Contracts, Ruleset

#: The house options of seed 004, in their canonical order (docs/rules.md §14.1).
OPTIONS = ("no_jokers", "short_deck", "spades_trump", "no_partnerships")
OPTION_HELP = (
    "without jokers: a 52-card deck (40 with short_deck); no joker swap, no Blooper rules",
    "without 2s, 3s and 4s: a 42-card deck (40 with no_jokers), hands of at most 10 cards",
    "spades are always trump: nothing is turned or named",
    "no partnerships: each seat is a side of its own",
)
OPTION_NOTES = (
    "no jokers (52 cards; 40 with short_deck)",
    "no 2s, 3s and 4s (hands of at most 10 cards)",
    "spades always trump",
    "no partnerships: each seat is a side, 'team' figures are the player's own",
)
#: The cards ``short_deck`` removes: the 2s, 3s and 4s of every suit.
LOW_CARDS = sum(0b111 << (13 * s) for s in range(4))


def deck_of(options: tuple[str, ...]) -> int:
    """The deck of the options (docs/rules.md §14.1)."""
    deck = (1 << 54) - 1
    if "no_jokers" in options:
        deck &= ~JOKERS
    if "short_deck" in options:
        deck &= ~LOW_CARDS
    return deck


def set_sides(rules: Ruleset, options: tuple[str, ...]) -> None:
    """Teams NS, EW; or, with ``no_partnerships``, every seat a side."""
    if "no_partnerships" in options:
        rules.sides = ("N", "E", "S", "W")
        rules.side_of = (0, 1, 2, 3)


class Standard(Ruleset):
    """25 deals of 13→1→13 cards, a turned trump card, board claims ×1…×4 (docs/rules.md)."""

    name: ClassVar[str] = "standard"
    summary: ClassVar[str] = "25 deals 13→1→13, a turned trump card, the joker swap, board claims ×1…×4"
    scoring: ClassVar[str] = (
        "A side that bids B (its players' numbers added; a pass is 0) and takes T tricks scores 5·B + (T − B) "
        "if T ≥ B, else −5·B; a contract of 0 scores T. A board scores 10·n·m if the side takes all n tricks, "
        "else −10·n·m (m: ×1…×4 for the first…fourth board claim). A pass-out scores 0."
    )
    known_options: ClassVar[tuple[str, ...]] = OPTIONS
    option_help: ClassVar[tuple[str, ...]] = OPTION_HELP
    option_notes: ClassVar[tuple[str, ...]] = OPTION_NOTES

    def __init__(self, options: tuple[str, ...] = ()) -> None:
        super().__init__(options)
        self.deck = deck_of(options)
        self.max_hand = self.deck.bit_count() // 4
        self.scored_deals = 2 * self.max_hand - 1
        self.spades = "spades_trump" in options
        self.has_joker_swap = not ("no_jokers" in options or self.spades)
        set_sides(self, options)
        self.format_version = 2 if options else 1  # (format 1 is plain standard's, from before rulesets)
        if "no_jokers" in options:
            self.impossible_codes = ("BIG_BLOOPER", "LITTLE_BLOOPER")
        if options:
            self.extra_codes = ("TRUMP", "NOT_IN_DECK") if self.deck != (1 << 54) - 1 else ("TRUMP",)

    def turns_card(self, n: int) -> bool:
        """A card is turned unless spades are always trump or no card is left (docs/rules.md §14.1)."""
        return not self.spades and self.stock_size(n) > 0

    def deal_trump(self, n: int, trump_card: int, stock_top: int, named: int) -> int:
        if self.spades:
            return SPADES
        return super().deal_trump(n, trump_card, stock_top, named)

    def compute_contracts(self, bids: tuple[tuple[int, Bid], ...], n: int) -> Contracts:
        """Contracts and opening leader from ``(seat, bid)`` pairs in bidding order (docs/rules.md §6, §7).

        Board claims are numbered in bidding order (board, double, triple,
        quadruple); a side with a claim holds a board contract at the highest
        multiplier among its members' claims and its numeric bids are ignored.
        Otherwise its contract is the sum of its members' numbers (a pass adds 0).
        The opening leader is the last board claimer, else the first highest
        number >= 1, else nobody.  Board claimers may lead trump at once.
        """
        sides = len(self.sides)
        sums = [0] * sides
        mult = [0] * sides
        claims = 0
        claimers = 0
        last_board: int | None = None
        best_num = 0
        best_seat: int | None = None
        for seat, bid in bids:
            side = self.side_of[seat]
            if bid == BOARD:
                claims += 1
                mult[side] = max(mult[side], claims)
                claimers |= 1 << seat
                last_board = seat
            elif isinstance(bid, int):
                sums[side] += bid
                if bid > best_num:
                    best_num = bid
                    best_seat = seat
        by_side = tuple(Contract(True, mult[s]) if mult[s] else Contract(False, sums[s]) for s in range(sides))
        leader = last_board if last_board is not None else best_seat
        return Contracts(by_side, leader, claimers, claimers)

    def score(self, contract: Contract, tricks: int, n: int) -> int:
        """Points for one side in one deal (docs/rules.md §8)."""
        if contract.board:
            made = tricks == n
            return (10 if made else -10) * n * contract.value
        bid = contract.value
        if tricks >= bid:
            return 5 * bid + (tricks - bid)
        return -5 * bid

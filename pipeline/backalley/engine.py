"""The game state of one dealing: deal, turn trump, joker swap, bid, play.

Legality is separate from applying a move (as in python-chess):
:meth:`DealState.legal_bids`, :meth:`DealState.legal_plays` and
:meth:`DealState.is_legal` ask, :meth:`DealState.bid` and
:meth:`DealState.play` apply and raise :class:`IllegalMoveError` on an illegal
move.  The rules themselves live in the :class:`~backalley.rules.Ruleset` the state
is given (``standard`` unless told otherwise): the state only asks it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from backalley.cards import CARD_NAMES, SEATS, cards_of, left_of
from backalley.rules import STANDARD, Bid, Contracts, Ruleset


class IllegalMoveError(ValueError):
    """A bid or card that the rules do not allow in this state."""


class DealState:
    """One dealing from the deal to the last trick.

    ``hands`` are the hands as dealt (before any joker swap); ``stock`` is the
    undealt stock, top first, so ``stock[0]`` is the trump card.
    """

    def __init__(
        self,
        number: int,
        dealer: int,
        hands: Sequence[int],
        stock: Sequence[int],
        ruleset: Ruleset = STANDARD,
    ) -> None:
        self.rules = ruleset
        self.number = number
        self.n = ruleset.hand_size(number)
        self.dealer = dealer
        self.dealt: tuple[int, ...] = tuple(hands)
        self.stock: tuple[int, ...] = tuple(stock)
        #: The turned card, or -1 when none is turned (spades always trump, an empty stock, named trump).
        self.trump_card = self.stock[0] if ruleset.turns_card(self.n) else -1
        #: The trump (``NO_TRUMP`` until a declarer names it, in a ruleset where trump is named).
        self.trump = ruleset.deal_trump(self.n, self.trump_card, -1, -1)
        self.trump_named = -1
        self.hands = list(hands)
        self.joker_swap: tuple[int, int] | None = None
        holder, other = ruleset.joker_swap(self.trump_card, self.hands) if self.trump_card >= 0 else (-1, -1)
        if holder >= 0:
            drawn = self.stock[1]
            self.hands[holder] = self.hands[holder] & ~(1 << other) | 1 << drawn
            self.joker_swap = (holder, drawn)
        self.bids: list[tuple[int, Bid]] = []
        self.pass_out = False  # decided after the fourth bid
        self.contracts: Contracts | None = None
        self.tricks: list[tuple[int, list[int]]] = []
        self.current: list[int] = []
        self.leader: int | None = None
        self.broken = False
        self.won = [0] * len(ruleset.sides)

    @classmethod
    def from_deck(cls, number: int, dealer: int, deck: Sequence[int], ruleset: Ruleset = STANDARD) -> DealState:
        """Deal from a shuffled deck: one card at a time, starting left of the dealer."""
        n = ruleset.hand_size(number)
        hands = [0, 0, 0, 0]
        seat = left_of(dealer)
        for i in range(4 * n):
            hands[seat] |= 1 << deck[i]
            seat = left_of(seat)
        return cls(number, dealer, hands, deck[4 * n :], ruleset)

    # -- whose turn --------------------------------------------------------------

    @property
    def bidding(self) -> bool:
        return len(self.bids) < 4

    @property
    def naming_trump(self) -> bool:
        """The auction is over and the declarer has yet to name trump."""
        return self.rules.names_trump() and not self.bidding and not self.pass_out and self.trump_named < 0

    def name_trump(self, suit: int) -> None:
        """The declarer names trump (0..3)."""
        if not self.naming_trump or not 0 <= suit < 4:
            raise IllegalMoveError("no trump to name now")
        self.trump_named = suit
        self.trump = suit

    @property
    def finished(self) -> bool:
        return not self.bidding and (self.pass_out or len(self.tricks) == self.n)

    def to_act(self) -> int:
        """The seat whose bid or card is next."""
        if len(self.bids) < 4:
            return (self.dealer + 1 + len(self.bids)) & 3
        if self.pass_out or len(self.tricks) == self.n or self.leader is None:
            raise IllegalMoveError("the deal is over")
        return (self.leader + len(self.current)) & 3

    # -- bidding -----------------------------------------------------------------------

    def legal_bids(self) -> list[Bid]:
        return self.rules.legal_bids_after(self.n, self.to_act(), self.bids) if self.bidding else []

    def is_legal_bid(self, bid: Bid) -> bool:
        return self.bidding and not isinstance(bid, bool) and bid in self.legal_bids()

    def bid(self, bid: Bid) -> None:
        if not self.is_legal_bid(bid):
            raise IllegalMoveError(f"{bid!r} is not a legal bid with {self.n} cards")
        self.bids.append((self.to_act(), bid))
        if not self.bidding:
            self.pass_out = self.rules.is_pass_out([b for _, b in self.bids])
            self.contracts = self.rules.contracts(tuple(self.bids), self.n)
            self.leader = self.contracts.opening_leader

    # -- play -------------------------------------------------------------------------------

    def legal_plays(self) -> int:
        """The cards the player to act may play, as a bitmask."""
        if self.bidding or self.finished or self.naming_trump:
            return 0
        seat = self.to_act()
        hand = self.hands[seat]
        if not self.current:
            assert self.contracts is not None
            return self.rules.legal_leads(hand, self.trump, self.broken, bool(self.contracts.lead_exempt >> seat & 1))
        return self.rules.legal_follows(hand, self.current[0], self.trump, len(self.current))

    def is_legal(self, card: int) -> bool:
        return bool(self.legal_plays() >> card & 1)

    def play(self, card: int) -> None:
        if not self.is_legal(card):
            raise IllegalMoveError(f"{CARD_NAMES[card]} is not a legal play now")
        seat = self.to_act()
        self.hands[seat] &= ~(1 << card)
        self.current.append(card)
        if len(self.current) == 4:
            assert self.leader is not None
            winner = (self.leader + self.rules.trick_winner(self.current, self.trump)) & 3
            self.tricks.append((self.leader, self.current))
            self.won[self.rules.side_of[winner]] += 1
            self.broken = self.broken or self.rules.breaks_trump(self.current, self.trump)
            self.current = []
            self.leader = winner

    def trumps_out(self) -> int:
        """Trumps not yet played (a bot's memory)."""
        played = 0
        for _, cards in self.tricks:
            for c in cards:
                played |= 1 << c
        for c in self.current:
            played |= 1 << c
        return (self.rules.trump_mask(self.trump) & ~played).bit_count()

    # -- result ---------------------------------------------------------------------------

    def points(self) -> tuple[int, ...]:
        """Every side's points (0 for a pass-out or an unfinished bidding)."""
        if self.pass_out or self.contracts is None:
            return (0,) * len(self.rules.sides)
        bonus = self.rules.bonus(self.dealt, self.trump, self.n) if self.rules.has_bonus else ()
        return self.rules.deal_points(self.contracts, self.won, self.n, bonus)

    def to_record(self) -> dict[str, Any]:
        """This dealing as a deal object of its record format (with stock and result)."""
        d: dict[str, Any] = {
            "number": self.number,
            "dealer": SEATS[self.dealer],
            "hands": {SEATS[s]: [CARD_NAMES[c] for c in cards_of(self.dealt[s])] for s in range(4)},
        }
        if self.trump_card >= 0:
            d["trump_card"] = CARD_NAMES[self.trump_card]
        d["stock"] = [CARD_NAMES[c] for c in self.stock]
        if self.joker_swap is not None:
            d["joker_swap"] = {"seat": SEATS[self.joker_swap[0]], "drawn": CARD_NAMES[self.joker_swap[1]]}
        d["bids"] = [{"seat": SEATS[s], "bid": b} for s, b in self.bids]
        if self.trump_named >= 0:
            d["trump"] = "SHDC"[self.trump_named]
        d["tricks"] = [
            {"leader": SEATS[leader], "cards": [CARD_NAMES[c] for c in cards]} for leader, cards in self.tricks
        ]
        pts = self.points()
        sides = self.rules.sides
        d["result"] = {
            "tricks": {side: self.won[i] for i, side in enumerate(sides)},
            "points": {side: pts[i] for i, side in enumerate(sides)},
        }
        return d

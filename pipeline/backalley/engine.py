"""The game state of one dealing: deal, turn trump, joker swap, bid, play.

Legality is separate from applying a move (as in python-chess):
:meth:`DealState.legal_bids`, :meth:`DealState.legal_plays` and
:meth:`DealState.is_legal` ask, :meth:`DealState.bid` and
:meth:`DealState.play` apply and raise :class:`IllegalMoveError` on an illegal
move.  The rules themselves live in :mod:`backalley.rules`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from backalley.cards import BJ, CARD_NAMES, IS_TRUMP, LJ, NO_TRUMP, SEATS, cards_of, left_of
from backalley.rules import (
    BOARD,
    PASS,
    Bid,
    Contracts,
    bid_in_range,
    contracts,
    hand_size,
    has_trump,
    is_pass_out,
    legal_follows,
    legal_leads,
    score,
    trick_winner,
    trump_of,
)


class IllegalMoveError(ValueError):
    """A bid or card that the rules do not allow in this state."""


class DealState:
    """One dealing from the deal to the last trick.

    ``hands`` are the hands as dealt (before any joker swap); ``stock`` is the
    undealt stock, top first, so ``stock[0]`` is the trump card.
    """

    def __init__(self, number: int, dealer: int, hands: Sequence[int], stock: Sequence[int]) -> None:
        self.number = number
        self.n = hand_size(number)
        self.dealer = dealer
        self.dealt: tuple[int, ...] = tuple(hands)
        self.stock: tuple[int, ...] = tuple(stock)
        self.trump_card = self.stock[0]
        self.trump = trump_of(self.trump_card)
        self.hands = list(hands)
        self.joker_swap: tuple[int, int] | None = None
        if self.trump == NO_TRUMP:
            other = BJ if self.trump_card == LJ else LJ
            for seat in range(4):
                if self.hands[seat] >> other & 1:
                    drawn = self.stock[1]
                    self.hands[seat] = self.hands[seat] & ~(1 << other) | 1 << drawn
                    self.joker_swap = (seat, drawn)
        self.bids: list[tuple[int, Bid]] = []
        self.pass_out = False  # decided after the fourth bid
        self.contracts: Contracts | None = None
        self.tricks: list[tuple[int, list[int]]] = []
        self.current: list[int] = []
        self.leader: int | None = None
        self.broken = False
        self.won = [0, 0]

    @classmethod
    def from_deck(cls, number: int, dealer: int, deck: Sequence[int]) -> DealState:
        """Deal from a shuffled deck: one card at a time, starting left of the dealer."""
        n = hand_size(number)
        hands = [0, 0, 0, 0]
        seat = left_of(dealer)
        for i in range(4 * n):
            hands[seat] |= 1 << deck[i]
            seat = left_of(seat)
        return cls(number, dealer, hands, deck[4 * n :])

    # -- whose turn --------------------------------------------------------------

    @property
    def bidding(self) -> bool:
        return len(self.bids) < 4

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
        return [PASS, *range(1, self.n), BOARD] if self.bidding else []

    def is_legal_bid(self, bid: Bid) -> bool:
        return self.bidding and not isinstance(bid, bool) and bid_in_range(bid, self.n)

    def bid(self, bid: Bid) -> None:
        if not self.is_legal_bid(bid):
            raise IllegalMoveError(f"{bid!r} is not a legal bid with {self.n} cards")
        self.bids.append((self.to_act(), bid))
        if not self.bidding:
            self.pass_out = is_pass_out([b for _, b in self.bids])
            self.contracts = contracts(tuple(self.bids))
            self.leader = self.contracts.opening_leader

    # -- play -------------------------------------------------------------------------------

    def legal_plays(self) -> int:
        """The cards the player to act may play, as a bitmask."""
        if self.bidding or self.finished:
            return 0
        seat = self.to_act()
        hand = self.hands[seat]
        if not self.current:
            assert self.contracts is not None
            return legal_leads(hand, self.trump, self.broken, bool(self.contracts.board_claimers >> seat & 1))
        return legal_follows(hand, self.current[0], self.trump)

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
            winner = (self.leader + trick_winner(self.current, self.trump)) & 3
            self.tricks.append((self.leader, self.current))
            self.won[winner & 1] += 1
            self.broken = self.broken or has_trump(self.current, self.trump)
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
        return sum(1 for c in range(54) if IS_TRUMP[self.trump][c] and not played >> c & 1)

    # -- result ---------------------------------------------------------------------------

    def points(self) -> tuple[int, int]:
        if self.pass_out or self.contracts is None:
            return (0, 0)
        return (
            score(self.contracts.ns, self.won[0], self.n),
            score(self.contracts.ew, self.won[1], self.n),
        )

    def to_record(self) -> dict[str, Any]:
        """This dealing as a deal object of record format v1 (with stock and result)."""
        d: dict[str, Any] = {
            "number": self.number,
            "dealer": SEATS[self.dealer],
            "hands": {SEATS[s]: [CARD_NAMES[c] for c in cards_of(self.dealt[s])] for s in range(4)},
            "trump_card": CARD_NAMES[self.trump_card],
            "stock": [CARD_NAMES[c] for c in self.stock],
        }
        if self.joker_swap is not None:
            d["joker_swap"] = {"seat": SEATS[self.joker_swap[0]], "drawn": CARD_NAMES[self.joker_swap[1]]}
        d["bids"] = [{"seat": SEATS[s], "bid": b} for s, b in self.bids]
        d["tricks"] = [
            {"leader": SEATS[leader], "cards": [CARD_NAMES[c] for c in cards]} for leader, cards in self.tricks
        ]
        pts = self.points()
        d["result"] = {
            "tricks": {"NS": self.won[0], "EW": self.won[1]},
            "points": {"NS": pts[0], "EW": pts[1]},
        }
        return d

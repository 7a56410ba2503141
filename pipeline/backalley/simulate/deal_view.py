"""A deal of a valid record decoded for fault injection: who played what, when, from which hand."""

from __future__ import annotations

from dataclasses import dataclass

from backalley.cards import CARD_INDEX, SEATS
from backalley.rules import STANDARD, Ruleset
from backalley.simulate.games import Record


@dataclass(frozen=True, slots=True)
class Play:
    trick: int
    pos: int
    seat: int
    card: int


@dataclass(slots=True)
class DealView:
    """A deal of a valid record, decoded for fault injection."""

    index: int
    n: int
    trump: int
    lead_exempt: int
    plays: list[Play]
    broken_before: list[bool]

    def later(self, seat: int, trick: int) -> list[Play]:
        """The plays of ``seat`` in tricks after ``trick``."""
        return [p for p in self.plays if p.seat == seat and p.trick > trick]

    def remaining(self, seat: int, trick: int, dealt: int) -> int:
        """``seat``'s hand just before ``trick`` (``dealt`` = the hand after any swap)."""
        h = dealt
        for p in self.plays:
            if p.seat == seat and p.trick < trick:
                h &= ~(1 << p.card)
        return h


def recorded_trump(deal: Record, rules: Ruleset) -> int:
    """The trump of a recorded deal, as the replay takes it."""
    n = rules.hand_size(deal["number"])
    tc = CARD_INDEX[deal["trump_card"]] if "trump_card" in deal else -1
    top = CARD_INDEX[deal["stock"][0]] if deal.get("stock") else -1
    named = "SHDC".index(deal["trump"]) if "trump" in deal else -1
    return rules.deal_trump(n, tc, top, named)


def view(deal: Record, index: int, rules: Ruleset = STANDARD) -> DealView:
    trump = recorded_trump(deal, rules)
    seats = [SEATS.index(b["seat"]) for b in deal["bids"]]
    n = rules.hand_size(deal["number"])
    con = rules.contracts(tuple(zip(seats, [b["bid"] for b in deal["bids"]], strict=True)), n)
    plays: list[Play] = []
    broken_before: list[bool] = []
    broken = False
    for j, t in enumerate(deal["tricks"]):
        leader = SEATS.index(t["leader"])
        cards = [CARD_INDEX[c] for c in t["cards"]]
        broken_before.append(broken)
        for k, c in enumerate(cards):
            plays.append(Play(j, k, (leader + k) & 3, c))
        broken = broken or rules.breaks_trump(cards, trump)
    return DealView(index, n, trump, con.lead_exempt, plays, broken_before)


def after_swap(deal: Record, rules: Ruleset) -> list[int]:
    """Each seat's hand after the recorded joker swap (the card the ruleset takes out, for the one drawn)."""
    hands = [sum(1 << CARD_INDEX[c] for c in deal["hands"][s]) for s in SEATS]
    swap = deal.get("joker_swap")
    other = rules.swap_discard(CARD_INDEX[deal["trump_card"]]) if swap is not None else -1
    if swap is not None and other >= 0:  # (a swap recorded where the ruleset has none changes no hand)
        s = SEATS.index(swap["seat"])
        hands[s] = hands[s] & ~(1 << other) | 1 << CARD_INDEX[swap["drawn"]]
    return hands


def swap_cards(rec: Record, deal: int, a: Play, b: Play) -> None:
    tricks = rec["deals"][deal]["tricks"]
    ca = tricks[a.trick]["cards"][a.pos]
    tricks[a.trick]["cards"][a.pos] = tricks[b.trick]["cards"][b.pos]
    tricks[b.trick]["cards"][b.pos] = ca


def played_deals(rec: Record) -> list[int]:
    return [i for i, d in enumerate(rec["deals"]) if d["tricks"]]

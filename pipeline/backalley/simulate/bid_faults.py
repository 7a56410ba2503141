"""Faults in the auction: bids out of order, out of range, too low, twice; bores; pass-outs."""

from __future__ import annotations

import random
from collections.abc import Callable

from backalley.cards import SEATS
from backalley.rules import BOARD, PASS, STANDARD, Ruleset
from backalley.simulate.deal_view import played_deals
from backalley.simulate.games import Record


def _fault_bid_order(rec: Record, rng: random.Random, rules: Ruleset = STANDARD) -> Record | None:
    deals = rec["deals"]
    if not deals:
        return None
    d = deals[rng.randrange(len(deals))]
    bids = d["bids"]
    if rng.random() < 0.5:
        i, j = rng.sample(range(4), 2)
        bids[i], bids[j] = bids[j], bids[i]
    else:
        # Written starting with the dealer.
        d["bids"] = [bids[3], *bids[:3]]
    return rec


def _fault_bid_range(rec: Record, rng: random.Random, rules: Ruleset = STANDARD) -> Record | None:
    deals = rec["deals"]
    if not deals:
        return None
    i = rng.randrange(len(deals))
    d = deals[i]
    n = rules.hand_size(d["number"])
    k = rng.randrange(4)
    b = d["bids"][k]
    if b["bid"] == PASS or n == 1:
        b["bid"] = 0  # "0" for a pass
    else:
        b["bid"] = rules.bid_range(n)[1] + 1  # standard: every trick is a board, not a number
    return rec


def _fault_pass_out(rec: Record, rng: random.Random, rules: Ruleset = STANDARD) -> Record | None:
    scored = played_deals(rec)
    if not scored:
        return None
    d = rec["deals"][rng.choice(scored)]
    if rng.random() < 0.5:
        d["tricks"] = []  # the play was not written down
    else:
        for b in d["bids"]:
            b["bid"] = PASS
    return rec


def _fault_bore_level(rec: Record, rng: random.Random, rules: Ruleset = STANDARD) -> Record | None:
    """A bore that skips a level: ``board2`` with no ``board`` before it (bab-online)."""
    deals = rec["deals"]
    if not deals:
        return None
    d = deals[rng.randrange(len(deals))]
    spots = [k for k in range(4) if not any(b["bid"] == BOARD for b in d["bids"][:k])]
    d["bids"][rng.choice(spots)]["bid"] = "board2"
    return rec


def _fault_bid_low(rec: Record, rng: random.Random, rules: Ruleset = STANDARD) -> Record | None:
    """A call of a side that had not declared made no higher than the declaration before it."""
    spots: list[tuple[Record, int, int]] = []
    for i in played_deals(rec):
        d = rec["deals"][i]
        for k, b in enumerate(d["bids"]):
            earlier = [e for e in d["bids"][:k] if isinstance(e["bid"], int)]
            sides = {rules.side_of[SEATS.index(e["seat"])] for e in earlier}
            if earlier and rules.side_of[SEATS.index(b["seat"])] not in sides:
                spots.append((d, k, earlier[-1]["bid"]))
    if not spots:
        return None
    d, k, last = rng.choice(spots)
    d["bids"][k]["bid"] = last
    return rec


def _fault_bid_twice(rec: Record, rng: random.Random, rules: Ruleset = STANDARD) -> Record | None:
    """A second declaration by a side: a partner's, or (each seat its own side) a seat's second call."""
    spots: list[tuple[Record, int]] = []
    for i in played_deals(rec):
        d = rec["deals"][i]
        for k, b in enumerate(d["bids"]):
            sides = {rules.side_of[SEATS.index(e["seat"])] for e in d["bids"][:k] if isinstance(e["bid"], int)}
            if rules.side_of[SEATS.index(b["seat"])] in sides:
                spots.append((d, k))
    if not spots:  # every seat its own side: a seat that declared calls again, out of turn
        for i in played_deals(rec):
            bids = rec["deals"][i]["bids"]
            spots += [(rec["deals"][i], k) for k in range(1, len(bids)) if isinstance(bids[k - 1]["bid"], int)]
        if not spots:
            return None
        d, k = rng.choice(spots)
        d["bids"][k]["seat"] = d["bids"][k - 1]["seat"]
    else:
        d, k = rng.choice(spots)
    d["bids"][k]["bid"] = rules.max_hand
    return rec


INJECTORS: dict[str, Callable[[Record, random.Random, Ruleset], Record | None]] = {
    "BID_ORDER": _fault_bid_order,
    "BID_RANGE": _fault_bid_range,
    "PASS_OUT": _fault_pass_out,
    "BORE_LEVEL": _fault_bore_level,
    "BID_LOW": _fault_bid_low,
    "BID_TWICE": _fault_bid_twice,
}

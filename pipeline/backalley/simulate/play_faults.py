"""Faults in the play: tricks, leaders, cards not held, and each following or leading rule broken."""

from __future__ import annotations

import copy
import random
from collections.abc import Callable, Iterator

from backalley.cards import BJ, CARD_NAMES, CARD_SUIT, LJ, NO_TRUMP, SEATS
from backalley.rules import STANDARD, Ruleset
from backalley.rules.base import FREE
from backalley.simulate.deal_view import DealView, Play, after_swap, played_deals, swap_cards, view
from backalley.simulate.games import Record

#: Two plays to swap: ``(deal index, a play, a later play of the same seat)``.
Spot = tuple[int, Play, Play]


def _swap_one(rec: Record, rng: random.Random, spots: list[Spot]) -> Record | None:
    """``rec`` with the two plays of one of ``spots`` swapped (chosen by ``rng``); ``None`` when there is none."""
    if not spots:
        return None
    i, p, q = rng.choice(spots)
    swap_cards(rec, i, p, q)
    return rec


def _trump_views(rec: Record, rules: Ruleset) -> Iterator[tuple[int, DealView, tuple[bool, ...]]]:
    """Every played deal with a trump suit: its index, its view, and whether each card is a trump."""
    for i in played_deals(rec):
        v = view(rec["deals"][i], i, rules)
        if v.trump != NO_TRUMP:
            yield i, v, rules.tables.is_trump[v.trump]


def _fault_trick_count(rec: Record, rng: random.Random, rules: Ruleset = STANDARD) -> Record | None:
    deals = rec["deals"]
    spots = [i for i in played_deals(rec) if len(deals[i]["tricks"]) >= 2]
    if not spots:
        return None
    d = deals[rng.choice(spots)]
    t = d["tricks"]
    if rng.random() < 0.5:
        t.pop(rng.randrange(len(t)))
    else:
        k = rng.randrange(len(t))
        t.insert(k, copy.deepcopy(t[k]))
    return rec


def _fault_leader(rec: Record, rng: random.Random, rules: Ruleset = STANDARD) -> Record | None:
    scored = played_deals(rec)
    if not scored:
        return None
    d = rec["deals"][rng.choice(scored)]
    t = rng.choice(d["tricks"])
    t["leader"] = rng.choice([s for s in SEATS if s != t["leader"]])
    return rec


def _fault_not_in_hand(rec: Record, rng: random.Random, rules: Ruleset = STANDARD) -> Record | None:
    scored = played_deals(rec)
    if not scored:
        return None
    i = rng.choice(scored)
    d = rec["deals"][i]
    v = view(d, i, rules)
    dealt = after_swap(d, rules)
    p = rng.choice(v.plays)
    hand = v.remaining(p.seat, p.trick, dealt[p.seat])
    outside = [c for c in range(54) if not hand >> c & 1]
    same_suit = [c for c in outside if c < LJ and CARD_SUIT[c] == CARD_SUIT[p.card] and c != p.card]
    new = rng.choice(same_suit or outside)
    d["tricks"][p.trick]["cards"][p.pos] = CARD_NAMES[new]
    return rec


def _fault_revoke(rec: Record, rng: random.Random, rules: Ruleset = STANDARD) -> Record | None:
    spots: list[Spot] = []
    for i in played_deals(rec):
        d = rec["deals"][i]
        v = view(d, i, rules)
        eff = [rules.suit_of(c, v.trump) for c in range(54)]
        by_trick: dict[int, int] = {p.trick: p.card for p in v.plays if p.pos == 0}
        for p in v.plays:
            if p.pos == 0:
                continue
            led = by_trick[p.trick]
            if rules.forced_follow(led, v.trump, p.pos) != FREE:
                continue  # a Blooper (or lowest-trump) lead: that would be another fault
            if eff[p.card] != eff[led]:
                continue
            for q in v.later(p.seat, p.trick):
                if eff[q.card] != eff[led]:
                    spots.append((i, p, q))
    return _swap_one(rec, rng, spots)


def _fault_trump_lead(rec: Record, rng: random.Random, rules: Ruleset = STANDARD) -> Record | None:
    spots: list[Spot] = []
    for i, v, is_trump in _trump_views(rec, rules):
        for p in v.plays:
            if p.pos or v.broken_before[p.trick] or v.lead_exempt >> p.seat & 1 or is_trump[p.card]:
                continue
            for q in v.later(p.seat, p.trick):
                if is_trump[q.card]:
                    spots.append((i, p, q))
    return _swap_one(rec, rng, spots)


def _fault_blooper(rec: Record, rng: random.Random, joker: int, rules: Ruleset = STANDARD) -> Record | None:
    spots: list[Spot] = []
    for i, v, is_trump in _trump_views(rec, rules):
        led_by = {p.trick: p.card for p in v.plays if p.pos == 0}
        for p in v.plays:
            if p.pos == 0 or led_by[p.trick] != joker or not is_trump[p.card]:
                continue
            if rules.forced_follow(joker, v.trump, p.pos) == FREE:
                continue  # (bab-online: the Big Blooper leader's partner only follows suit)
            for q in v.later(p.seat, p.trick):
                spots.append((i, p, q))
    return _swap_one(rec, rng, spots)


def _fault_lowest_trump(rec: Record, rng: random.Random, rules: Ruleset = STANDARD) -> Record | None:
    """After the lowest trump was led, a follower keeps their lowest trump for later."""
    spots: list[Spot] = []
    for i, v, is_trump in _trump_views(rec, rules):
        led_by = {p.trick: p.card for p in v.plays if p.pos == 0}
        for p in v.plays:
            led = led_by[p.trick]
            if p.pos and rules.follow_fault(led, v.trump, p.pos) == "LOWEST_TRUMP" and is_trump[p.card]:
                spots += [(i, p, q) for q in v.later(p.seat, p.trick)]
    return _swap_one(rec, rng, spots)


INJECTORS: dict[str, Callable[[Record, random.Random, Ruleset], Record | None]] = {
    "TRICK_COUNT": _fault_trick_count,
    "LEADER": _fault_leader,
    "NOT_IN_HAND": _fault_not_in_hand,
    "REVOKE": _fault_revoke,
    "TRUMP_LEAD": _fault_trump_lead,
    "BIG_BLOOPER": lambda rec, rng, rules: _fault_blooper(rec, rng, BJ, rules),
    "LITTLE_BLOOPER": lambda rec, rng, rules: _fault_blooper(rec, rng, LJ, rules),
    "LOWEST_TRUMP": _fault_lowest_trump,
}

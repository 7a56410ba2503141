"""Faults in what a record says outside the auction and the play: its form, deals, hands, stock,
trump and scores (one injector per violation code; each returns ``None`` where it finds no place)."""

from __future__ import annotations

import random
from collections.abc import Callable

from backalley.cards import CARD_NAMES, SEATS
from backalley.rules import STANDARD, Ruleset
from backalley.simulate.deal_view import played_deals
from backalley.simulate.games import Record, final_score


def _fault_schema(rec: Record, rng: random.Random, rules: Ruleset = STANDARD) -> Record | None:
    kind = rng.randrange(5)
    deals = rec["deals"]
    if kind == 0:
        # A number exported as a string.
        spots = [(i, k) for i, d in enumerate(deals) for k, b in enumerate(d["bids"]) if isinstance(b["bid"], int)]
        if spots:
            i, k = rng.choice(spots)
            deals[i]["bids"][k]["bid"] = str(deals[i]["bids"][k]["bid"])
            return rec
    if kind == 1:
        # "10H" written for "TH".
        spots2 = [
            (i, s, k) for i, d in enumerate(deals) for s in SEATS for k, c in enumerate(d["hands"][s]) if c[0] == "T"
        ]
        if spots2:
            i, s, k = rng.choice(spots2)
            deals[i]["hands"][s][k] = "10" + deals[i]["hands"][s][k][1]
            return rec
    if kind == 2 and deals:
        # A renamed field (or a field of another ruleset).
        d = deals[rng.randrange(len(deals))]
        if "trump_card" in d:
            d["trump"] = d.pop("trump_card")
        elif rules.trump_named:
            d["trump_card"] = d.pop("trump", "2S")
        else:
            d["trump"] = "S"
        return rec
    if kind == 3:
        # The same player typed into two seats.
        rec["players"]["E"] = rec["players"]["N"]
        return rec
    rec["played_at"] = rec.get("played_at", "2026-01-05T18:00:00Z").removesuffix("Z")
    return rec


def _fault_deal_number(rec: Record, rng: random.Random, rules: Ruleset = STANDARD) -> Record | None:
    deals = rec["deals"]
    scored = played_deals(rec)
    if len(scored) < 2:
        return None
    if rng.random() < 0.5:
        # A lost deal: the next one's number jumps.
        del deals[rng.choice(scored[:-1])]
        return rec
    i = rng.randrange(len(deals))
    old = deals[i]["number"]
    deals[i]["number"] = rng.choice([k for k in range(1, rules.scored_deals + 1) if k != old])
    return rec


def _fault_dealer(rec: Record, rng: random.Random, rules: Ruleset = STANDARD) -> Record | None:
    deals = rec["deals"]
    if len(deals) < 2:
        return None
    d = deals[rng.randrange(1, len(deals))]
    d["dealer"] = rng.choice([s for s in SEATS if s != d["dealer"]])
    return rec


def _fault_hand_size(rec: Record, rng: random.Random, rules: Ruleset = STANDARD) -> Record | None:
    deals = rec["deals"]
    if not deals:
        return None
    d = deals[rng.randrange(len(deals))]
    a, b = rng.sample(SEATS, 2)
    card = d["hands"][a].pop(rng.randrange(len(d["hands"][a])))
    if rng.random() < 0.5:
        d["hands"][b].append(card)  # dealt to the wrong player
    return rec


def _fault_duplicate(rec: Record, rng: random.Random, rules: Ruleset = STANDARD) -> Record | None:
    deals = rec["deals"]
    if not deals:
        return None
    d = deals[rng.randrange(len(deals))]
    a, b = rng.sample(SEATS, 2)
    k = rng.randrange(len(d["hands"][a]))
    d["hands"][a][k] = rng.choice(d["hands"][b])
    return rec


def _fault_stock(rec: Record, rng: random.Random, rules: Ruleset = STANDARD) -> Record | None:
    spots = [d for d in rec["deals"] if d.get("stock")]
    if not spots:  # every card dealt (an empty stock): one of them recorded as undealt too
        empty = [d for d in rec["deals"] if d.get("stock") == [] and any(d["hands"].values())]
        if not empty:
            return None
        d = rng.choice(empty)
        d["stock"] = [rng.choice([c for hand in d["hands"].values() for c in hand])]
        return rec
    d = rng.choice(spots)
    if rng.random() < 0.5:
        d["stock"] = d["stock"][1:]  # the turned card left out
    else:
        d["stock"].pop()  # a card lost
    return rec


def _fault_joker_swap(rec: Record, rng: random.Random, rules: Ruleset = STANDARD) -> Record | None:
    deals = rec["deals"]
    swapped = [d for d in deals if "joker_swap" in d]
    if swapped and rng.random() < 0.7:
        d = rng.choice(swapped)
        if rng.random() < 0.5:
            del d["joker_swap"]
        else:
            sw = d["joker_swap"]
            sw["seat"] = rng.choice([s for s in SEATS if s != sw["seat"]])
        return rec
    plain = [d for d in deals if "joker_swap" not in d and d.get("stock")]
    if not plain:
        return None
    d = rng.choice(plain)
    d["joker_swap"] = {"seat": rng.choice(SEATS), "drawn": d["stock"][1]}
    return rec


def _fault_trump(rec: Record, rng: random.Random, rules: Ruleset = STANDARD) -> Record | None:
    """The trump field dropped where it belongs, or recorded where it does not."""
    scored = played_deals(rec)
    if not scored:
        return None
    d = rec["deals"][rng.choice(scored)]
    field = "trump" if rules.trump_named else "trump_card"
    if field in d:
        del d[field]
    elif field == "trump":
        d["trump"] = "H"  # named under spades_trump
    else:
        d["trump_card"] = d["hands"]["N"][0]  # a turned card where none is turned
    return rec


def _fault_not_in_deck(rec: Record, rng: random.Random, rules: Ruleset = STANDARD) -> Record | None:
    """A card the deck does not hold, dealt in place of a hand card."""
    deals = rec["deals"]
    outside = [c for c in range(54) if not rules.deck >> c & 1]
    if not deals or not outside:
        return None
    d = deals[rng.randrange(len(deals))]
    seat = rng.choice(SEATS)
    d["hands"][seat][rng.randrange(len(d["hands"][seat]))] = CARD_NAMES[rng.choice(outside)]
    return rec


def _fault_result(rec: Record, rng: random.Random, rules: Ruleset = STANDARD) -> Record | None:
    scored = [i for i in played_deals(rec) if "result" in rec["deals"][i]]
    if not scored:
        return None
    res = rec["deals"][rng.choice(scored)]["result"]
    sides = rules.sides
    team = rng.choice(sides)
    kind = rng.randrange(3)
    if kind == 0:
        res["points"][team] += rng.choice((-10, -5, -1, 1, 5, 10))
    elif kind == 1 and res["points"][team]:
        res["points"][team] = -res["points"][team]
    else:
        other = sides[(sides.index(team) + 1) % len(sides)]
        if res["tricks"][team]:
            res["tricks"][team] -= 1
            res["tricks"][other] += 1
        else:
            res["tricks"][team] += 1
            res["tricks"][other] -= 1
    return rec


def _fault_final_score(rec: Record, rng: random.Random, rules: Ruleset = STANDARD) -> Record | None:
    fs = rec.get("final_score")
    if fs is None:
        return None
    a, b = rules.sides[0], rules.sides[1]
    if fs[a] != fs[b] and rng.random() < 0.3:
        fs[a], fs[b] = fs[b], fs[a]
    else:
        fs[rng.choice(rules.sides)] += rng.choice((-100, -10, -1, 1, 10, 100))
    return rec


def _fault_incomplete(rec: Record, rng: random.Random, rules: Ruleset = STANDARD) -> Record | None:
    deals = rec["deals"]
    cut = [k for k in range(len(deals)) if sum(1 for d in deals[:k] if d["tricks"]) < rules.scored_deals]
    k = rng.choice(cut)
    del deals[k:]
    if "final_score" in rec:
        rec["final_score"] = final_score(deals, rules)
    return rec


INJECTORS: dict[str, Callable[[Record, random.Random, Ruleset], Record | None]] = {
    "SCHEMA": _fault_schema,
    "DEAL_NUMBER": _fault_deal_number,
    "DEALER": _fault_dealer,
    "HAND_SIZE": _fault_hand_size,
    "DUPLICATE_CARD": _fault_duplicate,
    "STOCK": _fault_stock,
    "JOKER_SWAP": _fault_joker_swap,
    "TRUMP": _fault_trump,
    "NOT_IN_DECK": _fault_not_in_deck,
    "RESULT_MISMATCH": _fault_result,
    "FINAL_SCORE_MISMATCH": _fault_final_score,
    "INCOMPLETE": _fault_incomplete,
}

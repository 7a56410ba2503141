"""Whole games: the bots bid and play every deal of a ruleset's game through the engine.

Pass-outs are recorded and redealt by the next dealer; a :data:`FixedDeal` hook may put a given
deal in place of one the bots would deal (the worked example of docs/record-format.md).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from backalley.cards import NUM_CARDS, SEATS
from backalley.engine import DealState
from backalley.rules import STANDARD, Ruleset
from backalley.simulate.bots import Player
from backalley.simulate.strength import policy

Record = dict[str, Any]

EVENTS = ("Thursday Club", "Kitchen Table League", "Spring Open 2026", "Online Ladder", "Harbour Pub Night")


#: A hook that may replace a dealing: ``(number, dealer) -> deal object, or None to deal as usual``.
FixedDeal = Callable[[int, int], Record | None]


def play_deals(
    rng: random.Random,
    seated: list[Player],
    first_dealer: int,
    fixed: FixedDeal | None = None,
    rules: Ruleset = STANDARD,
) -> list[Record]:
    """The deal objects of one complete game (every scored deal, pass-outs included)."""
    deals: list[Record] = []
    dealer = first_dealer
    number = 1
    while number <= rules.scored_deals:
        given = fixed(number, dealer) if fixed is not None else None
        if given is not None:
            deals.append(given)
            pass_out = rules.is_pass_out([b["bid"] for b in given["bids"]])
            points = [given["result"]["points"][side] for side in rules.sides]
            number = rules.next_number(number, pass_out)
            dealer = rules.next_dealer(dealer, pass_out, points)
            continue
        st = bid_deal(rules, number, dealer, seated, rng)
        play_out(st, seated, rng)
        deals.append(st.to_record())
        number = rules.next_number(number, st.pass_out)
        dealer = rules.next_dealer(dealer, st.pass_out, st.points())
    return deals


def bid_deal(
    rules: Ruleset,
    number: int,
    dealer: int,
    seated: Sequence[Player],
    rng: random.Random,
    random_bids: bool = False,
) -> DealState:
    """Deal ``number`` from a shuffled deck of ``rules``, then bid it (each player's level and style,
    or any legal bid at random with ``random_bids``) and name trump where the ruleset asks for it."""
    deck = [c for c in range(NUM_CARDS) if rules.deck >> c & 1]
    rng.shuffle(deck)
    st = DealState.from_deck(number, dealer, deck, rules)
    while st.bidding:
        player = seated[st.to_act()]
        st.bid(rng.choice(st.legal_bids()) if random_bids else policy(player).bid(st, player.style, rng))
    if st.naming_trump:
        assert st.contracts is not None and st.contracts.opening_leader is not None
        st.name_trump(policy(seated[st.contracts.opening_leader]).trump(st, rng))
    return st


def play_out(st: DealState, seated: Sequence[Player], rng: random.Random) -> None:
    """Play every card of a bid deal (nothing after a pass-out), each by its player's level and style."""
    played = 0
    for _ in range(0 if st.pass_out else 4 * st.n):
        player = seated[st.to_act()]
        card = policy(player).play(st, player.style, rng, played)
        st.play(card)
        played |= 1 << card


def final_score(deals: list[Record], rules: Ruleset = STANDARD) -> dict[str, int]:
    return {side: sum(d["result"]["points"][side] for d in deals) for side in rules.sides}


def make_record(
    game_id: str,
    rng: random.Random,
    pool: list[Player],
    index: int,
    fixed: FixedDeal | None = None,
    rules: Ruleset = STANDARD,
) -> Record:
    """One complete game of ``rules`` between four players drawn from ``pool``."""
    seated = rng.sample(pool, 4)
    first_dealer = rng.randrange(4)
    start = datetime(2026, 1, 5, 18, 0, tzinfo=UTC) + timedelta(hours=3 * index, minutes=rng.randrange(0, 120))
    event = EVENTS[rng.randrange(len(EVENTS))]
    deals = play_deals(rng, seated, first_dealer, fixed, rules)
    return {
        **record_head(rules, game_id),
        "players": {SEATS[s]: seated[s].name for s in range(4)},
        "played_at": start.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "event": event,
        "deals": deals,
        "final_score": final_score(deals, rules),
    }


def record_head(rules: Ruleset, game_id: str) -> Record:
    """The first fields of a record of ``rules``: its format version, its id, its ruleset and options."""
    head: Record = {"format_version": rules.format_version, "game_id": game_id}
    head["ruleset"] = rules.name
    if rules.options:
        head["options"] = list(rules.options)
    return head


def dumps(record: Record) -> str:
    return orjson.dumps(record).decode("utf-8")


def id_tag(rules: Ruleset) -> str:
    """``""`` for a ruleset of format 1 (the ids its games always had), else the ruleset's label in id characters."""
    return "" if rules.format_version == 1 else rules.label().replace("+", ".") + "-"

"""The engine and the replay agree, for every registered ruleset and option set.

Both ask the same :class:`~backalley.rules.Ruleset`, but the replay's hot loop
reads the ruleset's fast tables and its own bookkeeping (hands after a swap,
trump broken, leaders, sides), so a rule edited in one place only shows here:

* random positions of randomly played deals: for every card of the player to
  act, the engine's ``legal_plays`` and the replay's verdict on that card (a
  violation at its path, or none) are the same;
* whole simulated games: every deal's trick winners, contracts, tricks and
  points are the engine's, and the game is valid and complete;
* the fast tables give the same trick winner as the ruleset's method.
"""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from backalley.cards import CARD_NAMES, NUM_CARDS, SEATS, cards_of
from backalley.engine import DealState
from backalley.replay import replay
from backalley.rules import Ruleset, all_rulesets
from backalley.simulate import make_record, player_pool, record_head, recorded_trump

RULESETS = all_rulesets()
IDS = [r.label() for r in RULESETS]

#: (deal, trick, position in trick, legal mask, hand) of a position.
Position = tuple[int, int, int, int, int]


def random_deal(rules: Ruleset, rng: random.Random, number: int) -> tuple[DealState, list[Position]]:
    """A deal played by random legal moves, with the positions seen on the way (a share of them)."""
    while True:
        deck = list(range(NUM_CARDS))
        rng.shuffle(deck)
        st = DealState.from_deck(number, rng.randrange(4), [c for c in deck if rules.deck >> c & 1], rules)
        while st.bidding:
            st.bid(rng.choice(st.legal_bids()))
        if st.naming_trump:
            st.name_trump(rng.randrange(4))
        if not st.pass_out:
            break
    positions: list[Position] = []
    while not st.finished:
        legal = st.legal_plays()
        if rng.random() < 0.35:
            positions.append((0, len(st.tricks), len(st.current), legal, st.hands[st.to_act()]))
        st.play(rng.choice(list(cards_of(legal))))
    return st, positions


def replay_legal(rules: Ruleset, deal: dict[str, Any], j: int, k: int, hand: int) -> int:
    """The cards of ``hand`` the replay accepts as play ``k`` of trick ``j`` of ``deal``."""
    path = f"/deals/0/tricks/{j}/cards/{k}"
    ok = 0
    for c in cards_of(hand):
        d = copy.deepcopy(deal)
        d.pop("result", None)
        d["tricks"][j]["cards"][k] = CARD_NAMES[c]
        rec = {**record_head(rules, "pos"), "players": dict(zip(SEATS, "ABCD", strict=True)), "deals": [d]}
        r = replay(rec)
        assert not any(v.code == "SCHEMA" for v in r.violations), r.violations
        if not any(v.path == path for v in r.violations):
            ok |= 1 << c
    return ok


@pytest.mark.parametrize("rules", RULESETS, ids=IDS)
def test_random_positions_engine_equals_replay(rules: Ruleset) -> None:
    rng = random.Random(f"positions:{rules.label()}")
    disagree: list[str] = []
    checked = 0
    for _ in range(100):
        number = rng.randint(1, rules.scored_deals)
        st, positions = random_deal(rules, rng, number)
        deal = st.to_record()
        for _, j, k, legal, hand in positions:
            checked += 1
            got = replay_legal(rules, deal, j, k, hand)
            if got != legal:
                disagree.append(
                    f"deal {number} trick {j + 1} play {k + 1}: engine {sorted(CARD_NAMES[c] for c in cards_of(legal))}"
                    f" replay {sorted(CARD_NAMES[c] for c in cards_of(got))}"
                )
    assert checked > 300
    assert not disagree, f"{len(disagree)} of {checked} positions disagree: {disagree[:5]}"


@pytest.mark.parametrize("rules", RULESETS, ids=IDS)
def test_simulated_games_engine_equals_replay(rules: Ruleset) -> None:
    pool = player_pool(8)
    for g in range(6):
        rng = random.Random(f"games:{rules.label()}:{g}")
        rec = make_record(f"g{g}", rng, pool, g, rules=rules)
        r = replay(rec)
        assert r.valid and r.complete, [v.as_dict() for v in r.violations][:5]
        for d, outcome in zip(rec["deals"], r.deals, strict=True):
            assert tuple(d["result"]["tricks"][s] for s in rules.sides) == outcome.tricks
            assert tuple(d["result"]["points"][s] for s in rules.sides) == outcome.points
            seats = [SEATS.index(b["seat"]) for b in d["bids"]]
            bids = tuple(zip(seats, [b["bid"] for b in d["bids"]], strict=True))
            assert outcome.contracts == rules.contracts(bids, rules.hand_size(d["number"]))
            replayed = _engine_replay(rules, d)
            if replayed is not None:
                assert replayed == list(outcome.winners)


def _engine_replay(rules: Ruleset, deal: dict[str, Any]) -> list[int] | None:
    """Trick winners from the engine, playing the recorded cards (``None`` for a pass-out)."""
    if not deal["tricks"]:
        return None
    winners: list[int] = []
    for t in deal["tricks"]:
        cards = [CARD_NAMES.index(c) for c in t["cards"]]
        trump = _trump(rules, deal)
        winners.append((SEATS.index(t["leader"]) + rules.trick_winner(cards, trump)) & 3)
    return winners


def _trump(rules: Ruleset, deal: dict[str, Any]) -> int:
    return recorded_trump(deal, rules)


@pytest.mark.parametrize("rules", RULESETS, ids=IDS)
def test_fast_tables_equal_methods(rules: Ruleset) -> None:
    rng = random.Random(f"tables:{rules.label()}")
    tab = rules.tables
    for _ in range(3000):
        trump = rng.randrange(5)
        cards = rng.sample(range(NUM_CARDS), 4)
        keys = [tab.win_key_by_led[trump][cards[0]][c] for c in cards]
        assert keys.index(max(keys)) == rules.trick_winner(cards, trump)
        hand = sum(1 << c for c in rng.sample(range(NUM_CARDS), rng.randint(1, 13)))
        led = cards[0]
        must = tab.follow_by_led[trump][led]
        for pos in (1, 2, 3):
            if not tab.special_lead[trump][led]:
                assert (hand & must or hand) == rules.legal_follows(hand, led, trump, pos)
        assert tab.is_trump[trump][led] == rules.is_trump(led, trump)


@pytest.mark.parametrize("rules", RULESETS, ids=IDS)
def test_fast_lead_and_break_tables_equal_methods(rules: Ruleset) -> None:
    """``lead_block`` and ``breaks`` (what the C search reads) give ``legal_leads`` and ``breaks_trump``."""
    rng = random.Random(f"lead-tables:{rules.label()}")
    tab = rules.tables
    deck = list(cards_of(rules.deck))
    for _ in range(3000):
        trump = rng.randrange(5)
        hand = sum(1 << c for c in rng.sample(deck, rng.randint(1, 13)))
        broken, exempt = rng.random() < 0.3, rng.random() < 0.3
        block = tab.lead_block[trump]
        fast = hand if broken or exempt or not hand & ~block else hand & ~block
        assert fast == rules.legal_leads(hand, trump, broken, exempt), (trump, hand, broken, exempt)
        cards = rng.sample(deck, 4)
        assert bool(tab.breaks[trump] & sum(1 << c for c in cards)) == rules.breaks_trump(cards, trump)

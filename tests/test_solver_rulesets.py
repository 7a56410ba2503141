"""The solver plays by the record's ruleset: every registered ruleset and option set.

Positions are random deals from the ruleset's own deck with every trump (no
trump included), random board claimers, leader and side.  The solver's value
must be a plain minimax's over the ruleset's legal leads, follows (by position:
pereulok's and bab-online's forced plays depend on it), trick winners and
trump breaking; its legal moves must be the ruleset's; the C search, when
built, must give the Python search's values.  ``analyze`` on the committed
records of every ruleset solves their deals without a traceback.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from backalley.analysis.dd import NS, Scope, analyse_files, analyse_record
from backalley.analysis.solver import ALL_PRUNING, NATIVE, DealSolver, SolverRules
from backalley.cards import CARD_NAMES, NO_TRUMP, cards_of
from backalley.replay import replay
from backalley.rules import Ruleset, all_rulesets, find_ruleset
from backalley.simulate import make_record, player_pool
from tests.helpers import EW, ONE_OFF, SCALE, minimax

RULESETS = all_rulesets()
SAMPLES = Path(__file__).resolve().parent.parent / "data" / "sample" / "rulesets"


def random_hands(rng: random.Random, rules: Ruleset, n: int) -> list[int]:
    """Four hands of ``n`` cards from the ruleset's deck."""
    deck = list(cards_of(rules.deck))
    rng.shuffle(deck)
    return [sum(1 << c for c in deck[k * n : (k + 1) * n]) for k in range(4)]


def position(rng: random.Random, rules: Ruleset, n: int, native: bool) -> tuple[DealSolver, int]:
    """A random position of ``rules``: a deal, a few legal cards played."""
    hands = random_hands(rng, rules, n)
    sr = SolverRules(rng.choice([0, 1, 2, 3, NO_TRUMP]), rng.randrange(16), rules)
    side = rng.choice([NS, EW, 1 << rng.randrange(4)])
    solver = DealSolver(hands, rng.randrange(4), sr, side, native=native)
    for _ in range(rng.randrange(4 * n)):
        solver.play(rng.choice(list(cards_of(solver.legal()))))
    return solver, side


@pytest.mark.parametrize("rules", RULESETS, ids=[r.label() for r in RULESETS])
def test_solver_values_are_minimax_values_for_every_ruleset(rules: Ruleset) -> None:
    rng = random.Random(rules.label())
    for _ in range(int(60 * SCALE)):
        solver, side = position(rng, rules, rng.randint(1, 4), native=False)
        sr = solver.rules
        rest = minimax(solver.hands, solver.leader, solver.trick, solver.broken, sr.trump, sr.lead_exempt, side, rules)
        assert solver.value() == solver.won + rest, (rules.label(), solver.hands, solver.rules, side)


@pytest.mark.parametrize("rules", RULESETS, ids=[r.label() for r in RULESETS])
def test_solver_legal_moves_are_the_rulesets(rules: Ruleset) -> None:
    rng = random.Random(rules.label() + "legal")
    for _ in range(int(40 * SCALE)):
        solver, _ = position(rng, rules, rng.randint(1, rules.max_hand), native=False)
        sr, seat = solver.rules, solver.to_play()
        hand = solver.hands[seat]
        if solver.trick:
            expected = rules.legal_follows(hand, solver.trick[0], sr.trump, len(solver.trick))
        else:
            expected = rules.legal_leads(hand, sr.trump, solver.broken, bool(sr.lead_exempt >> seat & 1))
        assert solver.legal() == expected


@pytest.mark.skipif(not NATIVE, reason="the C search is not built (pure-Python install)")
@pytest.mark.parametrize("rules", RULESETS, ids=[r.label() for r in RULESETS])
def test_c_values_are_the_python_values_for_every_ruleset(rules: Ruleset) -> None:
    rng = random.Random(rules.label() + "c")
    for _ in range(int(60 * SCALE)):
        n = rng.randint(1, 7)
        state = rng.getstate()
        py, _ = position(rng, rules, n, native=False)
        rng.setstate(state)
        c, _ = position(rng, rules, n, native=True)
        assert c.value() == py.value(), (rules.label(), py.hands, py.rules, py.trick)


@pytest.mark.skipif(not NATIVE, reason="the C search is not built (pure-Python install)")
@pytest.mark.parametrize("rules", RULESETS, ids=[r.label() for r in RULESETS])
def test_c_last_tricks_are_minimax_values_for_every_ruleset(rules: Ruleset) -> None:
    """The C search plays the last trick out at its boundary (``last_trick``: each hand's one card, no node
    for it) with a relevance of its own, which the transposition table then spreads to the tricks before:
    over deals of one to four cards a hand, with every pruning and each one off, its values must be minimax's
    (and the last trick must have been played out that way)."""
    rng = random.Random(rules.label() + "last")
    played_out = 0
    for _ in range(int(40 * SCALE)):
        n = rng.randint(1, 4)
        hands = random_hands(rng, rules, n)
        sr = SolverRules(rng.choice([0, 1, 2, 3, NO_TRUMP]), rng.randrange(16), rules)
        side = rng.choice([NS, EW, 1 << rng.randrange(4)])
        leader = rng.randrange(4)
        expected = minimax(hands, leader, [], False, sr.trump, sr.lead_exempt, side, rules)
        for pruning in (ALL_PRUNING, *ONE_OFF):
            c = DealSolver(hands, leader, sr, side, pruning, native=True)
            assert c.value() == expected, (rules.label(), hands, leader, sr, side, pruning)
            played_out += c.profile()["boundaries_last_trick"]
    assert played_out > 0


def test_analyze_solves_the_sample_games_of_every_ruleset() -> None:
    analysed = 0
    for where, game in analyse_files([str(SAMPLES)], Scope(max_cards=4)):
        for deal in game.deals:
            if deal.values is not None:
                n = len(deal.values.cards) // 4
                assert sum(deal.values.dd) <= n, where
                assert all(cost >= 0 for cost in deal.values.costs), where
                analysed += 1
    assert analysed > 0


def test_lowest_trump_keeps_its_identity_in_the_transposition_table() -> None:
    """pereulok's lowest trump (the 5 with a short deck) forces the followers' lowest trumps when led:
    a position where it is still out must not share a table entry with one where the 6 is lowest."""
    rules = find_ruleset("pereulok", ("no_jokers", "short_deck", "spades_trump", "no_partnerships"))
    names = (
        "5H 9H 5D 6D 5C 9C",
        "5S KS JD TC QC KC",
        "8S JS 6H AH TD KD",
        "TS JH 7D AD AC 7C",
    )
    hands = [sum(1 << CARD_NAMES.index(c) for c in hand.split()) for hand in names]
    sr, led = SolverRules(2, 0b0110, rules), CARD_NAMES.index("7C")
    after = [*hands[:3], hands[3] & ~(1 << led)]
    expected = minimax(after, 3, [led], False, sr.trump, sr.lead_exempt, NS, rules)
    for native in (False, True) if NATIVE else (False,):
        solver = DealSolver(hands, 3, sr, NS, native=native)
        solver.play(led)
        assert solver.value() == expected == 4


#: Simulated games analysed whole (13-card deals included) for every ruleset and option set.
WHOLE_GAMES = 2


@pytest.mark.parametrize("rules", RULESETS, ids=[r.label() for r in RULESETS])
def test_analyze_solves_every_deal_of_simulated_games_of_every_ruleset(rules: Ruleset) -> None:
    """Every played deal of legal games of the ruleset (the 13-card ones too, which the demo's
    ``--max-cards`` never reaches) gets values and costs: no deal the search cannot follow."""
    pool = player_pool(8)
    for g in range(WHOLE_GAMES):
        rec = make_record(f"whole-{g}", random.Random(f"whole:{rules.label()}:{g}"), pool, g, rules=rules)
        assert replay(rec).valid, rules.label()
        game = analyse_record(rec, pairs=True)  # (seat by seat, a 13-card deal can take minutes)
        assert not game.error, game.error
        played = [d for d in game.deals if not d.pass_out]
        assert played
        for deal in played:
            assert deal.values is not None and not deal.error and not deal.skipped, (rules.label(), deal)
            n = len(deal.values.cards) // 4
            assert n == rules.hand_size(deal.number), (rules.label(), deal.number)
            assert sum(deal.values.dd) <= n and all(cost >= 0 for cost in deal.values.costs)
        largest = max(len(d.values.cards) // 4 for d in played if d.values is not None)
        assert largest >= 9, (rules.label(), largest)  # the deals --max-cards 9 (the demo's) leaves out

"""The C search (``backalley/analysis/_ddcore.c``) against the Python one, minimax and the ruleset.

The Python search of :mod:`backalley.analysis.solver` is the reference: on thousands of
random positions of every hand size up to 7 (and some larger deals) the C search
must give the same values and the same per-play costs, with every pruning on and
with each one off.  Its legal moves and trick winners, read from the tables
:meth:`SolverRules.tables` builds from the ruleset, must be the ruleset's.
Every other registered ruleset is checked the same way in ``test_solver_rulesets.py``.
"""

from __future__ import annotations

import random

import pytest

from backalley import rules
from backalley.analysis.dd import NS, PlayedDeal, solve_deal
from backalley.analysis.solver import _DDCORE, ALL_PRUNING, NATIVE, DealSolver, Pruning, SolverRules
from backalley.cards import cards_of, parse_card
from tests.helpers import EW, NO_PRUNING, ONE_OFF, SCALE, minimax, random_deal, random_search, simulated_deal

pytestmark = pytest.mark.skipif(not NATIVE, reason="the C search is not built (pure-Python install)")


def paired_position(rng: random.Random, n: int) -> tuple[DealSolver, DealSolver, list[int], int]:
    """The same random position (random leader, board claimers, side, cards played) in Python and in C."""
    st, leader, solver_rules, side = random_search(rng, n)
    py = DealSolver(st.hands, leader, solver_rules, side, native=False)
    c = DealSolver(st.hands, leader, solver_rules, side, native=True)
    for _ in range(rng.randrange(4 * n)):
        card = rng.choice(list(cards_of(py.legal())))
        py.play(card)
        c.play(card)
    return py, c, list(st.hands), side


@pytest.mark.parametrize("n", range(1, 8))
def test_c_values_are_the_python_values(n: int) -> None:
    rng = random.Random(100 + n)
    for _ in range(int((1000 if n <= 5 else 300) * SCALE)):
        py, c, hands, side = paired_position(rng, n)
        assert c.value() == py.value(), (hands, py.rules, side, py.trick)
        target = rng.randint(0, py.tricks_left())
        assert c.at_least(target) == py.at_least(target)
        guess = py.won + rng.randint(-1, py.tricks_left() + 1)
        assert c.value(guess=guess) == py.value(guess=guess) == py.value()


def test_c_values_are_minimax_values_up_to_five_cards() -> None:
    rng = random.Random(55)
    for _ in range(int(1000 * SCALE)):
        n = rng.randint(1, 5)
        _, c, _, side = paired_position(rng, n)
        rest = minimax(c.hands, c.leader, c.trick, c.broken, c.rules.trump, c.rules.lead_exempt, side)
        assert c.value() == c.won + rest


@pytest.mark.parametrize(
    "pruning", [NO_PRUNING, *ONE_OFF], ids=["none", *("no-" + p for p in ("tt", "eq", "qt", "ord"))]
)
def test_c_with_each_pruning_off_up_to_seven_cards(pruning: object) -> None:
    rng = random.Random(77)
    for _ in range(int((40 if pruning == NO_PRUNING else 100) * SCALE)):
        n = rng.randint(4, 5 if pruning == NO_PRUNING else 7)
        st, leader, solver_rules, side = random_search(rng, n)
        full = DealSolver(st.hands, leader, solver_rules, side, native=False)
        reduced = DealSolver(st.hands, leader, solver_rules, side, pruning, native=True)  # type: ignore[arg-type]
        assert reduced.value() == full.value()


def test_c_transposition_keeps_the_winners_run_of_equal_cards() -> None:
    """A move stands for its run of equal cards: the run below a trick's winner is relevant to the entry.

    After one trick South holds TH KD AD (trumps: the AD stands for the KD below it); after another,
    TH 3D KD, with the same cards per hand and suit and the same holder of each suit's top card.  An
    entry that pinned only a trick's winner and the cards above it, stored for the first, served the
    second, and East got a trick it cannot take.
    """
    names = [["7H", "6D", "2C", "JC"], ["TS", "5H", "JH", "KC"], ["TH", "3D", "KD", "AD"], ["6H", "7D", "3C", "6C"]]
    hands = [sum(1 << parse_card(c) for c in hand) for hand in names]
    solver_rules = SolverRules(2, 0b0111)  # diamonds trump; North, East and South may lead it unbroken
    python = DealSolver(hands, 3, solver_rules, 0b0010, native=False)
    for pruning in (ALL_PRUNING, Pruning(quick_tricks=False)):
        assert DealSolver(hands, 3, solver_rules, 0b0010, pruning, native=True).value() == python.value() == 0


def test_c_legal_moves_and_winners_are_the_rulesets() -> None:
    rng = random.Random(8)
    for _ in range(int(300 * SCALE)):
        n = rng.randint(1, 13)
        _, c, _, _ = paired_position(rng, n)
        core = c.core
        while c.tricks_left():
            legal = core.legal(c.hands, c.leader, c.trick, c.broken)
            assert legal == c.legal()  # the Python side asks the ruleset
            card = rng.choice(list(cards_of(legal)))
            if len(c.trick) == 3:
                trick = [*c.trick, card]
                assert core.winner(trick) == rules.trick_winner(trick, c.rules.trump)
            c.play(card)


@pytest.mark.parametrize("sizes", [(1, 7), (8, 9)], ids=["1-7", "8-9"])
def test_c_costs_are_the_python_costs(sizes: tuple[int, int]) -> None:
    rng = random.Random(sizes[1])
    for _ in range(int((150 if sizes[1] <= 7 else 6) * SCALE)):
        st = simulated_deal(rng, rng.randint(*sizes))
        assert st.contracts is not None
        hands = [0, 0, 0, 0]
        for leader, trick in st.tricks:
            for j, card in enumerate(trick):
                hands[(leader + j) & 3] |= 1 << card
        deal = PlayedDeal(
            (hands[0], hands[1], hands[2], hands[3]),
            st.trump,
            st.contracts.lead_exempt,
            st.tricks[0][0],
            [card for _, t in st.tricks for card in t],
        )
        py, c = solve_deal(deal, ALL_PRUNING, native=False), solve_deal(deal, ALL_PRUNING, native=True)
        assert (c.dd, c.values, c.costs) == (py.dd, py.values, py.costs)


def test_c_values_of_large_deals_are_the_python_values() -> None:
    rng = random.Random(12)
    for n in (8, 9, 10):
        st = random_deal(rng, n)
        solver_rules = SolverRules(st.trump, 0)
        leader = rng.randrange(4)
        py = DealSolver(st.hands, leader, solver_rules, NS, native=False).value()
        assert DealSolver(st.hands, leader, solver_rules, NS, native=True).value() == py


def test_c_values_with_a_table_that_fills_are_the_python_values() -> None:
    """A transposition table of 16 chains and 64 entries: it fills and starts again many times a search,
    and each chain holds entries of many shapes, which the links' tags must tell apart."""
    rng = random.Random(30)
    for _ in range(int(40 * SCALE)):
        st = random_deal(rng, rng.randint(6, 8))
        solver_rules = SolverRules(st.trump, rng.randrange(16))
        leader, side = rng.randrange(4), rng.choice([NS, EW, 1 << rng.randrange(4)])
        small = _DDCORE.Core(hands=list(st.hands), side=side, flags=15, tt_bits=4, **solver_rules.tables())
        py = DealSolver(st.hands, leader, solver_rules, side, native=False)
        assert small.value(list(st.hands), leader, [], False) == py.value()
        for target in range(py.tricks_left() + 1):
            assert small.at_least(list(st.hands), leader, [], False, target) == py.at_least(target)


def test_profile_counts_each_trick_boundary_once_by_what_settled_it() -> None:
    """The benchmark's profile: every boundary is settled one way, and a pruning switched off settles none."""
    rng = random.Random(21)
    for _ in range(int(20 * SCALE)):
        st = random_deal(rng, rng.randint(5, 8))
        solver_rules = SolverRules(st.trump, rng.randrange(16))
        for pruning in (ALL_PRUNING, *ONE_OFF):
            solver = DealSolver(st.hands, rng.randrange(4), solver_rules, NS, pruning)
            solver.value()
            got = solver.profile()
            boundaries = sum(count for key, count in got.items() if key.startswith("boundaries"))
            assert 0 < boundaries <= got["nodes"] == solver.nodes
            # The first search's root is searched unless its quick tricks settle it (the table is empty then).
            quick = got["boundaries_by_quick_tricks_side"] + got["boundaries_by_quick_tricks_others"]
            assert got["boundaries_searched"] > 0 or quick > 0
            if not pruning.tt:
                assert got["boundaries_by_tt"] == 0
            if not pruning.quick_tricks:
                assert got["boundaries_by_quick_tricks_side"] == got["boundaries_by_quick_tricks_others"] == 0


def test_c_counts_a_hands_trumps_less_the_others_trumps_above_them() -> None:
    """South's AS QS JS TS against West's KS 2S: only the KS beats one of them, so North-South take three.

    The count of every trump (four less West's two) proves two; the trumps West holds above South's lowest
    prove three at the first trick boundary, with no search.
    """
    names = [["5H", "6H", "7H", "8H"], ["9H", "TH", "JH", "QH"], ["AS", "QS", "JS", "TS"], ["KS", "2S", "3H", "4H"]]
    hands = [sum(1 << parse_card(c) for c in hand) for hand in names]
    solver_rules = SolverRules(0, 0b1111)  # spades trump, anyone may lead it
    python = DealSolver(hands, 2, solver_rules, NS, native=False)
    c = DealSolver(hands, 2, solver_rules, NS, native=True)
    assert c.at_least(3) and not c.at_least(4)
    assert c.value() == python.value() == 3
    first = DealSolver(hands, 2, solver_rules, NS, native=True)
    assert first.at_least(3)
    assert (first.nodes, first.profile()["boundaries_by_quick_tricks_side"]) == (1, 1)


def replayed(solver: DealSolver, cards: list[int]) -> DealSolver:
    """``solver`` after ``cards`` are played."""
    for card in cards:
        solver.play(card)
    return solver


def test_c_value_without_a_guess_steps_from_a_playout() -> None:
    """Without a guess the C search steps from the tricks of a playout (every seat playing the first card
    its ordering tries): the same search, node for node, as stepping from some guess, and the same value;
    the playout leaves the position as it found it (mid-trick too)."""
    rng = random.Random(64)
    for _ in range(int(40 * SCALE)):
        n = rng.randint(5, 8)
        st, leader, solver_rules, side = random_search(rng, n)
        cards: list[int] = []
        py = DealSolver(st.hands, leader, solver_rules, side, native=False)
        for _ in range(rng.randrange(2 * n)):
            card = rng.choice(list(cards_of(py.legal())))
            py.play(card)
            cards.append(card)
        unguessed = replayed(DealSolver(st.hands, leader, solver_rules, side, native=True), cards)
        assert unguessed.value() == py.value()
        stepped = set()
        for rest in range(py.tricks_left() + 1):
            guessed = replayed(DealSolver(st.hands, leader, solver_rules, side, native=True), cards)
            assert guessed.value(guess=guessed.won + rest) == py.value()
            stepped.add(guessed.nodes)
        assert unguessed.nodes in stepped


@pytest.mark.parametrize("nsuits", range(1, 5))
def test_c_values_of_deals_of_one_to_four_suits_are_the_python_values(nsuits: int) -> None:
    """The table's walk is compiled once for each count of groups (ranked sets of cards) in the deal:
    deals of cards from 1, 2, 3 or 4 suits, with a table that fills (entries of many shapes in each chain)
    and with the usual one, search as the Python search does; and the usual one settles the deal's
    value again at its first trick boundary, one node (a walk that missed its entries would search)."""
    rng = random.Random(40 + nsuits)
    for _ in range(int(30 * SCALE)):
        suits = rng.sample("SHDC", nsuits)
        deck = [parse_card(rank + suit) for suit in suits for rank in "23456789TJQKA"]
        rng.shuffle(deck)
        n = rng.randint(2, min(7, len(deck) // 4))
        hands = [sum(1 << c for c in deck[i * n : (i + 1) * n]) for i in range(4)]
        solver_rules = SolverRules(rng.randrange(4), rng.randrange(16))
        leader, side = rng.randrange(4), rng.choice([NS, EW, 1 << rng.randrange(4)])
        py = DealSolver(hands, leader, solver_rules, side, native=False)
        c = DealSolver(hands, leader, solver_rules, side, native=True)
        small = _DDCORE.Core(hands=list(hands), side=side, flags=15, tt_bits=4, **solver_rules.tables())
        assert c.value() == small.value(list(hands), leader, [], False) == py.value(), (hands, leader, side)
        for target in range(n + 1):
            assert c.at_least(target) == small.at_least(list(hands), leader, [], False, target) == py.at_least(target)
        core = _DDCORE.Core(hands=list(hands), side=side, flags=15, **solver_rules.tables())
        value = core.value(list(hands), leader, [], False)
        for target in (value, value + 1):
            before = core.nodes
            assert core.at_least(list(hands), leader, [], False, target) == (target == value)
            assert core.nodes == before + 1

"""The double-dummy solver against a plain minimax, against itself with each pruning off, and its invariants."""

from __future__ import annotations

import random

import orjson
import pytest

from backalley import rules
from backalley.analysis.dd import NS, PAIRS, PlayedDeal, Scope, analyse_record, played_tricks, sides_of, solve_deal
from backalley.analysis.solver import DealSolver, Pruning, SolverRules
from backalley.cards import JOKERS, NUM_CARDS, cards_of
from backalley.engine import DealState
from backalley.rules import BOARD, PASS, find_ruleset
from backalley.simulate import simulate_games
from tests.helpers import EW, NO_PRUNING, ONE_OFF, SCALE, minimax, random_deal, random_search, simulated_deal


def played_hands(st: DealState) -> tuple[list[int], list[int]]:
    """The four hands a played deal started its play with, and its cards in play order."""
    hands = [0, 0, 0, 0]
    for leader, trick in st.tricks:
        for j, card in enumerate(trick):
            hands[(leader + j) & 3] |= 1 << card
    return hands, [card for _, t in st.tricks for card in t]


def random_position(rng: random.Random, n: int) -> tuple[DealState, DealSolver | None, int]:
    """A deal with random bids and a few random cards played; the solver set to the same position."""
    st = random_deal(rng, n)
    while st.bidding:
        st.bid(rng.choice([PASS, BOARD, *range(1, n)]) if rng.random() < 0.9 else PASS)
    if st.pass_out:
        return st, None, 0
    assert st.contracts is not None and st.leader is not None
    side = rng.choice([NS, EW, 1 << rng.randrange(4)])
    solver = DealSolver(st.hands, st.leader, SolverRules(st.trump, st.contracts.lead_exempt), side)
    for _ in range(rng.randrange(4 * n)):
        card = rng.choice(list(cards_of(st.legal_plays())))
        st.play(card)
        solver.play(card)
    return st, solver, side


def test_matches_minimax_up_to_five_cards() -> None:
    rng = random.Random(15)
    checked = 0
    while checked < 1000 * SCALE:
        n = rng.randint(1, 5)
        st, solver, side = random_position(rng, n)
        if solver is None:
            continue
        won = sum(1 for leader, cards in st.tricks if side >> ((leader + rules.trick_winner(cards, st.trump)) & 3) & 1)
        assert st.leader is not None and st.contracts is not None
        expected = won + minimax(st.hands, st.leader, st.current, st.broken, st.trump, st.contracts.lead_exempt, side)
        assert solver.value() == expected, (st.to_record(), side)
        checked += 1


@pytest.mark.parametrize(
    "pruning", [NO_PRUNING, *ONE_OFF], ids=["none", *("no-" + p for p in ("tt", "eq", "qt", "ord"))]
)
def test_each_pruning_changes_nothing_up_to_seven_cards(pruning: Pruning) -> None:
    rng = random.Random(7)
    for _ in range(int((10 if pruning == NO_PRUNING else 16) * SCALE)):
        n = rng.randint(5, 6 if pruning == NO_PRUNING else 7)
        st, leader, solver_rules, side = random_search(rng, n, seats=False)
        full = DealSolver(st.hands, leader, solver_rules, side)
        reduced = DealSolver(st.hands, leader, solver_rules, side, pruning)
        assert full.value() == reduced.value(), (st.hands, st.trump, leader, solver_rules, side)


def test_legal_moves_and_winners_are_the_engines() -> None:
    rng = random.Random(3)
    for _ in range(300):
        n = rng.randint(1, 13)
        st, solver, _ = random_position(rng, n)
        if solver is None:
            continue
        while not st.finished:
            assert solver.legal() == st.legal_plays()
            card = rng.choice(list(cards_of(st.legal_plays())))
            st.play(card)
            winner = solver.play(card)
            if not st.current:
                assert winner == st.leader
            assert solver.hands == st.hands and solver.broken == st.broken
        assert solver.tricks_left() == 0


def test_invariants_over_simulated_deals() -> None:
    rng = random.Random(11)
    for _ in range(int(60 * SCALE)):
        n = rng.randint(1, 6)
        st = simulated_deal(rng, n)
        hands = [0, 0, 0, 0]
        for leader, trick in st.tricks:
            for j, c in enumerate(trick):
                hands[(leader + j) & 3] |= 1 << c
        assert st.contracts is not None
        deal = PlayedDeal(
            (hands[0], hands[1], hands[2], hands[3]),
            st.trump,
            st.contracts.lead_exempt,
            st.tricks[0][0],
            [c for _, t in st.tricks for c in t],
        )
        v = solve_deal(deal)
        ns, ew = v.dd
        assert 0 <= ns <= n and ns + ew == n
        assert v.values[-1] == st.won[0]
        assert all(c >= 0 for c in v.costs)
        cost = [sum(c for s, c in zip(v.seats, v.costs, strict=True) if s & 1 == t) for t in (0, 1)]
        # Each side's errors move the value its way by their cost: NS's value drops by NS's costs
        # and rises by EW's, so the two sums differ by what NS could make minus what it took.
        assert cost[0] - cost[1] == ns - st.won[0]
        # EW's values are the complement: solving for EW gives the same figures.
        ew_solver = DealSolver(deal.hands, deal.leader, SolverRules(deal.trump, deal.lead_exempt), EW)
        assert ew_solver.value() == ew


def equivalent_swap(rng: random.Random, hands: list[int], trump: int) -> list[int] | None:
    """Replace one held card by an unplayed card of its suit adjacent to it in rank (no dealt card between)."""
    dealt = hands[0] | hands[1] | hands[2] | hands[3]
    special = rules.STANDARD.trump_mask(trump) & JOKERS
    for _ in range(20):
        seat = rng.randrange(4)
        card = rng.choice(list(cards_of(hands[seat])))
        if special >> card & 1:
            continue
        suit = rules.STANDARD.follow_mask(card, trump)
        step = rng.choice((-1, 1))
        other = card + step
        if not (0 <= other < 52 and suit >> other & 1) or dealt >> other & 1:
            continue
        out = list(hands)
        out[seat] ^= 1 << card | 1 << other
        return out
    return None


def test_equivalent_cards_change_nothing() -> None:
    rng = random.Random(5)
    checked = 0
    while checked < 60 * SCALE:
        n = rng.randint(3, 6)
        st = random_deal(rng, n)
        swapped = equivalent_swap(rng, st.hands, st.trump)
        if swapped is None:
            continue
        leader, claimers = rng.randrange(4), rng.randrange(16)
        before = DealSolver(st.hands, leader, SolverRules(st.trump, claimers), NS).value()
        after = DealSolver(swapped, leader, SolverRules(st.trump, claimers), NS).value()
        assert before == after
        checked += 1


def test_values_stay_in_range_and_sides_add_up() -> None:
    rng = random.Random(9)
    checked = 0
    while checked < 200:
        n = rng.randint(1, 6)
        st = random_deal(rng, n)
        leader, claimers = rng.randrange(4), rng.randrange(16)
        ns = DealSolver(st.hands, leader, SolverRules(st.trump, claimers), NS)
        ew = DealSolver(st.hands, leader, SolverRules(st.trump, claimers), EW)
        for _ in range(rng.randrange(4 * n)):
            card = rng.choice(list(cards_of(ns.legal())))
            ns.play(card)
            ew.play(card)
        value = ns.value()
        assert ns.won <= value <= ns.won + ns.tricks_left()
        assert value + ew.value() == n
        checked += 1


def test_play_refuses_an_illegal_card() -> None:
    st = random_deal(random.Random(1), 4)
    solver = DealSolver(st.hands, 0, SolverRules(st.trump, 0), NS)
    not_held = next(c for c in range(NUM_CARDS) if not solver.hands[0] >> c & 1)
    with pytest.raises(ValueError, match="not a legal play"):
        solver.play(not_held)


def test_value_from_a_known_bound_is_the_value() -> None:
    rng = random.Random(21)
    for _ in range(int(60 * SCALE)):
        n = rng.randint(1, 6)
        st, leader, solver_rules, side = random_search(rng, n, seats=False)
        solver = DealSolver(st.hands, leader, solver_rules, side)
        before = solver.value()
        while solver.tricks_left():
            seat = solver.to_play()
            solver.play(rng.choice(list(cards_of(solver.legal()))))
            fresh = DealSolver(st.hands, leader, solver_rules, side)
            fresh.hands, fresh.remaining, fresh.leader = list(solver.hands), solver.remaining, solver.leader
            fresh.trick, fresh.broken, fresh.won = list(solver.trick), solver.broken, solver.won
            after = solver.value_from(before, rising=not side >> seat & 1)
            assert after == fresh.value()
            before = after


def test_a_guess_changes_the_search_not_the_value() -> None:
    """Stepping from any guess (right, too low, too high, out of range) finds the bisection's value."""
    rng = random.Random(23)
    for _ in range(int(80 * SCALE)):
        n = rng.randint(1, 6)
        st, leader, solver_rules, side = random_search(rng, n)
        expected = DealSolver(st.hands, leader, solver_rules, side).value()
        guess = rng.choice([expected, expected + 1, expected - 1, 0, n, n + 3])
        assert DealSolver(st.hands, leader, solver_rules, side).value(guess=guess) == expected


def test_played_tricks_are_the_engines() -> None:
    rng = random.Random(29)
    for _ in range(40):
        st = simulated_deal(rng, rng.randint(1, 8))
        assert st.contracts is not None
        hands, cards = played_hands(st)
        deal = PlayedDeal((hands[0], hands[1], hands[2], hands[3]), st.trump, 0, st.tricks[0][0], cards)
        solver_rules = SolverRules(st.trump, 0)
        assert played_tricks(deal, solver_rules, NS) == st.won[0]
        assert played_tricks(deal, solver_rules, EW) == st.won[1]


SEAT_SIDES = sides_of(find_ruleset("standard", ("no_partnerships",)))


def test_without_partnerships_each_seat_is_solved_against_the_other_three() -> None:
    """Each seat's value is minimax's for that seat alone; each card's cost is its own seat's loss."""
    rng = random.Random(31)
    assert SEAT_SIDES.names == ("N", "E", "S", "W")
    for _ in range(int(40 * SCALE)):
        n = rng.randint(1, 4)
        st = simulated_deal(rng, n)
        assert st.contracts is not None
        hands = [0, 0, 0, 0]
        for leader, trick in st.tricks:
            for j, card in enumerate(trick):
                hands[(leader + j) & 3] |= 1 << card
        claimers = st.contracts.lead_exempt
        cards = [card for _, t in st.tricks for card in t]
        deal = PlayedDeal((hands[0], hands[1], hands[2], hands[3]), st.trump, claimers, st.tricks[0][0], cards)
        v = solve_deal(deal, sides=SEAT_SIDES)
        expected = [minimax(hands, deal.leader, [], False, st.trump, claimers, 1 << seat) for seat in range(4)]
        assert list(v.dd) == expected
        # Each seat can force its value whatever the others do, so the four values fit in the deal.
        assert sum(v.dd) <= n and v.values[0] == v.dd[0]
        solvers = [DealSolver(hands, deal.leader, SolverRules(st.trump, claimers), 1 << seat) for seat in range(4)]
        for seat, card, cost in zip(v.seats, cards, v.costs, strict=True):
            before = solvers[seat].value()
            for solver in solvers:
                solver.play(card)
            assert cost == before - solvers[seat].value() >= 0
        assert v.values[-1] == solvers[0].won


def test_with_partnerships_each_cost_is_its_own_sides_loss() -> None:
    """One search serves both pairs: an EW card's cost is what EW's own solver says it lost."""
    rng = random.Random(37)
    assert sides_of(find_ruleset("standard")) == PAIRS
    for _ in range(int(20 * SCALE)):
        st = simulated_deal(rng, rng.randint(1, 5))
        assert st.contracts is not None
        hands, cards = played_hands(st)
        claimers = st.contracts.lead_exempt
        deal = PlayedDeal((hands[0], hands[1], hands[2], hands[3]), st.trump, claimers, st.tricks[0][0], cards)
        v = solve_deal(deal)
        solvers = [DealSolver(hands, deal.leader, SolverRules(st.trump, claimers), side) for side in (NS, EW)]
        assert v.dd == (solvers[0].value(), solvers[1].value())
        for seat, card, cost in zip(v.seats, cards, v.costs, strict=True):
            own = solvers[seat & 1]
            before = own.value()
            for solver in solvers:
                solver.play(card)
            assert cost == before - own.value()


def test_a_record_without_partnerships_is_analysed_by_seat() -> None:
    """``analyse_record`` keys the values by seat for such a record; the store's pairs on request."""
    rules = find_ruleset("standard", ("no_partnerships",))
    rec = orjson.loads(next(iter(simulate_games(1, seed=3, rules=rules))))
    rec["deals"] = [d for d in rec["deals"] if d["number"] <= 11]  # 13 down to 3 cards: quick
    by_seat = analyse_record(rec, Scope(max_cards=5)).as_dict()
    pairs = analyse_record(rec, Scope(max_cards=5), pairs=True).as_dict()
    solved = [d for d in by_seat["deals"] if d["dd"] is not None]
    assert solved
    for seat_deal, pair_deal in zip(by_seat["deals"], pairs["deals"], strict=True):
        if seat_deal["dd"] is None:
            continue
        n = len(seat_deal["costs"])
        assert list(seat_deal["dd"]) == ["N", "E", "S", "W"] and sum(seat_deal["dd"].values()) <= n
        assert list(pair_deal["dd"]) == ["NS", "EW"] and sum(pair_deal["dd"].values()) == n
        # A seat alone against three makes no more than its pair does.
        assert seat_deal["dd"]["N"] <= pair_deal["dd"]["NS"] and seat_deal["dd"]["E"] <= pair_deal["dd"]["EW"]

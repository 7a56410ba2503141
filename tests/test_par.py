"""Par (backalley.rules.par): the best score a side could bid for, asked of every registered ruleset."""

from __future__ import annotations

from itertools import permutations, product

import pytest

from backalley.rules import PASS, PLAYERS, Bid, Ruleset, all_rulesets, find_ruleset
from backalley.rules.par import ParError, par, side_contracts


def _hand_sizes(rules: Ruleset) -> list[int]:
    """The distinct hand sizes of the ruleset's schedule, at most 3 of them (small, middle, largest)."""
    sizes = sorted({rules.hand_size(k) for k in range(1, rules.scored_deals + 1)})
    return sorted({sizes[0], sizes[len(sizes) // 2], sizes[-1]})


def _standard_par(tricks: int, n: int) -> int:
    """The issue's worked formula for ``standard``: max(5·B + (T − B), double board)."""
    b = min(tricks, 2 * (n - 1))
    best = 5 * b + (tricks - b)
    return max(best, 20 * n) if tricks == n else best


@pytest.mark.parametrize("n", range(1, 14))
def test_standard_par_is_the_worked_formula(n: int) -> None:
    rules = find_ruleset("standard")
    for tricks in range(n + 1):
        for side in (0, 1):
            assert par(rules, tricks, n, side) == _standard_par(tricks, n)


def test_worked_examples() -> None:
    rules = find_ruleset("standard")
    # 7 tricks of 13: bid 7 together, 5·7 = 35.  13 of 13: a double board, 20·13 = 260.
    assert par(rules, 7, 13, 0) == 35
    assert par(rules, 13, 13, 1) == 260
    # 1 card: no number can be bid (1..0), so a trick is worth 1 point, or 20 as a double board.
    assert par(rules, 0, 1, 0) == 0
    assert par(rules, 1, 1, 0) == 20
    # pereulok: any made declaration scores 10 a trick; one declaration per side, ×1 without a previous one.
    assert par(find_ruleset("pereulok"), 6, 13, 0) == 60
    assert par(find_ruleset("pereulok"), 0, 13, 0) == 0
    # bab-online: a team value of DD scores 10·DD; the whole hand, board then board2 (×4), 40·n.
    bab = find_ruleset("bab-online")
    assert [par(bab, t, 4, 1) for t in range(5)] == [0, 10, 20, 30, 160]


def _brute_contracts(rules: Ruleset, n: int, side: int) -> list[object]:
    """Every contract from every combination of the ruleset's calls by the side's seats, in every calling order.

    The other seats pass; combinations the ruleset faults are left out.  Calls come from
    ``legal_bids`` and from ``legal_bids_after`` every earlier call, so none is missed.
    """
    seats = [s for s in range(PLAYERS) if rules.side_of[s] == side]
    calls: set[Bid] = set(rules.legal_bids(n))
    for s in range(PLAYERS):
        for b in list(calls):
            calls.update(rules.legal_bids_after(n, s, [(0, b)]))
    out = []
    for order in permutations(range(PLAYERS)):
        for chosen in product(sorted(calls, key=str), repeat=len(seats)):
            pick = dict(zip(seats, chosen, strict=True))
            bids = tuple((s, pick.get(s, PASS)) for s in order)
            if not rules.bid_faults(n, bids) and not any(
                b not in rules.legal_bids_after(n, s, bids[:k]) for k, (s, b) in enumerate(bids)
            ):
                out.append(rules.contracts(bids, n).of(side))
    return out


@pytest.mark.parametrize("rules", all_rulesets(), ids=lambda r: r.label())
def test_par_is_at_least_every_reachable_contract(rules: Ruleset) -> None:
    for n in _hand_sizes(rules):
        for side in range(len(rules.sides)):
            brute = _brute_contracts(rules, n, side)
            assert brute
            for tricks in range(n + 1):
                best = par(rules, tricks, n, side)
                assert all(best >= rules.score(c, tricks, n) for c in brute)  # type: ignore[arg-type]
                assert best in {rules.score(c, tricks, n) for c in side_contracts(rules, n, side)}


@pytest.mark.parametrize("rules", all_rulesets(), ids=lambda r: r.label())
def test_par_never_falls_with_more_tricks(rules: Ruleset) -> None:
    for n in _hand_sizes(rules):
        pars = [par(rules, t, n, 0) for t in range(n + 1)]
        assert pars == sorted(pars)


def test_bounds_are_errors() -> None:
    rules = find_ruleset("standard")
    with pytest.raises(ParError, match="tricks"):
        par(rules, 5, 4, 0)
    with pytest.raises(ParError, match="hand size"):
        par(rules, 0, 14, 0)
    with pytest.raises(ParError, match="side"):
        par(rules, 0, 3, 2)

"""Par: the best score a side could get by bidding, knowing how many tricks it will take.

A side's **par** for a deal of ``n`` cards in which it takes ``tricks`` tricks
is the maximum of :meth:`Ruleset.score` over every contract the side's own
players can reach under the ruleset while the other players pass (its bid
range, its board claims and multipliers, its auction).  The contracts are found
by asking the ruleset itself (:meth:`Ruleset.legal_bids_after` and
:meth:`Ruleset.contracts`), never by a ruleset's name, so a new ruleset gets its
par for free.

For ``standard`` that is ``max(5·B + (T − B), board)`` with
``B = min(T, 2·(n − 1))`` and ``board = 20·n`` when ``T = n`` (both partners
claim: a double board).  Not compiled (plain Python): the store's ledger asks
it a few times per distinct ``(ruleset, n, side)``, memoised.
"""

from __future__ import annotations

from functools import lru_cache

from backalley.rules.base import PASS, PLAYERS, Bid, Contract, Ruleset

#: Bound on the biddings explored for one side and hand size (a guard against a ruleset whose
#: auction would explode; the registered ones need at most 14² = 196).
MAX_BIDDINGS = 1 << 16


class ParError(ValueError):
    """A side, hand size or trick count outside the ruleset's bounds."""


def _check(rules: Ruleset, n: int, side: int) -> None:
    if not 1 <= n <= rules.max_hand:
        raise ParError(f"hand size {n} is outside 1..{rules.max_hand} for {rules.label()}")
    if not 0 <= side < len(rules.sides):
        raise ParError(f"side {side} is outside 0..{len(rules.sides) - 1} for {rules.label()}")


@lru_cache(maxsize=1024)
def side_contracts(rules: Ruleset, n: int, side: int) -> tuple[Contract, ...]:
    """Every distinct contract ``side`` can reach in a deal of ``n`` cards while the other seats pass.

    The side's seats call in seat order (N, E, S, W), each any call the ruleset
    allows after the calls before it; biddings the ruleset faults are left out.
    """
    _check(rules, n, side)
    found: dict[tuple[bool, int, int], Contract] = {}
    stack: list[tuple[tuple[int, Bid], ...]] = [()]
    explored = 0
    while stack:
        bids = stack.pop()
        seat = len(bids)
        if seat == PLAYERS:
            explored += 1
            if explored > MAX_BIDDINGS:
                raise ParError(f"{rules.label()}: more than {MAX_BIDDINGS} biddings for one side")
            if not rules.bid_faults(n, bids):
                c = rules.contracts(bids, n).of(side)
                found.setdefault((c.board, c.value, c.mult), c)
            continue
        calls: list[Bid] = rules.legal_bids_after(n, seat, bids) if rules.side_of[seat] == side else [PASS]
        stack.extend((*bids, (seat, call)) for call in calls)
    return tuple(found.values())


def par(rules: Ruleset, tricks: int, n: int, side: int) -> int:
    """The side's par: the best :meth:`Ruleset.score` of :func:`side_contracts` for ``tricks`` tricks taken."""
    if not 0 <= tricks <= n:
        raise ParError(f"{tricks} tricks is outside 0..{n}")
    return _par(rules, tricks, n, side)


@lru_cache(maxsize=1 << 14)
def _par(rules: Ruleset, tricks: int, n: int, side: int) -> int:
    return max(rules.score(c, tricks, n) for c in side_contracts(rules, n, side))


__all__ = ["MAX_BIDDINGS", "ParError", "par", "side_contracts"]

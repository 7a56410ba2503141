"""The solver plays by the engine's rules, on positions of engine-played games of every ruleset and option set.

Games are played by the simulator's bots on the engine (:class:`DealState`),
with the bots' bids and with random legal bids (which claim board far more often),
for every registered ruleset with every subset of its options, then replayed
and handed to the solver exactly as ``backalley analyze`` hands them
(:func:`analysis.played_deal`, :meth:`PlayedDeal.rules`).  Walking each deal's
play on the engine again, at every position:

* the solver's legal cards are the engine's ``legal_plays`` (Python search and
  C search), and its trick winners are the engine's; so are its legal cards at
  every position the minimax below visits;
* its values are those of a plain minimax written on the engine (every legal
  card of ``DealState``, no pruning), in the bots' games: on every deal of up to 5 cards, the
  analysis's values before every card and after the last; in a ruleset with no
  deal that small (a 13-card ``pereulok`` game, say), the values before every
  card of the last 4 tricks of each deal, which are positions the analysis's
  values-after-a-card reach.  A minimax a side is dear, so each deal checks
  one side, the sides taking turns deal by deal;
* the same values in the games with random bids, on every deal with a board
  claim (a ``bab-online`` bore, whose bidders may not lead trump unbroken, or a
  ``standard`` board claimer, who may) that the rules above check.

A rule the solver took from anywhere but the ruleset (who may lead trump while
it is unbroken, for one) shows here as soon as a bot's play reaches it.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from backalley.analysis.dd import PlayedDeal, played_deal, sides_of, solve_deal
from backalley.analysis.solver import NATIVE, DealSolver
from backalley.cards import CARD_NAMES, SEATS, cards_of
from backalley.engine import DealState
from backalley.replay import replay
from backalley.rules import Ruleset, all_rulesets
from backalley.simulate import bid_deal, final_score, play_out, player_pool, record_head
from tests.helpers import SCALE

RULESETS = all_rulesets()
#: Games per ruleset and option set (more with BACKALLEY_SOLVER_SCALE), and the largest deal whose every
#: value is checked.
GAMES = max(1, int(SCALE))
SMALL = 5
#: Tricks at the end of a longer deal whose values are checked.
LAST_TRICKS = 4
SEARCHES = (False, True) if NATIVE else (False,)


@dataclass
class Played:
    """One deal of an engine-played game: the engine state when play starts, and the analysis's view."""

    start: DealState
    deal: PlayedDeal


def engine_games(rules: Ruleset, games: int, random_bids: bool = False) -> Iterator[Played]:
    """The played (not passed-out) deals of ``games`` games of ``rules``, played by the simulator's bots.

    ``random_bids``: every call a random legal one instead of the bots' (many more board claims
    and bores, whose trump-lead rule differs between rulesets).
    """
    pool = player_pool(8)
    for g in range(games):
        rng = random.Random(f"solver-consistency:{rules.label()}:{g}:{random_bids}")
        seated = rng.sample(pool, 4)
        starts: list[DealState | None] = []
        deals = []
        dealer, number = rng.randrange(4), 1
        while number <= rules.scored_deals:
            st = bid_deal(rules, number, dealer, seated, rng, random_bids)
            starts.append(None if st.pass_out else copy.deepcopy(st))
            play_out(st, seated, rng)
            deals.append(st.to_record())
            number = rules.next_number(number, st.pass_out)
            dealer = rules.next_dealer(dealer, st.pass_out, st.points())
        record = {
            **record_head(rules, f"c{g}"),
            "players": {SEATS[s]: seated[s].name for s in range(4)},
            "deals": deals,
            "final_score": final_score(deals, rules),
        }
        rep = replay(record)
        assert rep.valid and rep.complete, [v.as_dict() for v in rep.violations][:3]
        for start, outcome in zip(starts, rep.deals, strict=True):
            if start is not None:
                yield Played(start, played_deal(outcome, rules))


def child(st: DealState, card: int) -> DealState:
    """The engine state after ``card`` (the state itself is left as it was)."""
    out = DealState.__new__(DealState)
    out.__dict__.update(st.__dict__)
    out.hands, out.current, out.tricks, out.won = list(st.hands), list(st.current), list(st.tricks), list(st.won)
    out.play(card)
    return out


class Minimax:
    """Plain minimax on the engine for one side; at every node it visits, the solver's legal cards are checked too.

    Every node is a position the engine reaches by legal cards, so the check covers far more
    positions than the recorded play (every lead a seat could make, say).
    """

    def __init__(self, p: Played, side: int) -> None:
        self.side = side
        self.rules = p.deal.rules()
        self.core = DealSolver(p.deal.hands, p.deal.leader, self.rules, side, native=True).core if NATIVE else None
        self.memo: dict[tuple[tuple[int, ...], int, bool], int] = {}

    def check_legal(self, st: DealState, legal: int) -> None:
        assert st.leader is not None
        seat = st.to_act()
        hand = st.hands[seat]
        if st.current:
            python = self.rules.follows(hand, st.current[0], len(st.current))
        else:
            python = self.rules.leads(hand, st.broken, seat)
        where = f"{st.rules.label()} deal {st.number}, seat {SEATS[seat]} after {[CARD_NAMES[c] for c in st.current]}"
        assert python == legal, f"{where}: Python search {python:#x}, engine {legal:#x}"
        if self.core is not None:
            native = self.core.legal(st.hands, st.leader, st.current, st.broken)
            assert native == legal, f"{where}: C search {native:#x}, engine {legal:#x}"

    def value(self, st: DealState) -> int:
        """The tricks the side wins from ``st`` on, by plain minimax over the engine's legal cards."""
        if st.finished:
            return 0
        boundary = not st.current
        if boundary:
            assert st.leader is not None
            key = (tuple(st.hands), st.leader, st.broken)
            if key in self.memo:
                return self.memo[key]
        seat = st.to_act()
        legal = st.legal_plays()
        self.check_legal(st, legal)
        values = []
        for card in cards_of(legal):
            after = child(st, card)
            assert after.leader is not None
            won = self.side >> after.leader & 1 if not after.current else 0
            values.append(won + self.value(after))
        best = max(values) if self.side >> seat & 1 else min(values)
        if boundary:
            self.memo[key] = best
        return best


def won_by(st: DealState, side: int) -> int:
    """Tricks ``side`` has won so far in ``st`` (a trick's winner leads the next; the last one's is ``leader``)."""
    winners = [leader for leader, _ in st.tricks[1:]] + ([st.leader] if st.tricks else [])
    return sum(side >> seat & 1 for seat in winners if seat is not None)


def check_play(p: Played, native: bool) -> None:
    """Legal cards and trick winners at every position of the deal's play, the solver's against the engine's."""
    st = p.start
    solver = DealSolver(p.deal.hands, p.deal.leader, p.deal.rules(), 0b0101, native=native)
    for i, card in enumerate(p.deal.cards):
        where = f"{st.rules.label()} deal {st.number} card {i + 1} ({'C' if native else 'Python'} search)"
        engine, search = st.legal_plays(), solver.legal()
        assert search == engine, (
            f"{where}: engine {[CARD_NAMES[c] for c in cards_of(engine)]},"
            f" solver {[CARD_NAMES[c] for c in cards_of(search)]}"
        )
        st = child(st, card)
        winner = solver.play(card)
        if not st.current:
            assert winner == st.leader, f"{where}: trick won by seat {st.leader}, the solver says {winner}"


def expected_values(p: Played, first: int) -> list[int]:
    """The checked side's tricks (won so far plus minimax on the engine) at every position from card ``first`` on."""
    positions = [p.start]
    for card in p.deal.cards:
        positions.append(child(positions[-1], card))
    mask = sides_of(p.start.rules).masks()[checked_side(p)]
    minimax = Minimax(p, mask)
    return [won_by(st, mask) + minimax.value(st) for st in positions[first:]]


def checked_side(p: Played) -> int:
    """The side whose values are checked in this deal: each in turn, deal by deal (a minimax a side is dear)."""
    return p.start.number % len(p.start.rules.sides)


def solver_values(p: Played, first: int, native: bool) -> list[int]:
    """The checked side's values at every position from card ``first`` on: the analysis's own from the start."""
    sides = sides_of(p.start.rules)
    k = checked_side(p)
    if not first:
        return solve_deal(p.deal, native=native, sides=sides).value_of(k)
    solver = DealSolver(p.deal.hands, p.deal.leader, p.deal.rules(), sides.masks()[k], native=native)
    for card in p.deal.cards[:first]:
        solver.play(card)
    got = []
    for card in p.deal.cards[first:]:
        got.append(solver.value())
        solver.play(card)
    return [*got, solver.value()]


def check_values(p: Played, first: int) -> None:
    """The solver's values from card ``first`` on (both searches) against minimax on the engine."""
    expected = expected_values(p, first)
    name = sides_of(p.start.rules).names[checked_side(p)]
    for native in SEARCHES:
        got = solver_values(p, first, native)
        assert got == expected, (
            f"{p.start.rules.label()} deal {p.start.number} ({p.start.n} cards), side {name}, values from card "
            f"{first + 1}: solver {got}, minimax on the engine {expected} ({'C' if native else 'Python'} search)"
        )


def checked_from(rules: Ruleset, n: int) -> int | None:
    """The first card whose position's values are checked in a deal of ``n`` cards, or ``None``.

    Every position of a deal of up to SMALL cards; in a ruleset with no deal that small (a
    13-card game), the positions of the last LAST_TRICKS tricks of every deal.
    """
    if n <= SMALL:
        return 0
    if min(rules.hand_size(k) for k in range(1, rules.scored_deals + 1)) > SMALL:
        return 4 * (n - LAST_TRICKS)
    return None


@pytest.mark.parametrize("rules", RULESETS, ids=[r.label() for r in RULESETS])
def test_solver_legal_moves_winners_and_values_are_the_engines(rules: Ruleset) -> None:
    valued = 0
    for p in engine_games(rules, GAMES):
        for native in SEARCHES:
            check_play(p, native)
        first = checked_from(rules, p.start.n)
        if first is not None:
            check_values(p, first)
            valued += 1
    assert valued > 0
    claims = checked_claims = 0
    for p in engine_games(rules, GAMES, random_bids=True):
        for native in SEARCHES:
            check_play(p, native)
        assert p.start.contracts is not None
        if not p.start.contracts.board_claimers:
            continue
        claims += 1
        first = checked_from(rules, p.start.n)
        if first is not None:
            check_values(p, first)
            checked_claims += 1
    assert checked_claims > 0 or not claims, "board claims, but none in a deal whose values are checked"

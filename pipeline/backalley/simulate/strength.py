"""Bot strengths: how a player of each level bids, names trump and plays, and the ``--players`` list.

Three levels (docs/metrics.md, "Simulated strengths", has their measured margins):

* ``random``: a uniformly random legal bid, trump and card (the engine's legal moves);
* ``basic``: the bots of bots.py in their player's style (cautious, bold or erratic);
* ``strong``: the basic play without blunders, and a call of the best expected points (the
  ruleset's own scoring) for the tricks its side takes when the deal is played out once with every
  hand in view (double-dummy guidance of the cheapest kind: one play-out of the bots' own play, no
  search).  In a ruleset of rising declarations (``pereulok``) it declares as a basic bot without
  noise.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable
from dataclasses import dataclass

from backalley.cards import cards_of
from backalley.engine import DealState
from backalley.records.fast import PLAYER_PATTERN, nfc, python_pattern
from backalley.rules import PASS, PLAYERS, Bid, Contract
from backalley.simulate.bots import (
    STYLES,
    Player,
    Style,
    choose_bid,
    choose_declaration,
    choose_play,
    choose_trump,
)

#: The levels, weakest first; a player named without one is :data:`DEFAULT_LEVEL`.
LEVELS = ("random", "basic", "strong")
DEFAULT_LEVEL = "basic"
#: The style of a strong player's play and declarations: no noise, no blunders.
STRONG = Style("strong", factor=1.0, bias=0.0, noise=0.0, board_share=1.0, blunder=0.0)
#: A strong bid takes the play-out's tricks give or take ``SPREAD_BASE + SPREAD_PER_CARD × n`` (a
#: normal curve; tried against 0.15 + 0.05n and 0.4 + 0.1n head to head, benchmarks/strengths.py).
SPREAD_BASE, SPREAD_PER_CARD = 0.25, 0.075
#: Play-outs remembered (a dealing's bidders share one); the memo is emptied when full.
MAX_PLAYOUTS = 64
_PLAYOUTS: dict[tuple[str, int, int, tuple[int, ...], tuple[int, ...]], tuple[int, ...]] = {}
_NO_DRAWS = random.Random(0)  # (the basic play without blunders draws nothing)
#: Bounds of the ``--players`` list, and of an entry shown in an error.
MAX_PLAYERS = 1000
SHOWN_CHARS = 80
_PLAYER_ID = re.compile(python_pattern(PLAYER_PATTERN))


@dataclass(frozen=True, slots=True)
class Policy:
    """A level's choices: a bid, the trump a declarer names, a card (``played``: the cards seen so far)."""

    bid: Callable[[DealState, Style, random.Random], Bid]
    trump: Callable[[DealState, random.Random], int]
    play: Callable[[DealState, Style, random.Random, int], int]


class PlayersError(ValueError):
    """A ``--players`` list that cannot be read."""


# --- random ----------------------------------------------------------------------------


def random_bid(st: DealState, style: Style, rng: random.Random) -> Bid:
    return rng.choice(st.legal_bids())


def random_trump(st: DealState, rng: random.Random) -> int:
    return rng.randrange(4)


def random_play(st: DealState, style: Style, rng: random.Random, played: int) -> int:
    return rng.choice(list(cards_of(st.legal_plays())))


# --- strong ----------------------------------------------------------------------------


def playout(st: DealState) -> tuple[int, ...]:
    """Each seat's tricks when the deal is played out once with every hand in view: the basic play
    without blunders for all four, the seat left of the dealer leading (memoised per dealing)."""
    key = (st.rules.label(), st.number, st.dealer, st.dealt, st.stock)
    got = _PLAYOUTS.get(key)
    if got is None:
        if len(_PLAYOUTS) >= MAX_PLAYOUTS:
            _PLAYOUTS.clear()
        got = _PLAYOUTS[key] = _play_once(DealState(st.number, st.dealer, st.dealt, st.stock, st.rules))
    return got


def _play_once(st: DealState) -> tuple[int, ...]:
    """Bid as a stand-in (the first bidder's lowest call above pass, the others pass), then play out."""
    while st.bidding:
        legal = st.legal_bids()
        st.bid(legal[1] if not st.bids and len(legal) > 1 else legal[0])
    if st.naming_trump:
        st.name_trump(choose_trump(st))
    won = [0] * PLAYERS
    played = 0
    while not st.pass_out and len(st.tricks) < st.n:
        card = choose_play(st, STRONG, _NO_DRAWS, played)
        played |= 1 << card
        st.play(card)
        if not st.current:
            lead, cards = st.tricks[-1]
            won[(lead + st.rules.trick_winner(cards, st.trump)) & 3] += 1
    return tuple(won)


def expected_points(st: DealState, contract: Contract, mean: float, spread: float) -> float:
    """A side's expected points for ``contract`` (the ruleset's scoring) when it takes ``mean`` tricks,
    give or take ``spread`` (a normal curve over 0..n)."""
    n = st.n
    weights = [math.exp(-(((t - mean) / spread) ** 2) / 2) for t in range(n + 1)]
    total = sum(weights)
    return sum(w * st.rules.score(contract, t, n) for t, w in enumerate(weights)) / total


def strong_bid(st: DealState, style: Style, rng: random.Random) -> Bid:
    """The call of the best expected points for the side, the tricks taken from :func:`playout`: the
    seat's own, or its side's once the partner has called (pass after a partner's board)."""
    if st.rules.trump_named:
        return choose_declaration(st, STRONG, rng)
    seat, n, rules = st.to_act(), st.n, st.rules
    side = rules.side_of[seat]
    so_far = rules.contracts(tuple(st.bids), n).of(side)
    if so_far.board:
        return PASS
    won = playout(st)
    called = any(rules.side_of[s] == side for s, _ in st.bids)
    mean = sum(won[s] for s in range(PLAYERS) if rules.side_of[s] == side) if called else won[seat]
    spread = SPREAD_BASE + SPREAD_PER_CARD * n
    best: Bid = PASS
    best_points = -math.inf
    for bid in st.legal_bids():
        contract = rules.contracts((*st.bids, (seat, bid)), n).of(side)
        points = expected_points(st, contract, mean, spread)
        if points > best_points:
            best, best_points = bid, points
    return best


def strong_play(st: DealState, style: Style, rng: random.Random, played: int) -> int:
    return choose_play(st, STRONG, rng, played)


def _basic_trump(st: DealState, rng: random.Random) -> int:
    return choose_trump(st)


POLICIES: dict[str, Policy] = {
    "random": Policy(random_bid, random_trump, random_play),
    "basic": Policy(choose_bid, _basic_trump, choose_play),
    "strong": Policy(strong_bid, _basic_trump, strong_play),
}


def policy(player: Player) -> Policy:
    return POLICIES[player.level]


# --- the --players list ------------------------------------------------------------------


def parse_players(text: str) -> list[Player]:
    """``"Ada:strong,Bo:random,Cy"``: each name with its level (default basic); styles rotate as in
    :func:`~backalley.simulate.bots.player_pool`.  Raises :class:`PlayersError` naming the entry."""
    entries = text.split(",")
    if len(entries) > MAX_PLAYERS:
        raise PlayersError(f"{len(entries)} players; at most {MAX_PLAYERS}")
    out: list[Player] = []
    seen: set[str] = set()
    for i, entry in enumerate(entries, 1):
        name, colon, level = entry.strip().rpartition(":")
        name, level = (name.strip(), level.strip()) if colon else (level.strip(), DEFAULT_LEVEL)
        shown = entry.strip() if len(entry.strip()) <= SHOWN_CHARS else entry.strip()[:SHOWN_CHARS] + "…"
        where = f"player {i} ({shown!r})"
        if not name:
            raise PlayersError(f"{where}: the name is empty")
        if not _PLAYER_ID.match(name):
            raise PlayersError(f"{where}: a player id is 1-64 characters, none of them a control character")
        if level not in LEVELS:
            raise PlayersError(f"{where}: unknown level {level!r}; the levels are {', '.join(LEVELS)}")
        if nfc(name) in seen:
            raise PlayersError(f"{where}: {name!r} is named twice")
        seen.add(nfc(name))
        out.append(Player(name, STYLES[(i - 1) % len(STYLES)], level))
    if len(out) < 4:
        raise PlayersError(f"{len(out)} player{'s' if len(out) != 1 else ''}; a game needs at least 4")
    return out

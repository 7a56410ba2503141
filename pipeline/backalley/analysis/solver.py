"""Double-dummy solver: the tricks a side takes when everyone sees every hand.

A position is four hands (int bitmasks of the cards still held), the seat on
lead, the cards already played to the current trick and whether trump is
broken.  :class:`DealSolver` answers "can the side win at least ``t`` of the
remaining tricks?" by a null-window alpha-beta search (the side's seats are
the maximiser), and finds the exact value by bisecting ``t``, or stepping it a
trick at a time from a guess (as DDS does).

Prunings, each switchable through :class:`Pruning` (the correctness tests
compare every combination with a plain minimax):

* ``tt``: a transposition table at trick boundaries keyed by the remaining
  cards and the leader (the hands are a fixed partition of the deal, so the
  union of the remaining cards says who holds what, and whether trump is
  broken), holding a lower and an upper bound on the side's tricks;
* ``equivalence``: cards of one hand that are adjacent in rank among the
  cards not yet played (the current trick's cards count as not played) are
  one move; a card whose lead has a rule of its own (a Blooper) never merges;
* ``quick_tricks``: sure tricks at trick boundaries for either side (the top
  trumps, whoever leads; the leader's top cards when nobody else can ruff);
* ``ordering``: the move that refuted a position last time first, then
  heuristics (win cheaply, else play low).

Every rule the search needs comes from :class:`SolverRules`, the one place
that adapts :mod:`backalley.rules` to the solver.

The same search runs in C (``_ddcore.c``) when setup.py has built it
(:data:`NATIVE`): :meth:`SolverRules.tables` hands it every rule as tables,
and its transposition table goes further, as DDS's partition search does (an
entry serves every position whose relevant top cards have the same holders;
a quick-trick cutoff pins only the cards its count rests on).  Its quick
tricks also count a partner's top cards that the leader reaches with a low
card of their suit, and its trump count knows ranks (a hand's top trumps less
only the other side's trumps above them); its ordering knows ruffs (a suit an
opponent can ruff is led last, one the partner can ruff early; a follower
overtakes a partner's card that an opponent still to play could beat).
The Python search here is the reference: the tests compare the two.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from backalley.cards import CARD_NAMES, NUM_CARDS, SEATS, highest
from backalley.rules import STANDARD, Contracts, Ruleset
from backalley.rules.base import FREE, HIGHEST_TRUMP, LOWEST_TRUMP


def _load_core() -> Any:
    """The C search (setup.py builds it unless BACKALLEY_PURE_PYTHON=1 or the C build fails), or None."""
    if os.environ.get("BACKALLEY_PURE_PYTHON") == "1":
        return None
    try:
        from backalley.analysis import _ddcore
    except ImportError:  # pragma: no cover - depends on the build
        return None
    return _ddcore


_DDCORE: Any = _load_core()
#: Whether :class:`DealSolver` searches in C by default (same values as the Python search, faster).
NATIVE = _DDCORE is not None


class IllegalPlayError(ValueError):
    """A card the search's rules do not allow where it was played (the search cannot follow the play)."""


# Not ``frozen``: a frozen dataclass compiled by mypyc cannot be unpickled (analysis workers get these).
@dataclass(slots=True)
class SolverRules:
    """The play rules of one deal, as the search asks for them, all from the deal's ruleset.

    The search never looks at a rule anywhere else, and this class decides none:
    the Python search asks the ruleset's own methods (those the engine and the
    replay ask), the C search its fast tables (:attr:`Ruleset.tables`, those the
    replay's hot loop reads).  Who may lead trump while it is unbroken is the
    ruleset's answer for the deal's bidding (:attr:`Contracts.lead_exempt`), so a
    house option reaches the search with no change here.
    """

    trump: int
    #: Seats that may lead trump while it is unbroken (bitmask): the deal's ``Contracts.lead_exempt``.
    lead_exempt: int
    #: The record's ruleset with its options.
    ruleset: Ruleset = STANDARD

    @classmethod
    def of(cls, ruleset: Ruleset, trump: int, contracts: Contracts) -> SolverRules:
        """The rules of a deal played with ``trump`` after a bidding that ended in ``contracts``."""
        return cls(trump, contracts.lead_exempt, ruleset)

    def leads(self, hand: int, broken: bool, seat: int) -> int:
        return self.ruleset.legal_leads(hand, self.trump, broken, bool(self.lead_exempt >> seat & 1))

    def follows(self, hand: int, led: int, pos: int) -> int:
        """The cards the follower at ``pos`` (1..3 after the leader) may play."""
        return self.ruleset.legal_follows(hand, led, self.trump, pos)

    def winner(self, cards: Sequence[int]) -> int:
        """Position (0 = leader) of the card that wins a complete trick."""
        return self.ruleset.trick_winner(cards, self.trump)

    def breaks(self, cards: Sequence[int]) -> bool:
        """Whether a complete trick breaks trump."""
        return self.ruleset.breaks_trump(cards, self.trump)

    def trumps(self) -> int:
        """Every trump card (jokers included), 0 in a no-trump deal."""
        return self.ruleset.tables.trump_mask[self.trump]

    def suit_of(self, card: int) -> int:
        """The cards that share ``card``'s suit for following (inside it, a higher index ranks higher)."""
        return self.ruleset.tables.follow_by_led[self.trump][card]

    def special_lead(self, card: int) -> bool:
        """A card whose lead obeys a rule of its own (a Blooper): never equivalent to another."""
        return self.ruleset.tables.special_lead[self.trump][card]

    def tables(self) -> dict[str, Any]:
        """The rules as the C search takes them (see ``_ddcore.c``): the ruleset's fast tables (memoised)."""
        key = (self.ruleset.label(), self.trump << 4 | self.lead_exempt)
        got = _TABLES.get(key)
        if got is None or got[0] is not self.ruleset:
            got = _TABLES[key] = (self.ruleset, self._build_tables())
        return got[1]

    def _build_tables(self) -> dict[str, Any]:
        """Each of ``_ddcore.c``'s tables, read off :class:`FastTables` for this trump (no rule decided here)."""
        tab, t = self.ruleset.tables, self.trump
        forced_code = {FREE: 0, HIGHEST_TRUMP: 1, LOWEST_TRUMP: 2}
        return {
            "exempt": self.lead_exempt,
            "follow": list(tab.follow_by_led[t]),
            "forced": [forced_code[tab.forced_by_led[t][c][pos]] for pos in (1, 2, 3) for c in range(NUM_CARDS)],
            "forced_pool": tab.trump_mask[t],
            "winkey": [key for row in tab.win_key_by_led[t] for key in row],
            "lead_block": tab.lead_block[t],
            "breaks": tab.breaks[t],
            "suit": list(tab.follow_by_led[t]),
            "special": sum(1 << c for c, special in enumerate(tab.special_lead[t]) if special),
            "trumps": tab.trump_mask[t],
        }


#: :meth:`SolverRules.tables` by ruleset label, trump and exempt seats (80 entries a ruleset at most), with
#: the ruleset they were read from (a test's ruleset may share a label).
_TABLES: dict[tuple[str, int], tuple[Ruleset, dict[str, Any]]] = {}


@dataclass(slots=True)
class Pruning:
    """Which search enhancements are on (all by default; the tests switch them off one by one).

    Treat as immutable (not ``frozen`` only because mypyc could not unpickle it then).
    """

    tt: bool = True
    equivalence: bool = True
    quick_tricks: bool = True
    ordering: bool = True


ALL_PRUNING = Pruning()


class DealSolver:
    """Double-dummy values of one deal for one side, from the current position.

    ``hands`` are the four hands (after any joker swap) at the start of the
    play, ``leader`` the opening leader, ``side`` the maximising seats as a
    bitmask (``0b0101`` for NS, ``0b1010`` for EW, one bit without
    partnerships).  :meth:`play` advances the position by one card, so the
    values before and after every card of a recorded play come from one
    solver whose transposition table serves all of them.
    """

    def __init__(
        self,
        hands: Sequence[int],
        leader: int,
        rules_: SolverRules,
        side: int,
        pruning: Pruning = ALL_PRUNING,
        native: bool | None = None,
    ) -> None:
        """``native``: search in C (``None``: when it is built); the values are the same either way."""
        self.rules = rules_
        self.trump_mask = rules_.trumps()
        self.side = side
        self.pruning = pruning
        self.hands = list(hands)
        self.start_size = self.hands[leader].bit_count()
        self.remaining = 0
        self.owner = [-1] * NUM_CARDS
        for seat, hand in enumerate(self.hands):
            self.remaining |= hand
            for c in range(NUM_CARDS):
                if hand >> c & 1:
                    self.owner[c] = seat
        self.initial_trumps = self.remaining & self.trump_mask
        self.suit_masks = _suit_masks(rules_, self.remaining)
        self.groups = sorted(set(m for m in self.suit_masks if m))
        self.plain_groups = [g for g in self.groups if not g & self.trump_mask]
        self.special = 0
        for c in range(NUM_CARDS):
            if self.remaining >> c & 1 and rules_.special_lead(c):
                self.special |= 1 << c
        self.leader = leader
        self.trick: list[int] = []
        self.broken = False
        self.won = 0  # tricks the side has won so far
        #: Bounds on the side's tricks from a trick boundary, packed ``lo << 8 | hi`` (ints, not tuples:
        #: millions of tuples would keep the cyclic GC busy).
        self.tt: dict[int, int] = {}
        self.best: dict[int, int] = {}
        self.nodes = 0
        self.core: Any = None
        if native or (native is None and NATIVE):
            self.core = _new_core(self.hands, rules_, side, pruning)

    # -- the position --------------------------------------------------------------------

    def to_play(self) -> int:
        return (self.leader + len(self.trick)) & 3

    def tricks_done(self) -> int:
        """Tricks complete so far."""
        return self.start_size - self.hands[self.leader].bit_count() - (1 if self.trick else 0)

    def tricks_left(self) -> int:
        """Tricks not yet complete (the current one included): the cards of the player to act."""
        return self.hands[self.to_play()].bit_count()

    def legal(self) -> int:
        """The cards the player to act may play, as a bitmask (the C search's, when it searches)."""
        if self.core is not None:
            return int(self.core.legal(self.hands, self.leader, self.trick, self.broken))
        seat = self.to_play()
        hand = self.hands[seat]
        if self.trick:
            return self.rules.follows(hand, self.trick[0], len(self.trick))
        return self.rules.leads(hand, self.broken, seat)

    def play(self, card: int) -> int | None:
        """Play ``card`` for the player to act; returns the trick's winning seat when it completes it.

        Raises :class:`IllegalPlayError` when the search's rules do not allow the card.
        """
        seat = self.to_play()
        if not 0 <= card < NUM_CARDS or not self.legal() >> card & 1:
            name = CARD_NAMES[card] if 0 <= card < NUM_CARDS else str(card)
            raise IllegalPlayError(
                f"{SEATS[seat]}'s {name} at trick {self.tricks_done() + 1} is not a legal play"
                f" by the search's rules ({self.rules.ruleset.label()})"
            )
        self.hands[seat] &= ~(1 << card)
        self.remaining &= ~(1 << card)
        self.trick.append(card)
        if len(self.trick) < 4:
            return None
        position = int(self.core.winner(self.trick)) if self.core is not None else self.rules.winner(self.trick)
        winner = (self.leader + position) & 3
        self.won += self.side >> winner & 1
        self.broken = self.broken or self.rules.breaks(self.trick)
        self.leader = winner
        self.trick = []
        return winner

    # -- values --------------------------------------------------------------------------

    def value(self, guess: int | None = None) -> int:
        """The side's tricks in the whole deal (won so far plus the best it can force from here).

        ``guess``: the side's expected tricks in the whole deal (the tricks it took in the
        recorded play, say), or ``None``.  Without one the Python search bisects the count and
        the C search guesses the tricks of a playout (every seat playing the first card its
        ordering tries); from a guess they step a trick at a time, which costs two searches when
        the guess is right and never a search far above the value.  The value is the same either way.
        """
        rest = -1 if guess is None else max(0, guess - self.won)
        if self.core is not None:
            lo = self.core.value(self.hands, self.leader, self.trick, self.broken, rest)
            self.nodes = self.core.nodes
            return self.won + int(lo)
        lo, hi = 0, self.tricks_left()
        bounds = self.tt.get(self._rel_key()) if not self.trick and self.pruning.tt else None
        if bounds is not None:
            lo, hi = bounds >> 8, bounds & 255
        if rest >= 0:
            return self.won + self._step(lo, hi, rest)
        while lo < hi:
            target = (lo + hi + 1) // 2
            if self.at_least(target):
                lo = target
            else:
                hi = target - 1
        return self.won + lo

    def _step(self, lo: int, hi: int, target: int) -> int:
        """The remaining tricks' value in ``lo..hi``, searching from ``target`` one trick at a time."""
        while lo < hi:
            target = min(max(target, lo + 1), hi)
            if self.at_least(target):
                lo = target
                target = lo + 1
            else:
                hi = target - 1
                target = hi
        return lo

    def value_from(self, known: int, rising: bool) -> int:
        """:meth:`value`, knowing it is at least ``known`` (``rising``) or at most ``known``.

        After a card, the side's value cannot have moved against the player who
        played it: it did not rise after the side's own card, nor fall after an
        opponent's.  Most cards cost nothing, so one search usually settles it.
        """
        lo, hi = self.won, self.won + self.tricks_left()
        if rising:
            lo = max(lo, known)
            if lo >= hi or not self.at_least(lo + 1 - self.won):
                return lo
            lo += 1
        else:
            hi = min(hi, known)
            if hi <= lo or self.at_least(hi - self.won):
                return hi
            hi -= 1
        while lo < hi:
            target = (lo + hi + 1) // 2
            if self.at_least(target - self.won):
                lo = target
            else:
                hi = target - 1
        return lo

    def profile(self) -> dict[str, int]:
        """Search nodes so far and, in C, how the trick boundaries among them were settled (for the benchmark)."""
        if self.core is not None:
            return dict(self.core.profile)
        return {"nodes": self.nodes}

    def at_least(self, target: int) -> bool:
        """Whether the side can win ``target`` or more of the remaining tricks."""
        if self.core is not None:
            result = bool(self.core.at_least(self.hands, self.leader, self.trick, self.broken, target))
            self.nodes = self.core.nodes
            return result
        return self._node(target)

    # -- the search -----------------------------------------------------------------------

    def _rel_key(self) -> int:
        """The transposition key of a trick boundary: only the relative ranks of the cards matter.

        Per suit, which hand holds each remaining card in rank order (cards played
        in between close up); the jokers and every card whose lead has a rule of its
        own (pereulok's lowest trump) keep their identity, trump's state and the
        leader complete it.
        """
        remaining = self.remaining
        h0, h1, h2 = self.hands[0], self.hands[1], self.hands[2]
        key = (remaining & self.special) << 2 | remaining >> 52
        key = key << 1 | self.broken
        key = key << 2 | self.leader
        pack = _pack
        for group in self.groups:
            rest = remaining & group
            key = key << 4 | rest.bit_count()
            key = key << 15 | pack(h0 & rest, rest)
            key = key << 15 | pack(h1 & rest, rest)
            key = key << 15 | pack(h2 & rest, rest)
        return key

    def _node(self, target: int) -> bool:
        self.nodes += 1
        trick = self.trick
        if not trick:
            return self._boundary(target)
        seat = (self.leader + len(trick)) & 3
        moves = self.rules.follows(self.hands[seat], trick[0], len(trick))
        return self._try(seat, self._order(seat, moves), target)

    def _boundary(self, target: int) -> bool:
        left = self.hands[self.leader].bit_count()
        if target <= 0:
            return True
        if target > left:
            return False
        pruning = self.pruning
        key = self.remaining << 2 | self.leader
        tt_key = self._rel_key() if pruning.tt else 0
        if pruning.tt:
            bounds = self.tt.get(tt_key)
            if bounds is not None:
                if bounds >> 8 >= target:
                    return True
                if bounds & 255 < target:
                    return False
        if pruning.quick_tricks:
            mine, theirs = self._sure_tricks()
            if mine >= target:
                return True
            if left - theirs < target:
                return False
        seat = self.leader
        moves = self.rules.leads(self.hands[seat], self.broken, seat)
        order = self._order(seat, moves)
        if pruning.ordering:
            hint = self.best.get(key)
            if hint is not None and hint in order:
                order.remove(hint)
                order.insert(0, hint)
        result = self._try(seat, order, target)
        if pruning.tt:
            bounds = self.tt.get(tt_key, left)
            lo, hi = bounds >> 8, bounds & 255
            self.tt[tt_key] = max(lo, target) << 8 | hi if result else lo << 8 | min(hi, target - 1)
        return result

    def _try(self, seat: int, order: list[int], target: int) -> bool:
        """Try each move; the side wants one success, the others one failure."""
        mine = bool(self.side >> seat & 1)
        for card in order:
            if self._child(seat, card, target) == mine:
                if not self.trick and self.pruning.ordering:
                    self.best[self.remaining << 2 | self.leader] = card
                return mine
        return not mine

    def _child(self, seat: int, card: int, target: int) -> bool:
        bit = 1 << card
        hands = self.hands
        hands[seat] ^= bit
        self.remaining ^= bit
        trick = self.trick
        trick.append(card)
        if len(trick) < 4:
            result = self._node(target)
            trick.pop()
        else:
            leader, broken = self.leader, self.broken
            winner = (leader + self.rules.winner(trick)) & 3
            self.trick = []
            self.leader = winner
            self.broken = broken or self.rules.breaks(trick)
            result = self._node(target - (self.side >> winner & 1))
            self.trick, self.leader, self.broken = trick, leader, broken
            trick.pop()
        hands[seat] ^= bit
        self.remaining ^= bit
        return result

    # -- move generation ---------------------------------------------------------------------

    def _order(self, seat: int, moves: int) -> list[int]:
        """The moves worth trying, best guess first (one card per class of equivalent cards)."""
        cards = self._classes(moves) if self.pruning.equivalence else _cards_high_first(moves)
        if not self.pruning.ordering or len(cards) < 2:
            return cards
        trick = self.trick
        if not trick:
            return self._lead_order(seat, cards)
        # A follower: the cheapest card that takes the trick for the side, else the lowest.
        winning = self._winning_cards(cards)
        low_first = cards[::-1]
        if not winning:
            return low_first
        partner_ahead = self._side_winning_now()
        if partner_ahead:
            return low_first
        cheapest = winning[-1]
        low_first.remove(cheapest)
        return [cheapest, *low_first]

    def _lead_order(self, seat: int, cards: list[int]) -> list[int]:
        """Leads: cash a suit's top card first, then lead low towards the partner's top card, then low."""
        remaining = self.remaining
        owner = self.owner
        mine = self.side >> seat & 1
        cash: list[int] = []
        to_partner: list[int] = []
        rest: list[int] = []
        for c in cards:
            top = owner[highest(remaining & self.suit_masks[c])]
            if top == seat:
                cash.append(c)
            elif self.side >> top & 1 == mine:
                to_partner.append(c)
            else:
                rest.append(c)
        return cash + to_partner[::-1] + rest[::-1]

    def _classes(self, moves: int) -> list[int]:
        """The highest card of each run of ``moves`` adjacent among the unplayed cards."""
        present = self.remaining
        for c in self.trick:
            present |= 1 << c
        out: list[int] = []
        special = self.special
        m = moves
        while m:
            c = m.bit_length() - 1
            bit = 1 << c
            m ^= bit
            out.append(c)
            if special & bit:
                continue
            # skip the lower cards of this hand's run: the next present card below must be a legal move
            suit = self.suit_masks[c]
            while True:
                below = present & suit & (bit - 1)
                if not below:
                    break
                nxt = 1 << (below.bit_length() - 1)
                if not (m & nxt) or special & nxt:
                    break
                m ^= nxt
                bit = nxt
        return out

    def _winning_cards(self, cards: list[int]) -> list[int]:
        """Those of ``cards`` (high first) that would be winning the trick if played now."""
        trick = self.trick
        out = []
        for c in cards:
            probe = [*trick, c]
            if self.rules.winner(probe) == len(trick):
                out.append(c)
        return out

    def _side_winning_now(self) -> bool:
        trick = self.trick
        pos = self.rules.winner(trick)
        seat = (self.leader + pos) & 3
        return bool(self.side >> seat & 1) == bool(self.side >> self.to_play() & 1)

    # -- quick tricks --------------------------------------------------------------------------

    def _sure_tricks(self) -> tuple[int, int]:
        """Tricks the side and the other seats are each sure of, at a trick boundary.

        The leader's cashing tricks hold no trump, so they add to its side's top-trump tricks.
        """
        sure = [0, 0]  # [side, others]
        trumps = self.remaining & self.trump_mask
        if trumps:
            _top_trumps(self, trumps, sure)
        sure[0 if self.side >> self.leader & 1 else 1] += self._cashable()
        left = self.hands[self.leader].bit_count()
        return min(sure[0], left), min(sure[1], left)

    def _cashable(self) -> int:
        """Tricks the leader takes by leading its top cards of the plain suits, one after another.

        A round of a suit is safe while every opponent who holds a trump still holds
        a card of the suit (so follows it), and while each partner who holds a trump
        can still play a plain card (so need not overtake with one).
        """
        leader = self.leader
        hands = self.hands
        hand = hands[leader]
        tm = self.trump_mask
        team = self.side if self.side >> leader & 1 else ~self.side & 15
        others = self.remaining & ~hand
        limit = 13
        for seat in range(4):
            if seat != leader and team >> seat & 1 and hands[seat] & tm:
                limit = min(limit, (hands[seat] & ~tm).bit_count())
        total = 0
        for suit in self.plain_groups:
            held = hand & suit
            if not held:
                continue
            rest = others & suit
            top = (held >> rest.bit_length()).bit_count() if rest else held.bit_count()
            for seat in range(4):
                if top and not team >> seat & 1 and hands[seat] & tm:
                    top = min(top, (hands[seat] & suit).bit_count())
            total += top
        return min(total, limit)


def _top_trumps(solver: DealSolver, trumps: int, sure: list[int]) -> None:
    """The top trumps held by one side each win the trick they fall in (two at most a trick per partnership)."""
    owner = solver.owner
    side = solver.side
    first = owner[highest(trumps)]
    mine = bool(side >> first & 1)
    per_seat = [0, 0, 0, 0]
    run = 0
    while trumps:
        c = trumps.bit_length() - 1
        seat = owner[c]
        if bool(side >> seat & 1) != mine:
            break
        per_seat[seat] += 1
        run += 1
        trumps ^= 1 << c
    team = side if mine else ~side & 15
    players = team.bit_count()
    count = max(max(per_seat), -(-run // players))
    index = 0 if mine else 1
    if count > sure[index]:
        sure[index] = count


def _new_core(hands: Sequence[int], rules_: SolverRules, side: int, pruning: Pruning) -> Any:
    """The C search for one deal; its transposition table grows with the hand size."""
    flags = pruning.tt | pruning.equivalence << 1 | pruning.quick_tricks << 2 | pruning.ordering << 3
    n = max(hand.bit_count() for hand in hands)
    tt_bits = max(6, min(18, n + 6))
    return _DDCORE.Core(hands=list(hands), side=side, flags=flags, tt_bits=tt_bits, **rules_.tables())


_PACKED: dict[int, int] = {}


def _pack(cards: int, among: int) -> int:
    """The bits of ``cards`` at the positions of ``among``'s set bits, packed low (``cards`` within ``among``)."""
    key = among << 54 | cards  # an int key: ints are not tracked by the cyclic GC, tuples are
    packed = _PACKED.get(key)
    if packed is None:
        packed = 0
        i = 0
        m = among
        while m:
            low = m & -m
            if cards & low:
                packed |= 1 << i
            i += 1
            m ^= low
        if len(_PACKED) > 1 << 20:
            _PACKED.clear()
        _PACKED[key] = packed
    return packed


def _cards_high_first(mask: int) -> list[int]:
    out = []
    while mask:
        c = mask.bit_length() - 1
        out.append(c)
        mask ^= 1 << c
    return out


def _suit_masks(rules_: SolverRules, cards: int) -> list[int]:
    """``suit_masks[c]``: the cards of ``c``'s suit (for every card in the deal, else 0)."""
    out = [0] * NUM_CARDS
    for c in range(NUM_CARDS):
        if cards >> c & 1:
            out[c] = rules_.suit_of(c)
    return out

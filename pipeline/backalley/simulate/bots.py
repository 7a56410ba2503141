"""The bots: a pool of named players in three styles, and how each bids, names trump and plays.

Every choice is drawn from the ``random.Random`` it is given, so the same seed gives the same game.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from backalley.cards import LJ, NO_TRUMP, SUIT_MASK, cards_of
from backalley.engine import DealState
from backalley.rules import BOARD, PASS, STANDARD, Bid, Ruleset

#: Player names of the pool, in order; a pool larger than this list adds a number.
NAMES = (
    "Ada",
    "Bálint",
    "Chiara",
    "Dmitri",
    "Eun-ji",
    "Farida",
    "Gábor",
    "Hana",
    "Ilka",
    "Jonas",
    "Kavya",
    "Luca",
    "Marta",
    "Сергей",
    "सुनीता",
    "សុខា",
    "Olga",
    "Pedro",
    "陈静",
    "Rasmus",
    "Ζωή",
    "Tariq",
    "Ulla",
    "Vikram",
    "Wanjiru",
    "Xu Ming",
    "Yara",
    "Zsófia",
    "Анна",
    "राहुल",
    "ដារ៉ា",
    "Noa",
)


# --- players and styles ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Style:
    """How a bot bids and plays."""

    name: str
    #: Numeric bid = round(estimate * factor + bias + noise).
    factor: float
    bias: float
    #: Standard deviation of the noise on the estimate.
    noise: float
    #: Claim board when the estimate reaches this share of the hand size.
    board_share: float
    #: Chance of playing a random legal card instead of the planned one.
    blunder: float


CAUTIOUS = Style("cautious", factor=0.85, bias=-0.2, noise=0.25, board_share=0.97, blunder=0.0)
BOLD = Style("bold", factor=1.15, bias=0.6, noise=0.4, board_share=0.72, blunder=0.03)
ERRATIC = Style("erratic", factor=1.0, bias=0.0, noise=1.2, board_share=0.9, blunder=0.2)
STYLES: tuple[Style, ...] = (CAUTIOUS, BOLD, ERRATIC)


@dataclass(frozen=True, slots=True)
class Player:
    name: str
    style: Style
    #: The player's strength (strength.py: ``random``, ``basic`` or ``strong``).
    level: str = "basic"


def player_pool(k: int) -> list[Player]:
    """``k`` players with distinct deterministic names; styles rotate cautious, bold, erratic."""
    out: list[Player] = []
    for i in range(k):
        name = NAMES[i % len(NAMES)]
        if i >= len(NAMES):
            name = f"{name} {i // len(NAMES) + 1}"
        out.append(Player(name, STYLES[i % len(STYLES)]))
    return out


# --- bidding ---------------------------------------------------------------------------

#: Trick value of a trump by rank (0 = two .. 12 = ace, 13 = LJ, 14 = BJ).
_TRUMP_VALUE = (0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.35, 0.45, 0.6, 0.75, 0.9, 0.95, 1.0)


def estimate(hand: int, trump: int, rules: Ruleset = STANDARD) -> float:
    """Expected tricks of a hand: trumps, jokers, aces and guarded kings and queens."""
    tmask = rules.trump_mask(trump)
    est = 0.0
    for c in cards_of(hand & tmask):
        est += _TRUMP_VALUE[c - 39 if c >= LJ else c % 13]
    trumps = (hand & tmask).bit_count()
    for s in range(4):
        if s == trump:
            continue
        suit = hand & SUIT_MASK[s]
        length = suit.bit_count()
        if not length:
            # A void lets a trump ruff.
            est += 0.25 if trumps >= 2 else 0.0
            continue
        top = suit.bit_length() - 1 - 13 * s
        if top == 12:
            est += 0.85 if length <= 5 else 0.7
            second = (suit & ~(1 << (13 * s + 12))).bit_length() - 1 - 13 * s
            if second == 11:
                est += 0.5
        elif top == 11:
            est += 0.5 if length >= 2 else 0.15
        elif top == 10 and length >= 3:
            est += 0.2
    return est


def choose_trump(st: DealState) -> int:
    """The declarer names the suit in which its hand is strongest."""
    assert st.contracts is not None and st.contracts.opening_leader is not None
    hand = st.hands[st.contracts.opening_leader]
    return max(range(4), key=lambda suit: (estimate(hand, suit, st.rules), suit))


def choose_declaration(st: DealState, style: Style, rng: random.Random) -> Bid:
    """A bot's call in a rising auction: its team's tricks (its hand's, doubled for the partner), as
    an exact double/triple/quadruple of the previous declaration when one is in reach, else the
    lowest overcall in reach, else pass."""
    seat = st.to_act()
    est = max(estimate(st.hands[seat], suit, st.rules) for suit in range(4))
    team = 2.0 if len(st.rules.sides) == 2 else 1.0
    reach = round((est * team) * style.factor + style.bias + rng.gauss(0.0, style.noise))
    numbers = [b for b in st.legal_bids() if isinstance(b, int) and b <= reach]
    if not numbers:
        return PASS
    last = max((b for _, b in st.bids if isinstance(b, int)), default=0)
    doubles = [b for b in numbers if last and b in (2 * last, 3 * last, 4 * last)]
    return max(doubles) if doubles else min(numbers)


def choose_bid(st: DealState, style: Style, rng: random.Random) -> Bid:
    """A bot's bid from the strength of its hand (after the joker swap)."""
    if st.rules.trump_named:
        return choose_declaration(st, style, rng)
    seat = st.to_act()
    n = st.n
    est = estimate(st.hands[seat], st.trump, st.rules)
    noisy = est + rng.gauss(0.0, style.noise)
    partner = (seat + 2) & 3
    partner_board = len(st.rules.sides) == 2 and any(s == partner and is_board(b) for s, b in st.bids)
    # A board is a considered claim: only a third of the noise reaches it.
    if est + (noisy - est) / 3 >= style.board_share * n and (not partner_board or style == BOLD):
        return fit_bid(st, BOARD)
    if partner_board:
        return PASS
    b = round(noisy * style.factor + style.bias)
    if b < 1:
        return PASS
    return fit_bid(st, min(b, n - 1)) if n > 1 else PASS


def is_board(bid: Bid) -> bool:
    """A board claim (or, in bab-online, a bore of any level)."""
    return isinstance(bid, str) and bid != PASS


def fit_bid(st: DealState, bid: Bid) -> Bid:
    """The bot's wish as a legal call: a board becomes the next bore level, a number the largest allowed."""
    legal = st.legal_bids()
    if bid in legal:
        return bid
    if is_board(bid):
        return next((b for b in legal if is_board(b)), PASS)
    assert isinstance(bid, int)
    return max((b for b in legal if isinstance(b, int) and b <= bid), default=PASS)


# --- play ------------------------------------------------------------------------------


def card_cost(card: int, trump: int, rules: Ruleset) -> int:
    """How much a card is worth keeping: side cards by rank, trumps above them."""
    if rules.is_trump(card, trump):
        return 20 + (card - 39 if card >= LJ else card % 13)
    return card % 13


def cheapest(mask: int, trump: int, rules: Ruleset) -> int:
    best = -1
    best_cost = 99
    for c in cards_of(mask):
        k = card_cost(c, trump, rules)
        if k < best_cost:
            best, best_cost = c, k
    return best


def is_boss(card: int, trump: int, gone: int, rules: Ruleset) -> bool:
    """No card outside ``gone`` (played, or in our hand) of the card's suit ranks above it."""
    above = ~((1 << (card + 1)) - 1)
    suit = rules.suit_of(card, trump)
    if suit == trump:
        higher = rules.trump_mask(trump) & above
    elif suit < NO_TRUMP:
        higher = SUIT_MASK[suit] & above
    else:
        higher = 0
    return not higher & ~gone


def choose_play(st: DealState, style: Style, rng: random.Random, played: int) -> int:
    """A bot's card: lead bosses (trumps first on a board), win cheaply, else throw the cheapest."""
    legal = st.legal_plays()
    if not legal & (legal - 1):
        return legal.bit_length() - 1
    if style.blunder and rng.random() < style.blunder:
        return rng.choice(list(cards_of(legal)))
    gone = played | st.hands[st.to_act()]
    return _follow(st, legal, gone) if st.current else _lead(st, legal, gone)


def _lead(st: DealState, legal: int, gone: int) -> int:
    """The lead: the top trump when the side claimed a board, else a boss, else the cheapest side card."""
    trump = st.trump
    rules = st.rules
    tmask = rules.trump_mask(trump)
    assert st.contracts is not None
    mine = st.contracts.of(rules.side_of[st.to_act()])
    trumps = legal & tmask
    if mine.board and trumps and tmask & ~gone:
        return trumps.bit_length() - 1
    bosses = [c for c in cards_of(legal) if is_boss(c, trump, gone, rules)]
    if bosses:
        # Prefer a side-suit boss; a trump boss only when trumps are out there.
        side = [c for c in bosses if not rules.is_trump(c, trump)]
        if side:
            return side[-1]
        if tmask & ~gone:
            return bosses[-1]
    side_legal = legal & ~tmask
    return cheapest(side_legal or legal, trump, rules)


def _follow(st: DealState, legal: int, gone: int) -> int:
    """A follower's card: the cheapest when the partner wins safely, else the cheapest that wins, else the cheapest."""
    trump = st.trump
    rules = st.rules
    cur = st.current
    pos = len(cur)
    win = rules.trick_winner(cur, trump)
    assert st.contracts is not None
    if (
        len(rules.sides) == 2
        and pos - win == 2
        and (
            pos == 3
            or not st.contracts.of(st.to_act() & 1).board
            or is_boss(cur[win], trump, gone | (1 << cur[win]), rules)
        )
    ):
        # Partner is winning: do not overtake (unless a board needs it safe).
        return cheapest(legal, trump, rules)
    best = -1
    best_cost = 99
    for c in cards_of(legal):
        if rules.trick_winner([*cur, c], trump) == pos:
            k = card_cost(c, trump, rules)
            if k < best_cost:
                best, best_cost = c, k
    return best if best >= 0 else cheapest(legal, trump, rules)

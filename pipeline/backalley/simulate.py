"""Simulated games: bots of a few styles play complete, legal games; optional injected faults.

A pool of named players, each with a :class:`Style`, plays games of 25 scored
deals through :class:`~backalley.engine.DealState` (so every bid and card is
legal by construction).  Pass-outs are recorded and redealt by the next dealer.
Everything is drawn from ``random.Random`` instances seeded from the given
seed, so the same seed gives the same bytes.

With a fault rate, a share of the games gets exactly one *injected* fault: the
record is altered the way a careless scorer or a broken exporter would alter it
(a swapped card, a wrong leader, a bad sum, a truncated line, ...), so that the
validator reports that fault's code (possibly among others that it causes).
Which game got which fault is written nowhere in the record.
"""

from __future__ import annotations

import copy
import os
import random
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from backalley.cards import (
    BJ,
    CARD_INDEX,
    CARD_NAMES,
    CARD_SUIT,
    LJ,
    NO_TRUMP,
    NUM_CARDS,
    SEATS,
    SUIT_MASK,
    cards_of,
    mask_of,
)
from backalley.engine import DealState
from backalley.records.sheets import is_csv, sheet_csv
from backalley.replay import CODES, SHEET_TRUMP, replay
from backalley.rules import BOARD, PASS, STANDARD, Bid, Ruleset, find_ruleset
from backalley.rules.base import FREE
from backalley.workers import WorkerDied, guarded, pool_context, pool_errors

Record = dict[str, Any]

#: Every code of docs/record-format.md that :func:`inject_fault` (or :func:`corrupt_json`) can put into one record.
FAULT_CODES: tuple[str, ...] = CODES  # every one of them can be injected

EVENTS = ("Thursday Club", "Kitchen Table League", "Spring Open 2026", "Online Ladder", "Harbour Pub Night")

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
    partner_board = len(st.rules.sides) == 2 and any(s == partner and _is_board(b) for s, b in st.bids)
    # A board is a considered claim: only a third of the noise reaches it.
    if est + (noisy - est) / 3 >= style.board_share * n and (not partner_board or style == BOLD):
        return _fit_bid(st, BOARD)
    if partner_board:
        return PASS
    b = round(noisy * style.factor + style.bias)
    if b < 1:
        return PASS
    return _fit_bid(st, min(b, n - 1)) if n > 1 else PASS


def _is_board(bid: Bid) -> bool:
    """A board claim (or, in bab-online, a bore of any level)."""
    return isinstance(bid, str) and bid != PASS


def _fit_bid(st: DealState, bid: Bid) -> Bid:
    """The bot's wish as a legal call: a board becomes the next bore level, a number the largest allowed."""
    legal = st.legal_bids()
    if bid in legal:
        return bid
    if _is_board(bid):
        return next((b for b in legal if _is_board(b)), PASS)
    assert isinstance(bid, int)
    return max((b for b in legal if isinstance(b, int) and b <= bid), default=PASS)


# --- play ------------------------------------------------------------------------------


def _cost(card: int, trump: int, rules: Ruleset) -> int:
    """How much a card is worth keeping: side cards by rank, trumps above them."""
    if rules.is_trump(card, trump):
        return 20 + (card - 39 if card >= LJ else card % 13)
    return card % 13


def _cheapest(mask: int, trump: int, rules: Ruleset) -> int:
    best = -1
    best_cost = 99
    for c in cards_of(mask):
        k = _cost(c, trump, rules)
        if k < best_cost:
            best, best_cost = c, k
    return best


def _is_boss(card: int, trump: int, gone: int, rules: Ruleset) -> bool:
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
    seat = st.to_act()
    trump = st.trump
    rules = st.rules
    tmask = rules.trump_mask(trump)
    hand = st.hands[seat]
    gone = played | hand
    cur = st.current
    assert st.contracts is not None
    if not cur:
        mine = st.contracts.of(rules.side_of[seat])
        trumps = legal & tmask
        if mine.board and trumps and tmask & ~gone:
            return trumps.bit_length() - 1
        bosses = [c for c in cards_of(legal) if _is_boss(c, trump, gone, rules)]
        if bosses:
            # Prefer a side-suit boss; a trump boss only when trumps are out there.
            side = [c for c in bosses if not rules.is_trump(c, trump)]
            if side:
                return side[-1]
            if tmask & ~gone:
                return bosses[-1]
        side_legal = legal & ~tmask
        return _cheapest(side_legal or legal, trump, rules)
    pos = len(cur)
    win = rules.trick_winner(cur, trump)
    partners = len(rules.sides) == 2
    if (
        partners
        and pos - win == 2
        and (
            pos == 3 or not st.contracts.of(seat & 1).board or _is_boss(cur[win], trump, gone | (1 << cur[win]), rules)
        )
    ):
        # Partner is winning: do not overtake (unless a board needs it safe).
        return _cheapest(legal, trump, rules)
    best = -1
    best_cost = 99
    for c in cards_of(legal):
        if rules.trick_winner([*cur, c], trump) == pos:
            k = _cost(c, trump, rules)
            if k < best_cost:
                best, best_cost = c, k
    if best >= 0:
        return best
    return _cheapest(legal, trump, rules)


# --- games -----------------------------------------------------------------------------

#: A hook that may replace a dealing: ``(number, dealer) -> deal object, or None to deal as usual``.
FixedDeal = Callable[[int, int], Record | None]


def play_deals(
    rng: random.Random,
    seated: list[Player],
    first_dealer: int,
    fixed: FixedDeal | None = None,
    rules: Ruleset = STANDARD,
) -> list[Record]:
    """The deal objects of one complete game (every scored deal, pass-outs included)."""
    deals: list[Record] = []
    dealer = first_dealer
    number = 1
    while number <= rules.scored_deals:
        given = fixed(number, dealer) if fixed is not None else None
        if given is not None:
            deals.append(given)
            pass_out = rules.is_pass_out([b["bid"] for b in given["bids"]])
            points = [given["result"]["points"][side] for side in rules.sides]
            number = rules.next_number(number, pass_out)
            dealer = rules.next_dealer(dealer, pass_out, points)
            continue
        st = bid_deal(rules, number, dealer, seated, rng)
        play_out(st, seated, rng)
        deals.append(st.to_record())
        number = rules.next_number(number, st.pass_out)
        dealer = rules.next_dealer(dealer, st.pass_out, st.points())
    return deals


def bid_deal(
    rules: Ruleset,
    number: int,
    dealer: int,
    seated: Sequence[Player],
    rng: random.Random,
    random_bids: bool = False,
) -> DealState:
    """Deal ``number`` from a shuffled deck of ``rules``, then bid it (the players' styles, or any
    legal bid at random with ``random_bids``) and name trump where the ruleset asks for it."""
    deck = [c for c in range(NUM_CARDS) if rules.deck >> c & 1]
    rng.shuffle(deck)
    st = DealState.from_deck(number, dealer, deck, rules)
    while st.bidding:
        st.bid(rng.choice(st.legal_bids()) if random_bids else choose_bid(st, seated[st.to_act()].style, rng))
    if st.naming_trump:
        st.name_trump(choose_trump(st))
    return st


def play_out(st: DealState, seated: Sequence[Player], rng: random.Random) -> None:
    """Play every card of a bid deal (nothing after a pass-out), each by its player's style."""
    played = 0
    for _ in range(0 if st.pass_out else 4 * st.n):
        card = choose_play(st, seated[st.to_act()].style, rng, played)
        st.play(card)
        played |= 1 << card


def final_score(deals: list[Record], rules: Ruleset = STANDARD) -> dict[str, int]:
    return {side: sum(d["result"]["points"][side] for d in deals) for side in rules.sides}


def make_record(
    game_id: str,
    rng: random.Random,
    pool: list[Player],
    index: int,
    fixed: FixedDeal | None = None,
    rules: Ruleset = STANDARD,
) -> Record:
    """One complete game of ``rules`` between four players drawn from ``pool``."""
    seated = rng.sample(pool, 4)
    first_dealer = rng.randrange(4)
    start = datetime(2026, 1, 5, 18, 0, tzinfo=UTC) + timedelta(hours=3 * index, minutes=rng.randrange(0, 120))
    event = EVENTS[rng.randrange(len(EVENTS))]
    deals = play_deals(rng, seated, first_dealer, fixed, rules)
    return {
        **record_head(rules, game_id),
        "players": {SEATS[s]: seated[s].name for s in range(4)},
        "played_at": start.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "event": event,
        "deals": deals,
        "final_score": final_score(deals, rules),
    }


def record_head(rules: Ruleset, game_id: str) -> Record:
    """The first fields of a record of ``rules``: format version 1 exactly for plain ``standard``."""
    head: Record = {"format_version": 1 if rules.label() == "standard" else 2, "game_id": game_id}
    head["ruleset"] = rules.name
    if rules.options:
        head["options"] = list(rules.options)
    return head


def dumps(record: Record) -> str:
    return orjson.dumps(record).decode("utf-8")


# --- a game written as a score sheet ----------------------------------------------------------

_TRUMP_WORD = {v: k for k, v in SHEET_TRUMP.items()}


def as_sheet(record: Record) -> Record:
    """A record with every card, written as its score sheet (docs/sheets.md): each deal's bids,
    each player's tricks counted from the cards (the replay's trick winners), the trump, the
    seats dealt a rainbow, and the result as recorded.  ``record`` must fit the format."""
    r = replay(record)
    rules = find_ruleset(record.get("ruleset", "standard"), tuple(record.get("options", ())))
    head = {k: v for k, v in record.items() if k not in ("format_version", "deals")}
    out: Record = {"format_version": 2, "sheet": True, **head, "deals": []}
    for deal, outcome in zip(record["deals"], r.deals, strict=True):
        sheet: Record = {"number": deal["number"], "dealer": deal["dealer"], "bids": deal["bids"]}
        if not outcome.pass_out:
            won = [outcome.winners.count(seat) for seat in range(4)]
            sheet["tricks_won"] = dict(zip(SEATS, won, strict=True))
            sheet["trump"] = _TRUMP_WORD.get(outcome.trump, "none")
            rainbows = _rainbow_seats(rules, deal, outcome.trump)
            if rainbows:
                sheet["rainbows"] = rainbows
        if "result" in deal:
            sheet["result"] = deal["result"]
        out["deals"].append(sheet)
    return out


def _rainbow_seats(rules: Ruleset, deal: Record, trump: int) -> list[str]:
    """The seats whose hand as dealt earns the ruleset's hand bonus (bab-online's rainbow)."""
    if not rules.has_bonus:
        return []
    n = rules.hand_size(deal["number"])
    seats = []
    for seat in range(4):
        alone = [0, 0, 0, 0]
        alone[seat] = mask_of(CARD_INDEX[c] for c in deal["hands"][SEATS[seat]])
        if rules.bonus(alone, trump, n)[rules.side_of[seat]] > 0:
            seats.append(SEATS[seat])
    return seats


# --- fault injection -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Play:
    trick: int
    pos: int
    seat: int
    card: int


@dataclass(slots=True)
class _DealView:
    """A deal of a valid record, decoded for fault injection."""

    index: int
    n: int
    trump: int
    lead_exempt: int
    plays: list[_Play]
    broken_before: list[bool]

    def later(self, seat: int, trick: int) -> list[_Play]:
        """The plays of ``seat`` in tricks after ``trick``."""
        return [p for p in self.plays if p.seat == seat and p.trick > trick]

    def remaining(self, seat: int, trick: int, dealt: int) -> int:
        """``seat``'s hand just before ``trick`` (``dealt`` = the hand after any swap)."""
        h = dealt
        for p in self.plays:
            if p.seat == seat and p.trick < trick:
                h &= ~(1 << p.card)
        return h


def recorded_trump(deal: Record, rules: Ruleset) -> int:
    """The trump of a recorded deal, as the replay takes it."""
    n = rules.hand_size(deal["number"])
    tc = CARD_INDEX[deal["trump_card"]] if "trump_card" in deal else -1
    top = CARD_INDEX[deal["stock"][0]] if deal.get("stock") else -1
    named = "SHDC".index(deal["trump"]) if "trump" in deal else -1
    return rules.deal_trump(n, tc, top, named)


def _view(deal: Record, index: int, rules: Ruleset = STANDARD) -> _DealView:
    trump = recorded_trump(deal, rules)
    seats = [SEATS.index(b["seat"]) for b in deal["bids"]]
    n = rules.hand_size(deal["number"])
    con = rules.contracts(tuple(zip(seats, [b["bid"] for b in deal["bids"]], strict=True)), n)
    plays: list[_Play] = []
    broken_before: list[bool] = []
    broken = False
    for j, t in enumerate(deal["tricks"]):
        leader = SEATS.index(t["leader"])
        cards = [CARD_INDEX[c] for c in t["cards"]]
        broken_before.append(broken)
        for k, c in enumerate(cards):
            plays.append(_Play(j, k, (leader + k) & 3, c))
        broken = broken or rules.breaks_trump(cards, trump)
    return _DealView(index, n, trump, con.lead_exempt, plays, broken_before)


def _after_swap(deal: Record, rules: Ruleset) -> list[int]:
    """Each seat's hand after the recorded joker swap (the card the ruleset takes out, for the one drawn)."""
    hands = [sum(1 << CARD_INDEX[c] for c in deal["hands"][s]) for s in SEATS]
    swap = deal.get("joker_swap")
    other = rules.swap_discard(CARD_INDEX[deal["trump_card"]]) if swap is not None else -1
    if swap is not None and other >= 0:  # (a swap recorded where the ruleset has none changes no hand)
        s = SEATS.index(swap["seat"])
        hands[s] = hands[s] & ~(1 << other) | 1 << CARD_INDEX[swap["drawn"]]
    return hands


def _swap_cards(rec: Record, deal: int, a: _Play, b: _Play) -> None:
    tricks = rec["deals"][deal]["tricks"]
    ca = tricks[a.trick]["cards"][a.pos]
    tricks[a.trick]["cards"][a.pos] = tricks[b.trick]["cards"][b.pos]
    tricks[b.trick]["cards"][b.pos] = ca


def _scored(rec: Record) -> list[int]:
    return [i for i, d in enumerate(rec["deals"]) if d["tricks"]]


def _fault_schema(rec: Record, rng: random.Random, rules: Ruleset = STANDARD) -> Record | None:
    kind = rng.randrange(5)
    deals = rec["deals"]
    if kind == 0:
        # A number exported as a string.
        spots = [(i, k) for i, d in enumerate(deals) for k, b in enumerate(d["bids"]) if isinstance(b["bid"], int)]
        if spots:
            i, k = rng.choice(spots)
            deals[i]["bids"][k]["bid"] = str(deals[i]["bids"][k]["bid"])
            return rec
    if kind == 1:
        # "10H" written for "TH".
        spots2 = [
            (i, s, k) for i, d in enumerate(deals) for s in SEATS for k, c in enumerate(d["hands"][s]) if c[0] == "T"
        ]
        if spots2:
            i, s, k = rng.choice(spots2)
            deals[i]["hands"][s][k] = "10" + deals[i]["hands"][s][k][1]
            return rec
    if kind == 2 and deals:
        # A renamed field (or a field of another ruleset).
        d = deals[rng.randrange(len(deals))]
        if "trump_card" in d:
            d["trump"] = d.pop("trump_card")
        elif rules.trump_named:
            d["trump_card"] = d.pop("trump", "2S")
        else:
            d["trump"] = "S"
        return rec
    if kind == 3:
        # The same player typed into two seats.
        rec["players"]["E"] = rec["players"]["N"]
        return rec
    rec["played_at"] = rec.get("played_at", "2026-01-05T18:00:00Z").removesuffix("Z")
    return rec


def _fault_deal_number(rec: Record, rng: random.Random, rules: Ruleset = STANDARD) -> Record | None:
    deals = rec["deals"]
    scored = _scored(rec)
    if len(scored) < 2:
        return None
    if rng.random() < 0.5:
        # A lost deal: the next one's number jumps.
        del deals[rng.choice(scored[:-1])]
        return rec
    i = rng.randrange(len(deals))
    old = deals[i]["number"]
    deals[i]["number"] = rng.choice([k for k in range(1, rules.scored_deals + 1) if k != old])
    return rec


def _fault_dealer(rec: Record, rng: random.Random, rules: Ruleset = STANDARD) -> Record | None:
    deals = rec["deals"]
    if len(deals) < 2:
        return None
    d = deals[rng.randrange(1, len(deals))]
    d["dealer"] = rng.choice([s for s in SEATS if s != d["dealer"]])
    return rec


def _fault_hand_size(rec: Record, rng: random.Random, rules: Ruleset = STANDARD) -> Record | None:
    deals = rec["deals"]
    if not deals:
        return None
    d = deals[rng.randrange(len(deals))]
    a, b = rng.sample(SEATS, 2)
    card = d["hands"][a].pop(rng.randrange(len(d["hands"][a])))
    if rng.random() < 0.5:
        d["hands"][b].append(card)  # dealt to the wrong player
    return rec


def _fault_duplicate(rec: Record, rng: random.Random, rules: Ruleset = STANDARD) -> Record | None:
    deals = rec["deals"]
    if not deals:
        return None
    d = deals[rng.randrange(len(deals))]
    a, b = rng.sample(SEATS, 2)
    k = rng.randrange(len(d["hands"][a]))
    d["hands"][a][k] = rng.choice(d["hands"][b])
    return rec


def _fault_stock(rec: Record, rng: random.Random, rules: Ruleset = STANDARD) -> Record | None:
    spots = [d for d in rec["deals"] if d.get("stock")]
    if not spots:  # every card dealt (an empty stock): one of them recorded as undealt too
        empty = [d for d in rec["deals"] if d.get("stock") == [] and any(d["hands"].values())]
        if not empty:
            return None
        d = rng.choice(empty)
        d["stock"] = [rng.choice([c for hand in d["hands"].values() for c in hand])]
        return rec
    d = rng.choice(spots)
    if rng.random() < 0.5:
        d["stock"] = d["stock"][1:]  # the turned card left out
    else:
        d["stock"].pop()  # a card lost
    return rec


def _fault_joker_swap(rec: Record, rng: random.Random, rules: Ruleset = STANDARD) -> Record | None:
    deals = rec["deals"]
    swapped = [d for d in deals if "joker_swap" in d]
    if swapped and rng.random() < 0.7:
        d = rng.choice(swapped)
        if rng.random() < 0.5:
            del d["joker_swap"]
        else:
            sw = d["joker_swap"]
            sw["seat"] = rng.choice([s for s in SEATS if s != sw["seat"]])
        return rec
    plain = [d for d in deals if "joker_swap" not in d and d.get("stock")]
    if not plain:
        return None
    d = rng.choice(plain)
    d["joker_swap"] = {"seat": rng.choice(SEATS), "drawn": d["stock"][1]}
    return rec


def _fault_bid_order(rec: Record, rng: random.Random, rules: Ruleset = STANDARD) -> Record | None:
    deals = rec["deals"]
    if not deals:
        return None
    d = deals[rng.randrange(len(deals))]
    bids = d["bids"]
    if rng.random() < 0.5:
        i, j = rng.sample(range(4), 2)
        bids[i], bids[j] = bids[j], bids[i]
    else:
        # Written starting with the dealer.
        d["bids"] = [bids[3], *bids[:3]]
    return rec


def _fault_bid_range(rec: Record, rng: random.Random, rules: Ruleset = STANDARD) -> Record | None:
    deals = rec["deals"]
    if not deals:
        return None
    i = rng.randrange(len(deals))
    d = deals[i]
    n = rules.hand_size(d["number"])
    k = rng.randrange(4)
    b = d["bids"][k]
    if b["bid"] == PASS or n == 1:
        b["bid"] = 0  # "0" for a pass
    else:
        b["bid"] = rules.bid_range(n)[1] + 1  # standard: every trick is a board, not a number
    return rec


def _fault_pass_out(rec: Record, rng: random.Random, rules: Ruleset = STANDARD) -> Record | None:
    scored = _scored(rec)
    if not scored:
        return None
    d = rec["deals"][rng.choice(scored)]
    if rng.random() < 0.5:
        d["tricks"] = []  # the play was not written down
    else:
        for b in d["bids"]:
            b["bid"] = PASS
    return rec


def _fault_trick_count(rec: Record, rng: random.Random, rules: Ruleset = STANDARD) -> Record | None:
    deals = rec["deals"]
    spots = [i for i in _scored(rec) if len(deals[i]["tricks"]) >= 2]
    if not spots:
        return None
    d = deals[rng.choice(spots)]
    t = d["tricks"]
    if rng.random() < 0.5:
        t.pop(rng.randrange(len(t)))
    else:
        k = rng.randrange(len(t))
        t.insert(k, copy.deepcopy(t[k]))
    return rec


def _fault_leader(rec: Record, rng: random.Random, rules: Ruleset = STANDARD) -> Record | None:
    scored = _scored(rec)
    if not scored:
        return None
    d = rec["deals"][rng.choice(scored)]
    t = rng.choice(d["tricks"])
    t["leader"] = rng.choice([s for s in SEATS if s != t["leader"]])
    return rec


def _fault_not_in_hand(rec: Record, rng: random.Random, rules: Ruleset = STANDARD) -> Record | None:
    scored = _scored(rec)
    if not scored:
        return None
    i = rng.choice(scored)
    d = rec["deals"][i]
    v = _view(d, i, rules)
    dealt = _after_swap(d, rules)
    p = rng.choice(v.plays)
    hand = v.remaining(p.seat, p.trick, dealt[p.seat])
    outside = [c for c in range(54) if not hand >> c & 1]
    same_suit = [c for c in outside if c < LJ and CARD_SUIT[c] == CARD_SUIT[p.card] and c != p.card]
    new = rng.choice(same_suit or outside)
    d["tricks"][p.trick]["cards"][p.pos] = CARD_NAMES[new]
    return rec


def _fault_revoke(rec: Record, rng: random.Random, rules: Ruleset = STANDARD) -> Record | None:
    spots: list[tuple[int, _Play, _Play]] = []
    for i in _scored(rec):
        d = rec["deals"][i]
        v = _view(d, i, rules)
        eff = [rules.suit_of(c, v.trump) for c in range(54)]
        by_trick: dict[int, int] = {p.trick: p.card for p in v.plays if p.pos == 0}
        for p in v.plays:
            if p.pos == 0:
                continue
            led = by_trick[p.trick]
            if rules.forced_follow(led, v.trump, p.pos) != FREE:
                continue  # a Blooper (or lowest-trump) lead: that would be another fault
            if eff[p.card] != eff[led]:
                continue
            for q in v.later(p.seat, p.trick):
                if eff[q.card] != eff[led]:
                    spots.append((i, p, q))
    if not spots:
        return None
    i, p, q = rng.choice(spots)
    _swap_cards(rec, i, p, q)
    return rec


def _fault_trump_lead(rec: Record, rng: random.Random, rules: Ruleset = STANDARD) -> Record | None:
    spots: list[tuple[int, _Play, _Play]] = []
    for i in _scored(rec):
        d = rec["deals"][i]
        v = _view(d, i, rules)
        if v.trump == NO_TRUMP:
            continue
        is_trump = rules.tables.is_trump[v.trump]
        for p in v.plays:
            if p.pos or v.broken_before[p.trick] or v.lead_exempt >> p.seat & 1 or is_trump[p.card]:
                continue
            for q in v.later(p.seat, p.trick):
                if is_trump[q.card]:
                    spots.append((i, p, q))
    if not spots:
        return None
    i, p, q = rng.choice(spots)
    _swap_cards(rec, i, p, q)
    return rec


def _fault_blooper(rec: Record, rng: random.Random, joker: int, rules: Ruleset = STANDARD) -> Record | None:
    spots: list[tuple[int, _Play, _Play]] = []
    for i in _scored(rec):
        d = rec["deals"][i]
        v = _view(d, i, rules)
        if v.trump == NO_TRUMP:
            continue
        is_trump = rules.tables.is_trump[v.trump]
        led_by = {p.trick: p.card for p in v.plays if p.pos == 0}
        for p in v.plays:
            if p.pos == 0 or led_by[p.trick] != joker or not is_trump[p.card]:
                continue
            if rules.forced_follow(joker, v.trump, p.pos) == FREE:
                continue  # (bab-online: the Big Blooper leader's partner only follows suit)
            for q in v.later(p.seat, p.trick):
                spots.append((i, p, q))
    if not spots:
        return None
    i, p, q = rng.choice(spots)
    _swap_cards(rec, i, p, q)
    return rec


def _fault_bore_level(rec: Record, rng: random.Random, rules: Ruleset = STANDARD) -> Record | None:
    """A bore that skips a level: ``board2`` with no ``board`` before it (bab-online)."""
    deals = rec["deals"]
    if not deals:
        return None
    d = deals[rng.randrange(len(deals))]
    spots = [k for k in range(4) if not any(b["bid"] == BOARD for b in d["bids"][:k])]
    d["bids"][rng.choice(spots)]["bid"] = "board2"
    return rec


def _fault_trump(rec: Record, rng: random.Random, rules: Ruleset = STANDARD) -> Record | None:
    """The trump field dropped where it belongs, or recorded where it does not."""
    scored = _scored(rec)
    if not scored:
        return None
    d = rec["deals"][rng.choice(scored)]
    field = "trump" if rules.trump_named else "trump_card"
    if field in d:
        del d[field]
    elif field == "trump":
        d["trump"] = "H"  # named under spades_trump
    else:
        d["trump_card"] = d["hands"]["N"][0]  # a turned card where none is turned
    return rec


def _fault_not_in_deck(rec: Record, rng: random.Random, rules: Ruleset = STANDARD) -> Record | None:
    """A card the deck does not hold, dealt in place of a hand card."""
    deals = rec["deals"]
    outside = [c for c in range(54) if not rules.deck >> c & 1]
    if not deals or not outside:
        return None
    d = deals[rng.randrange(len(deals))]
    seat = rng.choice(SEATS)
    d["hands"][seat][rng.randrange(len(d["hands"][seat]))] = CARD_NAMES[rng.choice(outside)]
    return rec


def _declarations(deal: Record) -> list[int]:
    return [k for k, b in enumerate(deal["bids"]) if isinstance(b["bid"], int)]


def _fault_bid_low(rec: Record, rng: random.Random, rules: Ruleset = STANDARD) -> Record | None:
    """A call of a side that had not declared made no higher than the declaration before it."""
    spots: list[tuple[Record, int, int]] = []
    for i in _scored(rec):
        d = rec["deals"][i]
        for k, b in enumerate(d["bids"]):
            earlier = [e for e in d["bids"][:k] if isinstance(e["bid"], int)]
            sides = {rules.side_of[SEATS.index(e["seat"])] for e in earlier}
            if earlier and rules.side_of[SEATS.index(b["seat"])] not in sides:
                spots.append((d, k, earlier[-1]["bid"]))
    if not spots:
        return None
    d, k, last = rng.choice(spots)
    d["bids"][k]["bid"] = last
    return rec


def _fault_bid_twice(rec: Record, rng: random.Random, rules: Ruleset = STANDARD) -> Record | None:
    """A second declaration by a side: a partner's, or (each seat its own side) a seat's second call."""
    spots: list[tuple[Record, int]] = []
    for i in _scored(rec):
        d = rec["deals"][i]
        for k, b in enumerate(d["bids"]):
            sides = {rules.side_of[SEATS.index(e["seat"])] for e in d["bids"][:k] if isinstance(e["bid"], int)}
            if rules.side_of[SEATS.index(b["seat"])] in sides:
                spots.append((d, k))
    if not spots:  # every seat its own side: a seat that declared calls again, out of turn
        for i in _scored(rec):
            bids = rec["deals"][i]["bids"]
            spots += [(rec["deals"][i], k) for k in range(1, len(bids)) if isinstance(bids[k - 1]["bid"], int)]
        if not spots:
            return None
        d, k = rng.choice(spots)
        d["bids"][k]["seat"] = d["bids"][k - 1]["seat"]
    else:
        d, k = rng.choice(spots)
    d["bids"][k]["bid"] = rules.max_hand
    return rec


def _fault_lowest_trump(rec: Record, rng: random.Random, rules: Ruleset = STANDARD) -> Record | None:
    """After the lowest trump was led, a follower keeps their lowest trump for later."""
    spots: list[tuple[int, _Play, _Play]] = []
    for i in _scored(rec):
        v = _view(rec["deals"][i], i, rules)
        if v.trump == NO_TRUMP:
            continue
        led_by = {p.trick: p.card for p in v.plays if p.pos == 0}
        for p in v.plays:
            led = led_by[p.trick]
            if p.pos and rules.follow_fault(led, v.trump, p.pos) == "LOWEST_TRUMP" and rules.is_trump(p.card, v.trump):
                spots += [(i, p, q) for q in v.later(p.seat, p.trick)]
    if not spots:
        return None
    i, p, q = rng.choice(spots)
    _swap_cards(rec, i, p, q)
    return rec


def _fault_result(rec: Record, rng: random.Random, rules: Ruleset = STANDARD) -> Record | None:
    scored = [i for i in _scored(rec) if "result" in rec["deals"][i]]
    if not scored:
        return None
    res = rec["deals"][rng.choice(scored)]["result"]
    sides = rules.sides
    team = rng.choice(sides)
    kind = rng.randrange(3)
    if kind == 0:
        res["points"][team] += rng.choice((-10, -5, -1, 1, 5, 10))
    elif kind == 1 and res["points"][team]:
        res["points"][team] = -res["points"][team]
    else:
        other = sides[(sides.index(team) + 1) % len(sides)]
        if res["tricks"][team]:
            res["tricks"][team] -= 1
            res["tricks"][other] += 1
        else:
            res["tricks"][team] += 1
            res["tricks"][other] -= 1
    return rec


def _fault_final_score(rec: Record, rng: random.Random, rules: Ruleset = STANDARD) -> Record | None:
    fs = rec.get("final_score")
    if fs is None:
        return None
    a, b = rules.sides[0], rules.sides[1]
    if fs[a] != fs[b] and rng.random() < 0.3:
        fs[a], fs[b] = fs[b], fs[a]
    else:
        fs[rng.choice(rules.sides)] += rng.choice((-100, -10, -1, 1, 10, 100))
    return rec


def _fault_incomplete(rec: Record, rng: random.Random, rules: Ruleset = STANDARD) -> Record | None:
    deals = rec["deals"]
    cut = [k for k in range(len(deals)) if sum(1 for d in deals[:k] if d["tricks"]) < rules.scored_deals]
    k = rng.choice(cut)
    del deals[k:]
    if "final_score" in rec:
        rec["final_score"] = final_score(deals, rules)
    return rec


_INJECTORS: dict[str, Callable[[Record, random.Random, Ruleset], Record | None]] = {
    "SCHEMA": _fault_schema,
    "DEAL_NUMBER": _fault_deal_number,
    "DEALER": _fault_dealer,
    "HAND_SIZE": _fault_hand_size,
    "DUPLICATE_CARD": _fault_duplicate,
    "STOCK": _fault_stock,
    "JOKER_SWAP": _fault_joker_swap,
    "BID_ORDER": _fault_bid_order,
    "BID_RANGE": _fault_bid_range,
    "PASS_OUT": _fault_pass_out,
    "TRICK_COUNT": _fault_trick_count,
    "LEADER": _fault_leader,
    "NOT_IN_HAND": _fault_not_in_hand,
    "REVOKE": _fault_revoke,
    "TRUMP_LEAD": _fault_trump_lead,
    "BIG_BLOOPER": lambda rec, rng, rules: _fault_blooper(rec, rng, BJ, rules),
    "LITTLE_BLOOPER": lambda rec, rng, rules: _fault_blooper(rec, rng, LJ, rules),
    "BORE_LEVEL": _fault_bore_level,
    "TRUMP": _fault_trump,
    "NOT_IN_DECK": _fault_not_in_deck,
    "BID_LOW": _fault_bid_low,
    "BID_TWICE": _fault_bid_twice,
    "LOWEST_TRUMP": _fault_lowest_trump,
    "RESULT_MISMATCH": _fault_result,
    "FINAL_SCORE_MISMATCH": _fault_final_score,
    "INCOMPLETE": _fault_incomplete,
}


def fault_codes(rules: Ruleset = STANDARD) -> tuple[str, ...]:
    """The codes :func:`inject_fault` can put into a record of ``rules``: every code that applies to it."""
    if rules is STANDARD:
        return FAULT_CODES
    codes = (*FAULT_CODES, *rules.extra_codes)
    return tuple(c for c in codes if c not in rules.impossible_codes and (c in _INJECTORS or c == "JSON"))


def inject_fault(record: Record, code: str, rng: random.Random, rules: Ruleset = STANDARD) -> Record | None:
    """A deep copy of a valid ``record`` whose validation reports ``code``; ``None`` when it has no place for it.

    ``JSON`` has no place in a parsed record: use :func:`corrupt_json` on its line.
    """
    if code == "JSON":
        return None
    if code not in _INJECTORS or code not in fault_codes(rules):
        raise ValueError(f"{code!r} is not an injectable fault code for {rules.label()}")
    bad = _INJECTORS[code](copy.deepcopy(record), rng, rules)
    return bad


def corrupt_json(line: str, rng: random.Random) -> str:
    """The line of a record made into something that is not JSON."""
    kind = rng.randrange(3)
    if kind == 0 and '"final_score":{"NS":' in line:
        # A broken exporter writing NaN for a number.
        head, _, tail = line.partition('"final_score":{"NS":')
        rest = tail.lstrip("-0123456789")
        return head + '"final_score":{"NS":NaN' + rest
    if kind == 1:
        # A trailing comma after the last field.
        return line[:-1] + ",}"
    # A line cut short (disk full, interrupted copy).
    return line[: rng.randrange(1, max(2, len(line) - 1))]


# --- streams of games ------------------------------------------------------------------


#: Games handed to the worker processes at a time (bounds what waits in memory).
GAMES_PER_BATCH = 512
#: Below this many games per worker, starting worker processes costs more than it saves.
GAMES_PER_WORKER = 50

#: The pool of players and the ruleset of a worker process (sent once, by :func:`_start_worker`).
_worker_pool: list[Player] = []
_worker_rules: Ruleset = STANDARD


def _start_worker(pool: list[Player], ruleset: str, options: tuple[str, ...]) -> None:
    """Each process finds the ruleset by name (a ruleset object need not pickle)."""
    global _worker_pool, _worker_rules
    _worker_pool = pool
    _worker_rules = find_ruleset(ruleset, options)


def _play(job: tuple[str, int, int]) -> Record:
    game_id, game_seed, index = job
    return make_record(game_id, random.Random(game_seed), _worker_pool, index, rules=_worker_rules)


def _records(games: int, seed: int, pool: list[Player], workers: int, rules: Ruleset) -> Iterator[Record]:
    """The games in order, played in ``workers`` processes; the same records whatever ``workers``."""
    seeds = random.Random(seed)
    jobs = [(f"sim-{_id_tag(rules)}{seed}-{i:06d}", seeds.getrandbits(64), i) for i in range(games)]
    setup = (pool, rules.name, rules.options)
    if workers <= 1:
        _start_worker(*setup)
        yield from map(_play, jobs)
        return
    # ProcessPoolExecutor, not multiprocessing.Pool: the pool's worker-handler thread woke over and
    # over while a game waited unread in the result pipe (about 1 s of this process's CPU in 4,000
    # games on two cores); and a worker that dies is an error here, where the pool waited for ever.
    ctx = pool_context()
    with (
        pool_errors(WorkerDied, "played its games"),
        ProcessPoolExecutor(workers, mp_context=ctx, initializer=guarded(_start_worker, *setup)) as procs,
    ):
        for start in range(0, games, GAMES_PER_BATCH):
            yield from procs.map(_play, jobs[start : start + GAMES_PER_BATCH], chunksize=8)


def default_workers(games: int) -> int:
    """One process per CPU, but none beyond one per :data:`GAMES_PER_WORKER` games."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(cpus, games // GAMES_PER_WORKER))


#: The faults a score sheet can show (it holds no cards): what ``simulate --sheet`` injects.
SHEET_FAULTS = (
    "DEAL_NUMBER",
    "DEALER",
    "BID_ORDER",
    "BID_RANGE",
    "BORE_LEVEL",
    "BID_LOW",
    "BID_TWICE",
    "RESULT_MISMATCH",
    "FINAL_SCORE_MISMATCH",
    "INCOMPLETE",
)


def _game_lines(
    games: int,
    seed: int,
    players: int,
    faults: float,
    rules: Ruleset = STANDARD,
    workers: int = 1,
    sheet: bool = False,
) -> Iterator[tuple[str, str | None]]:
    """``(json line, injected code or None)`` for each game (``sheet``: each written as its score sheet)."""
    if players < 4:
        raise ValueError("a game needs at least 4 players in the pool")
    pool = player_pool(players)
    frng = random.Random(f"faults:{seed}")
    for rec in _records(games, seed, pool, workers, rules):
        code: str | None = None
        line: str | None = None
        if faults > 0 and frng.random() < faults:
            codes = [c for c in fault_codes(rules) if not sheet or c in SHEET_FAULTS]
            while codes and line is None:
                c = codes.pop(frng.randrange(len(codes)))
                if c == "JSON":
                    line = corrupt_json(dumps(rec), frng)
                else:
                    bad = inject_fault(rec, c, frng, rules)
                    if bad is not None:
                        line = dumps(bad)
                if line is not None:
                    code = c
        line = line if line is not None else dumps(rec)
        yield (_sheet_line(line) if sheet else line), code


def _sheet_line(line: str) -> str:
    """A game's line written as its score sheet, its id marked as a sheet's (``sim-sheet-…``)."""
    sheet = as_sheet(orjson.loads(line))
    sheet["game_id"] = "sim-sheet-" + sheet["game_id"].removeprefix("sim-")
    return dumps(sheet)


def _id_tag(rules: Ruleset) -> str:
    """``""`` for plain standard (the ids it always had), else the ruleset's label in id characters."""
    return "" if rules.label() == "standard" else rules.label().replace("+", ".") + "-"


def simulate_games(
    games: int, seed: int, players: int = 12, faults: float = 0.0, rules: Ruleset = STANDARD
) -> Iterator[str]:
    """``games`` game records as JSON lines (without newline); the same arguments give the same lines."""
    for line, _ in _game_lines(games, seed, players, faults, rules):
        yield line


def write_games(
    out: Path,
    *,
    games: int,
    seed: int,
    players: int = 12,
    faults: float = 0.0,
    workers: int | None = None,
    progress: Callable[[int], None] | None = None,
    rules: Ruleset = STANDARD,
    sheet: bool = False,
) -> str:
    """Write the games of ``rules`` as JSON Lines to ``out``; returns a summary for the user.

    ``workers`` processes play the games (default: :func:`default_workers`); the
    bytes written are the same whatever their number.  ``progress(done)`` is
    called after each game.  ``sheet``: each game as its score sheet (docs/sheets.md),
    as CSV when ``out`` is named ``*.csv``.
    """
    injected = 0
    n = workers if workers is not None else default_workers(games)
    as_csv = sheet and is_csv(out.name)
    with out.open("w", encoding="utf-8", newline="\n") as fh:
        for done, (line, code) in enumerate(_game_lines(games, seed, players, faults, rules, n, sheet), 1):
            if as_csv:
                text = sheet_csv(orjson.loads(line))
                fh.write(text if done == 1 else text.partition("\n")[2])
            else:
                fh.write(line)
                fh.write("\n")
            injected += code is not None
            if progress is not None:
                progress(done)
    noun = "game" if games == 1 else "games"
    if faults > 0:
        return f"{games} {noun} ({injected} with an injected fault)"
    return f"{games} {noun}"


# --- the committed sample data ---------------------------------------------------------

#: The example deal of docs/record-format.md (deal 11, hand size 3, dealer N, trump 5H; no stock).
EXAMPLE_DEAL: Record = {
    "number": 11,
    "dealer": "N",
    "hands": {
        "N": ["2H", "KS", "9D"],
        "E": ["4C", "7S", "QD"],
        "S": ["AS", "3H", "8C"],
        "W": ["BJ", "AH", "KD"],
    },
    "trump_card": "5H",
    "bids": [
        {"seat": "E", "bid": "pass"},
        {"seat": "S", "bid": 1},
        {"seat": "W", "bid": "board"},
        {"seat": "N", "bid": 2},
    ],
    "tricks": [
        {"leader": "W", "cards": ["BJ", "2H", "4C", "3H"]},
        {"leader": "W", "cards": ["AH", "9D", "7S", "8C"]},
        {"leader": "W", "cards": ["KD", "KS", "QD", "AS"]},
    ],
    "result": {"tricks": {"NS": 0, "EW": 3}, "points": {"NS": -15, "EW": 30}},
}


class _Misplaced(Exception):
    """The example deal's dealer does not come round at deal 11 in this game."""


def worked_example(seed: int = 11) -> Record:
    """A complete valid game whose deal number 11 is exactly :data:`EXAMPLE_DEAL`.

    Deals 1-10 and 12-25 are played by the bots; seeds are tried from ``seed`` on
    until N deals deal 11 (pass-outs shift the dealer).
    """

    def fixed(number: int, dealer: int) -> Record | None:
        if number != EXAMPLE_DEAL["number"]:
            return None
        if SEATS[dealer] != EXAMPLE_DEAL["dealer"]:
            raise _Misplaced
        return copy.deepcopy(EXAMPLE_DEAL)

    pool = player_pool(12)
    for s in range(seed, seed + 1000):
        try:
            return make_record(f"worked-example-{s}", random.Random(s), pool, 0, fixed)
        except _Misplaced:
            continue
    raise RuntimeError("no seed puts N in the dealer's seat at deal 11")  # pragma: no cover


#: Lines of ``bad-inputs.jsonl`` (each a JSON string of bytes, with why it is there).
BAD_INPUTS: tuple[tuple[str, str], ...] = (
    ("this is not JSON", "`JSON`: plain text"),
    (
        '{"format_version": 1, "game_id": "bad-2", "ruleset": "standard", "players": {"N": "Ada", "E": "Hana"',
        "`JSON`: a record cut short",
    ),
    ('{"format_version": 1, "game_id": "bad-3", "final_score": {"NS": NaN, "EW": 0}}', "`JSON`: `NaN` is not JSON"),
    ("[1, 2, 3]", '`SCHEMA` at path `""`: JSON, but an array, not an object'),
    ("", "blank: skipped, no report"),
    (
        '{"format_version": 1, "ruleset": "standard", "players": {"N": "Ada", "E": "Hana", "S": "Luca", "W": "Olga"},'
        ' "deals": []}',
        "`SCHEMA` at `/game_id`: the record has no `game_id` (otherwise a valid, empty record)",
    ),
)


def faulty_samples(seed: int, rules: Ruleset = STANDARD) -> list[tuple[str, str]]:
    """``(code, line)`` for every code of :func:`fault_codes`, in order, each in a game of its own.

    A code that finds no place in 200 games in a row is left out.
    """
    pool = player_pool(12)
    seeds = random.Random(seed)
    frng = random.Random(f"faults:{seed}")
    out: list[tuple[str, str]] = []
    i = 0
    for code in fault_codes(rules):
        for _ in range(200):
            rec = make_record(
                f"sim-{_id_tag(rules)}{seed}-{i:06d}", random.Random(seeds.getrandbits(64)), pool, i, rules=rules
            )
            i += 1
            if code == "JSON":
                out.append((code, corrupt_json(dumps(rec), frng)))
                break
            bad = inject_fault(rec, code, frng, rules)
            if bad is not None:
                out.append((code, dumps(bad)))
                break
    return out


#: The rulesets of ``data/sample/rulesets/``: (folder-safe label, ruleset name, options).
SAMPLE_RULESETS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("pereulok", ()),
    ("bab-online", ()),
    ("standard", ("short_deck", "no_partnerships")),
    ("pereulok", ("no_jokers", "spades_trump")),
)


def write_ruleset_samples(folder: Path, seed: int = 2026) -> list[tuple[str, list[str]]]:
    """Valid and faulty games of each of :data:`SAMPLE_RULESETS`; returns each label with its faulty codes."""

    folder.mkdir(parents=True, exist_ok=True)
    made: list[tuple[str, list[str]]] = []
    for name, options in SAMPLE_RULESETS:
        rules = find_ruleset(name, options)
        label = rules.label()
        valid = "".join(line + "\n" for line in simulate_games(3, seed, rules=rules))
        (folder / f"valid-{label}.jsonl").write_text(valid, encoding="utf-8", newline="\n")
        faulty = faulty_samples(seed + 1, rules)
        (folder / f"faulty-{label}.jsonl").write_text(
            "".join(line + "\n" for _, line in faulty), encoding="utf-8", newline="\n"
        )
        made.append((label, [code for code, _ in faulty]))
    return made


def sheet_samples(seed: int, prefix: str, rules: Ruleset = STANDARD) -> list[tuple[str | None, Record]]:
    """``(injected code or None, sheet)``: 2 valid games of ``rules`` written as score sheets, then one
    sheet per code of :data:`SHEET_FAULTS` the ruleset has; the game ids start with ``prefix``."""
    pool = player_pool(12)
    seeds = random.Random(seed)
    frng = random.Random(f"sheet-faults:{seed}")

    def played(i: int) -> Record:
        return make_record(f"{prefix}{seed}-{i:03d}", random.Random(seeds.getrandbits(64)), pool, i, rules=rules)

    out: list[tuple[str | None, Record]] = [(None, as_sheet(played(i))) for i in range(2)]
    for code in (c for c in fault_codes(rules) if c in SHEET_FAULTS):
        for _ in range(50):
            bad = inject_fault(played(len(out)), code, frng, rules)
            if bad is not None:
                out.append((code, as_sheet(bad)))
                break
    return out


#: What a CSV sheet cannot hold: a final score, or a seat's second call in a dealing.
NOT_IN_CSV = ("FINAL_SCORE_MISMATCH", "BID_TWICE")


def write_sheet_samples(folder: Path, seed: int = 2026) -> tuple[list[str | None], list[str | None]]:
    """``sheets/``: score sheets of standard games as JSON Lines and of bab-online games as CSV;
    returns each file's injected codes in order (``None``: a valid game)."""
    folder.mkdir(parents=True, exist_ok=True)
    as_json = sheet_samples(seed, "sheet-")
    (folder / "sheets.jsonl").write_text("".join(dumps(r) + "\n" for _, r in as_json), encoding="utf-8", newline="\n")
    as_csv = [(c, r) for c, r in sheet_samples(seed, "table-", find_ruleset("bab-online")) if c not in NOT_IN_CSV]
    text = "".join(sheet_csv(r) if k == 0 else sheet_csv(r).partition("\n")[2] for k, (_, r) in enumerate(as_csv))
    (folder / "table.csv").write_text(text, encoding="utf-8", newline="\n")
    return [c for c, _ in as_json], [c for c, _ in as_csv]


def write_samples(folder: Path, seed: int = 2026) -> None:
    """Write the committed sample data of ``data/sample/`` (see its README.md)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "valid-games.jsonl").write_text(
        "".join(line + "\n" for line in simulate_games(3, seed)), encoding="utf-8", newline="\n"
    )
    faulty = faulty_samples(seed + 1)
    (folder / "faulty-games.jsonl").write_text(
        "".join(line + "\n" for _, line in faulty), encoding="utf-8", newline="\n"
    )
    example = orjson.dumps(worked_example(), option=orjson.OPT_INDENT_2).decode("utf-8") + "\n"
    (folder / "worked-example.json").write_text(example, encoding="utf-8", newline="\n")
    (folder / "bad-inputs.jsonl").write_text(
        "".join(line + "\n" for line, _ in BAD_INPUTS), encoding="utf-8", newline="\n"
    )
    rows = "\n".join(f"| {k} | `{code}` |" for k, (code, _) in enumerate(faulty, 1))
    bad_rows = "\n".join(f"| {k} | {why} |" for k, (_, why) in enumerate(BAD_INPUTS, 1))
    made = write_ruleset_samples(folder / "rulesets", seed)
    ruleset_rows = "\n".join(
        f"| `{label}` | `valid-{label}.jsonl` (3 games), `faulty-{label}.jsonl`: "
        + ", ".join(f"{k} `{code}`" for k, code in enumerate(codes, 1))
        + " |"
        for label, codes in made
    )
    json_codes, csv_codes = write_sheet_samples(folder / "sheets", seed)
    readme = _README.format(
        seed=seed,
        fault_seed=seed + 1,
        rows=rows,
        bad_rows=bad_rows,
        ruleset_rows=ruleset_rows,
        json_sheets=_code_list(json_codes),
        csv_sheets=_code_list(csv_codes),
    )
    (folder / "README.md").write_text(readme, encoding="utf-8", newline="\n")


def _code_list(codes: list[str | None]) -> str:
    return ", ".join(f"{k} {'valid' if c is None else f'`{c}`'}" for k, c in enumerate(codes, 1))


_README = """# Sample data

Generated by `backalley.simulate.write_samples(Path("data/sample"))` (seed {seed});
the same code and seed give the same bytes, and `tests/test_simulate.py` checks
that they still do. Regenerate with

    .venv/bin/python -c "from pathlib import Path; from backalley.simulate import write_samples; write_samples(Path('data/sample'))"

| file | what |
|---|---|
| `valid-games.jsonl` | 3 complete, valid games played by the bots (`backalley simulate --games 3 --seed {seed}` writes the same lines) |
| `faulty-games.jsonl` | one game per injectable violation code, one code per line (table below) |
| `worked-example.json` | a complete, valid game whose deal number 11 is exactly the example deal of docs/record-format.md (dealer N, trump 5H, W claims board; its stock is left out, as there) |
| `bad-inputs.jsonl` | inputs that are not game records at all, for the error paths (table below) |

## `faulty-games.jsonl`

Each line is a complete game with exactly one injected fault (seed {fault_seed});
the record does not say which, so here it is. The validator reports the
line's code, possibly among other codes the same fault causes (a changed
leader also puts cards in the wrong hands, a changed deal number also changes
the hand size, ...). `INCOMPLETE` is a warning: that game is valid, only cut
short (its `final_score` adds up the deals kept).

| line | injected code |
|---|---|
{rows}

## `bad-inputs.jsonl`

| line | content and expected report |
|---|---|
{bad_rows}

## `rulesets/`

Games of other rulesets (record format 2), played by the same bots: for each,
3 valid complete games and one game per injectable code, in this order (line:
code). `ingest` stores them like format-1 games (the invalid ones with their
violations), each under its ruleset and options.

| ruleset | files and faulty lines |
|---|---|
{ruleset_rows}

## `sheets/`

Score sheets (docs/sheets.md): games kept as bids and each player's tricks,
without cards, as a table that plays on paper keeps them. Each was written
from a game played by the bots (`simulate --sheet`), its tricks counted from
the cards; a faulty one had one fault injected into the game first.

| file | games, in order |
|---|---|
| `sheets.jsonl` | `standard`, one sheet record a line: {json_sheets} |
| `table.csv` | `bab-online`, one row per player and dealing, games one after the other: {csv_sheets} |
"""


__all__ = [
    "BAD_INPUTS",
    "EXAMPLE_DEAL",
    "FAULT_CODES",
    "STYLES",
    "Player",
    "Style",
    "choose_bid",
    "choose_play",
    "corrupt_json",
    "estimate",
    "faulty_samples",
    "inject_fault",
    "make_record",
    "play_deals",
    "player_pool",
    "simulate_games",
    "worked_example",
    "write_games",
    "write_samples",
]

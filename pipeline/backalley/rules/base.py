"""The ruleset model: one :class:`Ruleset` object owns every rule of a dialect.

A ruleset (python-chess ``variant`` style: one class per ruleset, house rules
as constructor options, as OpenSpiel passes game parameters) answers every
question the engine, the replay, the simulator and the store ask: the deck,
the deal schedule, the sides, bidding and contracts, trump, the legality of a
play, the trick winner, scoring and the next dealer.  Everything works on
small ints and bitmasks (see :mod:`backalley.cards`).

The replay's hot loop reads :class:`FastTables`, which are built once per
ruleset *from these methods* (never written by hand), so the two cannot
disagree; ``tests/test_ruleset_consistency.py`` checks that they do not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal

from backalley.cards import BJ, CARD_SUIT, JOKERS, LJ, NO_TRUMP, NUM_CARDS, SUIT_MASK, highest, lowest

#: A bid as recorded: ``"pass"``, ``"board"`` (or a bore level) or an integer.
Bid = int | str
PASS: Literal["pass"] = "pass"
BOARD: Literal["board"] = "board"
PLAYERS = 4
#: Every trump value: a suit 0..3, or ``NO_TRUMP``.
TRUMPS = (0, 1, 2, 3, NO_TRUMP)
#: Every card of the largest deck, as a bitmask.
ALL_CARDS = (1 << NUM_CARDS) - 1
#: Forced follows after a special lead.
FREE, HIGHEST_TRUMP, LOWEST_TRUMP = 0, 1, 2


@dataclass(slots=True)
class Contract:
    """A side's contract: ``board`` with multiplier ``value``, or numeric ``value``.

    ``mult`` is the points multiplier of a numeric contract (1 unless the
    ruleset doubles it).
    """

    board: bool
    value: int
    mult: int = 1


@dataclass(slots=True)
class Contracts:
    """Every side's contract and the opening leader of one bidding.

    Shared by the ruleset's memo: never change one.  (Not ``frozen``: a frozen
    dataclass compiled by mypyc cannot be unpickled, and replays travel from
    worker processes by pickle.)
    """

    by_side: tuple[Contract, ...]
    #: Seat that leads trick 1, or ``None`` when nobody made a call that leads.
    opening_leader: int | None
    #: Seats that claimed board in this deal (bitmask over seats).
    board_claimers: int
    #: Seats that may lead trump while it is unbroken (bitmask over seats).
    lead_exempt: int = 0

    @property
    def ns(self) -> Contract:
        return self.by_side[0]

    @property
    def ew(self) -> Contract:
        return self.by_side[1]

    def of(self, side: int) -> Contract:
        return self.by_side[side]


@dataclass(slots=True)
class FastTables:
    """Lookup tables for the replay's hot loop, derived from a ruleset's methods.

    Indexed by trump (0..4) first, then by card.
    """

    #: ``is_trump[t][c]``.
    is_trump: tuple[tuple[bool, ...], ...]
    #: ``trump_mask[t]``: every trump card.
    trump_mask: tuple[int, ...]
    #: ``follow_by_led[t][c]``: the cards that follow a lead of ``c``.
    follow_by_led: tuple[tuple[int, ...], ...]
    #: ``win_key_by_led[t][c]``: every card's winning key in a trick led with ``c``.
    win_key_by_led: tuple[tuple[tuple[int, ...], ...], ...]
    #: ``special_lead[t][c]``: a lead after which some follower is forced beyond suit.
    special_lead: tuple[tuple[bool, ...], ...]
    #: ``forced_by_led[t][c][p]``: :meth:`Ruleset.forced_follow` of the follower at ``p`` (0 for the leader).
    forced_by_led: tuple[tuple[tuple[int, int, int, int], ...], ...]
    #: ``lead_block[t]``: the cards :meth:`Ruleset.legal_leads` refuses while trump is unbroken to a
    #: leader who is not exempt and holds some other card.
    lead_block: tuple[int, ...] = ()
    #: ``breaks[t]``: the cards whose presence in a trick breaks trump (:meth:`Ruleset.breaks_trump`).
    breaks: tuple[int, ...] = ()


class Ruleset:
    """The rules shared by every dialect; a subclass sets what differs.

    Subclasses must set the deck and sides in ``__init__`` and implement the
    bidding (:meth:`bid_in_range`, :meth:`contracts`), :meth:`score` and the
    schedule.  The defaults here are those of ``standard`` (docs/rules.md §1-§8).

    The contract with the fast paths.  The replay's hot loop, the C play
    checker and the C double-dummy search never call these methods per card:
    they read :class:`FastTables` (:attr:`tables`), built once from
    :meth:`is_trump`, :meth:`trump_mask`, :meth:`follow_mask`, :meth:`win_key`,
    :meth:`forced_follow`, :meth:`legal_leads` and :meth:`breaks_trump`, and
    they combine those answers themselves in exactly these ways, so a subclass
    must keep them true:

    * a follower must play a card of ``follow_mask(led, trump)`` if it holds one
      (else anything), unless ``forced_follow`` names the highest or lowest trump;
    * while trump is unbroken a leader who is not exempt
      (:attr:`Contracts.lead_exempt`, from :meth:`contracts`) may lead any card
      outside ``lead_block`` (what ``legal_leads`` refuses with every card in hand),
      and any card when holding nothing else;
    * the trick goes to the highest ``win_key(card, led, trump)``;
    * trump is broken once a trick holds a card whose ``breaks_trump([card])`` holds.

    ``tests/test_ruleset_consistency.py`` checks each against the methods on
    every registered ruleset and option set.
    """

    #: The registry name (``standard``, ``pereulok``, ``bab-online``).
    name: ClassVar[str] = ""
    #: House options this class accepts, in their canonical order.
    known_options: ClassVar[tuple[str, ...]] = ()
    #: One line per option, for ``backalley rulesets``.
    option_help: ClassVar[tuple[str, ...]] = ()
    #: A few words per option, beside a report section's title.
    option_notes: ClassVar[tuple[str, ...]] = ()
    #: One line about the ruleset.
    summary: ClassVar[str] = ""
    #: How a deal is scored, in a sentence or two (the footnote of a printed score sheet).
    scoring: ClassVar[str] = ""
    # How the reports and the store describe the ruleset's games (they ask these, never the name):
    #: ``"bids"`` (each player bids; boards by level) or ``"declarations"`` (an auction of rising
    #: declarations, one a team, with multipliers: ``pereulok``).
    auction: ClassVar[str] = "bids"
    #: What a board claim is called, and each board level's name (1..4).
    board_word: ClassVar[str] = "board"
    board_level_names: ClassVar[tuple[str, ...]] = ("board", "double", "triple", "quadruple")
    #: Whether a board bid names its own level (``board``, ``board2``…: bab-online's bores), rather
    #: than taking the next level by its place among the board claims.
    levelled_boards: ClassVar[bool] = False
    #: Whether a deal can score the rainbow bonus (``bonus``).
    rainbow: ClassVar[bool] = False
    #: The words a bid may be besides a number, under any option (a record's bids are these or integers).
    bid_words: ClassVar[tuple[str, ...]] = (PASS, BOARD)

    def __init__(self, options: tuple[str, ...] = ()) -> None:
        self.options = options
        #: The cards of the deck, as a bitmask.
        self.deck = (1 << NUM_CARDS) - 1
        #: The largest hand.
        self.max_hand = 13
        #: Scored deals in a complete record.
        self.scored_deals = 25
        #: Side names and the side of each seat.
        self.sides: tuple[str, ...] = ("NS", "EW")
        self.side_of: tuple[int, ...] = (0, 1, 0, 1)
        #: Whether a turned joker makes the other joker's holder swap it (docs/rules.md §4).
        self.has_joker_swap = True
        #: Whether the declarer names trump (no card is turned).
        self.trump_named = False
        #: Whether :meth:`bonus` can be non-zero.
        self.has_bonus = False
        #: Format-1 codes (docs/record-format.md, "Violations") that never arise in this ruleset.
        self.impossible_codes: tuple[str, ...] = ()
        #: Violation codes this ruleset can report beyond format 1's (docs/rules.md §14).
        self.extra_codes: tuple[str, ...] = ()
        #: The record format version of this ruleset's records (docs/record-format.md): 2 but for plain standard.
        self.format_version = 2
        self._contracts: dict[tuple[tuple[tuple[int, Bid], ...], int], Contracts] = {}
        self._tables: FastTables | None = None
        self._counted_deck = -1
        self._deck_size = 0

    # -- identity ----------------------------------------------------------------

    @property
    def deck_size(self) -> int:
        # Counted again only when the deck changed (a subclass sets it after this __init__); the
        # replay asks several times a deal, and a compiled int.bit_count() is a generic method call.
        if self._counted_deck != self.deck:
            self._counted_deck = self.deck
            self._deck_size = self.deck.bit_count()
        return self._deck_size

    def label(self) -> str:
        """``standard`` or ``pereulok+no_jokers+short_deck``: the ruleset with its options."""
        return "+".join((self.name, *self.options))

    def __repr__(self) -> str:
        return f"<Ruleset {self.label()}>"

    # -- schedule and dealing --------------------------------------------------------

    def hand_size(self, number: int) -> int:
        """Cards per hand in deal ``number`` (1..scored_deals)."""
        return abs(number - self.max_hand) + 1

    def stock_size(self, n: int) -> int:
        """Undealt cards when each hand holds ``n``."""
        return self.deck_size - 4 * n

    def turns_card(self, n: int) -> bool:
        """Whether the top undealt card is turned to fix trump in a deal of ``n`` cards."""
        return self.stock_size(n) > 0

    def deal_trump(self, n: int, trump_card: int, stock_top: int, named: int) -> int:
        """The trump the replay uses: ``-1`` means "not recorded" for each input."""
        if not self.turns_card(n):
            return NO_TRUMP
        card = trump_card if trump_card >= 0 else stock_top
        return NO_TRUMP if card < 0 else self.trump_of(card)

    def trump_of(self, trump_card: int) -> int:
        """The trump suit for a turned card; ``NO_TRUMP`` when a joker is turned."""
        return CARD_SUIT[trump_card]

    def joker_swap(self, trump_card: int, hands: Sequence[int]) -> tuple[int, int]:
        """``(holder, other joker)`` when the turned joker forces a swap, else ``(-1, -1)``."""
        if trump_card < LJ or not self.has_joker_swap:
            return (-1, -1)
        other = BJ if trump_card == LJ else LJ
        for seat in range(PLAYERS):
            if hands[seat] >> other & 1:
                return (seat, other)
        return (-1, -1)

    def swap_discard(self, trump_card: int) -> int:
        """The card that leaves every hand at the deal (the other joker when one is turned), else -1."""
        if trump_card < LJ or not self.has_joker_swap:
            return -1
        return BJ if trump_card == LJ else LJ

    def next_dealer(self, dealer: int, pass_out: bool, points: Sequence[int]) -> int:
        """Who deals after ``dealer``'s dealing (its recomputed points by side)."""
        return (dealer + 1) & 3

    def next_number(self, number: int, pass_out: bool) -> int:
        """The deal number after dealing ``number``: a pass-out is dealt again."""
        return number if pass_out else number + 1

    # -- trump and suits ------------------------------------------------------------------

    def trump_mask(self, trump: int) -> int:
        """Every trump when ``trump`` is trump: the suit and both jokers (none for no trump)."""
        return SUIT_MASK[trump] | JOKERS if trump < NO_TRUMP else 0

    def suit_of(self, card: int, trump: int) -> int:
        """The suit a card belongs to for following and winning: jokers are trumps."""
        if card >= LJ:
            return trump
        return CARD_SUIT[card]

    def follow_mask(self, led: int, trump: int) -> int:
        """The cards that count as following ``led``: its suit (every trump for a trump)."""
        suit = self.suit_of(led, trump)
        if suit == trump and trump < NO_TRUMP:
            return self.trump_mask(trump)
        return SUIT_MASK[suit]

    def is_trump(self, card: int, trump: int) -> bool:
        return bool(self.trump_mask(trump) >> card & 1)

    # -- bidding ---------------------------------------------------------------------------

    def legal_bids(self, n: int) -> list[Bid]:
        """Every bid a player may make with ``n`` cards (before any earlier bid is known)."""
        return [PASS, *range(1, n), BOARD]

    def legal_bids_after(self, n: int, seat: int, bids: Sequence[tuple[int, Bid]]) -> list[Bid]:
        """The bids ``seat`` may make after ``bids``."""
        return self.legal_bids(n)

    def bid_faults(self, n: int, bids: tuple[tuple[int, Bid], ...]) -> tuple[tuple[int, str], ...]:
        """``(position, code)`` of every call at fault, in call order (one code per call)."""
        return tuple(
            (k, "BID_RANGE") for k, (_, b) in enumerate(bids) if isinstance(b, int) and not self.bid_in_range(b, n)
        )

    def bid_range(self, n: int) -> tuple[int, int]:
        """The lowest and highest number a call may name with ``n`` cards."""
        return (1, n - 1)

    def bid_fault_reason(self, code: str) -> str:
        """Why a call got ``code`` (a code of :meth:`bid_faults` other than BID_RANGE)."""
        return code

    def names_trump(self) -> bool:
        """Whether the declarer names trump (only when :attr:`trump_named`)."""
        return self.trump_named

    def bid_in_range(self, bid: Bid, n: int) -> bool:
        """A numeric bid must be 1..n-1; pass and board are always allowed."""
        if isinstance(bid, int):
            return 1 <= bid <= n - 1
        return bid in (PASS, BOARD)

    def is_pass_out(self, bids: Sequence[Bid]) -> bool:
        """All four bids are ``pass``."""
        return len(bids) == PLAYERS and all(b == PASS for b in bids)

    def contracts(self, bids: tuple[tuple[int, Bid], ...], n: int) -> Contracts:
        """Contracts and opening leader from ``(seat, bid)`` pairs with ``n`` cards, memoised."""
        key = (bids, n)
        got = self._contracts.get(key)
        if got is None:
            if len(self._contracts) > 1 << 16:
                self._contracts.clear()
            got = self._contracts[key] = self.compute_contracts(bids, n)
        return got

    def compute_contracts(self, bids: tuple[tuple[int, Bid], ...], n: int) -> Contracts:
        raise NotImplementedError

    # -- play --------------------------------------------------------------------------------

    def legal_leads(self, hand: int, trump: int, broken: bool, exempt: bool) -> int:
        """Cards the leader may lead: no trump while unbroken, unless exempt or only trumps."""
        tmask = self.trump_mask(trump)
        if broken or exempt or not hand & ~tmask:
            return hand
        return hand & ~tmask

    def forced_follow(self, led: int, trump: int, pos: int) -> int:
        """What the follower at ``pos`` (1..3 after the leader) must play beyond suit.

        ``HIGHEST_TRUMP``, ``LOWEST_TRUMP`` or ``FREE`` (only follow suit).
        """
        if led < LJ or trump == NO_TRUMP:
            return FREE
        return HIGHEST_TRUMP if led == BJ else LOWEST_TRUMP

    def legal_follows(self, hand: int, led: int, trump: int, pos: int) -> int:
        """Cards the follower at ``pos`` may play to a trick led with ``led``."""
        forced = self.forced_follow(led, trump, pos)
        if forced != FREE:
            trumps = hand & self.trump_mask(trump)
            if not trumps:
                return hand
            return 1 << (highest(trumps) if forced == HIGHEST_TRUMP else lowest(trumps))
        return hand & self.follow_mask(led, trump) or hand

    def follow_fault(self, led: int, trump: int, pos: int) -> str:
        """The violation code for a follower's illegal card after ``led``."""
        forced = self.forced_follow(led, trump, pos)
        if forced == HIGHEST_TRUMP:
            return "BIG_BLOOPER"
        if forced == LOWEST_TRUMP:
            return "LITTLE_BLOOPER"
        return "REVOKE"

    def win_key(self, card: int, led: int, trump: int) -> int:
        """How strongly ``card`` bids for a trick led with ``led``: trumps, then the led suit."""
        if self.is_trump(card, trump):
            return 200 + card
        if self.suit_of(card, trump) == self.suit_of(led, trump):
            return 100 + card
        return 0

    def trick_winner(self, cards: Sequence[int], trump: int) -> int:
        """Position (0 = leader) of the card that wins the trick."""
        keys = [self.win_key(c, cards[0], trump) for c in cards]
        return keys.index(max(keys))

    def breaks_trump(self, cards: Sequence[int], trump: int) -> bool:
        """Whether a trick breaks trump: it holds a trump."""
        return any(self.is_trump(c, trump) for c in cards)

    # -- scoring -------------------------------------------------------------------------

    def score(self, contract: Contract, tricks: int, n: int) -> int:
        raise NotImplementedError

    def made(self, contract: Contract, tricks: int, n: int) -> bool:
        if contract.board:
            return tricks == n
        return tricks >= contract.value

    def bonus(self, dealt: Sequence[int], trump: int, n: int) -> tuple[int, ...]:
        """Points every side earns from the hands as dealt, made or set (none in ``standard``)."""
        return (0,) * len(self.sides)

    def rainbow_deal(self, n: int) -> bool:
        """Whether a hand of a deal of ``n`` cards can earn the rainbow bonus (a score sheet says which did)."""
        return False

    def rainbow_bonus(self, seats: Sequence[int], n: int) -> tuple[int, ...]:
        """Every side's bonus when the hands of ``seats`` are rainbows (a score sheet holds no cards)."""
        return (0,) * len(self.sides)

    def deal_points(self, con: Contracts, won: Sequence[int], n: int, bonus: Sequence[int] = ()) -> tuple[int, ...]:
        """Every side's points for a played deal (``bonus``: :meth:`bonus`)."""
        # (Lists, not generators, inside tuple(): mypyc compiles a list comprehension inline.)
        pts = tuple([self.score(con.by_side[s], won[s], n) for s in range(len(self.sides))])
        if bonus:
            pts = tuple([p + b for p, b in zip(pts, bonus, strict=True)])
        return pts

    # -- fast tables --------------------------------------------------------------------

    @property
    def tables(self) -> FastTables:
        """The replay's lookup tables, built once from the methods above."""
        if self._tables is None:
            self._tables = self.build_tables()
        return self._tables

    def build_tables(self) -> FastTables:
        cards = range(NUM_CARDS)
        return FastTables(
            tuple(tuple(self.is_trump(c, t) for c in cards) for t in TRUMPS),
            tuple(self.trump_mask(t) for t in TRUMPS),
            tuple(tuple(self.follow_mask(c, t) for c in cards) for t in TRUMPS),
            tuple(tuple(tuple(self.win_key(x, c, t) for x in cards) for c in cards) for t in TRUMPS),
            tuple(tuple(any(self.forced_follow(c, t, p) != FREE for p in (1, 2, 3)) for c in cards) for t in TRUMPS),
            tuple(tuple(self._forced_row(c, t) for c in cards) for t in TRUMPS),
            tuple(ALL_CARDS & ~self.legal_leads(ALL_CARDS, t, False, False) for t in TRUMPS),
            tuple(sum(1 << c for c in cards if self.breaks_trump([c], t)) for t in TRUMPS),
        )

    def _forced_row(self, led: int, trump: int) -> tuple[int, int, int, int]:
        f = self.forced_follow
        return (FREE, f(led, trump, 1), f(led, trump, 2), f(led, trump, 3))

"""Record -> replay: every violation with its location, and the recomputed scores.

:func:`replay` takes any parsed JSON value and never raises on bad content.  A
record that fails the schema (pydantic models of :mod:`backalley.records.models`) gets
one ``SCHEMA`` violation per offending location and nothing else is checked.
A record that fits the schema is replayed deal by deal on small ints and
bitmasks (no pydantic objects on this path), following the replay conventions
of docs/record-format.md: the record's own values drive the replay, every violation is
collected, and after a bad play the recorded card counts as played.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING, Any, Final, cast

import msgspec
from msgspec import UNSET

from backalley.cards import BJ, CARD_BIT, CARD_INDEX, CARD_NAMES, FULL_DECK, LJ, NO_TRUMP, SEATS, SUITS
from backalley.records.fast import (
    GAME_ID_PATTERN,
    AnyFastRecord,
    CardName,
    FastDeal,
    FastDealV2,
    FastHands,
    FastJokerSwap,
    FastSheetDeal,
    FastSheetRecord,
    FastTeamInts,
    FastTrick,
    python_pattern,
    record_options,
    sheet_problems,
    to_fast_any,
    v2_problems,
)
from backalley.rules import RULESETS as RULESET_CLASSES
from backalley.rules import Bid, Contracts, Ruleset, find_ruleset
from backalley.rules.base import FREE, HIGHEST_TRUMP

if TYPE_CHECKING:
    from pydantic import ValidationError

AnyDeal = FastDeal | FastDealV2
#: A deal with bids and a result: one with every card, or one of a score sheet.
BidDeal = FastDeal | FastDealV2 | FastSheetDeal

ERROR = "error"
WARNING = "warning"
SEAT_INDEX = {s: i for i, s in enumerate(SEATS)}
SEAT_NAMES = tuple(SEATS)
SUIT_INDEX = {s: i for i, s in enumerate(SUITS)}

#: Every violation code of docs/record-format.md, in the order of its table.
CODES = (
    "JSON",
    "SCHEMA",
    "DEAL_NUMBER",
    "DEALER",
    "HAND_SIZE",
    "DUPLICATE_CARD",
    "STOCK",
    "JOKER_SWAP",
    "BID_ORDER",
    "BID_RANGE",
    "PASS_OUT",
    "TRICK_COUNT",
    "LEADER",
    "NOT_IN_HAND",
    "REVOKE",
    "TRUMP_LEAD",
    "BIG_BLOOPER",
    "LITTLE_BLOOPER",
    "RESULT_MISMATCH",
    "FINAL_SCORE_MISMATCH",
    "INCOMPLETE",
)
_GAME_ID = re.compile(python_pattern(GAME_ID_PATTERN))
#: The code only a score sheet can break: its players' tricks do not add up to the hand size.
SHEET_CODES = ("TRICK_TOTAL",)
#: The trump of a score sheet's deal that does not say it (it holds no cards).
UNKNOWN_TRUMP: Final = -1
#: A score sheet's ``trump`` word as the replay's trump.
SHEET_TRUMP = {"S": 0, "H": 1, "D": 2, "C": 3, "none": NO_TRUMP}
#: The codes format 2 adds (docs/rules.md §14; their triggers per ruleset in §14.1-§14.3).
CODES_V2 = ("TRUMP", "NOT_IN_DECK", "BID_LOW", "BID_TWICE", "LOWEST_TRUMP", "BORE_LEVEL")
#: The code that ends a record's violations when more than :data:`MAX_VIOLATIONS` were found.
TOO_MANY: Final = "TOO_MANY"
#: Violations listed per record at most: the rest are only counted, and one ``TOO_MANY`` says how many.
MAX_VIOLATIONS: Final = 1000


@dataclass(slots=True)
class Violation:
    code: str
    message: str
    path: str
    deal: int | None = None
    trick: int | None = None
    seat: str | None = None
    severity: str = ERROR

    def as_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "severity": self.severity,
            "message": self.message,
            "path": self.path,
            "deal": self.deal,
            "trick": self.trick,
            "seat": self.seat,
        }


Add = Callable[[Violation], None]


def too_many(left_out: int) -> Violation:
    """The ``TOO_MANY`` violation that ends a record's list when ``left_out`` more were found."""
    return Violation(
        TOO_MANY,
        f"{left_out:,} more violations left out: a record lists at most {MAX_VIOLATIONS:,}",
        "",
    )


def capped(found: list[Violation]) -> list[Violation]:
    """``found``, cut to its first :data:`MAX_VIOLATIONS` and one ``TOO_MANY`` when it is longer."""
    if len(found) <= MAX_VIOLATIONS:
        return found
    return [*found[:MAX_VIOLATIONS], too_many(len(found) - MAX_VIOLATIONS)]


class Collected:
    """A record's violations as the replay finds them: the first :data:`MAX_VIOLATIONS` kept, the rest counted.

    Memory stays bounded however many a record breaks; :meth:`listed` ends the list with
    one ``TOO_MANY`` when some were left out.
    """

    def __init__(self) -> None:
        self.kept: list[Violation] = []
        self.left_out = 0
        #: The deals of the errors left out (the analysis skips every deal at fault, listed or not).
        self.unlisted_deals: set[int] = set()

    def add(self, v: Violation) -> None:
        """Keep ``v``, or only count it (and its deal, for an error) once the list is full."""
        if len(self.kept) < MAX_VIOLATIONS:
            self.kept.append(v)
            return
        self.left_out += 1
        if v.deal is not None and v.severity == ERROR:
            self.unlisted_deals.add(v.deal)

    def listed(self) -> list[Violation]:
        """The violations the record's report lists."""
        return [*self.kept, too_many(self.left_out)] if self.left_out else self.kept


#: A dealing as it opens: its number, hand size, dealer, and its bids' seats and values.
_Opening = tuple[int, int, int, tuple[str, str, str, str], tuple[Bid, Bid, Bid, Bid]]


#: The contracts of a :class:`DealOutcome` made without any (``copy``/``pickle`` make one empty first).
_NO_CONTRACTS = Contracts((), None, 0)


@dataclass(slots=True, init=False)
class DealOutcome:
    """The recomputed figures of one dealing, plus what the store needs of it.

    Its ``__init__`` is written out, not generated: mypyc compiles a written one
    (one per deal, on the hot path), while a generated one runs interpreted and
    cost 7 % of the replay's instructions.  Every argument has a default so that
    ``pickle`` (worker processes) can make an empty one first.
    """

    #: Tricks and points by side (the ruleset's ``sides`` order).
    tricks: tuple[int, ...]
    points: tuple[int, ...]
    pass_out: bool
    #: Trump suit (0..3) or ``NO_TRUMP``.
    trump: int
    contracts: Contracts
    #: Seat that won each replayed trick (empty for a pass-out).  These four are bytes (small
    #: ints, 0/1 for the flag) in bytearrays: the C trick loop appends them with one copy, and
    #: the row builder joins them as they are.
    winners: bytearray
    #: Whether trump was broken before each replayed trick (0/1).
    broken_before: bytearray
    #: Recorded leader seat of each replayed trick.
    leaders: bytearray
    #: Every replayed card as an int, trick by trick in play order (4 per trick).
    cards: bytearray
    # What the store's rows keep of the record's own fields, noted by the replay as it reads them
    # (:meth:`opened`), so that the row builder reads native ints instead of the record's Structs.
    #: The dealing's recorded number, its hand size and dealer's seat.
    number: int
    hand_size: int
    dealer: int
    #: The recorded trump card and the joker swap's seat and drawn card (-1: none recorded).
    trump_card: int
    swap_seat: int
    swap_drawn: int
    #: The four bids as recorded, in bidding order: their seats' names and their values.
    bid_seats: tuple[str, ...]
    bid_values: tuple[Bid, ...]
    #: The recorded result's tricks and points by side (empty: no result recorded).
    recorded_tricks: tuple[int, ...]
    recorded_points: tuple[int, ...]

    def __init__(
        self,
        tricks: tuple[int, ...] = (),
        points: tuple[int, ...] = (),
        pass_out: bool = False,
        trump: int = NO_TRUMP,
        contracts: Contracts = _NO_CONTRACTS,
        winners: bytearray | None = None,
        broken_before: bytearray | None = None,
        leaders: bytearray | None = None,
        cards: bytearray | None = None,
    ) -> None:
        self.tricks = tricks
        self.points = points
        self.pass_out = pass_out
        self.trump = trump
        self.contracts = contracts
        self.winners = bytearray() if winners is None else winners
        self.broken_before = bytearray() if broken_before is None else broken_before
        self.leaders = bytearray() if leaders is None else leaders
        self.cards = bytearray() if cards is None else cards
        self.number = self.hand_size = self.dealer = 0
        self.trump_card = self.swap_seat = self.swap_drawn = -1
        self.bid_seats = self.bid_values = ()
        self.recorded_tricks = self.recorded_points = ()

    def opened(self, opening: _Opening, trump_card: int, swap: FastJokerSwap | msgspec.UnsetType) -> None:
        """Note the dealing's recorded fields the rows keep: its opening (:func:`_open_deal`), its
        trump card (-1: none) and its joker swap (``UNSET``: none)."""
        self.number, self.hand_size, self.dealer, self.bid_seats, self.bid_values = opening
        self.trump_card = trump_card
        if swap is not UNSET:
            self.swap_seat = SEAT_INDEX[swap.seat]
            self.swap_drawn = CARD_INDEX[swap.drawn]


@dataclass(slots=True)
class Replay:
    """What the validator knows of one record."""

    game_id: str | None
    violations: list[Violation]
    deals: list[DealOutcome]
    final_score: tuple[int, ...] | None
    scored_deals: int = 0
    #: The ruleset's side names, the keys of ``tricks``, ``points`` and ``final_score``.
    sides: tuple[str, ...] = ("NS", "EW")
    #: Scored deals in a complete record.
    deals_to_play: int = 25
    #: Deals (1-based) with an error among the violations left out past :data:`MAX_VIOLATIONS`.
    unlisted_deals: frozenset[int] = frozenset()
    #: Whether the record is a score sheet (bids and tricks taken, no cards).
    sheet: bool = False

    @property
    def valid(self) -> bool:
        return not any(v.severity == ERROR for v in self.violations)

    @property
    def complete(self) -> bool:
        return self.valid and self.scored_deals == self.deals_to_play

    def error_deals(self) -> set[int]:
        """The deals (1-based) with an error, listed or left out."""
        return {v.deal for v in self.violations if v.severity == ERROR and v.deal is not None} | self.unlisted_deals

    def report(self, source: str, line: int | None) -> dict[str, Any]:
        """The JSON Lines report object of docs/record-format.md for this record."""
        return {
            "source": source,
            "line": line,
            "game_id": self.game_id,
            "valid": self.valid,
            "complete": self.complete,
            "sheet": self.sheet,
            "violations": [v.as_dict() for v in self.violations],
            "deals": [{"tricks": self._keyed(d.tricks), "points": self._keyed(d.points)} for d in self.deals],
            "final_score": None if self.final_score is None else self._keyed(self.final_score),
        }

    def _keyed(self, values: tuple[int, ...]) -> dict[str, int]:
        return dict(zip(self.sides, values, strict=True))


def json_error(message: str) -> Replay:
    """The replay of an input that is not JSON at all."""
    return Replay(None, [Violation("JSON", message, "")], [], None)


def pointer(parts: tuple[int | str, ...] | list[int | str]) -> str:
    """RFC 6901 JSON Pointer for a location."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def schema_violations(obj: dict[str, Any]) -> list[Violation]:
    """One ``SCHEMA`` violation per offending location (empty when the record fits).

    A record whose ``format_version`` is the integer 2 is checked as format 2
    (the model of its ``ruleset``, then :func:`~backalley.records.models.v2_problems`);
    anything else as format 1, exactly as before format 2 existed.
    """
    from pydantic import ValidationError  # (here: pydantic is slow to import, and most records never need it)

    from backalley.records.models import GameRecord

    version = obj.get("format_version")
    if version == 2 and type(version) is int:
        return _schema_v2(obj)
    try:
        GameRecord.model_validate(obj)
    except ValidationError as exc:
        return _schema_errors(exc)
    return []


def _schema_errors(exc: ValidationError) -> list[Violation]:
    by_path: dict[str, list[str]] = {}
    for err in exc.errors(include_url=False):
        path = pointer(err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        by_path.setdefault(path, []).append(msg)
    return [Violation("SCHEMA", f"{path or 'record'}: {'; '.join(msgs)}", path) for path, msgs in by_path.items()]


def _schema_v2(obj: dict[str, Any]) -> list[Violation]:
    from pydantic import ValidationError

    from backalley.records.models import MODELS_V2, SHEET_MODELS

    name = obj.get("ruleset")
    sheet = obj.get("sheet") is True
    models: dict[str, Any] = SHEET_MODELS if sheet else MODELS_V2
    model = models.get(name) if isinstance(name, str) else None
    if model is None or name not in RULESET_CLASSES:
        known = ", ".join(f'"{r}"' for r in MODELS_V2 if r in RULESET_CLASSES)
        return [Violation("SCHEMA", f"/ruleset: a format 2 record names one of {known}", "/ruleset")]
    try:
        checked = model.model_validate(obj)
    except ValidationError as exc:
        return _schema_errors(exc)
    by_path: dict[str, list[str]] = {}
    for loc, msg in (sheet_problems if sheet else v2_problems)(checked):
        by_path.setdefault(pointer(loc), []).append(msg)
    return [Violation("SCHEMA", f"{path or 'record'}: {'; '.join(msgs)}", path) for path, msgs in by_path.items()]


def replay(obj: Any) -> Replay:
    """Check one parsed JSON value as a game record; never raises on bad content."""
    if not isinstance(obj, dict):
        kind = (
            "null"
            if obj is None
            else {bool: "boolean", int: "number", float: "number", str: "string", list: "array"}.get(
                type(obj), type(obj).__name__
            )
        )
        return Replay(None, [Violation("SCHEMA", f"a game record is a JSON object, not {kind}", "")], [], None)
    gid = obj.get("game_id")
    game_id = gid if isinstance(gid, str) else None
    problems = schema_violations(obj)
    if problems:
        return Replay(game_id, capped(problems), [], None, sheet=obj.get("sheet") is True)
    try:
        rec = to_fast_any(obj)
    except msgspec.ValidationError as exc:  # the two models disagree: never silently accept
        return Replay(game_id, [Violation("SCHEMA", f"record: {exc}", "")], [], None)
    return replay_checked(rec)


def replay_sheet_csv(raw: bytes, first_line: int) -> tuple[dict[str, Any], Replay]:
    """One game of a CSV score sheet (its header and rows): its record, and its replay, each message
    naming the CSV line it is about; never raises on bad content."""
    from backalley.records.sheets import sheet_record

    sheet = sheet_record(raw, first_line)
    if sheet.errors:
        gid = sheet.record.get("game_id")
        found = [Violation("SCHEMA", msg, path) for path, msg in sheet.errors]
        if not (isinstance(gid, str) and _GAME_ID.fullmatch(gid)):
            found.append(Violation("SCHEMA", f"line {first_line}: game_id {gid!r} does not fit the format", "/game_id"))
            gid = None
        return sheet.record, Replay(gid, capped(found), [], None, sheet=True)
    r = replay(sheet.record)
    for v in r.violations:
        line = sheet.line_of(v.path)
        if line is not None:
            v.message = f"{v.message} (CSV line {line})"
    return sheet.record, r


def _violation(
    code: str, message: str, path: str, deal: int, trick: int | None = None, seat: int | None = None
) -> Violation:
    return Violation(code, message, path, deal, trick, None if seat is None else SEAT_NAMES[seat])


@dataclass(slots=True)
class _Schedule:
    """What the sequence checks remember of the previous dealing."""

    number: int = 0
    dealer: int = -1
    pass_out: bool = False
    points: tuple[int, ...] = ()
    scored: int = 0


def replay_checked(rec: AnyFastRecord) -> Replay:
    """Replay a record that fits the format, deal by deal, phase by phase.

    This is the hot path: card names become ints once, hands are bitmasks, and
    a violation's message and path are only built when there is one.
    """
    rules = ruleset_of(rec)
    found = Collected()
    add = found.add
    outcomes: list[DealOutcome] = []
    sched = _Schedule()
    totals = [0] * len(rules.sides)
    sheet = isinstance(rec, FastSheetRecord)
    if isinstance(rec, FastSheetRecord):
        for di, sd in enumerate(rec.deals):
            outcomes.append(_replay_sheet_deal(rules, sd, di, sched, add))
    else:
        deals = cast("list[AnyDeal]", rec.deals)
        for di, d in enumerate(deals):
            outcomes.append(_replay_deal(rules, d, di, sched, add))
    for outcome in outcomes:
        for s, p in enumerate(outcome.points):
            totals[s] += p
    _record_checks(rules, rec, totals, sched.scored, add)
    return Replay(
        rec.game_id,
        found.listed(),
        outcomes,
        tuple(totals),
        sched.scored,
        rules.sides,
        rules.scored_deals,
        frozenset(found.unlisted_deals),
        sheet,
    )


def ruleset_of(rec: AnyFastRecord) -> Ruleset:
    """The record's ruleset object, with its options."""
    return find_ruleset(rec.ruleset, record_options(rec))


def _replay_deal(rules: Ruleset, d: AnyDeal, di: int, sched: _Schedule, add: Add) -> DealOutcome:
    """One dealing: schedule, cards, bidding, play, scoring."""
    opening, (con, pass_out, bid_seats, order_ok, faults) = _open_deal(rules, d, di, sched, add)
    n, dealer = opening[1], opening[2]
    dealt, hand, trump, tc = _deal_cards(rules, d, di, n, pass_out, add)
    _check_bids(rules, d, di, n, dealer, bid_seats, order_ok, faults, add)
    if rules.trump_named:
        _check_trump_field(rules, d, di, n, pass_out, add)
    outcome = _play(rules, d, di, n, hand, trump, con, pass_out, add)
    outcome.opened(opening, tc, d.joker_swap)
    if not pass_out and rules.has_bonus:
        outcome.points = tuple([p + b for p, b in zip(outcome.points, rules.bonus(dealt, trump, n), strict=True)])
    _check_result(rules, d, di, outcome, add)
    sched.points = outcome.points
    return outcome


def _open_deal(rules: Ruleset, d: BidDeal, di: int, sched: _Schedule, add: Add) -> tuple[_Opening, _Bidding]:
    """A dealing's opening (:data:`_Opening`) and bidding (:func:`_bidding`), its number and dealer checked
    against the dealing before: how every dealing starts, with cards or on a score sheet."""
    number = d.number
    n = rules.hand_size(number)
    dealer = SEAT_INDEX[d.dealer]
    bd0, bd1, bd2, bd3 = d.bids
    seats = (bd0.seat, bd1.seat, bd2.seat, bd3.seat)
    values = (bd0.bid, bd1.bid, bd2.bid, bd3.bid)
    bidding = _bidding(rules, dealer, n, seats, values)
    _check_schedule(rules, sched, di, number, dealer, bidding[1], add)
    return (number, n, dealer, seats, values), bidding


def _replay_sheet_deal(rules: Ruleset, d: FastSheetDeal, di: int, sched: _Schedule, add: Add) -> DealOutcome:
    """One dealing of a score sheet: schedule, bidding, each player's tricks, scoring (no cards)."""
    opening, (con, pass_out, bid_seats, order_ok, faults) = _open_deal(rules, d, di, sched, add)
    n, dealer = opening[1], opening[2]
    _check_bids(rules, d, di, n, dealer, bid_seats, order_ok, faults, add)
    trump = UNKNOWN_TRUMP if d.trump is UNSET else SHEET_TRUMP[d.trump]
    outcome = _sheet_tricks(rules, d, di, n, trump, con, pass_out, add)
    outcome.opened(opening, -1, UNSET)
    if not pass_out and rules.has_bonus and d.rainbows is not UNSET:
        bonus = rules.rainbow_bonus([SEAT_INDEX[s] for s in d.rainbows], n)
        outcome.points = tuple([p + b for p, b in zip(outcome.points, bonus, strict=True)])
    _check_result(rules, d, di, outcome, add)
    sched.points = outcome.points
    return outcome


def _sheet_tricks(
    rules: Ruleset, d: FastSheetDeal, di: int, n: int, trump: int, con: Contracts, pass_out: bool, add: Add
) -> DealOutcome:
    """PASS_OUT and TRICK_TOTAL; the deal's tricks by side (the sum of its players') and points."""
    dn = di + 1
    zeros = (0,) * len(rules.sides)
    outcome = DealOutcome(zeros, zeros, pass_out, trump, con)
    won = d.tricks_won
    if pass_out:
        if won is not UNSET:
            add(_violation("PASS_OUT", "all four passed, yet tricks_won is given", f"/deals/{di}/tricks_won", dn))
        return outcome
    if won is UNSET:  # still scored: every side took 0 tricks
        add(_violation("PASS_OUT", "no tricks_won, but not everybody passed", f"/deals/{di}", dn))
        outcome.points = rules.deal_points(con, zeros, n)
        return outcome
    seats = (won.N, won.E, won.S, won.W)
    if sum(seats) != n:
        add(
            _violation(
                "TRICK_TOTAL",
                f"tricks taken N {seats[0]} + E {seats[1]} + S {seats[2]} + W {seats[3]} = {sum(seats)}; "
                f"deal {d.number} has {n} tricks",
                f"/deals/{di}/tricks_won",
                dn,
            )
        )
    by_side = [0] * len(rules.sides)
    for seat, t in enumerate(seats):
        by_side[rules.side_of[seat]] += t
    outcome.tricks = tuple(by_side)
    outcome.points = rules.deal_points(con, by_side, n)
    return outcome


def _check_schedule(
    rules: Ruleset, sched: _Schedule, di: int, number: int, dealer: int, pass_out: bool, add: Add
) -> None:
    """DEAL_NUMBER and DEALER against the previous dealing."""
    dn = di + 1
    expected = 1 if di == 0 else rules.next_number(sched.number, sched.pass_out)
    if not pass_out:
        sched.scored += 1
    if number != expected:
        add(_violation("DEAL_NUMBER", f"deal number {number}, expected {expected}", f"/deals/{di}/number", dn))
    elif sched.scored > rules.scored_deals and not pass_out:
        add(
            _violation(
                "DEAL_NUMBER", f"scored deal {sched.scored}: a game has {rules.scored_deals}", f"/deals/{di}/number", dn
            )
        )
    if di:
        want = rules.next_dealer(sched.dealer, sched.pass_out, sched.points)
        if dealer != want:
            add(
                _violation(
                    "DEALER",
                    f"{SEAT_NAMES[dealer]} dealt; the dealer should be {SEAT_NAMES[want]}",
                    f"/deals/{di}/dealer",
                    dn,
                    seat=dealer,
                )
            )
    sched.number, sched.dealer, sched.pass_out = number, dealer, pass_out


def _deal_cards(
    rules: Ruleset, d: AnyDeal, di: int, n: int, pass_out: bool, add: Add
) -> tuple[list[int], list[int], int, int]:
    """HAND_SIZE, NOT_IN_DECK, DUPLICATE_CARD, TRUMP, STOCK, JOKER_SWAP.

    Returns the hands as dealt, the hands as played (after any swap), the trump and the recorded
    trump card (-1: none).
    """
    if d.hands is UNSET:  # (format 2: only a deal passed out by four passes leaves its hands out)
        return _unseen_cards(rules, d, di, n, pass_out, add)
    regular = _regular_cards(rules, d, n) if _fastplay is not None else None
    if regular is None:
        hand, tc, stock = _checked_cards(rules, d, di, n, pass_out, add)
    else:
        hand, tc, stock = regular
        if not rules.trump_named:
            _check_trump_field(rules, d, di, n, pass_out, add)
    named = SUIT_INDEX[d.trump] if isinstance(d, FastDealV2) and d.trump is not UNSET else -1
    top = stock[0] if stock else -1
    trump = rules.deal_trump(n, tc, top, named)
    turned = (tc if tc >= 0 else top) if rules.turns_card(n) else -1
    return hand, _joker_swap(rules, d, di, hand, turned, stock, add), trump, tc


def _unseen_cards(
    rules: Ruleset, d: AnyDeal, di: int, n: int, pass_out: bool, add: Add
) -> tuple[list[int], list[int], int, int]:
    """A passed-out deal recorded without its hands: only its trump field is checked (no card was seen)."""
    _check_trump_field(rules, d, di, n, pass_out, add)
    tc = -1 if d.trump_card is UNSET else CARD_INDEX[d.trump_card]
    named = SUIT_INDEX[d.trump] if isinstance(d, FastDealV2) and d.trump is not UNSET else -1
    return [0, 0, 0, 0], [0, 0, 0, 0], rules.deal_trump(n, tc, -1, named), tc


def _regular_cards(rules: Ruleset, d: AnyDeal, n: int) -> tuple[list[int], int, list[int] | None] | None:
    """The hands, the trump card (-1: none) and the stock's first two cards (``None``: no stock), or
    ``None`` when anything about the deal's cards is in doubt: then :func:`_checked_cards` says what.

    ``_fastplay.deal`` maps the names and checks what needs no rule (``n`` cards a hand, every
    card in the ruleset's deck, none twice but the turned card on top of the stock); the stock's
    size and top card are the ruleset's.
    """
    hd = cast("FastHands", d.hands)  # (present: see _deal_cards)
    stock_in = d.stock
    tc_name = d.trump_card
    got = _fastplay.deal(
        hd.N, hd.E, hd.S, hd.W, None if stock_in is UNSET else stock_in, None if tc_name is UNSET else tc_name,
        n, rules.deck, _NAMES,
    )  # fmt: skip
    if got is None:
        return None
    m0, m1, m2, m3, tc, s0, s1, size = got
    stock: list[int] | None = None
    if size >= 0:
        if size != rules.stock_size(n) or (tc >= 0 and s0 != tc and rules.turns_card(n)):
            return None  # STOCK
        stock = [s0, s1] if size >= 2 else [s0] if size else []
    swap = d.joker_swap
    if swap is not UNSET and rules.deck != FULL_DECK and not rules.deck >> CARD_INDEX[swap.drawn] & 1:
        return None  # NOT_IN_DECK
    return [m0, m1, m2, m3], tc, stock


def _checked_cards(
    rules: Ruleset, d: AnyDeal, di: int, n: int, pass_out: bool, add: Add
) -> tuple[list[int], int, list[int] | None]:
    """:func:`_regular_cards` for any deal, reporting every fault of its cards in order (and TRUMP)."""
    hd = cast("FastHands", d.hands)  # (present: see _deal_cards)
    hands_in = (hd.N, hd.E, hd.S, hd.W)
    _check_hand_sizes(hands_in, di, n, d.number, add)
    masks = [
        _mask(hands_in[0], _NAMES),
        _mask(hands_in[1], _NAMES),
        _mask(hands_in[2], _NAMES),
        _mask(hands_in[3], _NAMES),
    ]
    if rules.deck != FULL_DECK and not _all_in_deck(rules.deck, d, masks):
        _check_deck(rules, d, di, add)
    hand, seen = _hand_masks(hands_in, masks, di, add)
    tc_name = d.trump_card
    tc = -1
    if tc_name is not UNSET:
        tc = CARD_INDEX[tc_name]
        if seen >> tc & 1:
            msg = f"the trump card {tc_name} is also dealt"
            add(_violation("DUPLICATE_CARD", msg, f"/deals/{di}/trump_card", di + 1))
        seen |= 1 << tc
    if not rules.trump_named:
        _check_trump_field(rules, d, di, n, pass_out, add)
    stock = None if d.stock is UNSET else _check_stock(rules, d.stock, tc, seen, di, n, d.number, add)
    return hand, tc, stock


def _all_in_deck(deck: int, d: AnyDeal, masks: list[int]) -> bool:
    """Whether every card of the deal is in ``deck`` (the common case, a mask at a time; else ``_check_deck`` says which).

    ``masks`` are the hands' masks (-1 for a hand with a repeated card: then ``_check_deck`` looks at each).
    """
    outside = ~deck
    for m in masks:
        if m < 0 or m & outside:
            return False
    if d.stock is not UNSET:
        m = _mask(d.stock, _NAMES)
        if m < 0 or m & outside:
            return False
    tc = d.trump_card
    swap = d.joker_swap
    return (tc is UNSET or bool(deck >> CARD_INDEX[tc] & 1)) and (
        swap is UNSET or bool(deck >> CARD_INDEX[swap.drawn] & 1)
    )


def _check_deck(rules: Ruleset, d: AnyDeal, di: int, add: Add) -> None:
    """NOT_IN_DECK: a card of a hand, the trump card, the stock or a swap that the deck does not hold."""
    deck = rules.deck
    dn = di + 1
    hd = cast("FastHands", d.hands)
    for s, held in enumerate((hd.N, hd.E, hd.S, hd.W)):
        for k, name in enumerate(held):
            if not deck >> CARD_INDEX[name] & 1:
                path = f"/deals/{di}/hands/{SEAT_NAMES[s]}/{k}"
                add(_violation("NOT_IN_DECK", f"{name} is not in this ruleset's deck", path, dn, seat=s))
    if d.trump_card is not UNSET and not deck >> CARD_INDEX[d.trump_card] & 1:
        msg = f"the trump card {d.trump_card} is not in this ruleset's deck"
        add(_violation("NOT_IN_DECK", msg, f"/deals/{di}/trump_card", dn))
    if d.stock is not UNSET:
        for k, name in enumerate(d.stock):
            if not deck >> CARD_INDEX[name] & 1:
                add(_violation("NOT_IN_DECK", f"{name} is not in this ruleset's deck", f"/deals/{di}/stock/{k}", dn))
    swap = d.joker_swap
    if swap is not UNSET and not deck >> CARD_INDEX[swap.drawn] & 1:
        msg = f"the drawn card {swap.drawn} is not in this ruleset's deck"
        add(_violation("NOT_IN_DECK", msg, f"/deals/{di}/joker_swap/drawn", dn, seat=SEAT_INDEX[swap.seat]))


def _check_trump_field(rules: Ruleset, d: AnyDeal, di: int, n: int, pass_out: bool, add: Add) -> None:
    """TRUMP: the trump field is recorded exactly where the ruleset fixes trump by it."""
    if not isinstance(d, FastDealV2):
        return  # format 1: the schema requires the trump card
    if rules.trump_named:
        want = rules.names_trump() and not pass_out
        field_name, present = "trump", d.trump is not UNSET
    else:
        want = rules.turns_card(n)
        field_name, present = "trump_card", d.trump_card is not UNSET
    if want == present:
        return
    if present:
        msg = f"no {field_name.replace('_', ' ')} belongs in this deal"
        add(_violation("TRUMP", msg, f"/deals/{di}/{field_name}", di + 1))
    else:
        add(_violation("TRUMP", f"the {field_name.replace('_', ' ')} is missing", f"/deals/{di}", di + 1))


def _check_hand_sizes(hands_in: tuple[list[CardName], ...], di: int, n: int, number: int, add: Add) -> None:
    for s in range(4):
        if len(hands_in[s]) != n:
            add(
                _violation(
                    "HAND_SIZE",
                    f"{SEAT_NAMES[s]} holds {len(hands_in[s])} cards; deal {number} deals {n}",
                    f"/deals/{di}/hands/{SEAT_NAMES[s]}",
                    di + 1,
                    seat=s,
                )
            )


def _hand_masks(hands_in: tuple[list[CardName], ...], masks: list[int], di: int, add: Add) -> tuple[list[int], int]:
    """Each hand as a mask, every repeated card reported; returns the hands and every dealt card.

    ``masks`` are ``_mask`` of each hand (-1 when a card repeats within it).
    """
    bit_of = CARD_BIT.__getitem__
    hand = [0, 0, 0, 0]
    seen = 0
    for s in range(4):
        held = hands_in[s]
        m = masks[s]
        if m < 0 or m & seen:  # a repeated card: find it
            m = 0
            for k, cs in enumerate(held):
                bit = bit_of(cs)
                if (seen | m) & bit:
                    add(
                        _violation(
                            "DUPLICATE_CARD", f"{cs} appears twice", f"/deals/{di}/hands/{SEAT_NAMES[s]}/{k}", di + 1
                        )
                    )
                m |= bit
        seen |= m
        hand[s] = m
    return hand, seen


def _check_stock(
    rules: Ruleset,
    stock_in: list[CardName],
    tc: int,
    seen: int,
    di: int,
    n: int,
    number: int,
    add: Add,
) -> list[int]:
    """DUPLICATE_CARD in the stock and STOCK; returns the stock's first two cards."""
    bit_of = CARD_BIT.__getitem__
    stock = [CARD_INDEX[c] for c in stock_in[:2]]
    first = 1 if stock and stock[0] == tc else 0
    m = _mask(stock_in, _NAMES)
    if m >= 0 and first:  # the trump card on top: it is in ``seen`` already
        m &= ~(1 << tc)
    if m < 0 or m & seen:  # (a repeat anywhere in the stock: the loop finds the ones that count)
        m = 0
        for k in range(first, len(stock_in)):
            bit = bit_of(stock_in[k])
            if (seen | m) & bit:
                add(_violation("DUPLICATE_CARD", f"{stock_in[k]} appears twice", f"/deals/{di}/stock/{k}", di + 1))
            m |= bit
    want = rules.stock_size(n)
    top_wrong = tc >= 0 and first == 0 and rules.turns_card(n)
    if len(stock_in) != want or top_wrong:
        why = []
        if len(stock_in) != want:
            why.append(f"the stock holds {len(stock_in)} cards; deal {number} leaves {want}")
        if top_wrong:
            tc_name = CARD_NAMES[tc]
            why.append(f"its top card {stock_in[0]} is not the trump card {tc_name}" if stock_in else "it is empty")
        add(_violation("STOCK", "; ".join(why), f"/deals/{di}/stock", di + 1))
    return stock


def _joker_swap(
    rules: Ruleset, d: AnyDeal, di: int, dealt: list[int], tc: int, stock: list[int] | None, add: Add
) -> list[int]:
    """JOKER_SWAP; the hands as played (the other joker out, the drawn card in)."""
    holder, other = rules.joker_swap(tc, dealt) if tc >= 0 else (-1, -1)
    swap = d.joker_swap
    if swap is UNSET:
        if holder >= 0:
            add(
                _violation(
                    "JOKER_SWAP",
                    f"{d.trump_card} was turned: {SEAT_NAMES[holder]} must discard {CARD_NAMES[other]} "
                    "and draw the next stock card, but no swap is recorded",
                    f"/deals/{di}/joker_swap",
                    di + 1,
                    seat=holder,
                )
            )
    else:
        why_not = _swap_faults(rules, d, dealt, tc, holder, other, stock)
        if why_not:
            add(
                _violation(
                    "JOKER_SWAP", "; ".join(why_not), f"/deals/{di}/joker_swap", di + 1, seat=SEAT_INDEX[swap.seat]
                )
            )
    discard = rules.swap_discard(tc) if tc >= 0 else -1
    if discard < 0:
        return list(dealt)
    keep = ~(1 << discard)
    hand = [h & keep for h in dealt]
    if holder >= 0:
        if swap is not UNSET:
            hand[SEAT_INDEX[swap.seat]] |= 1 << CARD_INDEX[swap.drawn]
        elif stock is not None and len(stock) > 1:
            hand[holder] |= 1 << stock[1]
    return hand


def _swap_faults(
    rules: Ruleset, d: AnyDeal, hand: list[int], tc: int, holder: int, other: int, stock: list[int] | None
) -> list[str]:
    """Why a recorded joker swap is wrong (empty when it is right)."""
    swap = d.joker_swap
    assert swap is not UNSET
    drawn = CARD_INDEX[swap.drawn]
    tc_name = d.trump_card
    if not rules.has_joker_swap or tc < 0:
        return [f"no swap happens in {rules.label()}" + ("" if tc >= 0 else " when no card is turned")]
    if holder < 0:
        if rules.trump_of(tc) != NO_TRUMP:
            return [f"no swap was needed (the trump card {tc_name} is not a joker)"]
        return [f"no swap was needed (nobody was dealt {CARD_NAMES[BJ if tc == LJ else LJ]})"]
    why_not: list[str] = []
    if SEAT_INDEX[swap.seat] != holder:
        why_not.append(f"{CARD_NAMES[other]} was dealt to {SEAT_NAMES[holder]}, not {swap.seat}")
    if drawn == tc:
        why_not.append(f"the drawn card {swap.drawn} is the turned card")
    elif (hand[0] | hand[1] | hand[2] | hand[3]) >> drawn & 1:
        why_not.append(f"the drawn card {swap.drawn} was dealt to a player")
    elif stock is not None and (len(stock) < 2 or stock[1] != drawn):
        why_not.append(f"the drawn card {swap.drawn} is not the next stock card")
    return why_not


def _check_bids(
    rules: Ruleset,
    d: BidDeal,
    di: int,
    n: int,
    dealer: int,
    bid_seats: tuple[int, ...],
    order_ok: bool,
    faults: tuple[tuple[int, str], ...],
    add: Add,
) -> None:
    """BID_ORDER, then each call's code (BID_RANGE, and the ruleset's own) in call order."""
    if not order_ok:
        add(
            _violation(
                "BID_ORDER",
                f"bids by {' '.join(SEAT_NAMES[s] for s in bid_seats)}; with {SEAT_NAMES[dealer]} dealing "
                f"the order is {' '.join(SEAT_NAMES[s] for s in BID_ORDER[dealer])}",
                f"/deals/{di}/bids",
                di + 1,
            )
        )
    for k, code in faults:
        who = SEAT_NAMES[bid_seats[k]]
        b = d.bids[k].bid
        add(
            _violation(
                code, _bid_message(rules, code, who, b, n), f"/deals/{di}/bids/{k}/bid", di + 1, seat=bid_seats[k]
            )
        )


def _bid_message(rules: Ruleset, code: str, who: str, bid: Bid, n: int) -> str:
    if code == "BID_RANGE":
        lo, hi = rules.bid_range(n)
        if hi < lo:
            return f"{who} bid {bid}; with 1 card no number can be bid"
        return f"{who} bid {bid}; with {n} cards a bid is {lo} to {hi}"
    return f"{who} bid {bid}: {rules.bid_fault_reason(code)}"


def _play(
    rules: Ruleset,
    d: AnyDeal,
    di: int,
    n: int,
    hand: list[int],
    trump: int,
    con: Contracts,
    pass_out: bool,
    add: Add,
) -> DealOutcome:
    """PASS_OUT, TRICK_COUNT and every trick; the deal's outcome with its points."""
    tricks = d.tricks
    dn = di + 1
    zeros = (0,) * len(rules.sides)
    outcome = DealOutcome(zeros, zeros, pass_out, trump, con)
    if pass_out:
        if tricks:
            add(
                _violation(
                    "PASS_OUT", f"all four passed, yet {len(tricks)} tricks were played", f"/deals/{di}/tricks", dn
                )
            )
        return outcome
    if not tricks:  # still scored: every side took 0 tricks
        add(_violation("PASS_OUT", "no tricks were played, but not everybody passed", f"/deals/{di}/tricks", dn))
        outcome.points = rules.deal_points(con, zeros, n)
        return outcome
    if len(tricks) != n:
        add(
            _violation(
                "TRICK_COUNT", f"{len(tricks)} tricks recorded; deal {d.number} has {n}", f"/deals/{di}/tricks", dn
            )
        )
    won = _tricks(rules, tricks, di, hand, trump, con, outcome, add)
    outcome.tricks = tuple(won)
    outcome.points = rules.deal_points(con, won, n)
    return outcome


def _tricks(
    rules: Ruleset,
    tricks: list[FastTrick],
    di: int,
    hand: list[int],
    trump: int,
    con: Contracts,
    outcome: DealOutcome,
    add: Add,
) -> list[int]:
    """Replay every trick (the hot loop); returns the tricks won by each side."""
    won = [0] * len(rules.sides)
    winners = outcome.winners
    broken_before = outcome.broken_before
    leaders = outcome.leaders
    exempt = con.lead_exempt
    expected_leader = -1 if con.opening_leader is None else con.opening_leader
    broken = False
    start = 0
    if _fastplay is not None:  # the regular tricks from the first, in C; the rest below
        table, sides = _packed(rules, trump)
        start, broken, expected_leader = _fastplay.play(
            tricks, hand, won, outcome.cards, leaders, winners, broken_before, table, _NAMES, sides,
            expected_leader, exempt, broken,
        )  # fmt: skip
        if start == len(tricks):
            return won
    ci = CARD_INDEX
    si = SEAT_INDEX
    tab = rules.tables
    side_of = rules.side_of
    is_trump = tab.is_trump[trump]
    not_trumps = ~tab.trump_mask[trump]
    must_by_led = tab.follow_by_led[trump]
    key_by_led = tab.win_key_by_led[trump]
    special = tab.special_lead[trump]
    forced = tab.forced_by_led[trump]
    rest = tricks[start:] if start else tricks
    cards = list(map(ci.__getitem__, chain.from_iterable([t.cards for t in rest])))
    outcome.cards.extend(cards)
    flat = iter(cards)
    # (A zip over a separate leaders list here runs 30% slower once compiled.)
    for j, (t, c0, c1, c2, c3) in enumerate(zip(rest, flat, flat, flat, flat, strict=False), start):
        leader = si[t.leader]
        leaders.append(leader)
        if expected_leader >= 0 and leader != expected_leader:
            add(_leader_fault(di, j, leader, expected_leader))
        s1, s2, s3 = FOLLOWERS[leader]
        h0, h1, h2, h3 = hand[leader], hand[s1], hand[s2], hand[s3]
        b0, b1, b2, b3 = 1 << c0, 1 << c1, 1 << c2, 1 << c3
        must = must_by_led[c0]
        if (
            h0 & b0
            and h1 & b1
            and h2 & b2
            and h3 & b3
            and (b1 & must or not h1 & must)
            and (b2 & must or not h2 & must)
            and (b3 & must or not h3 & must)
            and (broken or not is_trump[c0] or not h0 & not_trumps or exempt >> leader & 1)
            and (not special[c0] or _forced_ok(forced[c0], ~not_trumps, h1, b1, h2, b2, h3, b3))
        ):  # the usual case: a legal trick (the ruleset's legal_leads/legal_follows, as tables)
            hand[leader], hand[s1], hand[s2], hand[s3] = h0 ^ b0, h1 ^ b1, h2 ^ b2, h3 ^ b3
        else:
            _check_trick(rules, hand, t.cards, (c0, c1, c2, c3), leader, trump, broken, exempt, di, j, add)
        key = key_by_led[c0]
        k0, k1, k2, k3 = key[c0], key[c1], key[c2], key[c3]
        best = max(k0, k1, k2, k3)
        w = (leader + (0 if k0 == best else 1 if k1 == best else 2 if k2 == best else 3)) & 3
        winners.append(w)
        broken_before.append(broken)
        won[side_of[w]] += 1
        if not broken:
            broken = is_trump[c0] or is_trump[c1] or is_trump[c2] or is_trump[c3]
        expected_leader = w
    return won


try:
    from backalley import _fastplay
except ImportError:  # no C build (BACKALLEY_PURE_PYTHON=1, or no compiler): the Python loop does it all
    _fastplay = None  # type: ignore[assignment]


#: Card names (two characters) and seat names (one) -> index + 1, for ``_fastplay``.
def _names_table() -> bytes:
    out = bytearray(128 * 128)
    for name, i in chain(CARD_INDEX.items(), SEAT_INDEX.items()):
        code = name.encode("ascii")
        out[code[0] << 7 | code[1] if len(code) == 2 else code[0]] = i + 1
    return bytes(out)


_NAMES: Final = _names_table()


def _mask_py(names: list[Any], table: bytes = b"", /) -> int:
    """The bitmask of distinct card names, or -1 when one repeats (a sum of distinct bits has no carries).

    ``table`` is not used: it is there for the signature of ``_fastplay.mask``.
    """
    m = sum(map(CARD_BIT.__getitem__, names))
    return m if m.bit_count() == len(names) else -1


#: ``_mask(names, _NAMES)``: ``_fastplay.mask``, or the same in Python; bound once, called directly
#: (the replay calls it five times a deal, and a wrapper cost more than the C function).
_mask: Final = _mask_py if _fastplay is None else _fastplay.mask


_PACKED: dict[int, tuple[Ruleset, tuple[tuple[bytes, bytes], ...]]] = {}


def _packed(rules: Ruleset, trump: int) -> tuple[bytes, bytes]:
    """The ruleset's fast tables for ``trump`` as ``_fastplay`` reads them, and its sides, built once."""
    got = _PACKED.get(id(rules))
    if got is None or got[0] is not rules:
        got = _PACKED[id(rules)] = (rules, tuple(_pack(rules, t) for t in range(NO_TRUMP + 1)))
    return got[1][trump]


def _pack(rules: Ruleset, trump: int) -> tuple[bytes, bytes]:
    tab = rules.tables
    values = [
        tab.trump_mask[trump],
        *(int(x) for x in tab.is_trump[trump]),
        *tab.follow_by_led[trump],
        *chain.from_iterable(tab.forced_by_led[trump]),
        *chain.from_iterable(tab.win_key_by_led[trump]),
    ]
    return array("q", values).tobytes(), bytes(rules.side_of)


def _forced_ok(
    kinds: tuple[int, int, int, int], tmask: int, h1: int, b1: int, h2: int, b2: int, h3: int, b3: int
) -> bool:
    """Whether each follower played the trump a special lead forces (the ruleset's ``legal_follows``)."""
    return (
        _forced_one(kinds[1], tmask, h1, b1)
        and _forced_one(kinds[2], tmask, h2, b2)
        and _forced_one(kinds[3], tmask, h3, b3)
    )


def _forced_one(kind: int, tmask: int, h: int, b: int) -> bool:
    trumps = h & tmask
    if kind == FREE or not trumps:
        return True  # (following suit is checked with the other follows)
    if kind == HIGHEST_TRUMP:
        return b == 1 << (trumps.bit_length() - 1)
    return b == trumps & -trumps


def _leader_fault(di: int, j: int, leader: int, expected: int) -> Violation:
    return _violation(
        "LEADER",
        f"{SEAT_NAMES[leader]} led trick {j + 1}; {SEAT_NAMES[expected]} should have"
        + (" (the highest bidder)" if j == 0 else " (the last trick's winner)"),
        f"/deals/{di}/tricks/{j}/leader",
        di + 1,
        j + 1,
        leader,
    )


def _check_result(rules: Ruleset, d: BidDeal, di: int, outcome: DealOutcome, add: Add) -> None:
    """RESULT_MISMATCH against the recomputed tricks and points."""
    res = d.result
    if res is UNSET:
        return
    rt = _by_side(res.tricks, rules.sides)
    rp = _by_side(res.points, rules.sides)
    outcome.recorded_tricks, outcome.recorded_points = rt, rp
    if rt != outcome.tricks or rp != outcome.points:
        sides = rules.sides
        add(
            _violation(
                "RESULT_MISMATCH",
                f"recorded tricks ({_by_name(rt, sides)}) and points ({_by_name(rp, sides)}); the replay gives"
                f" tricks ({_by_name(outcome.tricks, sides)}) and points ({_by_name(outcome.points, sides)})",
                f"/deals/{di}/result",
                di + 1,
            )
        )


def _record_checks(rules: Ruleset, rec: AnyFastRecord, totals: list[int], scored: int, add: Add) -> None:
    """FINAL_SCORE_MISMATCH and INCOMPLETE."""
    fs = rec.final_score
    if fs is not UNSET:
        recorded = _by_side(fs, rules.sides)
        if recorded != tuple(totals):
            add(
                Violation(
                    "FINAL_SCORE_MISMATCH",
                    f"recorded final score {_by_name(recorded, rules.sides)};"
                    f" the deals add up to {_by_name(totals, rules.sides)}",
                    "/final_score",
                )
            )
    if scored < rules.scored_deals:
        add(Violation("INCOMPLETE", f"{scored} scored deals of {rules.scored_deals}", "/deals", severity=WARNING))


def _by_side(values: FastTeamInts | dict[Any, int], sides: tuple[str, ...]) -> tuple[int, ...]:
    """A recorded per-side object as a tuple in the ruleset's side order."""
    if isinstance(values, dict):
        return tuple(values[s] for s in sides)
    return (values.NS, values.EW)


def _by_name(values: tuple[int, ...] | list[int], sides: tuple[str, ...]) -> str:
    """``NS 240, EW −118``: each side named beside its value, negative values with a minus sign (never
    joined by hyphens, where ``240--118`` read as a range)."""
    return ", ".join(f"{s} {v}" if v >= 0 else f"{s} −{-v}" for s, v in zip(sides, values, strict=False))


_Bidding = tuple[Contracts, bool, tuple[int, ...], bool, tuple[tuple[int, str], ...]]
_BIDDING_CACHE: dict[tuple[object, ...], _Bidding] = {}


def _bidding(
    rules: Ruleset, dealer: int, n: int, seats: tuple[str, str, str, str], values: tuple[Bid, Bid, Bid, Bid]
) -> _Bidding:
    """Everything the replay needs of one bidding, memoised (there are few distinct biddings).

    Returns the contracts, whether it is a pass-out, the bidders' seats, whether
    the order is right, and ``(position, code)`` of every call at fault.
    """
    key = (rules, dealer, n, seats, values)
    got = _BIDDING_CACHE.get(key)
    if got is not None:
        return got
    # (one bidding in five to eight is new: written out, not built from generators)
    seat_ints = (SEAT_INDEX[seats[0]], SEAT_INDEX[seats[1]], SEAT_INDEX[seats[2]], SEAT_INDEX[seats[3]])
    pairs = ((seat_ints[0], values[0]), (seat_ints[1], values[1]), (seat_ints[2], values[2]), (seat_ints[3], values[3]))
    got = (
        rules.compute_contracts(pairs, n),  # (this memo is the ruleset's ``contracts`` memo for the replay)
        rules.is_pass_out(values),
        seat_ints,
        seat_ints == BID_ORDER[dealer],
        rules.bid_faults(n, pairs),
    )
    if len(_BIDDING_CACHE) > 1 << 16:
        _BIDDING_CACHE.clear()
    _BIDDING_CACHE[key] = got
    return got


#: The three followers of each leader, in play order.
FOLLOWERS = tuple(((s + 1) & 3, (s + 2) & 3, (s + 3) & 3) for s in range(4))

#: The bidding order for each dealer: left of the dealer first, the dealer last.
BID_ORDER = tuple(((d + 1) & 3, (d + 2) & 3, (d + 3) & 3, d) for d in range(4))


def _check_trick(
    rules: Ruleset,
    hand: list[int],
    names: list[CardName],
    played: tuple[int, int, int, int],
    leader: int,
    trump: int,
    broken: bool,
    exempt: int,
    di: int,
    j: int,
    add: Add,
) -> None:
    """Check each play of a trick that the fast path found at fault; update the hands.

    A play gets at most one code: NOT_IN_HAND first, then TRUMP_LEAD for the
    lead, the ruleset's forced-follow code after a special lead, else REVOKE.
    """
    led = played[0]
    for k in range(4):
        seat = (leader + k) & 3
        c = played[k]
        bit = 1 << c
        h = hand[seat]
        where = f"/deals/{di}/tricks/{j}/cards/{k}"
        if not h & bit:
            msg = f"{SEAT_NAMES[seat]} played {names[k]}, which is not in their hand"
            add(_violation("NOT_IN_HAND", msg, where, di + 1, j + 1, seat))
            continue
        hand[seat] = h ^ bit
        if k == 0:
            if not rules.legal_leads(h, trump, broken, bool(exempt >> seat & 1)) & bit:
                msg = f"{SEAT_NAMES[seat]} led trump {names[0]} before trump was broken"
                add(_violation("TRUMP_LEAD", msg, where, di + 1, j + 1, seat))
            continue
        allowed = rules.legal_follows(h, led, trump, k)
        if allowed & bit:
            continue
        code = rules.follow_fault(led, trump, k)
        if code != "REVOKE":
            add(_forced_fault(code, where, di, j, seat, names[k], allowed))
        else:
            msg = f"{SEAT_NAMES[seat]} did not follow suit with {names[k]}"
            add(_violation("REVOKE", msg, where, di + 1, j + 1, seat))


def _forced_fault(code: str, where: str, di: int, j: int, seat: int, name: str, allowed: int) -> Violation:
    high = code == "BIG_BLOOPER"
    what = {"BIG_BLOOPER": "the Big Blooper", "LITTLE_BLOOPER": "the Little Blooper"}.get(code, "the lowest trump")
    return _violation(
        code,
        f"{SEAT_NAMES[seat]} played {name} after {what}; "
        f"their {'highest' if high else 'lowest'} trump {CARD_NAMES[allowed.bit_length() - 1]} was due",
        where,
        di + 1,
        j + 1,
        seat,
    )


__all__ = [
    "CODES",
    "MAX_VIOLATIONS",
    "TOO_MANY",
    "DealOutcome",
    "Replay",
    "Violation",
    "json_error",
    "replay",
    "replay_checked",
    "ruleset_of",
]

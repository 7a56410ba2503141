"""A game kept deal by deal on the score keeper's page (``/keep``): what the table has entered, and the
sheet record it makes (docs/sheets.md).

Nothing here scores: the schedule after a dealing (the next deal number and dealer), the points and the
running score all come from replaying the sheet record entered so far (:func:`backalley.replay.replay`),
and the bids a player may make from the game's :class:`~backalley.rules.Ruleset`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from backalley.replay import BID_ORDER, SEAT_NAMES, Replay, replay
from backalley.rules import Bid, Ruleset, RulesetError, canonical_options, find_ruleset

#: Dealings a kept game holds at most (its scored deals and the pass-outs between them).
MAX_DEALINGS = 100


class KeepError(ValueError):
    """Input the kept game refuses: ``status`` is the HTTP status it is answered with."""

    def __init__(self, detail: str, status: int = 400) -> None:
        super().__init__(detail)
        self.detail = detail
        self.status = status


@dataclass
class Dealing:
    """One dealing as entered: its bids in bidding order (0 to 4 of them), then each seat's tricks."""

    bids: list[Bid] = field(default_factory=list)
    #: Tricks taken by N, E, S, W (``None`` until entered; never for a pass-out).
    tricks: list[int] | None = None
    #: The seats dealt a hand that earns the ruleset's bonus (``bab-online``'s rainbow), in seat order.
    rainbows: list[str] = field(default_factory=list)


@dataclass
class Kept:
    """A game in progress: its fields as the sheet record will have them, and its dealings."""

    game_id: str
    ruleset: str
    options: tuple[str, ...]
    players: tuple[str, str, str, str]
    first_dealer: int
    played_at: str
    event: str | None = None
    dealings: list[Dealing] = field(default_factory=list)
    #: The game id it was stored under (then it is no longer kept: nothing more can be entered).
    stored: str | None = None
    #: The game's keeper key (its address), for the list of games being kept that token holders see.
    key: str = ""

    @property
    def rules(self) -> Ruleset:
        return find_ruleset(self.ruleset, self.options)

    def as_json(self) -> dict[str, Any]:
        return {
            "game_id": self.game_id,
            "ruleset": self.ruleset,
            "options": list(self.options),
            "players": list(self.players),
            "first_dealer": self.first_dealer,
            "played_at": self.played_at,
            "event": self.event,
            "dealings": [{"bids": d.bids, "tricks": d.tricks, "rainbows": d.rainbows} for d in self.dealings],
            "stored": self.stored,
            "key": self.key,
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Kept:
        p = obj["players"]
        return cls(
            obj["game_id"],
            obj["ruleset"],
            tuple(obj["options"]),
            (p[0], p[1], p[2], p[3]),
            int(obj["first_dealer"]),
            obj["played_at"],
            obj.get("event"),
            [Dealing(list(d["bids"]), d["tricks"], list(d.get("rainbows", []))) for d in obj["dealings"]],
            obj.get("stored"),
            str(obj.get("key", "")),
        )


def new_game(
    game_id: str,
    ruleset: str,
    options: list[str],
    players: list[str],
    first_dealer: str,
    played_at: str,
    event: str | None,
) -> Kept:
    """A new kept game, its fields checked as the record's (the replay's schema check says what is wrong)."""
    try:
        opts = canonical_options(ruleset, options)
    except RulesetError as exc:
        raise KeepError(str(exc)) from None
    if first_dealer not in SEAT_NAMES:
        raise KeepError(f"the first dealer is one of N, E, S, W, not {first_dealer[:20]!r}")
    names = [p.strip() for p in players]
    kept = Kept(game_id.strip(), ruleset, opts, (names[0], names[1], names[2], names[3]), 0, played_at, event)
    kept.first_dealer = SEAT_NAMES.index(first_dealer)
    problems = [v for v in replay(sheet_record(kept, [])).violations if v.code != "INCOMPLETE"]
    if problems:
        raise KeepError("; ".join(f"{v.path or 'the game'}: {v.message}" for v in problems[:4]))
    return kept


def sheet_record(kept: Kept, deals: list[dict[str, Any]]) -> dict[str, Any]:
    """The sheet record of ``kept`` with ``deals`` (each a sheet deal)."""
    rec: dict[str, Any] = {"format_version": 2, "sheet": True, "game_id": kept.game_id, "ruleset": kept.ruleset}
    if kept.options:
        rec["options"] = list(kept.options)
    rec["players"] = dict(zip(SEAT_NAMES, kept.players, strict=True))
    rec["played_at"] = kept.played_at
    if kept.event:
        rec["event"] = kept.event
    rec["deals"] = deals
    return rec


@dataclass(frozen=True)
class Placed:
    """Where a dealing falls in the schedule: its deal number, hand size and dealer."""

    number: int
    n: int
    dealer: int

    @property
    def order(self) -> tuple[int, int, int, int]:
        """The seats in bidding order."""
        return BID_ORDER[self.dealer]


@dataclass
class Scored:
    """The kept game replayed: where each dealing falls, the replay of its complete dealings, and what comes next."""

    placed: list[Placed]
    replayed: Replay
    record: dict[str, Any]
    #: Where the next dealing falls (``None`` once every scored deal is played).
    upcoming: Placed | None


def done(d: Dealing, rules: Ruleset) -> bool:
    """Whether every figure of the dealing is entered: four bids, and the tricks unless all passed."""
    return len(d.bids) == 4 and (d.tricks is not None or rules.is_pass_out(d.bids))


def score(kept: Kept) -> Scored:
    """Replay the dealings entered so far, one at a time: each dealing's number and dealer follow from the
    replay of those before it (a pass-out is dealt again; ``pereulok``'s next dealer from the points)."""
    rules = kept.rules
    placed: list[Placed] = []
    deals: list[dict[str, Any]] = []
    number, dealer = 1, kept.first_dealer
    r = replay(sheet_record(kept, []))
    for d in kept.dealings:
        here = Placed(number, rules.hand_size(number), dealer)
        placed.append(here)
        if not done(d, rules):
            break
        deals.append(sheet_deal(here, d))
        r = replay(sheet_record(kept, deals))
        if len(r.deals) != len(deals):  # (every figure is checked as it is entered: never so)
            raise KeepError("; ".join(v.message for v in r.violations[:4]), 500)
        last = r.deals[-1]
        number, dealer = rules.next_number(number, last.pass_out), rules.next_dealer(dealer, last.pass_out, last.points)
    over = r.scored_deals >= rules.scored_deals
    upcoming = None if over else Placed(number, rules.hand_size(number), dealer)
    return Scored(placed, r, sheet_record(kept, deals), upcoming)


def sheet_deal(at: Placed, d: Dealing) -> dict[str, Any]:
    """A complete dealing as a sheet deal."""
    deal: dict[str, Any] = {
        "number": at.number,
        "dealer": SEAT_NAMES[at.dealer],
        "bids": [{"seat": SEAT_NAMES[s], "bid": b} for s, b in zip(at.order, d.bids, strict=True)],
    }
    if d.tricks is not None:
        deal["tricks_won"] = dict(zip(SEAT_NAMES, d.tricks, strict=True))
    if d.rainbows:
        deal["rainbows"] = d.rainbows
    return deal


def read_rainbows(rules: Ruleset, at: Placed, given: Sequence[str]) -> list[str]:
    """The seats the form says were dealt a rainbow: only in a deal where the ruleset gives the bonus."""
    seats = [s for s in SEAT_NAMES if s in given]
    if seats and not (rules.rainbow and rules.rainbow_deal(at.n)):
        raise KeepError(f"no hand of deal {at.number} ({at.n} cards) earns a rainbow in {rules.label()}")
    if len(seats) != len(given):
        raise KeepError("a rainbow is marked by the seats N, E, S, W, each at most once")
    return seats


def legal_bids(rules: Ruleset, at: Placed, before: list[Bid]) -> list[Bid]:
    """The bids the next bidder may make after ``before``: those the ruleset allows and finds no fault in."""
    seat = at.order[len(before)]
    prior = [(s, b) for s, b in zip(at.order, before, strict=False)]
    last = len(prior)
    return [
        b
        for b in rules.legal_bids_after(at.n, seat, prior)
        if all(k != last for k, _ in rules.bid_faults(at.n, (*prior, (seat, b))))
    ]


def bid_word(bid: Bid) -> str:
    return str(bid)


def read_bid(rules: Ruleset, at: Placed, before: list[Bid], word: str) -> Bid:
    """The legal bid ``word`` names; a :class:`KeepError` naming the legal ones when it names none."""
    legal = legal_bids(rules, at, before)
    for b in legal:
        if bid_word(b) == word.strip():
            return b
    seat = SEAT_NAMES[at.order[len(before)]]
    shown = word.strip()[:20]
    raise KeepError(
        f"{shown!r} is not a bid {seat} may make now (deal {at.number}, {at.n} cards); "
        f"the legal bids: {', '.join(bid_word(b) for b in legal)}"
    )


def read_tricks(at: Placed, given: dict[str, str]) -> list[int]:
    """Each seat's tricks (N, E, S, W) from the form's text; they must add up to the hand size."""
    out = []
    for seat in SEAT_NAMES:
        text = given.get(seat, "").strip()
        if not (text.isascii() and text.isdigit() and len(text) <= 3 and int(text) <= at.n):
            raise KeepError(f"{seat}'s tricks: a whole number 0 to {at.n} (deal {at.number} has {at.n} cards)")
        out.append(int(text))
    if sum(out) != at.n:
        said = " + ".join(f"{s} {t}" for s, t in zip(SEAT_NAMES, out, strict=True))
        raise KeepError(f"the tricks do not add up: {said} = {sum(out)}; deal {at.number} has {at.n} tricks")
    return out


def open_dealing(kept: Kept) -> tuple[Scored, int]:
    """The game replayed and the index of the dealing being entered (a new one when the last is complete);
    a :class:`KeepError` when the game is over or stored."""
    if kept.stored is not None:
        raise KeepError(f"this game was stored as {kept.stored!r}: nothing more can be entered here", 409)
    s = score(kept)
    if kept.dealings and not done(kept.dealings[-1], kept.rules):
        return s, len(kept.dealings) - 1
    if s.upcoming is None:
        raise KeepError("Every deal of the game is entered: store the game below (or correct a deal)", 409)
    if len(kept.dealings) >= MAX_DEALINGS:
        raise KeepError(f"A kept game holds at most {MAX_DEALINGS} dealings: store it below", 409)
    return s, len(kept.dealings)


def check_position(at: int, expected: int, what: str) -> None:
    """The form was made for dealing ``at``: refuse it (409) when the game moved on since (another phone,
    a form sent twice)."""
    if at != expected:
        raise KeepError(f"this {what} was for another point of the game (it moved on since): reload the page", 409)


def add_bid(kept: Kept, at: int, position: int, word: str) -> None:
    """Enter the next bid of the dealing being entered (``at``, ``position``: where the form put it)."""
    s, current = open_dealing(kept)
    d = kept.dealings[current] if current < len(kept.dealings) else Dealing()
    check_position(at, current, "bid")
    check_position(position, len(d.bids), "bid")
    if len(d.bids) == 4:
        raise KeepError("every bid of this deal is entered: enter the tricks", 409)
    place = s.placed[current] if current < len(s.placed) else s.upcoming
    assert place is not None
    d.bids.append(read_bid(kept.rules, place, d.bids, word))
    if current == len(kept.dealings):
        kept.dealings.append(d)


def add_tricks(kept: Kept, at: int, given: dict[str, str], rainbows: Sequence[str] = ()) -> None:
    """Enter each seat's tricks (and the seats dealt a rainbow) in the dealing being entered, once its four
    bids are in."""
    s, current = open_dealing(kept)
    check_position(at, current, "form")
    d = kept.dealings[current] if current < len(kept.dealings) else Dealing()
    if len(d.bids) < 4:
        raise KeepError("the tricks are entered after the four bids", 409)
    d.rainbows = read_rainbows(kept.rules, s.placed[current], rainbows)
    d.tricks = read_tricks(s.placed[current], given)


def restart_bidding(kept: Kept, at: int) -> None:
    """Clear the bids of the dealing being entered (a bid entered by mistake)."""
    _, current = open_dealing(kept)
    check_position(at, current, "form")
    if current < len(kept.dealings):
        del kept.dealings[current]


def take_back(kept: Kept, entered: int) -> None:
    """Remove the last entered deal (``entered``: how many deals the form was made for), so that it can be
    entered again; a deal whose bids are being entered is bid again first."""
    if kept.stored is not None:
        raise KeepError(f"this game was stored as {kept.stored!r}: nothing more can be entered here", 409)
    complete = sum(1 for d in kept.dealings if done(d, kept.rules))
    check_position(entered, complete, "form")
    if complete == 0:
        raise KeepError("no deal is entered yet: there is nothing to take back", 409)
    if len(kept.dealings) > complete:
        raise KeepError(
            f"deal {complete + 1} has bids entered: bid it again first, then take back deal {complete}", 409
        )
    del kept.dealings[complete - 1]


def correct(kept: Kept, index: int, words: list[str], given: dict[str, str], rainbows: Sequence[str] = ()) -> None:
    """Replace the bids and tricks of complete dealing ``index``; every dealing after it is scored again.

    A correction may not make a bid dealing a pass-out or the other way round while dealings follow it
    (they would fall elsewhere in the schedule): correct the last dealing for that."""
    if kept.stored is not None:
        raise KeepError(f"this game was stored as {kept.stored!r}: nothing more can be entered here", 409)
    rules = kept.rules
    complete = [i for i, d in enumerate(kept.dealings) if done(d, rules)]
    if index not in complete:
        raise KeepError(f"there is no entered deal {index + 1} to correct (deals 1 to {len(complete)})", 404)
    at = score(kept).placed[index]
    bids: list[Bid] = []
    for word in words[:4]:
        bids.append(read_bid(rules, at, bids, word))
    if len(bids) != 4:
        raise KeepError("a correction gives all four bids")
    passed = rules.is_pass_out(bids)
    if passed != rules.is_pass_out(kept.dealings[index].bids) and any(d.bids for d in kept.dealings[index + 1 :]):
        raise KeepError(
            "this correction would make a passed-out deal a bid one or the other way round; the deals after it"
            " would fall elsewhere in the schedule: only the last deal entered can change so (take back the"
            " deals after it first)",
            409,
        )
    if passed:
        kept.dealings[index] = Dealing(bids)
    else:
        kept.dealings[index] = Dealing(bids, read_tricks(at, given), read_rainbows(rules, at, rainbows))

"""Record -> replay: every violation with its location, and the recomputed scores.

:func:`replay` takes any parsed JSON value and never raises on bad content.  A
record that fails the schema (pydantic models of :mod:`backalley.record`) gets
one ``SCHEMA`` violation per offending location and nothing else is checked.
A record that fits the schema is replayed deal by deal on small ints and
bitmasks (no pydantic objects on this path), following the replay conventions
of docs/record-format.md: the record's own values drive the replay, every violation is
collected, and after a bad play the recorded card counts as played.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import chain
from typing import Any

import msgspec
from msgspec import UNSET
from pydantic import ValidationError

from backalley.cards import (
    BJ,
    CARD_BIT,
    CARD_INDEX,
    CARD_NAMES,
    EFFECTIVE_SUIT,
    IS_TRUMP,
    LJ,
    NO_TRUMP,
    SEATS,
    TRUMP_MASK,
    WIN_KEY,
)
from backalley.record import CardName, FastRecord, GameRecord, to_fast
from backalley.rules import (
    HAND_SIZE,
    PASS,
    SCORED_DEALS,
    Bid,
    Contracts,
    contracts,
    follow_fault,
    follow_suit_mask,
    is_blooper_lead,
    legal_follows,
    legal_leads,
    score,
    trump_of,
)

ERROR = "error"
WARNING = "warning"
SEAT_INDEX = {s: i for i, s in enumerate(SEATS)}
SEAT_NAMES = tuple(SEATS)

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


@dataclass(slots=True)
class DealOutcome:
    """The recomputed figures of one dealing, plus what the store needs of it."""

    tricks: tuple[int, int]
    points: tuple[int, int]
    pass_out: bool
    #: Trump suit (0..3) or ``NO_TRUMP``.
    trump: int
    contracts: Contracts
    #: Seat that won each replayed trick (empty for a pass-out).
    winners: list[int] = field(default_factory=list)
    #: Whether trump was broken before each replayed trick.
    broken_before: list[bool] = field(default_factory=list)
    #: Recorded leader seat of each replayed trick.
    leaders: list[int] = field(default_factory=list)
    #: Every replayed card as an int, trick by trick in play order (4 per trick).
    cards: list[int] = field(default_factory=list)


@dataclass(slots=True)
class Replay:
    """What the validator knows of one record."""

    game_id: str | None
    violations: list[Violation]
    deals: list[DealOutcome]
    final_score: tuple[int, int] | None
    scored_deals: int = 0

    @property
    def valid(self) -> bool:
        return not any(v.severity == ERROR for v in self.violations)

    @property
    def complete(self) -> bool:
        return self.valid and self.scored_deals == SCORED_DEALS

    def report(self, source: str, line: int | None) -> dict[str, Any]:
        """The JSON Lines report object of docs/record-format.md for this record."""
        return {
            "source": source,
            "line": line,
            "game_id": self.game_id,
            "valid": self.valid,
            "complete": self.complete,
            "violations": [v.as_dict() for v in self.violations],
            "deals": [
                {
                    "tricks": {"NS": d.tricks[0], "EW": d.tricks[1]},
                    "points": {"NS": d.points[0], "EW": d.points[1]},
                }
                for d in self.deals
            ],
            "final_score": (
                None if self.final_score is None else {"NS": self.final_score[0], "EW": self.final_score[1]}
            ),
        }


def json_error(message: str) -> Replay:
    """The replay of an input that is not JSON at all."""
    return Replay(None, [Violation("JSON", message, "")], [], None)


def pointer(parts: tuple[int | str, ...] | list[int | str]) -> str:
    """RFC 6901 JSON Pointer for a location."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def schema_violations(obj: dict[str, Any]) -> list[Violation]:
    """One ``SCHEMA`` violation per offending location (empty when the record fits)."""
    try:
        GameRecord.model_validate(obj)
    except ValidationError as exc:
        by_path: dict[str, list[str]] = {}
        for err in exc.errors(include_url=False):
            path = pointer(err["loc"])
            msg = err["msg"].removeprefix("Value error, ")
            by_path.setdefault(path, []).append(msg)
        return [Violation("SCHEMA", f"{path or 'record'}: {'; '.join(msgs)}", path) for path, msgs in by_path.items()]
    return []


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
        return Replay(game_id, problems, [], None)
    try:
        rec = to_fast(obj)
    except msgspec.ValidationError as exc:  # the two models disagree: never silently accept
        return Replay(game_id, [Violation("SCHEMA", f"record: {exc}", "")], [], None)
    return replay_checked(rec)


def _violation(
    code: str, message: str, path: str, deal: int, trick: int | None = None, seat: int | None = None
) -> Violation:
    return Violation(code, message, path, deal, trick, None if seat is None else SEAT_NAMES[seat])


def replay_checked(rec: FastRecord) -> Replay:
    """Replay a record that fits the format.

    This is the hot path: card names become ints once, hands are bitmasks, and
    a violation's message and path are only built when there is one.
    """
    out: list[Violation] = []
    outcomes: list[DealOutcome] = []
    add = out.append
    ci = CARD_INDEX
    bit_of = CARD_BIT.__getitem__
    si = SEAT_INDEX
    tot_ns = tot_ew = 0
    scored = 0
    prev_number = 0
    prev_dealer = -1
    prev_pass_out = False

    for di, d in enumerate(rec.deals):
        dn = di + 1
        number = d.number
        n = HAND_SIZE[number]
        dealer = si[d.dealer]
        bd0, bd1, bd2, bd3 = d.bids
        con, pass_out, bid_seats, order_ok, out_of_range = _bidding(
            dealer, n, (bd0.seat, bd1.seat, bd2.seat, bd3.seat), (bd0.bid, bd1.bid, bd2.bid, bd3.bid)
        )

        # -- schedule ------------------------------------------------------------
        expected = 1 if di == 0 else (prev_number if prev_pass_out else prev_number + 1)
        if not pass_out:
            scored += 1
        if number != expected:
            add(_violation("DEAL_NUMBER", f"deal number {number}, expected {expected}", f"/deals/{di}/number", dn))
        elif scored > SCORED_DEALS and not pass_out:
            add(
                _violation("DEAL_NUMBER", f"scored deal {scored}: a game has {SCORED_DEALS}", f"/deals/{di}/number", dn)
            )
        if di and dealer != (prev_dealer + 1) & 3:
            add(
                _violation(
                    "DEALER",
                    f"{SEAT_NAMES[dealer]} dealt; the dealer should be {SEAT_NAMES[(prev_dealer + 1) & 3]}",
                    f"/deals/{di}/dealer",
                    dn,
                    seat=dealer,
                )
            )
        prev_number, prev_dealer, prev_pass_out = number, dealer, pass_out

        # -- the deal --------------------------------------------------------------
        hd = d.hands
        hands_in = (hd.N, hd.E, hd.S, hd.W)
        hand = [0, 0, 0, 0]
        seen = 0
        for s in range(4):
            if len(hands_in[s]) != n:
                add(
                    _violation(
                        "HAND_SIZE",
                        f"{SEAT_NAMES[s]} holds {len(hands_in[s])} cards; deal {number} deals {n}",
                        f"/deals/{di}/hands/{SEAT_NAMES[s]}",
                        dn,
                        seat=s,
                    )
                )
        for s in range(4):
            held = hands_in[s]
            m = sum(map(bit_of, held))
            if m & seen or m.bit_count() != len(held):  # a repeated card: find it (exact: a sum of
                m = 0  # distinct bits has no carries, so its popcount equals the count)
                for k, cs in enumerate(held):
                    bit = bit_of(cs)
                    if (seen | m) & bit:
                        add(
                            _violation(
                                "DUPLICATE_CARD", f"{cs} appears twice", f"/deals/{di}/hands/{SEAT_NAMES[s]}/{k}", dn
                            )
                        )
                    m |= bit
            seen |= m
            hand[s] = m
        tc_name = d.trump_card
        tc = ci[tc_name]
        if seen >> tc & 1:
            add(_violation("DUPLICATE_CARD", f"the trump card {tc_name} is also dealt", f"/deals/{di}/trump_card", dn))
        seen |= 1 << tc
        stock: list[int] | None = None  # only its first two cards matter after this check
        if d.stock is not UNSET:
            stock_in = d.stock
            stock = [ci[c] for c in stock_in[:2]]
            first = 1 if stock and stock[0] == tc else 0
            m = sum(map(bit_of, stock_in[first:]))
            if m & seen or m.bit_count() != len(stock_in) - first:
                m = 0
                for k in range(first, len(stock_in)):
                    bit = bit_of(stock_in[k])
                    if (seen | m) & bit:
                        add(_violation("DUPLICATE_CARD", f"{stock_in[k]} appears twice", f"/deals/{di}/stock/{k}", dn))
                    m |= bit
            seen |= m
            want = 54 - 4 * n
            if len(stock_in) != want or first == 0:
                why = []
                if len(stock_in) != want:
                    why.append(f"the stock holds {len(stock_in)} cards; deal {number} leaves {want}")
                if first == 0:
                    why.append(
                        f"its top card {stock_in[0]} is not the trump card {tc_name}" if stock_in else "it is empty"
                    )
                add(_violation("STOCK", "; ".join(why), f"/deals/{di}/stock", dn))

        # -- trump and the joker swap ------------------------------------------------
        trump = trump_of(tc)
        swap = d.joker_swap
        holder = -1
        other = 0
        if trump == NO_TRUMP:
            other = BJ if tc == LJ else LJ
            for s in range(4):
                if hand[s] >> other & 1:
                    holder = s
                    break
        needed = holder >= 0
        if swap is UNSET:
            if needed:
                add(
                    _violation(
                        "JOKER_SWAP",
                        f"{tc_name} was turned: {SEAT_NAMES[holder]} must discard {CARD_NAMES[other]} "
                        "and draw the next stock card, but no swap is recorded",
                        f"/deals/{di}/joker_swap",
                        dn,
                        seat=holder,
                    )
                )
        else:
            sseat = si[swap.seat]
            drawn = ci[swap.drawn]
            why_not: list[str] = []
            if not needed:
                why_not.append(
                    f"no swap was needed (the trump card {tc_name} is not a joker)"
                    if trump != NO_TRUMP
                    else f"no swap was needed (nobody was dealt {CARD_NAMES[other]})"
                )
            else:
                if sseat != holder:
                    why_not.append(f"{CARD_NAMES[other]} was dealt to {SEAT_NAMES[holder]}, not {swap.seat}")
                if drawn == tc:
                    why_not.append(f"the drawn card {swap.drawn} is the turned card")
                elif (hand[0] | hand[1] | hand[2] | hand[3]) >> drawn & 1:
                    why_not.append(f"the drawn card {swap.drawn} was dealt to a player")
                elif stock is not None and (len(stock) < 2 or stock[1] != drawn):
                    why_not.append(f"the drawn card {swap.drawn} is not the next stock card")
            if why_not:
                add(_violation("JOKER_SWAP", "; ".join(why_not), f"/deals/{di}/joker_swap", dn, seat=sseat))
        if trump == NO_TRUMP:
            keep = ~(1 << other)
            hand = [h & keep for h in hand]
            if needed:
                if swap is not UNSET:
                    hand[si[swap.seat]] |= 1 << ci[swap.drawn]
                elif stock is not None and len(stock) > 1:
                    hand[holder] |= 1 << stock[1]

        # -- bidding ---------------------------------------------------------------------
        if not order_ok:
            add(
                _violation(
                    "BID_ORDER",
                    f"bids by {' '.join(SEAT_NAMES[s] for s in bid_seats)}; with {SEAT_NAMES[dealer]} dealing "
                    f"the order is {' '.join(SEAT_NAMES[s] for s in BID_ORDER[dealer])}",
                    f"/deals/{di}/bids",
                    dn,
                )
            )
        for k in out_of_range:
            who = SEAT_NAMES[bid_seats[k]]
            b = d.bids[k].bid
            add(
                _violation(
                    "BID_RANGE",
                    f"{who} bid {b}; with {n} cards a bid is 1 to {n - 1}"
                    if n > 1
                    else f"{who} bid {b}; with 1 card no number can be bid",
                    f"/deals/{di}/bids/{k}/bid",
                    dn,
                    seat=bid_seats[k],
                )
            )

        # -- play ------------------------------------------------------------------------------
        tricks = d.tricks
        won_ns = won_ew = 0
        winners: list[int] = []
        broken_before: list[bool] = []
        leaders: list[int] = []
        cards: list[int] = []
        if pass_out:
            if tricks:
                add(
                    _violation(
                        "PASS_OUT", f"all four passed, yet {len(tricks)} tricks were played", f"/deals/{di}/tricks", dn
                    )
                )
        elif not tricks:
            add(_violation("PASS_OUT", "no tricks were played, but not everybody passed", f"/deals/{di}/tricks", dn))
        else:
            if len(tricks) != n:
                add(
                    _violation(
                        "TRICK_COUNT",
                        f"{len(tricks)} tricks recorded; deal {number} has {n}",
                        f"/deals/{di}/tricks",
                        dn,
                    )
                )
            is_trump = IS_TRUMP[trump]
            not_trumps = ~TRUMP_MASK[trump]
            claimers = con.board_claimers
            expected_leader = -1 if con.opening_leader is None else con.opening_leader
            broken = False
            must_by_led = FOLLOW_BY_LED[trump]
            key_by_led = WIN_KEY_BY_LED[trump]
            no_bloopers = trump == NO_TRUMP  # a joker lead forces trumps only in a trump deal
            cards = list(map(ci.__getitem__, chain.from_iterable([t.cards for t in tricks])))
            flat = iter(cards)
            # (A zip over a separate leaders list here runs 30% slower once compiled.)
            for j, (t, c0, c1, c2, c3) in enumerate(zip(tricks, flat, flat, flat, flat, strict=False)):
                leader = si[t.leader]
                leaders.append(leader)
                if expected_leader >= 0 and leader != expected_leader:
                    add(
                        _violation(
                            "LEADER",
                            f"{SEAT_NAMES[leader]} led trick {j + 1}; {SEAT_NAMES[expected_leader]} should have"
                            + (" (the highest bidder)" if j == 0 else " (the last trick's winner)"),
                            f"/deals/{di}/tricks/{j}/leader",
                            dn,
                            j + 1,
                            leader,
                        )
                    )
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
                    and (broken or not is_trump[c0] or not h0 & not_trumps or claimers >> leader & 1)
                    and (c0 < LJ or no_bloopers)
                ):  # the usual case: a legal trick (rules.legal_leads/legal_follows, inlined)
                    hand[leader], hand[s1], hand[s2], hand[s3] = h0 ^ b0, h1 ^ b1, h2 ^ b2, h3 ^ b3
                else:
                    _check_trick(hand, t.cards, (c0, c1, c2, c3), leader, trump, broken, claimers, di, j, add)
                key = key_by_led[c0]
                k0, k1, k2, k3 = key[c0], key[c1], key[c2], key[c3]
                best = max(k0, k1, k2, k3)
                w = (leader + (0 if k0 == best else 1 if k1 == best else 2 if k2 == best else 3)) & 3
                winners.append(w)
                broken_before.append(broken)
                if w & 1:
                    won_ew += 1
                else:
                    won_ns += 1
                if not broken:
                    broken = is_trump[c0] or is_trump[c1] or is_trump[c2] or is_trump[c3]
                expected_leader = w
        if pass_out:
            pts_ns = pts_ew = 0
        else:
            pts_ns = score(con.ns, won_ns, n)
            pts_ew = score(con.ew, won_ew, n)
        tot_ns += pts_ns
        tot_ew += pts_ew
        res = d.result
        if res is not UNSET:
            rt, rp = res.tricks, res.points
            if won_ns != rt.NS or won_ew != rt.EW or pts_ns != rp.NS or pts_ew != rp.EW:
                add(
                    _violation(
                        "RESULT_MISMATCH",
                        f"recorded tricks {rt.NS}-{rt.EW} and points {rp.NS}-{rp.EW} (NS-EW); "
                        f"the replay gives tricks {won_ns}-{won_ew} and points {pts_ns}-{pts_ew}",
                        f"/deals/{di}/result",
                        dn,
                    )
                )
        outcomes.append(
            DealOutcome(
                (won_ns, won_ew), (pts_ns, pts_ew), pass_out, trump, con, winners, broken_before, leaders, cards
            )
        )

    fs = rec.final_score
    if fs is not UNSET and (tot_ns != fs.NS or tot_ew != fs.EW):
        add(
            Violation(
                "FINAL_SCORE_MISMATCH",
                f"recorded final score {fs.NS}-{fs.EW} (NS-EW); the deals add up to {tot_ns}-{tot_ew}",
                "/final_score",
            )
        )
    if scored < SCORED_DEALS:
        add(Violation("INCOMPLETE", f"{scored} scored deals of {SCORED_DEALS}", "/deals", severity=WARNING))
    return Replay(rec.game_id, out, outcomes, (tot_ns, tot_ew), scored)


@lru_cache(maxsize=1 << 16)
def _bidding(
    dealer: int, n: int, seats: tuple[str, str, str, str], values: tuple[Bid, Bid, Bid, Bid]
) -> tuple[Contracts, bool, tuple[int, ...], bool, tuple[int, ...]]:
    """Everything the replay needs of one bidding, memoised (there are few distinct biddings).

    Returns the contracts, whether it is a pass-out, the bidders' seats, whether
    the order is right, and the positions of numeric bids outside 1..n-1.
    """
    seat_ints = tuple(SEAT_INDEX[s] for s in seats)
    out_of_range = tuple(k for k, b in enumerate(values) if isinstance(b, int) and not 1 <= b <= n - 1)
    pass_out = all(b == PASS for b in values)
    return (
        contracts(tuple(zip(seat_ints, values, strict=True))),
        pass_out,
        seat_ints,
        seat_ints == BID_ORDER[dealer],
        out_of_range,
    )


#: The three followers of each leader, in play order.
FOLLOWERS = tuple(((s + 1) & 3, (s + 2) & 3, (s + 3) & 3) for s in range(4))
#: ``FOLLOW_BY_LED[t][c]``: the cards that follow a lead of ``c`` when ``t`` is trump.
FOLLOW_BY_LED = tuple(tuple(follow_suit_mask(c, t) for c in range(54)) for t in range(5))
#: ``WIN_KEY_BY_LED[t][c]``: the winning keys of every card for a trick led with ``c``.
WIN_KEY_BY_LED = tuple(tuple(WIN_KEY[t][EFFECTIVE_SUIT[t][c]] for c in range(54)) for t in range(5))

#: The bidding order for each dealer: left of the dealer first, the dealer last.
BID_ORDER = tuple(((d + 1) & 3, (d + 2) & 3, (d + 3) & 3, d) for d in range(4))


def _check_trick(
    hand: list[int],
    names: list[CardName],
    played: tuple[int, int, int, int],
    leader: int,
    trump: int,
    broken: bool,
    claimers: int,
    di: int,
    j: int,
    add: Callable[[Violation], None],
) -> None:
    """Check each play of a trick that the fast path found at fault; update the hands.

    A play gets at most one code: NOT_IN_HAND first, then TRUMP_LEAD for the
    lead, BIG_BLOOPER / LITTLE_BLOOPER after a Blooper lead, else REVOKE.
    """
    led = played[0]
    must = follow_suit_mask(led, trump)
    blooper = is_blooper_lead(led, trump)
    for k in range(4):
        seat = (leader + k) & 3
        c = played[k]
        bit = 1 << c
        h = hand[seat]
        if not h & bit:
            add(
                _violation(
                    "NOT_IN_HAND",
                    f"{SEAT_NAMES[seat]} played {names[k]}, which is not in their hand",
                    f"/deals/{di}/tricks/{j}/cards/{k}",
                    di + 1,
                    j + 1,
                    seat,
                )
            )
            continue
        hand[seat] = h ^ bit
        if k == 0:
            if not legal_leads(h, trump, broken, bool(claimers >> seat & 1)) & bit:
                add(
                    _violation(
                        "TRUMP_LEAD",
                        f"{SEAT_NAMES[seat]} led trump {names[0]} before trump was broken",
                        f"/deals/{di}/tricks/{j}/cards/0",
                        di + 1,
                        j + 1,
                        seat,
                    )
                )
        elif blooper:
            allowed = legal_follows(h, led, trump)
            if not allowed & bit:
                add(_blooper(di, j, k, seat, names[k], led, trump, allowed))
        elif h & must and not bit & must:
            add(
                _violation(
                    "REVOKE",
                    f"{SEAT_NAMES[seat]} did not follow suit with {names[k]}",
                    f"/deals/{di}/tricks/{j}/cards/{k}",
                    di + 1,
                    j + 1,
                    seat,
                )
            )


def _blooper(di: int, j: int, k: int, seat: int, name: str, led: int, trump: int, allowed: int) -> Violation:
    big = led == BJ
    return _violation(
        follow_fault(led, trump),
        f"{SEAT_NAMES[seat]} played {name} after the {'Big' if big else 'Little'} Blooper; "
        f"their {'highest' if big else 'lowest'} trump {CARD_NAMES[allowed.bit_length() - 1]} was due",
        f"/deals/{di}/tricks/{j}/cards/{k}",
        di + 1,
        j + 1,
        seat,
    )


__all__ = ["CODES", "DealOutcome", "Replay", "Violation", "json_error", "replay", "replay_checked"]

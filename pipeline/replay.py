"""Record -> replay: every violation with its location, and the recomputed scores.

:func:`replay` takes any parsed JSON value and never raises on bad content.  A
record that fails the schema (pydantic models of :mod:`pipeline.record`) gets
one ``SCHEMA`` violation per offending location and nothing else is checked.
A record that fits the schema is replayed deal by deal on small ints and
bitmasks (no pydantic objects on this path), following the replay conventions
of RECORD.md: the record's own values drive the replay, every violation is
collected, and after a bad play the recorded card counts as played.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from pipeline.cards import (
    BJ,
    CARD_INDEX,
    CARD_NAMES,
    CARD_SUIT,
    IS_TRUMP,
    LJ,
    NO_TRUMP,
    SEATS,
    TEAMS,
)
from pipeline.record import GameRecord
from pipeline.rules import (
    HAND_SIZE,
    PASS,
    SCORED_DEALS,
    Contracts,
    contracts,
    follow_fault,
    legal_follows,
    legal_leads,
    score,
    trick_winner,
)

ERROR = "error"
WARNING = "warning"
SEAT_INDEX = {s: i for i, s in enumerate(SEATS)}
SEAT_NAMES = ("N", "E", "S", "W")

#: Every violation code of RECORD.md, in the order of its table.
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
        """The JSON Lines report object of RECORD.md for this record."""
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
        kind = type(obj).__name__ if obj is not None else "null"
        return Replay(None, [Violation("SCHEMA", f"a game record is a JSON object, not {kind}", "")], [], None)
    gid = obj.get("game_id")
    game_id = gid if isinstance(gid, str) else None
    problems = schema_violations(obj)
    if problems:
        return Replay(game_id, problems, [], None)
    return replay_checked(obj)


def _seat_name(seat: int | None) -> str | None:
    return None if seat is None else SEAT_NAMES[seat]


def replay_checked(rec: dict[str, Any]) -> Replay:
    """Replay a record that already fits the schema (plain parsed JSON)."""
    out: list[Violation] = []
    outcomes: list[DealOutcome] = []
    add = out.append
    totals = [0, 0]
    scored = 0
    prev_number = 0
    prev_dealer = -1
    prev_pass_out = False

    for di, d in enumerate(rec["deals"]):
        base = f"/deals/{di}"
        dn = di + 1
        number: int = d["number"]
        n = HAND_SIZE[number]
        dealer = SEAT_INDEX[d["dealer"]]
        bids = d["bids"]
        bid_values = [b["bid"] for b in bids]
        pass_out = all(b == PASS for b in bid_values)

        # -- schedule ------------------------------------------------------
        expected = 1 if di == 0 else (prev_number if prev_pass_out else prev_number + 1)
        if not pass_out:
            scored += 1
        if number != expected:
            add(Violation("DEAL_NUMBER", f"deal number {number}, expected {expected}", base + "/number", dn))
        elif scored > SCORED_DEALS and not pass_out:
            add(Violation("DEAL_NUMBER", f"scored deal {scored}: a game has {SCORED_DEALS}", base + "/number", dn))
        if di and dealer != (prev_dealer + 1) & 3:
            add(
                Violation(
                    "DEALER",
                    f"{SEAT_NAMES[dealer]} dealt; the dealer should be {SEAT_NAMES[(prev_dealer + 1) & 3]}",
                    base + "/dealer",
                    dn,
                    seat=SEAT_NAMES[dealer],
                )
            )
        prev_number, prev_dealer, prev_pass_out = number, dealer, pass_out

        # -- the deal --------------------------------------------------------
        hands_in = d["hands"]
        hand = [0, 0, 0, 0]
        seen = 0
        for s in range(4):
            name = SEAT_NAMES[s]
            cards = hands_in[name]
            if len(cards) != n:
                add(
                    Violation(
                        "HAND_SIZE",
                        f"{name} holds {len(cards)} cards, deal {number} deals {n}",
                        f"{base}/hands/{name}",
                        dn,
                        seat=name,
                    )
                )
            m = 0
            for k, cs in enumerate(cards):
                bit = 1 << CARD_INDEX[cs]
                if seen & bit:
                    add(Violation("DUPLICATE_CARD", f"{cs} appears twice", f"{base}/hands/{name}/{k}", dn, seat=name))
                seen |= bit
                m |= bit
            hand[s] = m
        tc_name = d["trump_card"]
        tc = CARD_INDEX[tc_name]
        if seen >> tc & 1:
            add(Violation("DUPLICATE_CARD", f"the trump card {tc_name} is also dealt", base + "/trump_card", dn))
        seen |= 1 << tc
        stock_in = d.get("stock")
        stock: list[int] | None = None
        if stock_in is not None:
            stock = [CARD_INDEX[c] for c in stock_in]
            for k in range(1 if stock and stock[0] == tc else 0, len(stock)):
                bit = 1 << stock[k]
                if seen & bit:
                    add(Violation("DUPLICATE_CARD", f"{stock_in[k]} appears twice", f"{base}/stock/{k}", dn))
                seen |= bit
            want = 54 - 4 * n
            if len(stock) != want or stock[0] != tc:
                why = (
                    f"the stock holds {len(stock)} cards, deal {number} leaves {want}"
                    if len(stock) != want
                    else f"the stock's top card {stock_in[0]} is not the trump card {tc_name}"
                )
                if len(stock) != want and stock and stock[0] != tc:
                    why += f", and its top card {stock_in[0]} is not the trump card {tc_name}"
                add(Violation("STOCK", why, base + "/stock", dn))

        # -- trump and the joker swap ------------------------------------------
        trump = CARD_SUIT[tc]
        swap = d.get("joker_swap")
        holder: int | None = None
        other = 0
        if trump == NO_TRUMP:
            other = BJ if tc == LJ else LJ
            for s in range(4):
                if hand[s] >> other & 1:
                    holder = s
                    break
        needed = holder is not None
        if swap is None:
            if needed:
                assert holder is not None
                add(
                    Violation(
                        "JOKER_SWAP",
                        f"{tc_name} was turned: {SEAT_NAMES[holder]} must discard {CARD_NAMES[other]} and draw the next stock card, but no swap is recorded",
                        base + "/joker_swap",
                        dn,
                        seat=SEAT_NAMES[holder],
                    )
                )
        else:
            sseat = SEAT_INDEX[swap["seat"]]
            drawn_name = swap["drawn"]
            drawn = CARD_INDEX[drawn_name]
            why_not: list[str] = []
            if not needed:
                why_not.append(
                    "no swap was needed"
                    + (
                        f" (the trump card {tc_name} is not a joker)"
                        if trump != NO_TRUMP
                        else f" (nobody was dealt {CARD_NAMES[other]})"
                    )
                )
            else:
                assert holder is not None
                if sseat != holder:
                    why_not.append(f"{CARD_NAMES[other]} was dealt to {SEAT_NAMES[holder]}, not {swap['seat']}")
                if drawn == tc:
                    why_not.append(f"the drawn card {drawn_name} is the turned card")
                elif any(h >> drawn & 1 for h in hand):
                    why_not.append(f"the drawn card {drawn_name} was dealt to a player")
                elif stock is not None and (len(stock) < 2 or stock[1] != drawn):
                    why_not.append(f"the drawn card {drawn_name} is not the next stock card")
            if why_not:
                add(Violation("JOKER_SWAP", "; ".join(why_not), base + "/joker_swap", dn, seat=swap["seat"]))
        if trump == NO_TRUMP:
            for s in range(4):
                hand[s] &= ~(1 << other)
            if needed:
                if swap is not None:
                    hand[SEAT_INDEX[swap["seat"]]] |= 1 << CARD_INDEX[swap["drawn"]]
                elif stock is not None and len(stock) > 1:
                    assert holder is not None
                    hand[holder] |= 1 << stock[1]

        # -- bidding ---------------------------------------------------------------
        bid_seats = [SEAT_INDEX[b["seat"]] for b in bids]
        if bid_seats != [(dealer + 1) & 3, (dealer + 2) & 3, (dealer + 3) & 3, dealer]:
            add(
                Violation(
                    "BID_ORDER",
                    f"bids by {' '.join(SEAT_NAMES[s] for s in bid_seats)}; with {SEAT_NAMES[dealer]} dealing the order is "
                    + " ".join(SEAT_NAMES[(dealer + k) & 3] for k in range(1, 5)),
                    base + "/bids",
                    dn,
                )
            )
        for k, b in enumerate(bid_values):
            if isinstance(b, int) and not 1 <= b <= n - 1:
                add(
                    Violation(
                        "BID_RANGE",
                        f"{SEAT_NAMES[bid_seats[k]]} bid {b}; with {n} cards a bid is 1 to {n - 1}"
                        if n > 1
                        else f"{SEAT_NAMES[bid_seats[k]]} bid {b}; with 1 card no number can be bid",
                        f"{base}/bids/{k}/bid",
                        dn,
                        seat=SEAT_NAMES[bid_seats[k]],
                    )
                )
        con = contracts(list(zip(bid_seats, bid_values, strict=True)))

        # -- play --------------------------------------------------------------------
        tricks = d["tricks"]
        won = [0, 0]
        winners: list[int] = []
        broken_before: list[bool] = []
        if pass_out:
            if tricks:
                add(
                    Violation(
                        "PASS_OUT", f"all four passed, yet {len(tricks)} tricks were played", base + "/tricks", dn
                    )
                )
        elif not tricks:
            add(Violation("PASS_OUT", "no tricks were played, but not everybody passed", base + "/tricks", dn))
        else:
            if len(tricks) != n:
                add(
                    Violation(
                        "TRICK_COUNT", f"{len(tricks)} tricks recorded, deal {number} has {n}", base + "/tricks", dn
                    )
                )
            is_trump = IS_TRUMP[trump]
            claimers = con.board_claimers
            expected_leader = con.opening_leader
            broken = False
            for j, t in enumerate(tricks):
                tn = j + 1
                tbase = f"{base}/tricks/{j}"
                leader = SEAT_INDEX[t["leader"]]
                if expected_leader is not None and leader != expected_leader:
                    add(
                        Violation(
                            "LEADER",
                            f"{SEAT_NAMES[leader]} led trick {tn}; {SEAT_NAMES[expected_leader]} should have"
                            + (" (the highest bidder)" if j == 0 else " (the last trick's winner)"),
                            tbase + "/leader",
                            dn,
                            tn,
                            SEAT_NAMES[leader],
                        )
                    )
                names = t["cards"]
                cards = [CARD_INDEX[c] for c in names]
                led = cards[0]
                for k in range(4):
                    seat = (leader + k) & 3
                    c = cards[k]
                    bit = 1 << c
                    h = hand[seat]
                    if not h & bit:
                        add(
                            Violation(
                                "NOT_IN_HAND",
                                f"{SEAT_NAMES[seat]} played {names[k]}, which is not in their hand",
                                f"{tbase}/cards/{k}",
                                dn,
                                tn,
                                SEAT_NAMES[seat],
                            )
                        )
                        continue
                    hand[seat] = h ^ bit
                    if k == 0:
                        if not legal_leads(h, trump, broken, bool(claimers >> seat & 1)) & bit:
                            add(
                                Violation(
                                    "TRUMP_LEAD",
                                    f"{SEAT_NAMES[seat]} led trump {names[k]} before trump was broken",
                                    f"{tbase}/cards/{k}",
                                    dn,
                                    tn,
                                    SEAT_NAMES[seat],
                                )
                            )
                    elif not legal_follows(h, led, trump) & bit:
                        code = follow_fault(led, trump)
                        must = CARD_NAMES[legal_follows(h, led, trump).bit_length() - 1]
                        msg = (
                            f"{SEAT_NAMES[seat]} did not follow suit with {names[k]}"
                            if code == "REVOKE"
                            else f"{SEAT_NAMES[seat]} played {names[k]} after the {'Big' if led == BJ else 'Little'} Blooper; {must} was due"
                        )
                        add(Violation(code, msg, f"{tbase}/cards/{k}", dn, tn, SEAT_NAMES[seat]))
                w = (leader + trick_winner(cards, trump)) & 3
                winners.append(w)
                broken_before.append(broken)
                won[w & 1] += 1
                if not broken:
                    broken = is_trump[cards[0]] or is_trump[cards[1]] or is_trump[cards[2]] or is_trump[cards[3]]
                expected_leader = w
        if pass_out:
            points = (0, 0)
        else:
            points = (score(con.ns, won[0], n), score(con.ew, won[1], n))
        totals[0] += points[0]
        totals[1] += points[1]
        res = d.get("result")
        if res is not None:
            rt, rp = res["tricks"], res["points"]
            if rt["NS"] != won[0] or rt["EW"] != won[1] or rp["NS"] != points[0] or rp["EW"] != points[1]:
                add(
                    Violation(
                        "RESULT_MISMATCH",
                        f"recorded tricks {rt['NS']}-{rt['EW']} and points {rp['NS']}-{rp['EW']} (NS-EW); "
                        f"the replay gives tricks {won[0]}-{won[1]} and points {points[0]}-{points[1]}",
                        base + "/result",
                        dn,
                    )
                )
        outcomes.append(DealOutcome((won[0], won[1]), points, pass_out, trump, con, winners, broken_before))

    final = (totals[0], totals[1])
    fs = rec.get("final_score")
    if fs is not None and (fs["NS"] != final[0] or fs["EW"] != final[1]):
        add(
            Violation(
                "FINAL_SCORE_MISMATCH",
                f"recorded final score {fs['NS']}-{fs['EW']} (NS-EW); the deals add up to {final[0]}-{final[1]}",
                "/final_score",
            )
        )
    if scored < SCORED_DEALS:
        add(Violation("INCOMPLETE", f"{scored} scored deals of {SCORED_DEALS}", "/deals", severity=WARNING))
    return Replay(rec["game_id"], out, outcomes, final, scored)


__all__ = ["CODES", "TEAMS", "DealOutcome", "Replay", "Violation", "json_error", "replay", "replay_checked"]

"""A game written as its score sheet (docs/sheets.md): bids and each player's tricks, no cards."""

from __future__ import annotations

import orjson

from backalley.cards import CARD_INDEX, SEATS, mask_of
from backalley.replay import SHEET_TRUMP, replay
from backalley.rules import PLAIN, Ruleset, find_ruleset
from backalley.simulate.games import Record, dumps

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


_TRUMP_WORD = {v: k for k, v in SHEET_TRUMP.items()}


def as_sheet(record: Record) -> Record:
    """A record with every card, written as its score sheet (docs/sheets.md): each deal's bids,
    each player's tricks counted from the cards (the replay's trick winners), the trump, the
    seats dealt a rainbow, and the result as recorded.  ``record`` must fit the format."""
    r = replay(record)
    rules = find_ruleset(record.get("ruleset", PLAIN.name), tuple(record.get("options", ())))
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


def sheet_line(line: str) -> str:
    """A game's line written as its score sheet, its id marked as a sheet's (``sim-sheet-…``)."""
    sheet = as_sheet(orjson.loads(line))
    sheet["game_id"] = "sim-sheet-" + sheet["game_id"].removeprefix("sim-")
    return dumps(sheet)

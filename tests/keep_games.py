"""Games for the score keeper's tests: a simulated game as its score sheet, and what the keeper must store of it."""

from __future__ import annotations

import random
from typing import Any

from backalley.replay import replay
from backalley.rules import find_ruleset
from backalley.simulate import as_sheet, make_record, player_pool

SEATS = "NESW"


def sheet_game(seed: int, ruleset: str = "standard", options: tuple[str, ...] = ()) -> dict[str, Any]:
    """A whole simulated game of the ruleset, written as its score sheet (pass-outs included)."""
    rules = find_ruleset(ruleset, options)
    sheet = as_sheet(make_record(f"kept-{seed}", random.Random(seed), player_pool(8), seed, rules=rules))
    for d in sheet["deals"]:  # what a table writes down beyond bids and tricks is not asked for
        for k in ("trump", "result"):
            d.pop(k, None)
    sheet.pop("final_score", None)
    return sheet


def start_fields(sheet: dict[str, Any]) -> dict[str, Any]:
    """The start form's fields for the sheet's game."""
    return {
        **sheet["players"],
        "game_id": sheet["game_id"],
        "ruleset": sheet.get("ruleset", "standard"),
        "options": list(sheet.get("options", [])),
        "first_dealer": sheet["deals"][0]["dealer"],
    }


def tricks_fields(deal: dict[str, Any]) -> dict[str, Any]:
    """The tricks form's fields for the deal: each seat's tricks, and its rainbows."""
    return {**{s: str(deal["tricks_won"][s]) for s in SEATS}, "rainbow": deal.get("rainbows", [])}


def assert_same_game(stored: dict[str, Any], sheet: dict[str, Any]) -> None:
    """The stored record is the sheet's game: the same players, deals (number, dealer, bids, each player's
    tricks) and, replayed, the same points deal by deal and final score, valid and complete."""
    assert stored["sheet"] is True and stored["players"] == sheet["players"]
    assert stored.get("ruleset") == sheet.get("ruleset", "standard")
    keys = ("number", "dealer", "bids", "tricks_won", "rainbows")
    assert [{k: d[k] for k in keys if k in d} for d in stored["deals"]] == [
        {k: d[k] for k in keys if k in d} for d in sheet["deals"]
    ]
    mine, theirs = replay(stored), replay(sheet)
    assert mine.valid and mine.complete, [v.message for v in mine.violations]
    assert [d.points for d in mine.deals] == [d.points for d in theirs.deals]
    assert mine.final_score == theirs.final_score

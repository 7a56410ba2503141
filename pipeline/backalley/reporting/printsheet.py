"""A blank score sheet to print (``backalley sheet print``): one self-contained HTML page.

A row per deal of the ruleset's schedule with its hand size, a bid and a tricks
column per player, points and running total per side, and the ruleset's scoring
in a footnote; sized to print on one A4 or Letter page.  Every value is escaped
(Jinja2 autoescaping): player names are data, never markup.
"""

from __future__ import annotations

from backalley.cards import SEATS
from backalley.reporting.blocks import render
from backalley.rules import Ruleset

#: Room the table's rows share on one page (mm): a Letter page less its margins, the title and the footnote.
ROWS_MM = 205.0
#: The table's width (mm): an A4 page less its margins; deal, cards and dealer take 30 of it.
TABLE_MM = 190.0
#: A player's bid and tricks columns: wide enough to write two digits by hand.
PLAY_MM = {2: 13.0, 4: 11.0}


def sheet_html(rules: Ruleset, players: tuple[str, str, str, str] = ("", "", "", "")) -> str:
    """The printable blank sheet of ``rules`` (with its options), the players' names in the header."""
    rows = rules.scored_deals
    deals = [
        {"number": k, "cards": rules.hand_size(k), "group": k > 1 and (k - 1) % 5 == 0} for k in range(1, rows + 1)
    ]
    return render(
        "sheet.html",
        label=rules.label(),
        summary=rules.summary,
        scoring=rules.scoring,
        players=list(zip(SEATS, players, strict=True)),
        sides=rules.sides,
        bid_word="Bid" if rules.auction == "bids" else "Decl.",
        deals=deals,
        row_mm=round(min(9.0, ROWS_MM / (rows + 4)), 2),
        play_mm=PLAY_MM.get(len(rules.sides), 11.0),
        side_mm=round((TABLE_MM - 30 - 8 * PLAY_MM.get(len(rules.sides), 11.0)) / (2 * len(rules.sides)), 2),
    )

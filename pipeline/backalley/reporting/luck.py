"""The report's luck ledger: per player and partnership, the parts of a deal's result on average.

The ledger and its means per deal with their 95% intervals (by game) are
:mod:`backalley.analysis.ledger`'s (:func:`~backalley.analysis.ledger.luck_figures`);
here they become the report's tables.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl
from markupsafe import Markup

from backalley.analysis.ledger import PARTS
from backalley.reporting import charts
from backalley.reporting.blocks import Block, Charts, Heading, Note
from backalley.reporting.cells import (
    chart,
    esc,
    fmt_int,
    fmt_num,
    note,
    player_link,
    ruleset_anchor,
    ruleset_label,
    table,
)

HEADERS = [
    "deals",
    "games",
    "points / deal",
    "cards",
    "bidding",
    "play",
    "own play",
    "opponents' play",
    "luck-adjusted points / deal",
]
LUCK_MEANS = (
    "The luck ledger splits a side's points in a deal against the expected par (the mean par of the deals of"
    " the same ruleset, hand size and position to the dealer): cards = par − expected par (what the deal gave),"
    " bidding = the contract's score at the double-dummy tricks − par (what the bid gave away), play = points −"
    " that score (what the play changed: the side's own card costs and the opponents'). Points − expected par ="
    " cards + bidding + play. Luck-adjusted points per deal = points − cards."
)
LUCK_HOW = (
    "How to read: cards near 0 is an even share of the deals; bidding is 0 at best (below 0: points a bid"
    " left on the table); play below 0 lost points against double-dummy play. Under each mean its 95% interval"
    " (a bootstrap by game: a game's deals counted together)."
)


def _mean_cell(r: Mapping[str, Any], part: str) -> Markup:
    """The mean, and under it its 95% bootstrap interval by game (none with fewer than 2 games)."""
    mean, bounds = r.get(part), (r.get(f"{part}_low"), r.get(f"{part}_high"))
    signed = part not in ("actual", "adjusted")
    text = esc(fmt_num(mean, signed=signed))
    if mean is None or None in bounds:
        return Markup(f'<span class="rate">{text}</span>')
    low, high = (fmt_num(b, signed=signed) for b in bounds)
    return Markup(f'<span class="rate">{text}</span><span class="ci">{esc(low)} to {esc(high)}</span>')


def luck_cells(r: Mapping[str, Any]) -> list[Any]:
    return [fmt_int(r["deals"]), fmt_int(r["games"]), *[_mean_cell(r, p) for p in PARTS]]


def _left_out(sheets: int) -> list[Block]:
    if not sheets:
        return []
    return [note(f"Score-sheet games left out (they hold no cards, so no double-dummy value): {sheets:,}.")]


def _player_chart(m: Any, player: str, ruleset: str, options: str, label: str) -> list[Block]:
    games: pl.DataFrame = m.luck_games
    mine = games.filter(
        (pl.col("player") == player) & (pl.col("ruleset") == ruleset) & (pl.col("options") == options)
    ).sort("game")
    prefix = "luck-" + ruleset_anchor(ruleset, options)
    svg = charts.luck_over_games(mine, prefix, f"Cards, bidding and play: {label}")
    return [Charts([chart(svg, "the luck ledger game after game")])] if svg else []


def luck_sections(m: Any, linked: Mapping[str, str], player: str | None = None) -> list[Block]:
    """The luck ledger: per ruleset and options, everyone and each player (index), or one player and their pairs."""
    pop: pl.DataFrame = m.pop_luck
    if pop.is_empty():
        return []
    players: pl.DataFrame = m.luck_players if player is None else m.luck_players.filter(pl.col("player") == player)
    pairs: pl.DataFrame = m.luck_pairs
    if player is not None:
        pairs = pairs.filter(pl.col("pair").str.split(" & ").list.contains(player))
        if players.is_empty():
            return []
    b: list[Block] = [Heading("Luck ledger (par)", "luck-ledger"), note(LUCK_MEANS), Note(LUCK_HOW, how=True)]
    b += _left_out(int(m.luck_sheets))
    for r in pop.iter_rows(named=True):
        label = ruleset_label(r["ruleset"], r["options"])
        mine = players.filter((pl.col("ruleset") == r["ruleset"]) & (pl.col("options") == r["options"]))
        if player is None:
            b.append(table(["", *HEADERS], [["all sides", *luck_cells(r)]], caption=f"{label}: every side"))
        if player is not None:
            b += _player_chart(m, player, r["ruleset"], r["options"], label)
        if mine.height:
            rows = (
                [player_link(x["player"], player is not None, linked), *luck_cells(x)]
                for x in mine.iter_rows(named=True)
            )
            b.append(table(["player", *HEADERS], rows, caption=f"{label}: per player"))
        theirs = pairs.filter((pl.col("ruleset") == r["ruleset"]) & (pl.col("options") == r["options"]))
        if theirs.height:
            rows = ([x["pair"], *luck_cells(x)] for x in theirs.iter_rows(named=True))
            b.append(table(["partnership", *HEADERS], rows, caption=f"{label}: per partnership", folded=True))
    return b


__all__ = ["HEADERS", "luck_cells", "luck_sections"]

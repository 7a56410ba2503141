"""The report's cells: numbers, rates with their intervals and markers, links, and the blocks' makers.

Every cell is a plain value (escaped by the templates) or :class:`~markupsafe.Markup`
built here from escaped parts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import polars as pl
from markupsafe import Markup, escape

from backalley.reporting.blocks import Card, Chart, Note, Table
from backalley.reporting.metrics import wilson
from backalley.rules import RULESETS, Ruleset

DASH = "—"


def esc(value: Any) -> Markup:
    """Escape any value for HTML text or a quoted attribute; Markup passes through; None is empty."""
    return escape("" if value is None else value)


def join(parts: Iterable[Any], sep: str = "") -> Markup:
    return Markup(sep).join(esc(p) for p in parts)


# ---------------------------------------------------------------- numbers


def fmt_int(v: Any) -> str:
    return DASH if v is None else f"{int(v):,}"


def fmt_num(v: Any, digits: int = 2, signed: bool = False) -> str:
    if v is None:
        return DASH
    f = float(v)
    if f != f:  # NaN
        return DASH
    text = f"{f:+.{digits}f}" if signed else f"{f:.{digits}f}"
    return text.replace("-", "−")


def pct(x: float) -> str:
    return f"{100 * x:.1f}%" if 0 < x < 1 else f"{100 * x:.0f}%"


def rate_text(k: Any, n: Any) -> str:
    """Plain text of a rate with its count and Wilson interval: ``62.5% (5/8; 95% CI 31–86%)``."""
    n_, k_ = int(n or 0), int(k or 0)
    ci = wilson(k_, n_)
    if ci is None:
        return f"{DASH} (0/0)"
    return f"{pct(k_ / n_)} ({k_}/{n_}; 95% CI {100 * ci[0]:.0f}–{100 * ci[1]:.0f}%)"


#: The markers of a figure whose 95% interval lies wholly above or below the field's value.
ABOVE, BELOW = "▲", "▼"
LEGEND = (
    f"{ABOVE} / {BELOW}: the player's 95% interval lies wholly above / below the field's value (all players"
    " together): a difference too large to be chance alone. No marker: the player is within the field's range."
)


def marker(low: float, high: float, field: float | None, shown: str = "") -> Markup:
    """▲ when [low, high] lies above ``field``, ▼ when below, nothing otherwise (or without a field)."""
    if field is None or field != field:
        return Markup("")
    if low > field:
        mark, word = ABOVE, "above"
    elif high < field:
        mark, word = BELOW, "below"
    else:
        return Markup("")
    title = esc(f"{word} the field ({shown})" if shown else f"{word} the field")
    return Markup(f'<span class="mark {word}" title="{title}">{mark}</span>')


def pooled(frame: pl.DataFrame, k: str, n: str) -> float | None:
    """The field's rate in ``frame``: all successes over all cases (None without a case)."""
    if frame.height == 0:
        return None
    total = int(frame[n].sum() or 0)
    return int(frame[k].sum() or 0) / total if total else None


#: The rates a table of players is marked on, each with its count of cases.
RATE_PAIRS = {
    "games_won": "games",
    "exact_bids": "numeric_bids",
    "boards_made": "boards_claimed",
    "declarations_made": "declarations",
}


def rate_fields(frame: pl.DataFrame) -> dict[str, float | None]:
    """The field's value of each rate of :data:`RATE_PAIRS` that ``frame`` has (all its players together)."""
    return {k: pooled(frame, k, n) for k, n in RATE_PAIRS.items() if k in frame.columns and n in frame.columns}


def rate(k: Any, n: Any, field: float | None = None) -> Markup:
    """A rate cell: the rate, the count beside it, and the 95% Wilson interval below; — for n = 0.

    With the ``field``'s rate, a marker says where the interval lies wholly above or below it.
    """
    n_, k_ = int(n or 0), int(k or 0)
    ci = wilson(k_, n_)
    if ci is None:
        return Markup(f'<span class="rate">{DASH}</span> <span class="n">0/0</span>')
    title = esc(f"95% Wilson interval {100 * ci[0]:.1f}–{100 * ci[1]:.1f}% from {k_} of {n_}")
    mark = marker(ci[0], ci[1], field, pct(field) if field is not None else "")
    return Markup(
        f'<span class="rate" title="{title}">{esc(pct(k_ / n_))}</span>{mark} <span class="n">{k_:,}/{n_:,}</span>'
        f'<span class="ci">{100 * ci[0]:.0f}–{100 * ci[1]:.0f}%</span>'
    )


# ---------------------------------------------------------------- building blocks


def table(
    headers: Sequence[str], rows: Iterable[Sequence[Any]], caption: str | None = None, folded: bool = False
) -> Table:
    return Table(headers, [list(r) for r in rows], caption, folded)


def card(label: str, value: Any, sub: Any = "") -> Card:
    return Card(label, value, sub)


def chart(svg: str | None, what: str) -> Chart:
    return Chart(svg, what)  # svg from charts: every text escaped, ids prefixed


def note(text: Any) -> Note:
    return Note(text)


def player_link(player: str, from_player_page: bool, linked: Mapping[str, str]) -> Markup:
    """The player's name, linked to their page when it is among ``linked`` (player -> page path)."""
    href = linked.get(player)
    if href is None:
        return esc(player)
    if from_player_page:
        href = href.removeprefix("players/")
    return Markup(f'<a href="{esc(href)}">{esc(player)}</a>')


# ---------------------------------------------------------------- rulesets' names


def ruleset_label(ruleset: str | None, options: str) -> str:
    """``pereulok`` or ``standard + short_deck, no_partnerships``."""
    name = ruleset if ruleset is not None else "unknown ruleset"
    return f"{name} + {options.replace(',', ', ')}" if options else name


def ruleset_anchor(ruleset: str | None, options: str) -> str:
    return "ruleset-" + re.sub(r"[^a-z0-9]+", "-", ruleset_label(ruleset, options).lower()).strip("-")


def variant(frame: pl.DataFrame, ruleset: str, options: str) -> pl.DataFrame:
    if frame.height == 0:
        return frame
    return frame.filter((pl.col("ruleset") == ruleset) & (pl.col("options") == options))


def ruleset_kind(name: str) -> type[Ruleset]:
    """The ruleset class a stored game's ``ruleset`` names (what its sections show: the class's attributes)."""
    return RULESETS.get(name, Ruleset)

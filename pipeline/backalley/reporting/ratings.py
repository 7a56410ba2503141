"""The report's ratings: the leaderboard's column, the ratings per ruleset, a player's own, and their calibration.

The ratings are the store's (table ``ratings``, :mod:`backalley.analysis.ratings`) and
their held-out calibration :mod:`backalley.analysis.calibration`'s; here they become the
report's cells, tables and charts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl
from markupsafe import Markup

from backalley.analysis.calibration import PREDICTORS, Calibration
from backalley.analysis.ratings import MIN_PARTNERS, PROVISIONAL_SIGMA
from backalley.reporting import charts
from backalley.reporting.blocks import Block, Card, Charts, Heading, Note
from backalley.reporting.cells import DASH, card, chart, esc, fmt_int, fmt_num, note, player_link, ruleset_anchor, table
from backalley.reporting.cells import ruleset_label as label_of

RATINGS_MEAN = (
    "Ratings by TrueSkill Through Time over every stored valid, complete game of the ruleset (whatever the"
    " report's scope): μ is the estimated skill and σ its uncertainty; the conservative rating μ − 3σ is a"
    " skill the player very likely has at least. Partnerships are rated as units, players individually."
)
RATINGS_HOW = (
    f"How to read: a rating marked ? is provisional (σ above {PROVISIONAL_SIGMA:g}: too few games to say much)."
    f" A player's own rating is shown only when it can be told apart from their partners': with at least"
    f" {MIN_PARTNERS} distinct partners."
)
CALIBRATION_MEAN = (
    "How well the ratings predict the winner: fitted on the games before the cut and asked, for every pair of"
    " sides of each game after it, the chance that the first ends ahead; log-loss is the mean of"
    " −(y·ln p + (1 − y)·ln(1 − p)) over those predictions (y: 1 won, ½ tie, 0 lost). Lower is better; the coin"
    " flip's is ln 2 ≈ 0.693. Points per deal predicts from the sides' points per deal before the cut."
)


def unidentified(partners: int) -> str:
    """Why a player's individual rating is not shown."""
    return f"not identifiable: {partners} partner{'s' if partners != 1 else ''}, {MIN_PARTNERS} needed"


def rating_value(conservative: Any, provisional: Any) -> str:
    """``1.23``, or ``1.23 ?`` when provisional."""
    return fmt_num(conservative) + (" ?" if provisional else "")


def rating_words(r: Mapping[str, Any]) -> str:
    """The leaderboard's rating as text: ``1.23 ? (12 games)``, why it is not shown, or — without one."""
    if r.get("rating_games") is None:
        return DASH
    if r.get("rating") is None:
        return unidentified(int(r["rating_partners"]))
    return f"{rating_value(r['rating'], r['rating_provisional'])} ({fmt_int(r['rating_games'])} games)"


def rating_card(r: Mapping[str, Any]) -> Card:
    """A player page's card of their rating in plain standard games (a leaderboard row): μ − 3σ over its games."""
    if r.get("rating_games") is None:
        return card("rating (μ − 3σ)", DASH, "not rated yet")
    if r.get("rating") is None:
        return card("rating (μ − 3σ)", DASH, unidentified(int(r["rating_partners"])))
    return card(
        "rating (μ − 3σ)", rating_value(r["rating"], r["rating_provisional"]), f"{fmt_int(r['rating_games'])} games"
    )


def leaderboard_cell(r: Mapping[str, Any]) -> Markup:
    """The leaderboard's rating: μ − 3σ over its games count; why not, when the player is not identifiable."""
    if r.get("rating_games") is None:
        return Markup(f'<span class="rate">{DASH}</span>')
    games = f"{fmt_int(r['rating_games'])} games"
    if r.get("rating") is None:
        why = unidentified(int(r["rating_partners"]))
        return Markup(f'<span class="rate" title="{esc(why)}">{DASH}</span><span class="ci">{esc(why)}</span>')
    value = rating_value(r["rating"], r["rating_provisional"])
    return Markup(f'<span class="rate">{esc(value)}</span><span class="ci">{esc(games)}</span>')


def _cells(r: Mapping[str, Any]) -> list[Any]:
    """A rating's cells (:data:`HEADERS`; a partnership's without ``partners``)."""
    if not r["identifiable"]:
        return [unidentified(int(r["partners"])), DASH, DASH, fmt_int(r["games"]), fmt_int(r["partners"])]
    value = rating_value(r["conservative"], r["provisional"])
    cells = [value, fmt_num(r["mu"]), fmt_num(r["sigma"]), fmt_int(r["games"])]
    return [*cells, fmt_int(r["partners"])] if r["kind"] == "player" else cells


HEADERS = ["rating (μ − 3σ)", "μ", "σ", "games", "partners"]


def _rows(frame: pl.DataFrame, linked: Mapping[str, str], from_player: bool) -> list[list[Any]]:
    rows = []
    for r in frame.sort(["identifiable", "conservative"], descending=True).iter_rows(named=True):
        name = player_link(r["subject"], from_player, linked) if r["kind"] == "player" else r["subject"]
        rows.append([name, *_cells(r)])
    return rows


def ratings_sections(m: Any, linked: Mapping[str, str], player: str | None = None) -> list[Block]:
    """Per ruleset and options, the partnerships' and players' ratings (index), or one player's and their pairs'."""
    rated: pl.DataFrame = m.ratings
    if player is not None and rated.height:
        pairs = (pl.col("kind") == "pair") & pl.col("subject").str.split(" & ").list.contains(player)
        rated = rated.filter(((pl.col("kind") == "player") & (pl.col("subject") == player)) | pairs)
    if rated.is_empty():
        return []
    b: list[Block] = [Heading("Ratings", "ratings"), note(RATINGS_MEAN), Note(RATINGS_HOW, how=True)]
    for (ruleset, options), part in sorted(rated.group_by(["ruleset", "options"]), key=lambda kv: str(kv[0])):
        label = label_of(str(ruleset), str(options))
        for kind, words in (("pair", "partnerships"), ("player", "players")):
            mine = part.filter(pl.col("kind") == kind)
            if mine.height:
                head = ["partnership", *HEADERS[:-1]] if kind == "pair" else ["player", *HEADERS]
                rows = _rows(mine, linked, player is not None)
                b.append(table(head, rows, caption=f"{label}: {words}", folded=kind == "pair"))
    return b


def _loss_cells(c: Calibration) -> list[str]:
    best = min(c.log_loss.values())
    return [fmt_num(c.log_loss[p], 3) + (" (best)" if c.log_loss[p] == best else "") for p in PREDICTORS]


def calibration_sections(m: Any) -> list[Block]:
    """The ratings' held-out log-loss against the coin flip and points per deal, and their calibration charts."""
    found: list[Calibration] = m.rating_calibration
    heading = Heading("Ratings calibration", "ratings-calibration")
    if m.rating_calibration_error is not None:
        return [heading, note(f"The calibration could not be computed: {m.rating_calibration_error}.")]
    if not found:
        return []
    rows = [
        [
            label_of(c.ruleset, c.options),
            "partnerships" if c.kind == "pair" else "players",
            DASH if c.cut is None else f"{c.cut:%Y-%m-%d}",
            fmt_int(c.train_games),
            fmt_int(c.test_games),
            fmt_int(c.pairings),
            *_loss_cells(c),
        ]
        for c in found
    ]
    headers = ["ruleset", "rated", "cut", "games before", "games after", "predictions"]
    b: list[Block] = [heading, note(CALIBRATION_MEAN)]
    b.append(table([*headers, *(f"log-loss: {p}" for p in PREDICTORS)], rows))
    svgs = [
        chart(
            charts.win_calibration(
                [(x.predicted, x.observed, x.n) for x in c.bins],
                f"cal-{ruleset_anchor(c.ruleset, c.options)}-{c.kind}",
                f"Calibration: {label_of(c.ruleset, c.options)}, {'partnerships' if c.kind == 'pair' else 'players'}",
            ),
            "the ratings' calibration",
        )
        for c in found
    ]
    b.append(Charts(svgs))
    return b


__all__ = [
    "calibration_sections",
    "leaderboard_cell",
    "rating_card",
    "rating_words",
    "ratings_sections",
    "unidentified",
]

"""The double-dummy sections of the report (bid vs makeable, play accuracy), in plain words."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl
from markupsafe import Markup

from backalley.reporting.blocks import Block, Heading, Note
from backalley.reporting.cells import (
    LEGEND,
    esc,
    fmt_int,
    fmt_num,
    marker,
    note,
    player_link,
    pooled,
    rate,
    ruleset_anchor,
    table,
    variant,
)
from backalley.reporting.metrics import PLAIN, Metrics, mean_interval

# ---------------------------------------------------------------- double-dummy figures

DD_BID_HEADERS = ["contracts", "mean contract − makeable", "over", "exact", "under", "boards claimed", "makeable"]
DD_PLAY_HEADERS = ["deals", "tricks lost / deal", "plays", "plays costing nothing"]
#: What double dummy means, in the words of a player.
DD_MEANS = (
    "Double dummy means “if everyone saw all four hands”: the tricks each side would take with perfect"
    " play by all four players (backalley analyze). It is a yardstick, not a verdict: at the table nobody"
    " sees the hidden cards, so falling short of it is often no mistake."
)
DD_BID_NOTE = (
    "Plain standard deals. A side's numeric contract minus the tricks its cards could take double dummy:"
    " above 0 it bid more than its cards could take (over), below 0 less (under)."
    " Board claims: makeable when the side's double-dummy value is the whole hand."
)
DD_BID_HOW = (
    "How to read: near 0 is a side that bids what its cards can take; a large mean above 0 overbids,"
    " below 0 underbids. The grey range under a mean is its 95% interval."
)
DD_PLAY_NOTE = (
    "Tricks lost per deal by the player's own plays compared with the best play if every hand were seen"
    " (the sum of the costs of the player's plays, over the analysed deals played), and the share of plays"
    " that cost nothing."
)
DD_PLAY_HOW = (
    "How to read: 0 tricks lost is play as good as an all-seeing player's; each 1.00 is a trick per deal"
    " given away against that yardstick. Fewer is better; hidden cards make some losses unavoidable."
)


def _size(v: Any) -> str:
    return "all" if v is None else str(v)


def _interval(mean: Any, sd: Any, n: Any, floor: float | None) -> tuple[float, float] | None:
    """The 95% interval of a mean, its low end raised to ``floor`` (a quantity that cannot go below it)."""
    ci = mean_interval(mean, sd, int(n or 0))
    if ci is None or floor is None:
        return ci
    return max(floor, ci[0]), max(floor, ci[1])


def mean_text(mean: Any, sd: Any, n: Any, signed: bool = False, floor: float | None = None) -> str:
    """Plain text of a mean with its 95% interval: ``+0.25 (95% CI −0.10 to +0.60)``; — when there is no case."""
    ci = _interval(mean, sd, n, floor)
    text = fmt_num(mean, signed=signed)
    return text if ci is None else f"{text} (95% CI {fmt_num(ci[0], signed=signed)} to {fmt_num(ci[1], signed=signed)})"


def mean_cell(
    mean: Any, sd: Any, n: Any, signed: bool = False, field: float | None = None, floor: float | None = None
) -> Markup:
    """A mean cell: the mean, and its 95% normal interval below (none under 2 cases; never below ``floor``).

    With the ``field``'s mean, a marker says where the interval lies wholly above or below it.
    """
    ci = _interval(mean, sd, n, floor)
    if ci is None:
        return Markup(f'<span class="rate">{esc(fmt_num(mean, signed=signed))}</span>')
    mark = marker(ci[0], ci[1], field, fmt_num(field, signed=signed))
    low = Markup(
        f'<span class="ci">{esc(fmt_num(ci[0], signed=signed))} to {esc(fmt_num(ci[1], signed=signed))}</span>'
    )
    return Markup(f'<span class="rate">{esc(fmt_num(mean, signed=signed))}</span>{mark}{low}')


@dataclass(frozen=True, slots=True)
class Field:
    """The field's values that a player's double-dummy figures are marked against (None: no marker)."""

    diff: float | None = None
    over: float | None = None
    exact: float | None = None
    under: float | None = None
    makeable: float | None = None
    lost: float | None = None
    free: float | None = None


def dd_field(bids: pl.DataFrame, plays: pl.DataFrame) -> Field:
    """Everyone's figures over all hand sizes (the rows with no hand size), as a :class:`Field`."""
    b, p = _overall(bids), _overall(plays)
    if b.height == 0 or p.height == 0:
        return Field()
    r, q = b.row(0, named=True), p.row(0, named=True)
    return Field(
        diff=r["mean_diff"],
        over=pooled(b, "over", "contracts"),
        exact=pooled(b, "exact", "contracts"),
        under=pooled(b, "under", "contracts"),
        makeable=pooled(b, "boards_makeable", "boards"),
        lost=q["lost_per_deal"],
        free=pooled(p, "free", "plays"),
    )


def dd_bid_cells(r: dict[str, Any], f: Field = Field()) -> list[Any]:
    return [
        fmt_int(r["contracts"]),
        mean_cell(r["mean_diff"], r["sd_diff"], r["contracts"], signed=True, field=f.diff),
        rate(r["over"], r["contracts"], f.over),
        rate(r["exact"], r["contracts"], f.exact),
        rate(r["under"], r["contracts"], f.under),
        fmt_int(r["boards"]),
        rate(r["boards_makeable"], r["boards"], f.makeable),
    ]


def dd_play_cells(r: dict[str, Any], f: Field = Field()) -> list[Any]:
    lost = mean_cell(r["lost_per_deal"], r["sd_lost"], r["deals"], field=f.lost, floor=0.0)
    return [fmt_int(r["deals"]), lost, fmt_int(r["plays"]), rate(r["free"], r["plays"], f.free)]


def _overall(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.filter(pl.col("hand_size").is_null()) if frame.height else frame


@dataclass(frozen=True, slots=True)
class DDFrames:
    """One set of double-dummy figures: by hand size (everyone's or one player's), and per player (index only)."""

    bids: pl.DataFrame
    plays: pl.DataFrame
    player_bids: pl.DataFrame | None = None
    player_plays: pl.DataFrame | None = None
    coverage: pl.DataFrame | None = None


def _spans(sizes: Sequence[int]) -> str:
    """``1–3, 5`` for the hand sizes 1, 2, 3, 5."""
    out: list[str] = []
    for v in sorted(set(sizes)):
        if out and out[-1].split("–")[-1] == str(v - 1):
            out[-1] = f"{out[-1].split('–')[0]}–{v}"
        else:
            out.append(str(v))
    return ", ".join(out)


def coverage_note(coverage: pl.DataFrame | None) -> list[Note]:
    """Which hand sizes were analysed, and the deals of each size that were not."""
    if coverage is None or coverage.height == 0:
        return []
    rows = [r for r in coverage.iter_rows(named=True) if r["hand_size"] is not None]
    done = [int(r["hand_size"]) for r in rows if r["analysed"]]
    missing = [r for r in rows if r["analysed"] < r["deals"]]
    text = f"Hand sizes analysed: {_spans(done) or 'none'} cards."
    if missing:
        left = sum(int(r["deals"]) - int(r["analysed"]) for r in missing)
        sizes = _spans([int(r["hand_size"]) for r in missing])
        text += f" Deals of {sizes} cards not analysed: {left:,} (run backalley analyze to add them)."
    return [note(text)]


def dd_coverage(m: Metrics, ruleset: str, options: str) -> pl.DataFrame:
    cov = variant(m.dd_coverage, ruleset, options)
    return cov.group_by("hand_size").agg(pl.col("deals").sum(), pl.col("analysed").sum()) if cov.height else cov


def dd_sections(m: Metrics, linked: Mapping[str, str], player: str | None = None) -> list[Block]:
    """Bid vs makeable and play accuracy: everyone's by hand size and each player's (index), or one player's."""
    cov = dd_coverage(m, *PLAIN)
    if player is None:
        frames = DDFrames(m.pop_dd_bids, m.pop_dd_plays, _overall(m.dd_bids), _overall(m.dd_plays), cov)
    else:
        frames = DDFrames(m.of("dd_bids", player), m.of("dd_plays", player), coverage=cov)
    tables = _dd_tables(frames, linked, DD_BID_NOTE, field=dd_field(m.pop_dd_bids, m.pop_dd_plays))
    return _with_sheets_note(tables, int(m.population.get("sheet_games", 0)))


def sheets_left_out(games: int) -> str:
    """The line that says how many score sheets a figure that needs cards leaves out."""
    noun = "score sheet" if games == 1 else "score sheets"
    return f"{games:,} {noun} (games kept as bids and tricks, without cards) are not in these figures: no cards to analyse."


def _with_sheets_note(tables: list[Block], games: int) -> list[Block]:
    """``tables`` with the sheets-left-out line after their first heading (none when there is no sheet)."""
    if not games or not tables:
        return tables
    return [tables[0], note(sheets_left_out(games)), *tables[1:]]


def _dd_tables(
    f: DDFrames, linked: Mapping[str, str], text: str, level: int = 2, anchor: str = "", field: Field = Field()
) -> list[Block]:
    index = f.player_bids is not None
    who = "all players" if index else "the player's side"
    b: list[Block] = [Heading("Bid vs makeable (double dummy)", f"{anchor}bid-vs-makeable", level)]
    b += [note(DD_MEANS), *coverage_note(f.coverage), note(text), Note(DD_BID_HOW, how=True)]
    if index:
        b.append(Note(LEGEND, how=True))
    rows = ([_size(r["hand_size"]), *dd_bid_cells(r)] for r in f.bids.iter_rows(named=True))
    b.append(table(["hand size", *DD_BID_HEADERS], rows, caption=f"By hand size, {who}", folded=True))
    if f.player_bids is not None:
        rows = (
            [player_link(r["player"], False, linked), *dd_bid_cells(r, field)]
            for r in f.player_bids.iter_rows(named=True)
        )
        b.append(table(["player", *DD_BID_HEADERS], rows, caption="Per player (the player's side), all hand sizes"))
    b.append(Heading("Play accuracy (double dummy)", f"{anchor}play-accuracy", level))
    b += [note(DD_PLAY_NOTE), Note(DD_PLAY_HOW, how=True)]
    rows = ([_size(r["hand_size"]), *dd_play_cells(r)] for r in f.plays.iter_rows(named=True))
    b.append(
        table(
            ["hand size", *DD_PLAY_HEADERS],
            rows,
            caption="By hand size" + (", all players" if index else ""),
            folded=True,
        )
    )
    if f.player_plays is not None:
        rows = (
            [player_link(r["player"], False, linked), *dd_play_cells(r, field)]
            for r in f.player_plays.sort(["lost_per_deal", "player"]).iter_rows(named=True)
        )
        b.append(
            table(["player", *DD_PLAY_HEADERS], rows, caption="Per player, all hand sizes, fewest tricks lost first")
        )
    return b


DD_RULESET_NOTE = (
    "Deals of this ruleset. A side's numeric contract minus the tricks its cards could take double dummy"
    " (without partnerships, the player's own contract against the seat's own value, the other three playing"
    " against it): above 0 it bid more than its cards could take, below 0 less."
    " Board claims: makeable when the side's double-dummy value is the whole hand."
)


def ruleset_dd_sections(
    m: Metrics, ruleset: str, options: str, linked: Mapping[str, str], player: str | None = None
) -> list[Block]:
    """A ruleset's (with its options) bid vs makeable and play accuracy; nothing when no deal of it is analysed."""
    pop_bids = variant(m.pop_ruleset_dd_bids, ruleset, options)
    if pop_bids.height == 0:
        return []
    pop_plays = variant(m.pop_ruleset_dd_plays, ruleset, options)
    cov = dd_coverage(m, ruleset, options)
    if player is None:
        frames = DDFrames(
            pop_bids,
            pop_plays,
            _overall(variant(m.ruleset_dd_bids, ruleset, options)),
            _overall(variant(m.ruleset_dd_plays, ruleset, options)),
            cov,
        )
    else:
        bids = variant(m.of("ruleset_dd_bids", player), ruleset, options)
        if bids.height == 0:
            return []
        frames = DDFrames(bids, variant(m.of("ruleset_dd_plays", player), ruleset, options), coverage=cov)
    anchor = ruleset_anchor(ruleset, options) + "-"
    tables = _dd_tables(frames, linked, DD_RULESET_NOTE, 3, anchor, dd_field(pop_bids, pop_plays))
    label = ruleset + "".join(f"+{o}" for o in options.split(",") if o)
    return _with_sheets_note(tables, int(m.population.get("sheets_by_label", {}).get(label, 0)))

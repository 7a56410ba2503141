"""The report's pages: the blocks each page shows, built from the figures; Jinja2 templates render them.

Cells are escaped by the templates unless they are :class:`~markupsafe.Markup`
(built here from escaped parts), so a value cannot reach the page unescaped by
accident. The pages are self-contained: the stylesheet and the SVG charts inline.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl
from markupsafe import Markup, escape

from backalley.reporting import charts
from backalley.reporting.blocks import (
    Block,
    Card,
    Cards,
    Chart,
    Charts,
    Heading,
    Html,
    Note,
    Page,
    Table,
    View,
    Views,
    anchor_of,
    render,
)
from backalley.reporting.metrics import BOARD_LEVEL_NAMES, Metrics, mean_interval, wilson
from backalley.rules import RULESETS, Ruleset

DASH = "—"


def esc(value: Any) -> Markup:
    """Escape any value for HTML text or a quoted attribute; Markup passes through; None is empty."""
    return escape("" if value is None else value)


def join(parts: Iterable[Any], sep: str = "") -> Markup:
    return Markup(sep).join(esc(p) for p in parts)


# ---------------------------------------------------------------- file names


#: Hex digits of the id's SHA-256 in a page name; more only where two names would clash.
SLUG_DIGITS = 8


def player_slug(player: str, digits: int = SLUG_DIGITS) -> str:
    """A safe, stable file stem for an untrusted player id: ascii slug + ``digits`` hex of the exact id's hash."""
    ascii_ = unicodedata.normalize("NFKD", player).encode("ascii", "ignore").decode("ascii").lower()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_).strip("-")[:32].strip("-") or "player"
    digest = hashlib.sha256(player.encode("utf-8")).hexdigest()[:digits]
    return f"{slug}-{digest}"


def player_file(player: str) -> str:
    """The page's usual path relative to the output folder (``players/<slug>-<hash>.html``).

    :func:`page_files` gives the path actually used: this one, unless it clashes.
    """
    return f"players/{player_slug(player)}.html"


def page_files(players: Iterable[str]) -> dict[str, str]:
    """Each player's page path, unique by construction.

    Names carry :data:`SLUG_DIGITS` hex digits of a hash, which two ids can share
    (``"Ada?#~;"`` and ``"Ada$#$="``): the players whose names clash get twice
    the digits, until none clash or the whole hash is used; players still
    sharing a name then (the whole SHA-256) are numbered.  A name is
    ``<slug>-<hex>``: the hex part has no ``-``, so two names with different
    slugs or different hex parts never meet.
    """
    chosen = sorted(set(players))
    digits = dict.fromkeys(chosen, SLUG_DIGITS)
    while True:
        by_stem: dict[str, list[str]] = {}
        for p in chosen:
            by_stem.setdefault(player_slug(p, digits[p]), []).append(p)
        clashing = [p for group in by_stem.values() if len(group) > 1 for p in group if digits[p] < 64]
        if not clashing:
            break
        for p in clashing:
            digits[p] = min(64, digits[p] * 2)
    return {
        p: f"players/{stem if k == 0 else f'{stem}-{k + 1}'}.html"
        for stem, group in by_stem.items()
        for k, p in enumerate(group)
    }


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


RATE_HOW = (
    "How to read: a rate shows its share, its count beside it (successes/cases) and, in grey below, the range"
    " its true value very likely lies in (95% interval). Few cases give a wide range: compare ranges, not"
    " single figures."
)
CHARTS_HOW = (
    "How to read: on the calibration chart a point on the dashed line is a bid worth exactly the tricks bid,"
    " on average; above the line players won more tricks than they bid. On the histogram, bars right of 0"
    " are tricks won beyond the bid, left of 0 tricks short of it."
)
PLAYER_CHARTS_HOW = (
    "How to read: calibration compares the player's tricks per bid (blue) with a perfect bidder (dashed) and"
    " everyone (grey); bid error counts how far off each bid was; board claims shows claims (grey) and boards"
    " made (green) by hand size; final score shows the player's team (blue) against the opponents, game by game."
)
BIDDING_HOW = (
    "How to read: exact is the share of bids hit exactly; mean |error| is how many tricks off a bid was on"
    " average (0 is perfect); mean error above 0 means the player tends to win more than bid (bids low),"
    " below 0 fewer (bids high)."
)
CONTRACTS_HOW = (
    "How to read: made is a contract reached or beaten, exact one hit on the nose, set one that fell short;"
    " the grey range under each rate is its 95% interval."
)
BOARDS_HOW = (
    "How to read: a board claims every trick of the hand; made is the share of claims that took them all;"
    " net is the points won on boards minus the points lost on them."
)
QUALITY_HOW = (
    "How to read: only valid games count in the figures; incomplete and invalid records are kept and counted"
    " here, with the codes of what was wrong in them."
)


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


def page(title: str, subtitle: Any, blocks: Iterable[Block], root: str = "") -> str:
    """A whole page; ``root`` leads from the page's folder back to the output folder (``../`` for players/)."""
    return render("report_page.html", page=Page(title, subtitle, list(blocks), root), metrics_file=METRICS_FILE)


#: The metric definitions, written beside index.html so that the pages' link works offline.
METRICS_FILE = "metrics.html"


def metrics_page() -> str:
    """The metric definitions (``docs/metrics.md``, shipped with the package) as a page of the report."""
    from importlib.resources import files

    from markdown_it import MarkdownIt

    text = files("backalley.reporting").joinpath("metrics.md").read_text(encoding="utf-8")
    parser = MarkdownIt("commonmark", {"html": False}).enable("table")
    tokens = parser.parse(text)
    blocks: list[Block] = [Html(Markup('<p><a href="index.html">← the report</a></p>'))]
    start = i = 0
    while i < len(tokens):  # each level-2 heading becomes a heading of the page (listed in its contents)
        if tokens[i].type == "heading_open" and tokens[i].tag == "h2":
            blocks.append(Html(Markup(parser.renderer.render(tokens[start:i], parser.options, {}))))
            title = Markup(parser.renderer.render(tokens[i + 1].children or [], parser.options, {}))
            blocks.append(Heading(title, anchor_of(tokens[i + 1].content)))
            start = i = i + 3
            continue
        i += 1
    blocks.append(Html(Markup(parser.renderer.render(tokens[start:], parser.options, {}))))
    return page("Report metrics", "How every figure of the report is defined", blocks)


def _scope(m: Metrics) -> str:
    scope = f"event {m.event}" if m.event is not None else "all events"
    return f"{scope}, {m.period.words()}" if m.period else scope


# ---------------------------------------------------------------- index


def index_page(m: Metrics, linked: Mapping[str, str]) -> str:
    p = m.population
    plain = m.plain_standard_only
    b: list[Block] = [Heading("Population")]
    b.append(
        Cards(
            [
                card("records", fmt_int(p["records"]), "incl. rejected lines"),
                card("valid games", fmt_int(p["valid_games"]), _in_the_figures(p, plain)),
                card("players", fmt_int(p["players"]), f"{fmt_int(p['events'])} events"),
                card("scored deals", fmt_int(p["deals"]), "pass-outs excluded" if plain else "plain standard games"),
                card(
                    "boards made" if plain else "standard boards made",
                    _rate_value(p["boards_made"], p["boards_claimed"]),
                    _rate_sub(p["boards_made"], p["boards_claimed"]),
                ),
            ]
        )
    )
    if p["first_played"] is not None:
        first, last = (
            f"{v:%Y-%m-%d}" if hasattr(v, "strftime") else str(v) for v in (p["first_played"], p["last_played"])
        )
        b.append(note(f"Games played from {first} to {last}."))

    if not m.plain_standard_only:
        b += rulesets_section(m, linked)
    if p["reported_games"] or m.plain_standard_only:
        b += _standard_sections(m, linked)
    if m.analysed:
        b += dd_sections(m, linked)
    for r in m.rulesets.iter_rows(named=True):
        if (r["ruleset"], r["options"]) != ("standard", ""):
            b += ruleset_section(m, r["ruleset"], r["options"], linked)
    b += _quality_section(m, linked)

    b.append(Heading("Players"))
    b.append(
        table(
            ["player", "games", "valid", "incomplete", "invalid"],
            (
                [
                    player_link(r["player"], False, linked),
                    fmt_int(r["games_total"]),
                    fmt_int(r["games_valid"]),
                    fmt_int(r["games_incomplete"]),
                    fmt_int(r["games_invalid"]),
                ]
                for r in m.players.iter_rows(named=True)
            ),
        )
    )
    sub = f"{_scope(m)} · {fmt_int(p['valid_games'])} valid games · {fmt_int(p['players'])} players"
    return page("Back Alley report", sub, b)


def _in_the_figures(p: Mapping[str, Any], plain: bool) -> str:
    """Which of the valid games the leaderboard's figures count (plain standard games with a scored deal)."""
    n, valid = int(p["reported_games"]), int(p["valid_games"])
    if not plain:
        return f"{fmt_int(n)} plain standard in the leaderboard; the others in their ruleset's section"
    return "all in the figures" if n == valid else f"{fmt_int(n)} with a scored deal in the figures"


def _standard_sections(m: Metrics, linked: Mapping[str, str]) -> list[Block]:
    """Leaderboard, bidding and partnerships: the figures of plain ``standard`` games."""
    b: list[Block] = []
    if m.plain_standard_only:
        b.append(Heading("Leaderboard", "leaderboard"))
    else:
        b.append(Heading("Leaderboard: standard", "leaderboard"))
        b.append(note(STANDARD_NOTE))
    b.append(
        note(
            "Sorted by points per deal (the team's points in the deals the player played);"
            " a column's underlined name sorts the table by it."
        )
    )
    b += [Note(RATE_HOW, how=True), Note(LEGEND, how=True)]
    b.append(leaderboard_views(m.leaderboard, linked))

    b.append(Heading("Bidding, all players"))
    b.append(Note(CHARTS_HOW, how=True))
    b.append(
        Charts(
            [
                chart(
                    charts.calibration(m.pop_calibration, m.pop_calibration.clear(), "pop-cal", "all players"),
                    "calibration",
                ),
                chart(charts.error_histogram(m.pop_errors, "pop-err", "Bid error, all players"), "bid errors"),
            ]
        )
    )

    b.append(Heading("Partnerships"))
    b.append(Note(CONTRACTS_HOW, how=True))
    top = m.partnerships.head(15)
    b.append(
        note(
            f"Numeric team contracts per pair of partners; the {top.height} pairs with the most deals"
            f" of {m.partnerships.height}."
        )
    )
    b.append(table(_CONTRACT_HEADERS_PAIR, (_pair_row(r, False, linked) for r in top.iter_rows(named=True))))
    return b


@dataclass(frozen=True, slots=True)
class SortKey:
    """A leaderboard column the table can be sorted by: its anchor, header and order (best first)."""

    anchor: str
    header: str
    order: tuple[tuple[str, bool], ...]  # (column, descending), the first deciding


#: The leaderboard's columns, key columns first (on a phone they are the ones on screen), and the
#: sorted views: the first is the one shown when no other is asked for.
LEADERBOARD_HEADERS = [
    "player",
    "points / deal",
    "won",
    "exact bids",
    "boards made",
    "mean |error|",
    "mean error",
    "games",
    "deals",
]
SORT_KEYS = (
    SortKey("leaderboard-by-points", "points / deal", (("points_per_deal", True),)),
    SortKey("leaderboard-by-won", "won", (("won_rate", True), ("games", True))),
    SortKey("leaderboard-by-exact", "exact bids", (("exact_rate", True), ("numeric_bids", True))),
    SortKey("leaderboard-by-boards", "boards made", (("boards_rate", True), ("boards_claimed", True))),
    SortKey("leaderboard-by-error", "mean |error|", (("mean_abs_error", False), ("numeric_bids", True))),
    SortKey("leaderboard-by-games", "games", (("games", True), ("deals", True))),
)


def _leaderboard_row(
    i: int, r: dict[str, Any], fields: Mapping[str, float | None], linked: Mapping[str, str]
) -> list[Any]:
    return [
        Markup(f"{i}. ") + player_link(r["player"], False, linked),
        fmt_num(r["points_per_deal"]),
        rate(r["games_won"], r["games"], fields.get("games_won")),
        rate(r["exact_bids"], r["numeric_bids"], fields.get("exact_bids")),
        rate(r["boards_made"], r["boards_claimed"], fields.get("boards_made")),
        fmt_num(r["mean_abs_error"]),
        fmt_num(r["mean_signed_error"], signed=True),
        fmt_int(r["games"]),
        fmt_int(r["deals"]),
    ]


def _sorted(frame: pl.DataFrame, key: SortKey) -> pl.DataFrame:
    """The leaderboard in ``key``'s order; players with no case of the key's figure last, then by name."""
    cols = [c for c, _ in key.order] + ["player"]
    desc = [d for _, d in key.order] + [False]
    return frame.sort(cols, descending=desc, nulls_last=True)


def leaderboard_views(lb: pl.DataFrame, linked: Mapping[str, str]) -> Views:
    """The leaderboard sorted by each of :data:`SORT_KEYS`, every view's headers linking to the others.

    The pages run no script: each view is a section of the page, and CSS shows the one the address
    names (``:target``), or the first when it names none.
    """
    fields = rate_fields(lb)
    frame = lb.with_columns(
        (pl.col("games_won") / pl.col("games")).alias("won_rate"),
        (pl.col("exact_bids") / pl.col("numeric_bids")).alias("exact_rate"),
        (pl.col("boards_made") / pl.col("boards_claimed")).alias("boards_rate"),
    ).with_columns(pl.col("won_rate", "exact_rate", "boards_rate").fill_nan(None))
    by_header = {k.header: k for k in SORT_KEYS}
    views = []
    for key in SORT_KEYS:
        headers: list[Any] = []
        for h in LEADERBOARD_HEADERS:
            other = by_header.get(h)
            if other is key:
                headers.append(Markup('<span class="sorted" title="sorted by this column">{} ↓</span>').format(h))
            elif other is not None:
                headers.append(Markup('<a href="#{}" title="sort by {}">{}</a>').format(other.anchor, h, h))
            else:
                headers.append(h)
        rows = [
            _leaderboard_row(i, r, fields, linked) for i, r in enumerate(_sorted(frame, key).iter_rows(named=True), 1)
        ]
        views.append(View(key.anchor, table(headers, rows)))
    return Views(views)


_CONTRACT_HEADERS = ["deals", "points / deal", "contracts", "made", "exact", "set", "mean overtricks"]
_CONTRACT_HEADERS_PAIR = ["partners", "games", *_CONTRACT_HEADERS]


def _contract_cells(r: dict[str, Any]) -> list[Any]:
    return [
        fmt_int(r["deals"]),
        fmt_num(r["points_per_deal"]),
        fmt_int(r["contracts"]),
        rate(r["made"], r["contracts"]),
        rate(r["exact"], r["contracts"]),
        rate(r["set"], r["contracts"]),
        fmt_num(r["mean_overtricks"]),
    ]


def _pair_row(r: dict[str, Any], from_player: bool, linked: Mapping[str, str]) -> list[Any]:
    names = (
        player_link(r["player_a"], from_player, linked)
        + Markup(" &amp; ")
        + player_link(r["player_b"], from_player, linked)
    )
    return [names, fmt_int(r["games"]), *_contract_cells(r)]


CHARGED_NOTE = (
    "A violation is charged to the player in the seat that made it; one with no seat (the record's structure,"
    " a final score, a game left incomplete) is charged to no player and counts in its game only."
)


def codes_cell(codes: Any) -> Markup:
    """A list of violation codes that wraps between codes (a figures cell does not wrap)."""
    return Markup('<span class="codes">{}</span>').format(codes or DASH)


def _quality_section(m: Metrics, linked: Mapping[str, str], player: str | None = None) -> list[Block]:
    b: list[Block] = [Heading("Data quality"), Note(QUALITY_HOW, how=True)]
    if player is None:
        total = int(m.quality_status["records"].sum())
        b.append(
            table(
                ["status", "records", "share"],
                (
                    [r["status"], fmt_int(r["records"]), rate(r["records"], total)]
                    for r in m.quality_status.iter_rows(named=True)
                ),
                caption="Records by status",
            )
        )
        if m.event is not None:
            b.append(note("Rejected lines have no event: their count is for all events."))
        b.append(
            table(
                ["code", "severity", "violations", "games", "players charged"],
                (
                    [r["code"], r["severity"], fmt_int(r["violations"]), fmt_int(r["games"]), fmt_int(r["players"])]
                    for r in m.quality_codes.iter_rows(named=True)
                ),
                caption="Violations by code",
            )
        )
        b.append(note(CHARGED_NOTE))
        b.append(
            table(
                ["player", "games", "violations", "codes"],
                (
                    [
                        player_link(r["player"], False, linked),
                        fmt_int(r["games"]),
                        fmt_int(r["violations"]),
                        codes_cell(r["codes"]),
                    ]
                    for r in m.quality_players.iter_rows(named=True)
                ),
                caption="Violations charged to each player (the seat that made them)",
            )
        )
    else:
        pr = m.of("players", player).row(0, named=True)
        q = m.of("quality_players", player)
        qr = q.row(0, named=True) if q.height else {"games": 0, "violations": 0, "codes": ""}
        b.append(
            table(
                ["games", "valid", "incomplete", "invalid", "games with own violations", "own violations", "codes"],
                [
                    [
                        fmt_int(pr["games_total"]),
                        rate(pr["games_valid"], pr["games_total"]),
                        rate(pr["games_incomplete"], pr["games_total"]),
                        rate(pr["games_invalid"], pr["games_total"]),
                        fmt_int(qr["games"]),
                        fmt_int(qr["violations"]),
                        codes_cell(qr["codes"]),
                    ]
                ],
            )
        )
        b.append(note("Only valid games count in the figures above. " + CHARGED_NOTE))
    return b


# ---------------------------------------------------------------- player page


def _bid_rows(df: pl.DataFrame, key: str, label: Any = None) -> list[list[Any]]:
    return [
        [
            label(r[key]) if callable(label) else r[key],
            fmt_int(r["n"]),
            rate(r["exact"], r["n"]),
            fmt_num(r["mean_abs_error"]),
            fmt_num(r["mean_signed_error"], signed=True),
        ]
        for r in df.iter_rows(named=True)
    ]


_BID_HEADERS = ["bids", "exact", "mean |error|", "mean error"]


def player_page(m: Metrics, player: str, linked: Mapping[str, str]) -> str:
    lb = m.of("leaderboard", player)
    b: list[Block] = [Html(Markup('<p><a href="../index.html">← all players</a></p>'))]
    sub = f"Player page · {_scope(m)}"
    if lb.is_empty():
        others = player_ruleset_sections(m, player, linked)
        if not others:
            b.append(note("This player has no scored deal in a valid game."))
        b += others
        b += _quality_section(m, linked, player)
        return page(f"{player}", sub, b, root="../")
    r = lb.row(0, named=True)
    rank = m.leaderboard["player"].to_list().index(player) + 1
    broken = m.of("boards_broken", player)
    opp_boards, n_broken = (int(broken["opp_boards"][0]), int(broken["broken"][0])) if broken.height else (0, 0)

    fields = rate_fields(m.leaderboard)
    b.append(Heading("At a glance"))
    b.append(
        Note(
            Markup(f"How to read: {esc(LEGEND)} The small line under a figure is its count and 95% interval."), how=True
        )
    )
    b.append(
        Cards(
            [
                card("games", fmt_int(r["games"]), f"rank {rank} of {m.leaderboard.height} by points/deal"),
                card(
                    "won",
                    _rate_value(r["games_won"], r["games"], fields.get("games_won")),
                    _rate_sub(r["games_won"], r["games"]),
                ),
                card("points / deal", fmt_num(r["points_per_deal"]), f"over {fmt_int(r['deals'])} deals"),
                card(
                    "exact bids",
                    _rate_value(r["exact_bids"], r["numeric_bids"], fields.get("exact_bids")),
                    _rate_sub(r["exact_bids"], r["numeric_bids"]),
                ),
                card(
                    "mean |error|",
                    fmt_num(r["mean_abs_error"]),
                    f"mean error {fmt_num(r['mean_signed_error'], signed=True)}",
                ),
                card(
                    "boards made",
                    _rate_value(r["boards_made"], r["boards_claimed"], fields.get("boards_made")),
                    _rate_sub(r["boards_made"], r["boards_claimed"]),
                ),
                card("opponents' boards broken", _rate_value(n_broken, opp_boards), _rate_sub(n_broken, opp_boards)),
            ]
        )
    )
    prefix = "c" + player_slug(player).rsplit("-", 1)[1]
    b.append(Heading("Charts"))
    b.append(Note(PLAYER_CHARTS_HOW, how=True))
    b.append(
        Charts(
            [
                chart(
                    charts.calibration(m.of("calibration", player), m.pop_calibration, f"{prefix}-cal"), "calibration"
                ),
                chart(charts.error_histogram(m.of("bid_errors", player), f"{prefix}-err"), "bid errors"),
                chart(charts.board_success(m.of("boards_by_hand", player), f"{prefix}-brd"), "board claims"),
                chart(charts.score_over_games(m.of("scores", player), f"{prefix}-scr"), "scores"),
            ]
        )
    )

    b.append(Heading("Bidding accuracy"))
    b.append(Note(BIDDING_HOW, how=True))
    b.append(
        note(
            "Deals where the player bid a number or passed (pass = 0). Error = tricks the player won"
            " personally − bid: above 0 the player won more than bid, below 0 fewer."
        )
    )
    overall = [
        [
            "all",
            fmt_int(r["numeric_bids"]),
            rate(r["exact_bids"], r["numeric_bids"]),
            fmt_num(r["mean_abs_error"]),
            fmt_num(r["mean_signed_error"], signed=True),
        ]
    ]
    trump = _bid_rows(m.of("bids_by_trump", player), "trump")
    b.append(table(["deals", *_BID_HEADERS], overall + trump, caption="Overall and by trump"))
    b.append(
        table(
            ["bidding position", *_BID_HEADERS],
            _bid_rows(
                m.of("bids_by_position", player),
                "position",
                lambda v: f"{v} ({['first', 'second', 'third', 'last'][int(v) - 1]})",
            ),
            caption="By position in the bidding order",
        )
    )
    b.append(
        table(
            ["hand size", *_BID_HEADERS],
            _bid_rows(m.of("bids_by_hand", player), "hand_size"),
            caption="By hand size",
            folded=True,
        )
    )
    errors = m.of("bid_errors", player)
    total = int(errors["n"].sum()) if errors.height else 0
    b.append(
        table(
            ["error", "bids", "share"],
            (
                [fmt_num(e["error"], 0, signed=e["error"] != 0), fmt_int(e["n"]), rate(e["n"], total)]
                for e in errors.iter_rows(named=True)
            ),
            caption="Distribution of errors",
        )
    )

    b.append(Heading("Team contracts"))
    b.append(Note(CONTRACTS_HOW, how=True))
    b.append(
        note(
            "Numeric contracts of the player's team (sum of the partners' numbers). Made: tricks ≥"
            " contract; set: fewer; overtricks averaged over made contracts. Points per deal: all deals, boards included."
        )
    )
    c = m.of("contracts", player)
    b.append(
        table(
            ["", *_CONTRACT_HEADERS],
            (["as a team member", *_contract_cells(cr)] for cr in c.iter_rows(named=True)),
        )
    )
    partners = m.partners_of(player)
    b.append(
        table(
            ["partner", "games", *_CONTRACT_HEADERS],
            (
                [player_link(pr["partner"], True, linked), fmt_int(pr["games"]), *_contract_cells(pr)]
                for pr in partners.iter_rows(named=True)
            ),
            caption="With each partner",
        )
    )

    b.append(Heading("Board success"))
    b.append(Note(BOARDS_HOW, how=True))
    lv = m.of("boards_by_level", player)
    b.append(
        table(
            ["level", "claimed", "made", "points won", "points lost", "net"],
            (
                [
                    f"{BOARD_LEVEL_NAMES.get(int(x['level']), x['level'])} (×{x['level']})",
                    fmt_int(x["claimed"]),
                    rate(x["made"], x["claimed"]),
                    fmt_int(x["points_won"]),
                    fmt_int(x["points_lost"]),
                    fmt_num(int(x["points_won"]) - int(x["points_lost"]), 0, signed=True),
                ]
                for x in lv.iter_rows(named=True)
            ),
            caption="Boards the player claimed, by level",
        )
    )
    b.append(
        table(
            ["hand size", "claimed", "made"],
            (
                [x["hand_size"], fmt_int(x["claimed"]), rate(x["made"], x["claimed"])]
                for x in m.of("boards_by_hand", player).iter_rows(named=True)
            ),
            caption="By hand size",
            folded=True,
        )
    )
    b.append(note(f"Opponents' board contracts broken by the player's team: {rate_text(n_broken, opp_boards)}."))
    if m.analysed and m.of("dd_bids", player).height:
        b += dd_sections(m, linked, player)
    b += player_ruleset_sections(m, player, linked)
    b += _quality_section(m, linked, player)
    return page(f"{player}", sub, b, root="../")


def _rate_value(k: Any, n: Any, field: float | None = None) -> Markup:
    """A card's rate, marked against the ``field``'s."""
    n_, k_ = int(n or 0), int(k or 0)
    ci = wilson(k_, n_)
    mark = marker(ci[0], ci[1], field, pct(field) if field is not None else "") if ci else Markup("")
    return esc(rate_text(k, n).split(" (")[0]) + mark


def _rate_sub(k: Any, n: Any) -> str:
    n_, k_ = int(n or 0), int(k or 0)
    ci = wilson(k_, n_)
    if ci is None:
        return "0 cases"
    return f"{k_:,} of {n_:,} · CI {100 * ci[0]:.0f}–{100 * ci[1]:.0f}%"


# ---------------------------------------------------------------- rulesets

STANDARD_NOTE = (
    "Leaderboard, bidding and partnerships: plain standard games only."
    " Every other ruleset, and standard with house options, has its own section below."
)
#: What each house option changes, shown beside a section's title.
OPTION_NOTES = {
    "no_jokers": "no jokers (52 cards; 40 with short_deck)",
    "short_deck": "no 2s, 3s and 4s (hands of at most 10 cards)",
    "spades_trump": "spades always trump",
    "no_partnerships": "no partnerships: each seat is a side, 'team' figures are the player's own",
}


def ruleset_label(ruleset: str | None, options: str) -> str:
    """``pereulok`` or ``standard + short_deck, no_partnerships``."""
    name = ruleset if ruleset is not None else "unknown ruleset"
    return f"{name} + {options.replace(',', ', ')}" if options else name


def ruleset_anchor(ruleset: str | None, options: str) -> str:
    return "ruleset-" + re.sub(r"[^a-z0-9]+", "-", ruleset_label(ruleset, options).lower()).strip("-")


def rulesets_section(m: Metrics, linked: Mapping[str, str]) -> list[Block]:
    """The rulesets present, each linked to its section (plain standard: the sections that follow)."""
    rows = []
    for r in m.rulesets.iter_rows(named=True):
        label = ruleset_label(r["ruleset"], r["options"])
        plain = (r["ruleset"], r["options"]) == ("standard", "")
        target = "leaderboard" if plain else ruleset_anchor(r["ruleset"], r["options"])
        cell = Markup(f'<a href="#{esc(target)}">{esc(label)}</a>') if r["deals"] else esc(label)
        rows.append([cell, fmt_int(r["games"]), fmt_int(r["valid_games"]), fmt_int(r["players"]), fmt_int(r["deals"])])
    return [
        Heading("Rulesets", "rulesets"),
        note("No figure mixes rulesets or house options: each has its own section."),
        table(["ruleset", "games", "valid", "players", "scored deals"], rows),
    ]


def _options_note(options: str) -> list[Block]:
    if not options:
        return []
    notes = "; ".join(OPTION_NOTES.get(o, o) for o in options.split(","))
    return [note(f"House options: {notes}.")]


def _variant(frame: pl.DataFrame, ruleset: str, options: str) -> pl.DataFrame:
    if frame.height == 0:
        return frame
    return frame.filter((pl.col("ruleset") == ruleset) & (pl.col("options") == options))


def ruleset_kind(name: str) -> type[Ruleset]:
    """The ruleset class a stored game's ``ruleset`` names (what its sections show: the class's attributes)."""
    return RULESETS.get(name, Ruleset)


def _player_cells(r: dict[str, Any], ruleset: str, fields: Mapping[str, float | None] | None = None) -> list[Any]:
    kind = ruleset_kind(ruleset)
    f = fields or {}
    won = rate(r["games_won"], r["games"], f.get("games_won"))
    common = [fmt_int(r["games"]), won, fmt_int(r["deals"]), fmt_num(r["points_per_deal"])]
    if kind.auction == "declarations":
        made = rate(r["declarations_made"], r["declarations"], f.get("declarations_made"))
        return [*common, made, fmt_int(r["auctions_won"])]
    cells = [*common, rate(r["exact_bids"], r["numeric_bids"], f.get("exact_bids")), fmt_num(r["mean_abs_error"])]
    cells.append(rate(r["boards_made"], r["boards_claimed"], f.get("boards_made")))
    if kind.rainbow:
        cells.append(fmt_int(r["rainbows"]))
    return cells


def _player_headers(ruleset: str) -> list[str]:
    kind = ruleset_kind(ruleset)
    common = ["games", "won", "deals", "points / deal"]
    if kind.auction == "declarations":
        return [*common, "declarations made", "auctions won"]
    return [*common, "exact bids", "mean |error|", f"{kind.board_word}s made"] + (["rainbows"] if kind.rainbow else [])


def _declaration_tables(decl: pl.DataFrame) -> list[Block]:
    """Declarations made and failed, by declared tricks and by multiplier (summed over the rows given)."""
    out: list[Block] = []
    for by, caption in (("declared tricks", "Declarations by declared tricks"), ("multiplier", "By multiplier")):
        part = decl.filter(pl.col("breakdown") == by) if decl.height else decl
        if part.height:
            part = part.group_by("value").agg(pl.col("declared").sum(), pl.col("made").sum()).sort("value")
        rows = (
            [
                f"×{x['value']}" if by == "multiplier" else x["value"],
                fmt_int(x["declared"]),
                rate(x["made"], x["declared"]),
                fmt_int(int(x["declared"]) - int(x["made"])),
            ]
            for x in part.iter_rows(named=True)
        )
        out.append(table([by, "declared", "made", "failed"], rows, caption=caption))
    return out


def _bore_table(bores: pl.DataFrame, ruleset: str) -> Table:
    part = bores
    if part.height:
        part = part.group_by("level").agg(pl.col("claimed").sum(), pl.col("made").sum()).sort("level")
    kind = ruleset_kind(ruleset)
    names = dict(enumerate(kind.board_level_names, 1))
    rows = (
        [names.get(x["level"], x["level"]), fmt_int(x["claimed"]), rate(x["made"], x["claimed"])]
        for x in part.iter_rows(named=True)
    )
    what = "Bores by level" if kind.board_word == "bore" else "Board claims by level"
    return table(["level", "claimed", "made"], rows, caption=what)


def ruleset_section(m: Metrics, ruleset: str, options: str, linked: Mapping[str, str]) -> list[Block]:
    """One ruleset (with its options): every player's figures, and the ruleset's own tables."""
    label = ruleset_label(ruleset, options)
    b: list[Block] = [Heading(f"Ruleset {label}", ruleset_anchor(ruleset, options))]
    b += _options_note(options)
    players = _variant(m.ruleset_players, ruleset, options)
    b += [Note(RATE_HOW, how=True), Note(LEGEND, how=True)]
    fields = rate_fields(players)
    rows = (
        [Markup(f"{i}. ") + player_link(r["player"], False, linked), *_player_cells(r, ruleset, fields)]
        for i, r in enumerate(players.iter_rows(named=True), 1)
    )
    b.append(table(["player", *_player_headers(ruleset)], rows, caption="Players, by points per deal"))
    if ruleset_kind(ruleset).auction == "declarations":
        b += _declaration_tables(_variant(m.declarations, ruleset, options))
    else:
        b.append(_bore_table(_variant(m.bores, ruleset, options), ruleset))
    b += ruleset_dd_sections(m, ruleset, options, linked)
    return b


def player_ruleset_sections(m: Metrics, player: str, linked: Mapping[str, str]) -> list[Block]:
    """A player's figures in every ruleset other than plain standard that they played."""
    mine = m.of("ruleset_players", player)
    b: list[Block] = []
    for r in mine.iter_rows(named=True):
        ruleset, options = r["ruleset"], r["options"]
        if (ruleset, options) == ("standard", ""):
            continue
        label = ruleset_label(ruleset, options)
        b.append(Heading(f"Ruleset {label}", ruleset_anchor(ruleset, options)))
        b += _options_note(options)
        fields = rate_fields(_variant(m.ruleset_players, ruleset, options))
        b += [Note(LEGEND, how=True), table(_player_headers(ruleset), [_player_cells(r, ruleset, fields)])]
        if ruleset_kind(ruleset).auction == "declarations":
            b += _declaration_tables(_variant(m.of("declarations", player), ruleset, options))
        else:
            b.append(_bore_table(_variant(m.of("bores", player), ruleset, options), ruleset))
        b += ruleset_dd_sections(m, ruleset, options, linked, player)
    return b


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


def _dd_coverage(m: Metrics, ruleset: str, options: str) -> pl.DataFrame:
    cov = _variant(m.dd_coverage, ruleset, options)
    return cov.group_by("hand_size").agg(pl.col("deals").sum(), pl.col("analysed").sum()) if cov.height else cov


def dd_sections(m: Metrics, linked: Mapping[str, str], player: str | None = None) -> list[Block]:
    """Bid vs makeable and play accuracy: everyone's by hand size and each player's (index), or one player's."""
    cov = _dd_coverage(m, "standard", "")
    if player is None:
        frames = DDFrames(m.pop_dd_bids, m.pop_dd_plays, _overall(m.dd_bids), _overall(m.dd_plays), cov)
    else:
        frames = DDFrames(m.of("dd_bids", player), m.of("dd_plays", player), coverage=cov)
    return _dd_tables(frames, linked, DD_BID_NOTE, field=dd_field(m.pop_dd_bids, m.pop_dd_plays))


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
    pop_bids = _variant(m.pop_ruleset_dd_bids, ruleset, options)
    if pop_bids.height == 0:
        return []
    pop_plays = _variant(m.pop_ruleset_dd_plays, ruleset, options)
    cov = _dd_coverage(m, ruleset, options)
    if player is None:
        frames = DDFrames(
            pop_bids,
            pop_plays,
            _overall(_variant(m.ruleset_dd_bids, ruleset, options)),
            _overall(_variant(m.ruleset_dd_plays, ruleset, options)),
            cov,
        )
    else:
        bids = _variant(m.of("ruleset_dd_bids", player), ruleset, options)
        if bids.height == 0:
            return []
        frames = DDFrames(bids, _variant(m.of("ruleset_dd_plays", player), ruleset, options), coverage=cov)
    anchor = ruleset_anchor(ruleset, options) + "-"
    return _dd_tables(frames, linked, DD_RULESET_NOTE, 3, anchor, dd_field(pop_bids, pop_plays))

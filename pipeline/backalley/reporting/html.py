"""The report's pages: the blocks each page shows, built from the figures; Jinja2 templates render them.

Cells (:mod:`backalley.reporting.cells`) are escaped by the templates unless they
are :class:`~markupsafe.Markup` built from escaped parts, so a value cannot reach
the page unescaped by accident. The double-dummy sections are
:mod:`backalley.reporting.dd_sections`. The pages are self-contained: the
stylesheet and the SVG charts inline.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import polars as pl
from markupsafe import Markup

from backalley.reporting import charts
from backalley.reporting.blocks import (
    Block,
    Cards,
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
from backalley.reporting.cells import (
    DASH,
    LEGEND,
    card,
    chart,
    esc,
    fmt_int,
    fmt_num,
    marker,
    note,
    pct,
    player_link,
    rate,
    rate_fields,
    rate_text,
    ruleset_anchor,
    ruleset_kind,
    ruleset_label,
    table,
    variant,
)
from backalley.reporting.dd_sections import dd_sections, ruleset_dd_sections
from backalley.reporting.luck import luck_sections
from backalley.reporting.metrics import BOARD_LEVEL_NAMES, Metrics, is_plain, wilson
from backalley.reporting.ratings import calibration_sections, leaderboard_cell, rating_card, ratings_sections

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
        if not is_plain(r["ruleset"], r["options"]):
            b += ruleset_section(m, r["ruleset"], r["options"], linked)
    b += luck_sections(m, linked)
    b += ratings_sections(m, linked)
    b += calibration_sections(m)
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
    "rating (μ − 3σ)",
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
    SortKey("leaderboard-by-rating", "rating (μ − 3σ)", (("rating", True), ("rating_games", True))),
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
        leaderboard_cell(r),
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
        b += ratings_sections(m, linked, player)
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
                rating_card(r),
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
    unknown = int(m.population.get("sheets_no_trump", 0))
    if unknown:
        b.append(note(f"By trump leaves out {unknown:,} score sheet{'s' * (unknown != 1)} that do not say the trump."))
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
    b += luck_sections(m, linked, player)
    b += ratings_sections(m, linked, player)
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


def rulesets_section(m: Metrics, linked: Mapping[str, str]) -> list[Block]:
    """The rulesets present, each linked to its section (plain standard: the sections that follow)."""
    rows = []
    for r in m.rulesets.iter_rows(named=True):
        label = ruleset_label(r["ruleset"], r["options"])
        plain = is_plain(r["ruleset"], r["options"])
        target = "leaderboard" if plain else ruleset_anchor(r["ruleset"], r["options"])
        cell = Markup(f'<a href="#{esc(target)}">{esc(label)}</a>') if r["deals"] else esc(label)
        rows.append([cell, fmt_int(r["games"]), fmt_int(r["valid_games"]), fmt_int(r["players"]), fmt_int(r["deals"])])
    return [
        Heading("Rulesets", "rulesets"),
        note("No figure mixes rulesets or house options: each has its own section."),
        table(["ruleset", "games", "valid", "players", "scored deals"], rows),
    ]


def _options_note(ruleset: str, options: str) -> list[Block]:
    """What each house option changes (the ruleset's :attr:`~backalley.rules.Ruleset.option_notes`)."""
    if not options:
        return []
    cls = ruleset_kind(ruleset)
    said = dict(zip(cls.known_options, cls.option_notes, strict=True))
    notes = "; ".join(said.get(o, o) for o in options.split(","))
    return [note(f"House options: {notes}.")]


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
    b += _options_note(ruleset, options)
    players = variant(m.ruleset_players, ruleset, options)
    b += [Note(RATE_HOW, how=True), Note(LEGEND, how=True)]
    fields = rate_fields(players)
    rows = (
        [Markup(f"{i}. ") + player_link(r["player"], False, linked), *_player_cells(r, ruleset, fields)]
        for i, r in enumerate(players.iter_rows(named=True), 1)
    )
    b.append(table(["player", *_player_headers(ruleset)], rows, caption="Players, by points per deal"))
    if ruleset_kind(ruleset).auction == "declarations":
        b += _declaration_tables(variant(m.declarations, ruleset, options))
    else:
        b.append(_bore_table(variant(m.bores, ruleset, options), ruleset))
    b += ruleset_dd_sections(m, ruleset, options, linked)
    return b


def player_ruleset_sections(m: Metrics, player: str, linked: Mapping[str, str]) -> list[Block]:
    """A player's figures in every ruleset other than plain standard that they played."""
    mine = m.of("ruleset_players", player)
    b: list[Block] = []
    for r in mine.iter_rows(named=True):
        ruleset, options = r["ruleset"], r["options"]
        if is_plain(ruleset, options):
            continue
        label = ruleset_label(ruleset, options)
        b.append(Heading(f"Ruleset {label}", ruleset_anchor(ruleset, options)))
        b += _options_note(ruleset, options)
        fields = rate_fields(variant(m.ruleset_players, ruleset, options))
        b += [Note(LEGEND, how=True), table(_player_headers(ruleset), [_player_cells(r, ruleset, fields)])]
        if ruleset_kind(ruleset).auction == "declarations":
            b += _declaration_tables(variant(m.of("declarations", player), ruleset, options))
        else:
            b.append(_bore_table(variant(m.of("bores", player), ruleset, options), ruleset))
        b += ruleset_dd_sections(m, ruleset, options, linked, player)
    return b

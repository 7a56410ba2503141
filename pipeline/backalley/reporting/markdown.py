"""``summary.md``: the headline tables, for a terminal or a pull request."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from backalley.reporting.cells import fmt_int, fmt_num, rate_text, ruleset_kind, ruleset_label
from backalley.reporting.dd_sections import (
    DD_BID_HEADERS,
    DD_MEANS,
    DD_PLAY_HEADERS,
    coverage_note,
    dd_coverage,
    mean_text,
)
from backalley.reporting.metrics import PLAIN, Metrics, is_plain
from backalley.reporting.ratings import rating_words

_SPECIAL = re.compile(r"([\\`*_\[\]|~])")


def md(value: Any) -> str:
    """A value as inert Markdown table text: HTML and Markdown syntax escaped, one line."""
    text = "" if value is None else str(value)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = _SPECIAL.sub(r"\\\1", text)
    return re.sub(r"\s+", " ", text).strip()


def _table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    out = ["| " + " | ".join(md(h) for h in headers) + " |", "|" + "|".join(["---"] * len(headers)) + "|"]
    n = 0
    for row in rows:
        out.append("| " + " | ".join(md(c) for c in row) + " |")
        n += 1
    if n == 0:
        out.append("| " + " | ".join(["(none)"] + [""] * (len(headers) - 1)) + " |")
    return [*out, ""]


def summary_markdown(m: Metrics, linked: Mapping[str, str], top: int = 20) -> str:
    p = m.population
    scope = f"event {md(m.event)}" if m.event is not None else "all events"
    if m.period:
        scope += f", {m.period.words()}"
    lines = [
        "# Back Alley report",
        "",
        f"Scope: {scope}. Open `index.html` for the full report; rates are shown as rate (successes/cases; 95% Wilson interval).",
        "",
        "## Population",
        "",
        *_table(
            ["figure", "value"],
            [
                ["records (incl. rejected)", fmt_int(p["records"])],
                ["valid games", fmt_int(p["valid_games"])],
                ["games in the figures", fmt_int(p["reported_games"])],
                ["players", fmt_int(p["players"])],
                ["scored deals", fmt_int(p["deals"])],
                ["boards made", rate_text(p["boards_made"], p["boards_claimed"])],
            ],
        ),
        f"## Leaderboard (top {min(top, m.leaderboard.height)} of {m.leaderboard.height} by points per deal)",
        "",
        *_table(
            [
                "player",
                "games",
                "won",
                "points/deal",
                "rating (μ − 3σ)",
                "exact bids",
                "mean abs error",
                "mean error",
                "boards made",
                "page",
            ],
            (
                [
                    r["player"],
                    fmt_int(r["games"]),
                    rate_text(r["games_won"], r["games"]),
                    fmt_num(r["points_per_deal"]),
                    rating_words(r),
                    rate_text(r["exact_bids"], r["numeric_bids"]),
                    fmt_num(r["mean_abs_error"]),
                    fmt_num(r["mean_signed_error"], signed=True),
                    rate_text(r["boards_made"], r["boards_claimed"]),
                    linked.get(r["player"], ""),
                ]
                for r in m.leaderboard.head(top).iter_rows(named=True)
            ),
        ),
        *_double_dummy(m, top),
        *_rulesets(m, top),
        *_ruleset_double_dummy(m),
        "## Data quality",
        "",
        *_table(
            ["status", "records"],
            ([r["status"], fmt_int(r["records"])] for r in m.quality_status.iter_rows(named=True)),
        ),
        *_table(
            ["code", "violations", "games", "players charged"],
            (
                [r["code"], fmt_int(r["violations"]), fmt_int(r["games"]), fmt_int(r["players"])]
                for r in m.quality_codes.iter_rows(named=True)
            ),
        ),
    ]
    return "\n".join(lines).rstrip() + "\n"


def _rulesets(m: Metrics, top: int) -> list[str]:
    """The rulesets present and, for each but plain standard, its leading players (none when plain standard only)."""
    if m.plain_standard_only:
        return []
    out = [
        "## Rulesets",
        "",
        "No figure mixes rulesets: the leaderboard above is plain standard's; each other ruleset follows.",
        "",
        *_table(
            ["ruleset", "games", "valid", "players", "scored deals"],
            (
                [
                    ruleset_label(r["ruleset"], r["options"]),
                    fmt_int(r["games"]),
                    fmt_int(r["valid_games"]),
                    fmt_int(r["players"]),
                    fmt_int(r["deals"]),
                ]
                for r in m.rulesets.iter_rows(named=True)
            ),
        ),
    ]
    for r in m.rulesets.iter_rows(named=True):
        name, options = r["ruleset"], r["options"]
        if is_plain(name, options) or not r["deals"]:
            continue
        rows = m.ruleset_players.filter(
            (m.ruleset_players["ruleset"] == name) & (m.ruleset_players["options"] == options)
        )
        if ruleset_kind(name).auction == "declarations":
            headers = ["player", "games", "won", "points/deal", "declarations made", "auctions won"]
            cells = (
                [
                    x["player"],
                    fmt_int(x["games"]),
                    rate_text(x["games_won"], x["games"]),
                    fmt_num(x["points_per_deal"]),
                    rate_text(x["declarations_made"], x["declarations"]),
                    fmt_int(x["auctions_won"]),
                ]
                for x in rows.head(top).iter_rows(named=True)
            )
        else:
            headers = ["player", "games", "won", "points/deal", "exact bids", "boards made"]
            cells = (
                [
                    x["player"],
                    fmt_int(x["games"]),
                    rate_text(x["games_won"], x["games"]),
                    fmt_num(x["points_per_deal"]),
                    rate_text(x["exact_bids"], x["numeric_bids"]),
                    rate_text(x["boards_made"], x["boards_claimed"]),
                ]
                for x in rows.head(top).iter_rows(named=True)
            )
        out += [f"### {md(ruleset_label(name, options))}", "", *_table(headers, cells)]
    return out


def _dd_bid_cells(r: Mapping[str, Any]) -> list[str]:
    return [
        fmt_int(r["contracts"]),
        mean_text(r["mean_diff"], r["sd_diff"], r["contracts"], signed=True),
        rate_text(r["over"], r["contracts"]),
        rate_text(r["exact"], r["contracts"]),
        rate_text(r["under"], r["contracts"]),
        fmt_int(r["boards"]),
        rate_text(r["boards_makeable"], r["boards"]),
    ]


def _dd_play_cells(r: Mapping[str, Any]) -> list[str]:
    lost = mean_text(r["lost_per_deal"], r["sd_lost"], r["deals"], floor=0.0)
    return [fmt_int(r["deals"]), lost, fmt_int(r["plays"]), rate_text(r["free"], r["plays"])]


def _double_dummy(m: Metrics, top: int) -> list[str]:
    """Bid vs makeable and play accuracy of plain standard games (none when no deal is analysed)."""
    if not m.analysed:
        return []

    def size(v: Any) -> str:
        return "all" if v is None else str(v)

    mine = m.dd_plays.filter(m.dd_plays["hand_size"].is_null()).sort(["lost_per_deal", "player"]).head(top)
    return [
        "## Bid vs makeable (double-dummy, plain standard)",
        "",
        md(DD_MEANS),
        "",
        *[md(b.text) + "\n" for b in coverage_note(dd_coverage(m, *PLAIN))],
        *_table(
            ["hand size", *DD_BID_HEADERS],
            ([size(r["hand_size"]), *_dd_bid_cells(r)] for r in m.pop_dd_bids.iter_rows(named=True)),
        ),
        "## Play accuracy (double-dummy, plain standard)",
        "",
        *_table(
            ["hand size", *DD_PLAY_HEADERS],
            ([size(r["hand_size"]), *_dd_play_cells(r)] for r in m.pop_dd_plays.iter_rows(named=True)),
        ),
        *_table(["player", *DD_PLAY_HEADERS], ([r["player"], *_dd_play_cells(r)] for r in mine.iter_rows(named=True))),
    ]


def _ruleset_double_dummy(m: Metrics) -> list[str]:
    """Bid vs makeable and play accuracy of every other ruleset and options, all players and hand sizes."""
    bids = m.pop_ruleset_dd_bids
    if bids.height == 0:
        return []
    bids = bids.filter(bids["hand_size"].is_null())
    plays = m.pop_ruleset_dd_plays.filter(m.pop_ruleset_dd_plays["hand_size"].is_null())
    label = {
        (r["ruleset"], r["options"]): ruleset_label(r["ruleset"], r["options"]) for r in bids.iter_rows(named=True)
    }
    return [
        "## Bid vs makeable by ruleset (double-dummy; without partnerships, each seat's own value)",
        "",
        *_table(
            ["ruleset", *DD_BID_HEADERS],
            ([label[r["ruleset"], r["options"]], *_dd_bid_cells(r)] for r in bids.iter_rows(named=True)),
        ),
        "## Play accuracy by ruleset (double-dummy)",
        "",
        *_table(
            ["ruleset", *DD_PLAY_HEADERS],
            ([label[r["ruleset"], r["options"]], *_dd_play_cells(r)] for r in plays.iter_rows(named=True)),
        ),
    ]

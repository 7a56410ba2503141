"""Charts as inline SVG strings, drawn by matplotlib (Agg backend, no pyplot state).

The SVG is deterministic (fixed hash salt, no date), has no XML header, no
external reference, and every id is prefixed so that several charts can live in
one HTML page without clashing ids.
"""

from __future__ import annotations

import io
import re
from typing import Any

import matplotlib

matplotlib.use("Agg")

import polars as pl
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator, StrMethodFormatter

ACCENT = "#2563eb"
GOOD = "#16a34a"
BAD = "#dc2626"
MUTED = "#9ca3af"
INK = "#1f2937"

_RC: Any = {  # typed Any: matplotlib types rc keys as Literal names
    "svg.hashsalt": "backalley-report",
    "svg.fonttype": "none",  # text stays text: smaller, selectable, uses the page's fonts
    "font.family": ["DejaVu Sans", "sans-serif"],
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.titleweight": "bold",
    "axes.labelsize": 9,
    "axes.edgecolor": MUTED,
    "axes.labelcolor": INK,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "axes.axisbelow": True,
    "grid.color": "#e5e7eb",
    "grid.linewidth": 0.6,
    "xtick.color": INK,
    "ytick.color": INK,
    "legend.fontsize": 8,
    "legend.frameon": False,
}

_ID = re.compile(r'\bid="([^"]+)"')
_REF = re.compile(r'(url\(#|href="#)([^")]+)')
_SIZE = re.compile(r'\s(width|height)="[\d.]+pt"')


def _num(value: Any) -> float:
    """A polars aggregate (typed as a wide union) as a float; 0 for None."""
    return 0.0 if value is None else float(value)


def _figure() -> Figure:
    # Fixed margins rather than a layout engine: constrained layout doubles the drawing time.
    fig = Figure(figsize=(4.6, 3.1), dpi=100)
    fig.subplots_adjust(left=0.14, right=0.97, bottom=0.17, top=0.9)
    return fig


def render(fig: Figure, prefix: str) -> str:
    """The figure as an SVG element: no header, ids prefixed with ``prefix``, scalable."""
    buf = io.StringIO()
    with matplotlib.rc_context(_RC):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    svg = buf.getvalue()
    svg = svg[svg.index("<svg") :]
    svg = _ID.sub(lambda m: f'id="{prefix}-{m.group(1)}"', svg)
    svg = _REF.sub(lambda m: f"{m.group(1)}{prefix}-{m.group(2)}", svg)
    # Drop the fixed size: the viewBox keeps the aspect ratio and CSS sets the width.
    head, rest = svg.split(">", 1)
    head = _SIZE.sub("", head)
    return f'{head} role="img">{rest}'.strip()


def _new() -> tuple[Figure, Any]:
    with matplotlib.rc_context(_RC):
        fig = _figure()
        ax = fig.add_subplot()
    return fig, ax


def calibration(player: pl.DataFrame, population: pl.DataFrame, prefix: str, label: str = "this player") -> str | None:
    """Bid against mean tricks won (frames with bid, n, mean_tricks), with the diagonal of perfect bids."""
    if player.is_empty():
        return None
    with matplotlib.rc_context(_RC):
        fig, ax = _new()
        top = max(
            int(_num(player["bid"].max()) or 0),
            int(_num(population["bid"].max()) or 0) if not population.is_empty() else 0,
            1,
        )
        ax.plot([0, top], [0, top], color=MUTED, linestyle="--", linewidth=1, label="bid = tricks")
        if not population.is_empty():
            ax.plot(
                population["bid"], population["mean_tricks"], color=MUTED, marker=".", linewidth=1, label="all players"
            )
        sizes = [min(120.0, 12.0 + 6.0 * float(n) ** 0.5) for n in player["n"]]
        ax.plot(player["bid"], player["mean_tricks"], color=ACCENT, linewidth=1.5, label=label)
        ax.scatter(player["bid"], player["mean_tricks"], s=sizes, color=ACCENT, zorder=3)
        ax.set_title("Calibration: tricks won per bid")
        ax.set_xlabel("bid (pass = 0); dot size = number of bids")
        ax.set_ylabel("mean tricks won")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlim(-0.5, top + 0.5)
        ax.set_ylim(bottom=-0.3)
        ax.legend(loc="upper left")
        return render(fig, prefix)


def error_histogram(errors: pl.DataFrame, prefix: str, title: str = "Bid error (tricks won − bid)") -> str | None:
    """Bars of how many bids had each error (frame with error, n)."""
    if errors.is_empty():
        return None
    with matplotlib.rc_context(_RC):
        fig, ax = _new()
        colours = [GOOD if e == 0 else (ACCENT if e > 0 else BAD) for e in errors["error"]]
        ax.bar(errors["error"], errors["n"], color=colours, width=0.8)
        lo, hi = int(_num(errors["error"].min()) or 0), int(_num(errors["error"].max()) or 0)
        ax.set_xlim(min(lo, -2) - 0.6, max(hi, 2) + 0.6)
        ax.set_title(title)
        ax.set_xlabel("error: < 0 under-won (set), > 0 over-won")
        ax.set_ylabel("bids")
        ax.yaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(axis="x", visible=False)
        return render(fig, prefix)


def board_success(by_hand: pl.DataFrame, prefix: str) -> str | None:
    """Boards claimed and made per hand size (frame with hand_size, claimed, made)."""
    if by_hand.is_empty():
        return None
    with matplotlib.rc_context(_RC):
        fig, ax = _new()
        x = by_hand["hand_size"].to_list()
        claimed, made = by_hand["claimed"].to_list(), by_hand["made"].to_list()
        ax.bar(x, claimed, color=MUTED, width=0.8, label="claimed")
        ax.bar(x, made, color=GOOD, width=0.5, label="made")
        for xi, c, k in zip(x, claimed, made, strict=True):  # counts, so 1 of 1 reads as such; rates when large
            text = f"{k}/{c}" if c < 100 else f"{100 * k / c:.0f}%"
            ax.annotate(text, (xi, c), xytext=(0, 2), textcoords="offset points", ha="center", fontsize=7, color=INK)
        ax.set_title("Board claims by hand size")
        ax.set_xlabel("hand size (cards)")
        ax.set_ylabel("boards")
        ax.yaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))
        ax.set_xlim(0.3, 13.7)
        ax.set_ylim(0, max(claimed) * 1.18 + 0.5)
        ax.set_xticks(range(1, 14))
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(axis="x", visible=False)
        ax.legend(loc="upper right")
        return render(fig, prefix)


def score_over_games(scores: pl.DataFrame, prefix: str) -> str | None:
    """The team's final score game after game (frame with first_game, last_game, games, score, opp_score)."""
    if scores.is_empty():
        return None
    with matplotlib.rc_context(_RC):
        fig, ax = _new()
        bucketed = int(_num(scores["games"].max()) or 1) > 1
        x = ((scores["first_game"] + scores["last_game"]) / 2).to_list()
        ax.axhline(0, color=MUTED, linewidth=0.8)
        marker = "" if len(x) > 60 else "o"
        ax.plot(x, scores["opp_score"], color=MUTED, linewidth=1, marker=marker, markersize=3, label="opponents")
        ax.plot(x, scores["score"], color=ACCENT, linewidth=1.5, marker=marker, markersize=3.5, label="player's team")
        ax.set_title("Final score, game by game" + (" (bucket means)" if bucketed else ""))
        ax.set_xlabel("game number (in order played)")
        ax.set_xlim(0.5, max(_num(scores["last_game"].max()) or 1.0, 2.0) + 0.5)
        ax.set_ylabel("team's final score")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.legend(loc="best")
        return render(fig, prefix)

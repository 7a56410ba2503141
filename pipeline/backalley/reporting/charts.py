"""Charts as inline SVG strings, written by hand (plain string building, no plotting library).

The SVG is deterministic (same frames, same string), has no XML header, no
external reference, and every id is prefixed so that several charts can live in
one HTML page without clashing ids. It scales with its container (a viewBox, no
fixed size), its text is SVG text in the page's own fonts, and every piece of
text is XML-escaped, so a label taken from the data can never become markup.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any

import polars as pl

ACCENT = "#2563eb"
GOOD = "#16a34a"
BAD = "#dc2626"
MUTED = "#9ca3af"
INK = "#1f2937"
GRID = "#e5e7eb"

WIDTH, HEIGHT = 460, 310
LEFT, RIGHT, TOP, BOTTOM = 64.0, 446.0, 34.0, 254.0  # the plot area inside the viewBox
FONT = 12  # tick and axis labels, in viewBox units (the chart is ~420 px wide on a page, ~340 on a phone)

Point = tuple[float, float]


def _num(value: Any) -> float:
    """A polars aggregate (typed as a wide union) as a float; 0 for None."""
    return 0.0 if value is None else float(value)


def _f(value: float) -> str:
    """A coordinate: one decimal, no '-0.0', so the output is short and stable."""
    text = f"{value:.1f}".removesuffix(".0")
    return "0" if text == "-0" else text


def _esc(text: object) -> str:
    return escape(str(text), quote=True)


# ---------------------------------------------------------------- scales and ticks


def nice_ticks(lo: float, hi: float, *, max_ticks: int = 7, integer: bool = False) -> list[float]:
    """Round tick values (1, 2, 2.5 or 5 times a power of ten) inside [lo, hi], at most ``max_ticks`` of them.

    With ``integer`` the step is a whole number (1, 2, 5, 10, 20...).
    """
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi < lo:
        return []
    span = max(hi - lo, 1e-9)
    power = 10.0 ** math.floor(math.log10(span / max_ticks))
    for mantissa in (1.0, 2.0, 2.5, 5.0, 10.0, 20.0):
        step = mantissa * power
        if integer and (step < 1 or step != int(step)):
            continue
        first, last = math.ceil(lo / step - 1e-9), math.floor(hi / step + 1e-9)
        if last - first + 1 <= max_ticks:
            return [round(k * step, _decimals(step)) + 0.0 for k in range(first, last + 1)]
    return [lo, hi]  # not reached: the last mantissa always fits


def _decimals(step: float) -> int:
    """How many decimals show every multiple of ``step`` exactly (0 for 5, 1 for 0.5, 2 for 0.25; at most 6)."""
    return next((d for d in range(7) if abs(step * 10**d - round(step * 10**d)) < 1e-6), 6)


def tick_label(value: float, step: float) -> str:
    """A tick value with thousands separators, as many decimals as the step needs, and a true minus sign."""
    text = f"{abs(value):,.{_decimals(step)}f}"
    return ("\u2212" + text) if value < 0 and float(text.replace(",", "")) != 0 else text


def _padded(values: Iterable[float], *, margin: float = 0.05) -> tuple[float, float]:
    """The range of the values widened by ``margin`` of its span on both sides."""
    finite = [v for v in values if math.isfinite(v)]
    lo, hi = (min(finite), max(finite)) if finite else (0.0, 1.0)
    if hi == lo:
        lo, hi = lo - 0.5, hi + 0.5
    pad = (hi - lo) * margin
    return lo - pad, hi + pad


# ---------------------------------------------------------------- the canvas


@dataclass
class _Plot:
    """One chart being drawn: data ranges mapped onto the plot area, SVG elements collected in order."""

    prefix: str
    title: str
    xlim: tuple[float, float]
    ylim: tuple[float, float]
    parts: list[str] = field(default_factory=list)

    def x(self, value: float) -> float:
        lo, hi = self.xlim
        return LEFT + (value - lo) / (hi - lo) * (RIGHT - LEFT)

    def y(self, value: float) -> float:
        lo, hi = self.ylim
        return BOTTOM - (value - lo) / (hi - lo) * (BOTTOM - TOP)

    def text(
        self, x: float, y: float, text: str, *, anchor: str = "middle", size: float = FONT, extra: str = ""
    ) -> None:
        self.parts.append(
            f'<text x="{_f(x)}" y="{_f(y)}" text-anchor="{anchor}" font-size="{_f(size)}"{extra}>{_esc(text)}</text>'
        )

    def axes(self, xticks: Sequence[float], yticks: Sequence[float], xlabel: str, ylabel: str, *, xgrid: bool) -> None:
        """Gridlines, tick labels, the left and bottom spines, the title and the axis labels."""
        xstep = xticks[1] - xticks[0] if len(xticks) > 1 else 1.0
        ystep = yticks[1] - yticks[0] if len(yticks) > 1 else 1.0
        grid = [f"M{_f(LEFT)} {_f(self.y(v))}H{_f(RIGHT)}" for v in yticks]
        if xgrid:
            grid += [f"M{_f(self.x(v))} {_f(TOP)}V{_f(BOTTOM)}" for v in xticks]
        self.parts.append(f'<path d="{"".join(grid)}" stroke="{GRID}" stroke-width="0.8" fill="none"/>')
        marks = [f"M{_f(self.x(v))} {_f(BOTTOM)}v4" for v in xticks] + [
            f"M{_f(LEFT)} {_f(self.y(v))}h-4" for v in yticks
        ]
        self.parts.append(f'<path d="{"".join(marks)}" stroke="{MUTED}" stroke-width="1"/>')
        for v in xticks:
            self.text(self.x(v), BOTTOM + 17, tick_label(v, xstep))
        for v in yticks:
            self.text(LEFT - 7, self.y(v) + 4, tick_label(v, ystep), anchor="end")
        self.parts.append(
            f'<path d="M{_f(LEFT)} {_f(TOP)}V{_f(BOTTOM)}H{_f(RIGHT)}" stroke="{MUTED}" stroke-width="1" fill="none"/>'
        )
        self.text((LEFT + RIGHT) / 2, 20, self.title, size=14, extra=' font-weight="bold"')
        self.text((LEFT + RIGHT) / 2, HEIGHT - 14, xlabel)
        self.text(16, (TOP + BOTTOM) / 2, ylabel, extra=f' transform="rotate(-90 16 {_f((TOP + BOTTOM) / 2)})"')

    def clipped(self, body: str) -> str:
        return f'<g clip-path="url(#{_esc(self.prefix)}-plot)">{body}</g>'

    def line(self, points: Sequence[Point], colour: str, width: float, *, dash: str = "") -> None:
        d = "M" + "L".join(f"{_f(self.x(px))} {_f(self.y(py))}" for px, py in points)
        dashed = f' stroke-dasharray="{dash}"' if dash else ""
        self.parts.append(
            self.clipped(
                f'<path d="{d}" stroke="{colour}" stroke-width="{_f(width)}" fill="none"'
                f' stroke-linejoin="round"{dashed}/>'
            )
        )

    def dots(self, points: Sequence[Point], colour: str, radii: Sequence[float]) -> None:
        circles = "".join(
            f'<circle cx="{_f(self.x(px))}" cy="{_f(self.y(py))}" r="{_f(r)}"/>'
            for (px, py), r in zip(points, radii, strict=True)
        )
        self.parts.append(self.clipped(f'<g fill="{colour}">{circles}</g>'))

    def bars(self, xs: Sequence[float], heights: Sequence[float], colours: Sequence[str], width: float) -> None:
        rects = []
        for xv, h, colour in zip(xs, heights, colours, strict=True):
            left, right = self.x(xv - width / 2), self.x(xv + width / 2)
            top, base = self.y(max(h, 0.0)), self.y(min(h, 0.0))
            rects.append(
                f'<rect x="{_f(left)}" y="{_f(top)}" width="{_f(right - left)}" height="{_f(base - top)}"'
                f' fill="{colour}"/>'
            )
        self.parts.append(self.clipped("".join(rects)))

    def legend(self, entries: Sequence[tuple[str, str, str]], corner: str) -> None:
        """Entries of (label, colour, kind: 'line', 'dash', 'dot' or 'box') stacked in a corner of the plot area."""
        x0, y0, _, _ = _legend_box(entries, corner)
        for i, (label, colour, kind) in enumerate(entries):
            ym = y0 + 16 * i + 8
            if kind == "box":
                self.parts.append(f'<rect x="{_f(x0 + 4)}" y="{_f(ym - 5)}" width="14" height="10" fill="{colour}"/>')
            else:
                dash = ' stroke-dasharray="4 3"' if kind == "dash" else ""
                self.parts.append(
                    f'<path d="M{_f(x0)} {_f(ym)}h22" stroke="{colour}" stroke-width="1.5"{dash}/>'
                    + (f'<circle cx="{_f(x0 + 11)}" cy="{_f(ym)}" r="2.5" fill="{colour}"/>' if kind == "dot" else "")
                )
            self.text(x0 + 28, ym + 4, label, anchor="start", size=11)

    def svg(self) -> str:
        p = _esc(self.prefix)
        return (
            f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" width="100%"'
            f' role="img" aria-labelledby="{p}-title" fill="{INK}">'
            f'<title id="{p}-title">{_esc(self.title)}</title>'
            f'<defs><clipPath id="{p}-plot"><rect x="{_f(LEFT)}" y="{_f(TOP)}" width="{_f(RIGHT - LEFT)}"'
            f' height="{_f(BOTTOM - TOP)}"/></clipPath></defs>' + "".join(self.parts) + "</svg>"
        )


def _legend_box(entries: Sequence[tuple[str, str, str]], corner: str) -> tuple[float, float, float, float]:
    """Where a legend goes: x, y, width, height (the width from a generous estimate of the text's)."""
    width = max(len(label) for label, _, _ in entries) * 6.2 + 34
    height = 16.0 * len(entries)
    x0 = LEFT + 10 if corner.endswith("left") else RIGHT - 10 - width
    y0 = TOP + 8 if corner.startswith("upper") else BOTTOM - 8 - height
    return x0, y0, width, height


def _best_corner(plot: _Plot, entries: Sequence[tuple[str, str, str]], lines: Sequence[Sequence[Point]]) -> str:
    """The corner of the plot area where the legend hides the least of the lines (ties: upper left first)."""
    samples = [
        (plot.x(a[0] + (b[0] - a[0]) * t / 8), plot.y(a[1] + (b[1] - a[1]) * t / 8))
        for line in lines
        for a, b in zip(line, line[1:] or line, strict=False)
        for t in range(8)
    ]

    def hidden(corner: str) -> int:
        x0, y0, w, h = _legend_box(entries, corner)
        return sum(1 for sx, sy in samples if x0 - 4 <= sx <= x0 + w + 4 and y0 - 4 <= sy <= y0 + h + 4)

    return min(("upper left", "upper right", "lower left", "lower right"), key=hidden)


def _points(xs: Iterable[Any], ys: Iterable[Any]) -> list[Point]:
    """Pairs of finite numbers (a null mean is left out rather than drawn at zero)."""
    return [
        (float(a), float(b))
        for a, b in zip(xs, ys, strict=True)
        if a is not None and b is not None and math.isfinite(a) and math.isfinite(b)
    ]


# ---------------------------------------------------------------- the four charts


def calibration(player: pl.DataFrame, population: pl.DataFrame, prefix: str, label: str = "this player") -> str | None:
    """Bid against mean tricks won (frames with bid, n, mean_tricks), with the diagonal of perfect bids."""
    if player.is_empty():
        return None
    top = max(int(_num(player["bid"].max())), int(_num(population["bid"].max())) if not population.is_empty() else 0, 1)
    mine = _points(player["bid"], player["mean_tricks"])
    pop = _points(population["bid"], population["mean_tricks"]) if not population.is_empty() else []
    _, yhi = _padded([0.0, float(top)] + [p[1] for p in mine + pop])
    plot = _Plot(prefix, "Calibration: tricks won per bid", (-0.5, top + 0.5), (-0.3, yhi))
    plot.axes(
        nice_ticks(-0.5, top + 0.5, integer=True, max_ticks=14),
        nice_ticks(-0.3, yhi, max_ticks=7),
        "bid (pass = 0); dot size = number of bids",
        "mean tricks won",
        xgrid=True,
    )
    plot.line([(0.0, 0.0), (float(top), float(top))], MUTED, 1, dash="4 3")
    legend = [("bid = tricks", MUTED, "dash")]
    if pop:
        plot.line(pop, MUTED, 1)
        plot.dots(pop, MUTED, [2.0] * len(pop))
        legend.append(("all players", MUTED, "dot"))
    plot.line(mine, ACCENT, 1.5)
    # Dot area grows with the root of the number of bids, capped: 12 + 6 * sqrt(n) square points (1 pt = 100/72 units).
    sizes = [(p, math.sqrt(min(120.0, 12.0 + 6.0 * math.sqrt(float(n)))) * 50 / 72) for p, n in _with_n(player)]
    plot.dots([p for p, _ in sizes], ACCENT, [r for _, r in sizes])
    legend.append((label, ACCENT, "dot"))
    plot.legend(legend, "upper left")
    return plot.svg()


def _with_n(frame: pl.DataFrame) -> list[tuple[Point, int]]:
    """The (bid, mean_tricks) points of a calibration frame with their number of bids."""
    rows = zip(frame["bid"], frame["mean_tricks"], frame["n"], strict=True)
    return [((float(b), float(t)), int(n)) for b, t, n in rows if b is not None and t is not None and n is not None]


def error_histogram(errors: pl.DataFrame, prefix: str, title: str = "Bid error (tricks won \u2212 bid)") -> str | None:
    """Bars of how many bids had each error (frame with error, n)."""
    if errors.is_empty():
        return None
    bars = [(float(e), float(n)) for e, n in zip(errors["error"], errors["n"], strict=True) if e is not None and n]
    lo, hi = int(_num(errors["error"].min())), int(_num(errors["error"].max()))
    xlim = (min(lo, -2) - 0.6, max(hi, 2) + 0.6)
    ytop = max((n for _, n in bars), default=1.0) * 1.05
    plot = _Plot(prefix, title, xlim, (0.0, ytop))
    plot.axes(
        nice_ticks(*xlim, integer=True, max_ticks=14),
        nice_ticks(0.0, ytop, integer=True, max_ticks=7),
        "error: < 0 under-won (set), > 0 over-won",
        "bids",
        xgrid=False,
    )
    colours = [GOOD if e == 0 else (ACCENT if e > 0 else BAD) for e, _ in bars]
    plot.bars([e for e, _ in bars], [n for _, n in bars], colours, 0.8)
    return plot.svg()


def board_success(by_hand: pl.DataFrame, prefix: str) -> str | None:
    """Boards claimed and made per hand size (frame with hand_size, claimed, made)."""
    if by_hand.is_empty():
        return None
    rows = [
        (float(h), int(c), int(k))
        for h, c, k in zip(by_hand["hand_size"], by_hand["claimed"], by_hand["made"], strict=True)
        if h is not None and c is not None and k is not None
    ]
    ytop = max((c for _, c, _ in rows), default=1) * 1.18 + 0.5
    plot = _Plot(prefix, "Board claims by hand size", (0.3, 13.7), (0.0, ytop))
    plot.axes(
        [float(h) for h in range(1, 14)],
        nice_ticks(0.0, ytop, integer=True, max_ticks=7),
        "hand size (cards)",
        "boards",
        xgrid=False,
    )
    xs = [h for h, _, _ in rows]
    plot.bars(xs, [float(c) for _, c, _ in rows], [MUTED] * len(rows), 0.8)
    plot.bars(xs, [float(k) for _, _, k in rows], [GOOD] * len(rows), 0.5)
    for h, c, k in rows:  # counts, so 1 of 1 reads as such; rates when large
        text = f"{k}/{c}" if c < 100 else f"{100 * k / c:.0f}%"
        plot.text(plot.x(h), plot.y(c) - 4, text, size=10)
    plot.legend([("claimed", MUTED, "box"), ("made", GOOD, "box")], "upper right")
    return plot.svg()


def score_over_games(scores: pl.DataFrame, prefix: str) -> str | None:
    """The team's final score game after game (frame with first_game, last_game, games, score, opp_score)."""
    if scores.is_empty():
        return None
    bucketed = int(_num(scores["games"].max()) or 1) > 1
    x = ((scores["first_game"] + scores["last_game"]) / 2).to_list()
    mine, opp = _points(x, scores["score"]), _points(x, scores["opp_score"])
    xlim = (0.5, max(_num(scores["last_game"].max()), 2.0) + 0.5)
    ylim = _padded([0.0] + [p[1] for p in mine + opp])
    title = "Final score, game by game" + (" (bucket means)" if bucketed else "")
    plot = _games_plot(prefix, title, xlim, ylim, "team's final score")
    marked = len(x) <= 60
    plot.line(opp, MUTED, 1)
    plot.line(mine, ACCENT, 1.5)
    if marked:
        plot.dots(opp, MUTED, [2.0] * len(opp))
        plot.dots(mine, ACCENT, [2.4] * len(mine))
    kind = "dot" if marked else "line"
    entries = [("opponents", MUTED, kind), ("player's team", ACCENT, kind)]
    plot.legend(entries, _best_corner(plot, entries, [mine, opp]))
    return plot.svg()


def _games_plot(prefix: str, title: str, xlim: tuple[float, float], ylim: tuple[float, float], ylabel: str) -> _Plot:
    """A plot over the games in the order played, with its axes and the zero line drawn."""
    plot = _Plot(prefix, title, xlim, ylim)
    plot.axes(
        nice_ticks(*xlim, integer=True, max_ticks=9),
        nice_ticks(*ylim, max_ticks=7),
        "game number (in order played)",
        ylabel,
        xgrid=True,
    )
    plot.line([(xlim[0], 0.0), (xlim[1], 0.0)], MUTED, 0.8)
    return plot


def luck_over_games(games: pl.DataFrame, prefix: str, title: str) -> str | None:
    """The running sums of cards, bidding and play game after game (frame with game, cards, bidding, play)."""
    if games.is_empty():
        return None
    x = games["game"].to_list()
    lines = [
        (name, colour, _points(x, games[name]))
        for name, colour in (("cards", ACCENT), ("bidding", BAD), ("play", GOOD))
    ]
    xlim = (0.5, max(float(max(x)), 2.0) + 0.5)
    ylim = _padded([0.0] + [p[1] for _, _, pts in lines for p in pts])
    plot = _games_plot(prefix, title, xlim, ylim, "points, running sum")
    for _, colour, pts in lines:
        plot.line(pts, colour, 1.5)
    entries = [(name, colour, "line") for name, colour, _ in lines]
    plot.legend(entries, _best_corner(plot, entries, [pts for _, _, pts in lines]))
    return plot.svg()


def win_calibration(bins: Sequence[tuple[float, float, int]], prefix: str, title: str) -> str | None:
    """Predicted chance of winning against the share won, per bin of predictions (predicted, observed, n),
    with the diagonal of perfect calibration."""
    mine = [((p, o), n) for p, o, n in bins if n and math.isfinite(p) and math.isfinite(o)]
    if not mine:
        return None
    plot = _Plot(prefix, title, (-0.02, 1.02), (-0.02, 1.02))
    ticks = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    plot.axes(ticks, ticks, "predicted chance of winning; dot size = predictions", "share won", xgrid=True)
    plot.line([(0.0, 0.0), (1.0, 1.0)], MUTED, 1, dash="4 3")
    plot.line([p for p, _ in mine], ACCENT, 1.5)
    plot.dots(
        [p for p, _ in mine], ACCENT, [math.sqrt(min(120.0, 12.0 + 6.0 * math.sqrt(n))) * 50 / 72 for _, n in mine]
    )
    plot.legend([("predicted = won", MUTED, "dash"), ("the ratings", ACCENT, "dot")], "upper left")
    return plot.svg()

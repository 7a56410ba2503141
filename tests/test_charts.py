"""The hand-written SVG charts: tick choice, no data, prefixed ids, escaping, well-formed XML."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import polars as pl
import pytest

from backalley.reporting import charts

SVG = "{http://www.w3.org/2000/svg}"
HOSTILE = "<script>alert('x')</script> & \"quoted\" 'single'"


def cal(bids: list[int], means: list[float], ns: list[int]) -> pl.DataFrame:
    return pl.DataFrame({"bid": bids, "n": ns, "mean_tricks": means})


PLAYER = cal([0, 1, 2, 3, 5], [0.4, 1.1, 1.8, 2.9, 4.2], [40, 120, 90, 30, 4])
POPULATION = cal([0, 1, 2, 3, 4, 5, 6], [0.3, 1.0, 1.9, 2.8, 3.7, 4.5, 5.1], [4000, 9000, 7000, 3000, 900, 200, 20])
ERRORS = pl.DataFrame({"error": [-3, -1, 0, 1, 2], "n": [5, 40, 1200, 300, 12]})
BOARDS = pl.DataFrame({"hand_size": [3, 7, 13], "claimed": [1, 150, 4], "made": [1, 120, 0]})
SCORES = pl.DataFrame(
    {
        "first_game": [1, 2, 3, 4],
        "last_game": [1, 2, 3, 4],
        "games": [1, 1, 1, 1],
        "score": [120.0, -40.0, 310.0, 55.0],
        "opp_score": [80.0, 200.0, -20.0, 60.0],
    }
)


def all_charts(prefix: str) -> dict[str, str | None]:
    return {
        "calibration": charts.calibration(PLAYER, POPULATION, f"{prefix}-cal"),
        "errors": charts.error_histogram(ERRORS, f"{prefix}-err"),
        "boards": charts.board_success(BOARDS, f"{prefix}-brd"),
        "scores": charts.score_over_games(SCORES, f"{prefix}-scr"),
    }


def parse(svg: str | None) -> ET.Element:
    assert svg is not None
    return ET.fromstring(svg)  # raises on anything that is not well-formed XML


def texts(root: ET.Element) -> list[str]:
    return ["".join(t.itertext()) for t in root.iter(f"{SVG}text")]


@pytest.mark.parametrize(
    ("lo", "hi", "integer", "expected"),
    [
        (-0.3, 13.7, False, [0, 2, 4, 6, 8, 10, 12]),
        (-0.3, 2.2, False, [0, 0.5, 1, 1.5, 2]),
        (0, 1234, True, [0, 200, 400, 600, 800, 1000, 1200]),
        (0, 1.05, True, [0, 1]),
        (-0.6, 2.6, True, [0, 1, 2]),
        (-120, 340, False, [-100, 0, 100, 200, 300]),
        (0, 0.3, False, [0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3]),
        (0.1, 0.9, False, [0.2, 0.4, 0.6, 0.8]),
    ],
)
def test_nice_ticks_are_round_and_inside_the_range(lo: float, hi: float, integer: bool, expected: list[float]) -> None:
    assert charts.nice_ticks(lo, hi, integer=integer) == pytest.approx(expected)


def test_nice_ticks_respect_the_maximum_count() -> None:
    for hi in (3.0, 17.0, 99.0, 1234.5, 987654.0):
        ticks = charts.nice_ticks(0.0, hi, max_ticks=5)
        assert 2 <= len(ticks) <= 5
        assert all(0.0 <= t <= hi for t in ticks)


def test_nice_ticks_with_integer_step_never_give_fractions() -> None:
    assert all(t == int(t) for t in charts.nice_ticks(-0.5, 1.5, integer=True))


def test_tick_labels_use_thousands_separators_decimals_of_the_step_and_a_minus_sign() -> None:
    assert charts.tick_label(12000.0, 2000.0) == "12,000"
    assert charts.tick_label(-50.0, 50.0) == "\u221250"
    assert charts.tick_label(1.5, 0.5) == "1.5"
    assert charts.tick_label(1.0, 0.5) == "1.0"
    assert charts.tick_label(0.25, 0.25) == "0.25"
    assert charts.tick_label(0.05, 0.05) == "0.05"
    assert charts.tick_label(-0.0, 1.0) == "0"


def test_no_data_gives_none() -> None:
    assert charts.calibration(PLAYER.clear(), POPULATION, "x") is None
    assert charts.error_histogram(ERRORS.clear(), "x") is None
    assert charts.board_success(BOARDS.clear(), "x") is None
    assert charts.score_over_games(SCORES.clear(), "x") is None


def test_a_player_without_population_still_gets_a_calibration_chart() -> None:
    root = parse(charts.calibration(PLAYER, PLAYER.clear(), "solo"))
    assert "all players" not in texts(root)


@pytest.mark.parametrize("name", ["calibration", "errors", "boards", "scores"])
def test_each_chart_is_a_scalable_accessible_svg_element(name: str) -> None:
    svg = all_charts("p1")[name]
    assert svg is not None and svg.startswith("<svg ") and svg.endswith("</svg>")
    assert "<?xml" not in svg and "<!DOCTYPE" not in svg
    root = parse(svg)
    assert root.tag == f"{SVG}svg"
    assert root.get("role") == "img" and root.get("width") == "100%" and root.get("viewBox")
    assert root.get("height") is None  # the viewBox keeps the aspect ratio; CSS sets the width
    title = root.find(f"{SVG}title")
    assert title is not None and title.text
    assert root.get("aria-labelledby") == title.get("id")


@pytest.mark.parametrize("name", ["calibration", "errors", "boards", "scores"])
def test_every_id_and_reference_carries_the_prefix(name: str) -> None:
    svg = all_charts("pl-7")[name]
    assert svg is not None
    ids = re.findall(r'\bid="([^"]+)"', svg)
    refs = re.findall(r'url\(#([^)]+)\)|href="#([^"]+)"', svg)
    assert ids, "a chart has a title id at least"
    short = {"calibration": "cal", "errors": "err", "boards": "brd", "scores": "scr"}[name]
    assert all(i.startswith(f"pl-7-{short}-") for i in ids)
    assert all(any(r) and (r[0] or r[1]).startswith("pl-7-") for r in refs)
    assert {r[0] or r[1] for r in refs} <= set(ids)  # no reference to anything outside the chart


def test_charts_with_different_prefixes_share_no_id() -> None:
    a = " ".join(s for s in all_charts("a").values() if s)
    b = " ".join(s for s in all_charts("b").values() if s)
    ids_a, ids_b = set(re.findall(r'\bid="([^"]+)"', a)), set(re.findall(r'\bid="([^"]+)"', b))
    assert len(ids_a) == len(re.findall(r'\bid="', a))  # unique within one page too
    assert not ids_a & ids_b


def test_no_external_reference() -> None:
    for svg in all_charts("p").values():
        assert svg is not None
        assert "http" not in svg.replace('xmlns="http://www.w3.org/2000/svg"', "")
        assert "<image" not in svg and "<script" not in svg and "<style" not in svg


def test_output_is_deterministic() -> None:
    assert all_charts("p") == all_charts("p")


def test_hostile_labels_titles_and_prefixes_are_escaped() -> None:
    svgs = [
        charts.calibration(PLAYER, POPULATION, "cal", label=HOSTILE),
        charts.error_histogram(ERRORS, "err", title=HOSTILE),
        charts.calibration(PLAYER, POPULATION, 'x"><script>y'),
    ]
    for svg in svgs:
        assert svg is not None
        assert "<script" not in svg
        root = parse(svg)
        assert not [e for e in root.iter() if e.tag.endswith("script")]
    assert HOSTILE in texts(parse(svgs[0]))  # shown as text, exactly as given
    err = parse(svgs[1])
    title = err.find(f"{SVG}title")
    assert title is not None and title.text == HOSTILE
    assert "&lt;script&gt;" in str(svgs[0]) and "&amp;" in str(svgs[0]) and "&quot;" in str(svgs[0])


def test_calibration_draws_diagonal_population_player_and_legend() -> None:
    root = parse(all_charts("p")["calibration"])
    words = texts(root)
    assert "Calibration: tricks won per bid" in words
    assert {"bid = tricks", "all players", "this player"} <= set(words)
    assert "mean tricks won" in words and "bid (pass = 0); dot size = number of bids" in words
    assert [w for w in words if w.isdigit()][:7] == ["0", "1", "2", "3", "4", "5", "6"]  # x ticks: every bid
    player_dots = [c for g in root.iter(f"{SVG}g") if g.get("fill") == charts.ACCENT for c in g]
    assert len(player_dots) == PLAYER.height
    radii = [float(c.get("r", "0")) for c in player_dots]
    assert radii[1] > radii[4]  # 120 bids draw a bigger dot than 4


def test_error_histogram_colours_bars_by_sign() -> None:
    root = parse(all_charts("p")["errors"])
    fills = [r.get("fill") for r in root.iter(f"{SVG}rect") if r.get("fill") is not None]
    assert fills == [charts.BAD, charts.BAD, charts.GOOD, charts.ACCENT, charts.ACCENT]
    assert "1,200" in texts(root) or "1,000" in texts(root)  # y ticks with a thousands separator


def test_board_success_annotates_counts_then_rates() -> None:
    words = texts(parse(all_charts("p")["boards"]))
    assert "1/1" in words and "80%" in words and "0/4" in words
    assert [str(h) for h in range(1, 14)] == [w for w in words if w.isdigit() and int(w) <= 13][:13]
    assert {"claimed", "made", "Board claims by hand size"} <= set(words)


def test_score_over_games_titles_buckets_and_marks_short_series() -> None:
    single = parse(all_charts("p")["scores"])
    assert "Final score, game by game" in texts(single)
    assert {"opponents", "player's team"} <= set(texts(single))
    assert len(list(single.iter(f"{SVG}circle"))) >= 8
    many = pl.DataFrame(
        {
            "first_game": list(range(1, 400, 2)),
            "last_game": list(range(2, 401, 2)),
            "games": [2] * 200,
            "score": [float(i % 37 - 10) for i in range(200)],
            "opp_score": [float(i % 23) for i in range(200)],
        }
    )
    bucketed = parse(charts.score_over_games(many, "b"))
    assert "Final score, game by game (bucket means)" in texts(bucketed)
    assert len([c for c in bucketed.iter(f"{SVG}circle") if c.get("r") != "2.5"]) == 0  # lines only past 60 points


def test_null_means_are_left_out_not_drawn_at_zero() -> None:
    scores = SCORES.with_columns(pl.Series("score", [None, 1.0, 2.0, 3.0]))
    root = parse(charts.score_over_games(scores, "n"))
    accent = [c for g in root.iter(f"{SVG}g") if g.get("fill") == charts.ACCENT for c in g]
    assert len(accent) == 3


def test_the_score_legend_goes_where_the_lines_are_not() -> None:
    rising = pl.DataFrame(  # both lines climb from the lower left to the upper right: the upper left is free
        {
            "first_game": [1, 2, 3, 4, 5],
            "last_game": [1, 2, 3, 4, 5],
            "games": [1] * 5,
            "score": [-300.0, -100.0, 0.0, 150.0, 300.0],
            "opp_score": [-280.0, -120.0, 10.0, 140.0, 310.0],
        }
    )
    falling = rising.with_columns(pl.col("score") * -1, pl.col("opp_score") * -1)  # upper left is taken

    def legend_x(svg: str | None) -> float:
        label = next(t for t in parse(svg).iter(f"{SVG}text") if t.text == "opponents")
        return float(label.get("x", "nan"))

    assert legend_x(charts.score_over_games(rising, "r")) < charts.WIDTH / 2
    falling_svg = charts.score_over_games(falling, "f")
    label = next(t for t in parse(falling_svg).iter(f"{SVG}text") if t.text == "opponents")
    assert legend_x(falling_svg) > charts.WIDTH / 2 or float(label.get("y", "0")) > charts.HEIGHT / 2

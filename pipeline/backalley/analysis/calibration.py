"""How well the ratings predict who wins: held-out log-loss against the coin flip and points per deal.

Per ruleset and options and per kind of rating (:func:`backalley.analysis.ratings.kinds`),
the games are split by date (:func:`split`): the ratings are fitted on the games before
the cut, and every pair of sides of each game on or after it is a prediction
(:func:`comparisons`): the chance that side i ends with a higher score than side j,
against what happened (1 won, ½ a tie, 0 lost).  Three predictors:

* **ratings**: ``Φ((M_i − M_j) / √(S_i² + S_j²))``, M a side's summed μ and S² its summed
  σ² + β² (a subject not in the training games has the prior);
* **coin flip**: ½ always;
* **points per deal**: ``1 / (1 + exp(−k·(V_i − V_j)))``, V a side's mean over its subjects of
  their points per deal in the training games (the training mean for a newcomer), and k
  fitted by maximum likelihood on the training games' own pairs of sides (:func:`fit_scale`).

Log-loss is the mean of ``−(y·ln p + (1 − y)·ln(1 − p))`` (p kept within
:data:`CLIP` of 0 and 1); lower is better, the coin flip's is ln 2 ≈ 0.693.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import date

import duckdb
import polars as pl

from backalley.analysis.ledger import luck_ledger
from backalley.analysis.ratings import BETA, PRIOR_MU, PRIOR_SIGMA, Result, fit, kinds, pair_name, read_results, times

#: The share of the games (in the order played) before the cut; the cut moves to the first game of its day.
TRAIN_SHARE = 0.75
#: Fewest games on each side of the cut for a calibration.
MIN_GAMES = 4
#: Bins of the calibration chart (predicted chance of winning, 0 to 1).
BINS = 10
#: Predictions are kept within this of 0 and 1 (a log-loss stays finite).
CLIP = 1e-6
#: Bounds of the points-per-deal scale's fit: Newton steps, and the largest scale (per point of difference).
NEWTON_STEPS = 25
MAX_SCALE = 10.0

PREDICTORS = ("ratings", "coin flip", "points per deal")

#: (side i, side j, outcome for i: 1 won, 0.5 tie, 0 lost)
Pairing = tuple[tuple[str, ...], tuple[str, ...], float]


@dataclass(frozen=True, slots=True)
class Bin:
    """One bin of the calibration chart: the mean predicted chance, the share won, and how many predictions."""

    predicted: float
    observed: float
    n: int


@dataclass(frozen=True, slots=True)
class Calibration:
    ruleset: str
    options: str
    kind: str
    #: The first day of the held-out games (None: the games have no dates; split in the order stored).
    cut: date | None
    train_games: int
    test_games: int
    #: The held-out pairs of sides predicted.
    pairings: int
    #: Each predictor's held-out log-loss (:data:`PREDICTORS`).
    log_loss: dict[str, float]
    #: The ratings' predictions in :data:`BINS` bins, each pair of sides counted from both sides.
    bins: tuple[Bin, ...]


def split(results: list[Result]) -> tuple[list[Result], list[Result], int | None]:
    """The games before the cut, those on or after it, and the cut's day (an ordinal).

    The cut is the day of the game at :data:`TRAIN_SHARE` of the history; when every
    game before it is on that day too, the history is split at that game instead
    (day None)."""
    at = min(len(results) - 1, math.ceil(TRAIN_SHARE * len(results)))
    if at <= 0:
        return results, [], None
    days = times(results)
    first = days.index(days[at])
    if first == 0 or all(r.day is None for r in results):
        return results[:at], results[at:], None
    return results[:first], results[first:], days[at]


def pairings(result: Result, pairs: bool) -> list[Pairing]:
    """Every pair of sides of one game, as subjects (a partnership, or its players) and the outcome for the first."""
    teams = [(pair_name(t),) if pairs else t for t in result.teams]
    out = []
    for i in range(len(teams)):
        for j in range(i + 1, len(teams)):
            a, b = result.scores[i], result.scores[j]
            out.append((teams[i], teams[j], 1.0 if a > b else 0.5 if a == b else 0.0))
    return out


def rating_chance(ratings: dict[str, tuple[float, float]]) -> Callable[[Pairing], float]:
    """P(side i beats side j) from fitted (μ, σ): the normal chance of the difference of performances."""

    def side(subjects: tuple[str, ...]) -> tuple[float, float]:
        got = [ratings.get(s, (PRIOR_MU, PRIOR_SIGMA)) for s in subjects]
        return sum(m for m, _ in got), sum(sd * sd + BETA * BETA for _, sd in got)

    def chance(p: Pairing) -> float:
        (mi, vi), (mj, vj) = side(p[0]), side(p[1])
        return 0.5 * math.erfc(-(mi - mj) / math.sqrt(2 * (vi + vj)))

    return chance


def points_per_deal(results: list[Result], pairs: bool) -> dict[str, float]:
    """Each subject's points per deal over ``results`` (a side's score over the game's scored deals)."""
    points: dict[str, float] = defaultdict(float)
    deals: dict[str, int] = defaultdict(int)
    for r in results:
        for team, score in zip(r.teams, r.scores, strict=True):
            for s in (pair_name(team),) if pairs else team:
                points[s] += score
                deals[s] += r.deals
    return {s: points[s] / deals[s] for s in points if deals[s]}


def _logistic(x: float) -> float:
    return 1 / (1 + math.exp(-x)) if x >= 0 else math.exp(x) / (1 + math.exp(x))


def fit_scale(diffs: Sequence[float], outcomes: Sequence[float]) -> float:
    """The k ≥ 0 that maximises the likelihood of ``outcomes`` under ``logistic(k·diff)`` (Newton's method,
    at most :data:`NEWTON_STEPS` steps, k within :data:`MAX_SCALE`)."""
    k = 0.0
    for _ in range(NEWTON_STEPS):
        ps = [_logistic(k * x) for x in diffs]
        grad = sum((y - p) * x for x, y, p in zip(diffs, outcomes, ps, strict=True))
        curve = sum(p * (1 - p) * x * x for x, p in zip(diffs, ps, strict=True))
        if curve <= 0:
            break
        step = grad / curve
        k = min(MAX_SCALE, max(0.0, k + step))
        if abs(step) < 1e-9:
            break
    return k


def ppd_chance(train: list[Result], pairs: bool) -> Callable[[Pairing], float]:
    """P(side i beats side j) from the subjects' points per deal in ``train`` (scale fitted on ``train``)."""
    ppd = points_per_deal(train, pairs)
    mean = sum(ppd.values()) / len(ppd) if ppd else 0.0

    def value(subjects: tuple[str, ...]) -> float:
        return sum(ppd.get(s, mean) for s in subjects) / len(subjects)

    seen = [p for r in train for p in pairings(r, pairs)]
    k = fit_scale([value(p[0]) - value(p[1]) for p in seen], [p[2] for p in seen])
    return lambda p: _logistic(k * (value(p[0]) - value(p[1])))


def log_loss(chances: Sequence[float], outcomes: Sequence[float]) -> float:
    """The mean of ``−(y·ln p + (1 − y)·ln(1 − p))`` (p clipped to [:data:`CLIP`, 1 − :data:`CLIP`])."""
    total = 0.0
    for p, y in zip(chances, outcomes, strict=True):
        q = min(1 - CLIP, max(CLIP, p))
        total -= y * math.log(q) + (1 - y) * math.log(1 - q)
    return total / len(chances)


def bins(chances: Sequence[float], outcomes: Sequence[float]) -> tuple[Bin, ...]:
    """The calibration chart's bins, each prediction counted from both sides (p, y) and (1 − p, 1 − y)."""
    sums: dict[int, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for p, y in zip(chances, outcomes, strict=True):
        for q, w in ((p, y), (1 - p, 1 - y)):
            b = sums[min(BINS - 1, int(q * BINS))]
            b[0], b[1], b[2] = b[0] + q, b[1] + w, b[2] + 1
    return tuple(Bin(s[0] / s[2], s[1] / s[2], int(s[2])) for _, s in sorted(sums.items()))


def calibrate(ruleset: str, options: str, results: list[Result]) -> list[Calibration]:
    """Each kind of rating's held-out calibration for one ruleset and options (none with too few games)."""
    train, test, cut = split(results)
    if len(train) < MIN_GAMES or len(test) < MIN_GAMES:
        return []
    out = []
    for kind, pairs in kinds(results):
        held = [p for r in test for p in pairings(r, pairs)]
        outcomes = [p[2] for p in held]
        by_rating, by_ppd = rating_chance(fit(train, pairs)), ppd_chance(train, pairs)
        rated = [by_rating(p) for p in held]
        chances = (rated, [0.5] * len(held), [by_ppd(p) for p in held])
        losses = {name: log_loss(c, outcomes) for name, c in zip(PREDICTORS, chances, strict=True)}
        when = date.fromordinal(cut) if cut else None
        sizes = (len(train), len(test), len(held))
        out.append(Calibration(ruleset, options, kind, when, *sizes, losses, bins(rated, outcomes)))
    return out


# ---------------------------------------------------------------- the observation: result or luck-adjusted margin


def luck_margins(con: duckdb.DuckDBPyConnection) -> dict[str, dict[str, float]]:
    """Per game, each side's luck-adjusted points (points − cards, :mod:`backalley.analysis.ledger`) summed over
    its analysed deals."""
    ledger = luck_ledger(con).unique(["game_id", "deal", "side"])
    sums = ledger.group_by(["game_id", "side"]).agg((pl.col("actual") - pl.col("cards")).sum().alias("margin"))
    out: dict[str, dict[str, float]] = defaultdict(dict)
    for game_id, side, margin in sums.iter_rows():
        out[str(game_id)][str(side)] = float(margin)
    return dict(out)


def by_margin(results: list[Result], margins: dict[str, dict[str, float]]) -> list[Result]:
    """The games every side of which has a margin, each side's score replaced by it."""
    out = []
    for r in results:
        got = margins.get(r.game_id, {})
        if r.sides and all(s in got for s in r.sides):
            out.append(replace(r, scores=tuple(got[s] for s in r.sides)))
    return out


@dataclass(frozen=True, slots=True)
class Observed:
    """The held-out log-loss of ratings fitted on the game results, and on the luck-adjusted margins, of the
    same games before the cut (both predicting the results after it)."""

    ruleset: str
    options: str
    kind: str
    train_games: int
    test_games: int
    pairings: int
    result: float
    margin: float


def compare_observations(
    ruleset: str, options: str, results: list[Result], margins: dict[str, dict[str, float]]
) -> list[Observed]:
    """Result against luck-adjusted margin as the ratings' observation, on the games with a margin for every side."""
    kept = [r for r in results if by_margin([r], margins)]
    train, test, _ = split(kept)
    if len(train) < MIN_GAMES or len(test) < MIN_GAMES:
        return []
    adjusted = by_margin(train, margins)
    out = []
    for kind, pairs in kinds(kept):
        held = [p for r in test for p in pairings(r, pairs)]
        outcomes = [p[2] for p in held]
        chances = [rating_chance(fit(t, pairs)) for t in (train, adjusted)]
        losses = [log_loss([chance(p) for p in held], outcomes) for chance in chances]
        out.append(Observed(ruleset, options, kind, len(train), len(test), len(held), *losses))
    return out


def store_calibration(con: duckdb.DuckDBPyConnection, latest: int) -> list[Calibration]:
    """Every ruleset's and options' calibration from the store on ``con``, over its ``latest`` games at most."""
    out: list[Calibration] = []
    for (ruleset, options), results in sorted(read_results(con).items()):
        out += calibrate(ruleset, options, results[-latest:])
    return out


__all__ = [
    "BINS",
    "MIN_GAMES",
    "PREDICTORS",
    "TRAIN_SHARE",
    "Bin",
    "Calibration",
    "Observed",
    "bins",
    "by_margin",
    "calibrate",
    "compare_observations",
    "fit_scale",
    "log_loss",
    "luck_margins",
    "pairings",
    "points_per_deal",
    "ppd_chance",
    "rating_chance",
    "split",
    "store_calibration",
]

"""Ratings with uncertainty: TrueSkill Through Time over the store's whole history.

Per ruleset and options (no scale mixes rulesets), two histories are fitted with
``trueskillthroughtime`` (order-independent, smoothed backwards):

* ``pair``: each partnership a unit (its ``subject``: the two player ids in sorted
  order joined by `` & ``), one team of one against the other;
* ``player``: each player on their own, a side's players its team (without
  partnerships, each seat a team of one).

The observation is a valid, complete game's result: each side's final score,
higher better, equal scores a draw.  Time is the day played (games without a
date take the day of the game before them), so skill may drift between days.
A rating whose σ is above :data:`PROVISIONAL_SIGMA` is provisional (shown with
``?``); a player's individual rating is identifiable only with at least
:data:`MIN_PARTNERS` distinct partners.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import trueskillthroughtime as ttt  # type: ignore[import-untyped]

from backalley.rules import PLAIN
from backalley.store.database import Store, StoreError, one_line

#: A rating with a σ above this is provisional (the prior's σ is :data:`PRIOR_SIGMA`).
PROVISIONAL_SIGMA = 2.0
PRIOR_MU, PRIOR_SIGMA, BETA, GAMMA = 0.0, 6.0, 1.0, 0.03
#: Distinct partners a player needs for an identifiable individual rating.
MIN_PARTNERS = 3
#: Bound on the fitting passes (each is one forward and one backward sweep of the history), and the
#: change of every μ and σ under which the fit has converged (ratings are shown to 2 decimals).
ITERATIONS = 10
EPSILON = 1e-3

_GAMES_SQL = """
SELECT g.game_id, g.ruleset, g.options, g.played_at::DATE AS day, g.player_n, g.player_e, g.player_s, g.player_w,
       list(s.side ORDER BY s.side) AS sides, list(s.score ORDER BY s.side) AS scores, g.scored_deals
FROM games g JOIN game_sides s ON s.game_id = g.game_id
WHERE g.valid AND g.complete AND s.score IS NOT NULL AND ($every OR (g.ruleset = $ruleset AND g.options = $options))
GROUP BY ALL
ORDER BY day NULLS LAST, g.game_id
"""


class RatingError(ValueError):
    """A store the ratings cannot read, or games they cannot be fitted to."""


def _trunc(mu: float, sigma: float, margin: float, tie: bool) -> tuple[float, float]:
    """``trueskillthroughtime.trunc`` (the normal truncated to a win's or a draw's interval), kept finite: for a
    draw's narrow interval (a rare draw gives a small margin) its variance factor ``1 − w`` rounds below 0, a
    math domain error in the library; there the truncated normal is the interval's uniform (σ = margin/√3)."""
    v, w = ttt.v_w(mu, sigma, margin, tie)
    spread = 1 - w
    return mu + sigma * v, sigma * math.sqrt(spread) if spread > 0 else margin / math.sqrt(3)


ttt.trunc = _trunc


@dataclass(frozen=True, slots=True)
class Result:
    """One game: each side's players and final score, and the day it was played (an ordinal, or None)."""

    teams: tuple[tuple[str, ...], ...]
    scores: tuple[float, ...]
    day: int | None
    #: The game's scored deals (0 when not known): a side's points per deal is its score over them.
    deals: int = 0
    #: The game's id and its sides' names (as ``game_sides`` has them), in ``teams``' order.
    game_id: str = ""
    sides: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Rating:
    ruleset: str
    options: str
    kind: str
    subject: str
    mu: float
    sigma: float
    games: int
    provisional: bool
    #: Distinct partners (players only; 0 for a pair or without partnerships).
    partners: int = 0

    @property
    def conservative(self) -> float:
        """μ − 3σ: a skill the subject very likely has at least."""
        return self.mu - 3 * self.sigma

    @property
    def identifiable(self) -> bool:
        """A pair always; a player of a partnership game with at least :data:`MIN_PARTNERS` partners."""
        return self.kind == "pair" or self.partners == 0 or self.partners >= MIN_PARTNERS

    def as_dict(self) -> dict[str, Any]:
        """The rating as the API gives it: μ, σ and μ − 3σ only where it is identifiable, else why not."""
        shown = self.identifiable
        return {
            "ruleset": self.ruleset,
            "options": self.options,
            "kind": self.kind,
            "subject": self.subject,
            "mu": self.mu if shown else None,
            "sigma": self.sigma if shown else None,
            "conservative": self.conservative if shown else None,
            "games": self.games,
            "provisional": self.provisional,
            "partners": self.partners,
            "identifiable": shown,
            "why_not": None if shown else f"{self.partners} distinct partners, {MIN_PARTNERS} needed",
        }


_SEAT_SIDE = {"NS": (0, 2), "EW": (1, 3), "N": (0,), "E": (1,), "S": (2,), "W": (3,)}


#: A ruleset and its options (as ``games`` has them): the games one scale of ratings is fitted to.
Group = tuple[str, str]


def read_results(con: duckdb.DuckDBPyConnection, group: Group | None = None) -> dict[Group, list[Result]]:
    """Every valid, complete game's result (only ``group``'s when given), per ruleset and options, in the order
    played."""
    out: dict[Group, list[Result]] = defaultdict(list)
    args = {"every": group is None, "ruleset": group[0] if group else "", "options": group[1] if group else ""}
    for game_id, ruleset, options, day, *rest in con.execute(_GAMES_SQL, args).fetchall():
        names, sides, scores, deals = rest[:4], rest[4], rest[5], rest[6]
        if any(s not in _SEAT_SIDE for s in sides) or any(n is None for n in names):
            raise RatingError(f"a game of {ruleset} has a side or player the ratings cannot read")
        teams = tuple(tuple(str(names[k]) for k in _SEAT_SIDE[s]) for s in sides)
        when = day.toordinal() if day else None
        points = tuple(float(x) for x in scores)
        out[ruleset, options].append(Result(teams, points, when, int(deals or 0), str(game_id), tuple(sides)))
    return dict(out)


def times(results: list[Result]) -> list[int]:
    """Each game's day, a missing one taking the day before it (0 before any)."""
    times, last = [], 0
    for r in results:
        last = r.day if r.day is not None else last
        times.append(last)
    return times


def pair_name(players: tuple[str, ...]) -> str:
    return " & ".join(sorted(players))


def fit(results: list[Result], pairs: bool) -> dict[str, tuple[float, float]]:
    """Each subject's latest (μ, σ) after smoothing the whole history (``pairs``: partnerships as units)."""
    if not results:
        return {}
    if pairs:
        composition = [[[pair_name(t)] for t in r.teams] for r in results]
    else:
        composition = [[list(t) for t in r.teams] for r in results]
    draws = sum(len(set(r.scores)) < len(r.scores) for r in results)
    try:
        history = ttt.History(
            composition,
            results=[list(r.scores) for r in results],
            times=times(results),
            mu=PRIOR_MU,
            sigma=PRIOR_SIGMA,
            beta=BETA,
            gamma=GAMMA,
            p_draw=min(0.5, max(0.001, draws / len(results))) if draws else 0.0,
        )
        history.convergence(epsilon=EPSILON, iterations=ITERATIONS, verbose=False)
    except (ArithmeticError, ValueError) as exc:  # a numeric failure of the library: said, not a traceback
        raise RatingError(f"TrueSkill Through Time could not fit {len(results):,} games: {exc}") from None
    curves: dict[str, Any] = history.learning_curves()
    return {str(k): (float(v[-1][1].mu), float(v[-1][1].sigma)) for k, v in curves.items()}


def _counts(results: list[Result], pairs: bool) -> tuple[dict[str, int], dict[str, set[str]]]:
    games: dict[str, int] = defaultdict(int)
    partners: dict[str, set[str]] = defaultdict(set)
    for r in results:
        for team in r.teams:
            if pairs:
                games[pair_name(team)] += 1
                continue
            for p in team:
                games[p] += 1
                partners[p].update(q for q in team if q != p)
    return games, partners


def kinds(results: list[Result]) -> tuple[tuple[str, bool], ...]:
    """The kinds of rating the games give, each with whether partnerships are its units: pairs and players
    when every side is a partnership, else players only."""
    if results and all(len(t) == 2 for r in results for t in r.teams):
        return (("pair", True), ("player", False))
    return (("player", False),)


def ratings_of(ruleset: str, options: str, results: list[Result]) -> list[Rating]:
    """Pairs (when the games have partnerships) and players of one ruleset and options, best conservative first."""
    out: list[Rating] = []
    for kind, pairs in kinds(results):
        games, partners = _counts(results, pairs)
        for subject, (mu, sigma) in fit(results, pairs).items():
            n = len(partners.get(subject, ()))
            out.append(Rating(ruleset, options, kind, subject, mu, sigma, games[subject], sigma > PROVISIONAL_SIGMA, n))
    return sorted(out, key=lambda r: (r.kind, -r.conservative, r.subject))


def store_ratings(con: duckdb.DuckDBPyConnection) -> list[Rating]:
    """Every ruleset's and options' ratings from the store on ``con``."""
    out: list[Rating] = []
    for (ruleset, options), results in sorted(read_results(con).items()):
        out += ratings_of(ruleset, options, results)
    return out


#: The ``ratings`` table's columns (schema version 9), in :class:`Rating`'s order.
RATING_COLUMNS = ("ruleset", "options", "kind", "subject", "mu", "sigma", "games", "provisional", "partners")


#: The ``ratings`` table's columns as a polars schema.
RATING_SCHEMA: dict[str, Any] = {
    **{c: pl.Utf8 for c in RATING_COLUMNS[:4]},
    **{"mu": pl.Float64, "sigma": pl.Float64, "games": pl.Int64, "provisional": pl.Boolean, "partners": pl.Int64},
}


#: The ``meta`` key of the games the stored ratings were fitted to (:func:`games_stamps`).
STAMP_KEY = "ratings_stamp"

_STAMPS_SQL = "SELECT ruleset, options, count(*), max(ingested_at) FROM games GROUP BY ALL ORDER BY ALL"


def _key(group: Group) -> str:
    return f"{group[0]}|{group[1]}"


def games_stamps(con: duckdb.DuckDBPyConnection) -> dict[Group, str]:
    """What each group's ratings depend on: its stored games' count and latest time of ingest (a game of the
    group stored, replaced or moved to another group changes it)."""
    rows = con.execute(_STAMPS_SQL).fetchall()
    return {(str(r), str(o)): f"{n} games, latest ingested at {t}" for r, o, n, t in rows}


def stamp_text(stamps: dict[Group, str]) -> str:
    """The stamps as the ``meta`` row keeps them: JSON, each group's stamp under ``ruleset|options``."""
    return json.dumps({_key(g): v for g, v in stamps.items()}, sort_keys=True, ensure_ascii=False)


def games_stamp(con: duckdb.DuckDBPyConnection) -> str:
    """The stamp of the games stored now (:func:`games_stamps`), as the ``meta`` row keeps it."""
    return stamp_text(games_stamps(con))


def stored_stamps(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """The stamps the stored ratings were fitted to, per ``ruleset|options`` (empty when none, or in an older
    form: then every group is stale)."""
    got = con.execute("SELECT value FROM meta WHERE key = ?", [STAMP_KEY]).fetchall()
    try:
        stamps = json.loads(got[0][0]) if got else {}
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in stamps.items()} if isinstance(stamps, dict) else {}


@dataclass(frozen=True, slots=True)
class Refit:
    """What a refresh does: the groups to fit again (their games changed), and the stamps to store after it."""

    stale: tuple[Group, ...]
    stamps: dict[Group, str]
    #: The stored rows and stamps are not those of the games now (a group stale or gone), or ``every`` was asked.
    due: bool


def plan_refit(con: duckdb.DuckDBPyConnection, every: bool = False) -> Refit:
    """The groups whose games are not those their ratings were fitted to (``every``: all groups)."""
    now, before = games_stamps(con), ({} if every else stored_stamps(con))
    stale = tuple(g for g, stamp in now.items() if before.get(_key(g)) != stamp)
    return Refit(stale, now, every or bool(stale) or len(before) != len(now))


def ratings_current(con: duckdb.DuckDBPyConnection) -> bool:
    """The stored ratings were fitted to the games stored now (no group stale)."""
    return not plan_refit(con).due


def fit_groups(con: duckdb.DuckDBPyConnection, plan: Refit) -> list[Rating]:
    """The ratings of the plan's stale groups, fitted from the store on ``con``."""
    out: list[Rating] = []
    for group in plan.stale:
        for (ruleset, options), results in read_results(con, group).items():
            out += ratings_of(ruleset, options, results)
    return out


def write_ratings(con: duckdb.DuckDBPyConnection, rows: list[Rating], plan: Refit) -> None:
    """Replace the stale groups' rows by ``rows`` and drop those of groups without games, storing the plan's
    stamps (read before the fit), in one transaction: a reader sees the old or the new; other groups' rows stay."""
    con.begin()
    try:
        for ruleset, options in plan.stale:
            con.execute("DELETE FROM ratings WHERE ruleset = ? AND options = ?", [ruleset, options])
        if plan.stamps:
            kept = [list(g) for g in plan.stamps]
            con.execute("DELETE FROM ratings WHERE NOT list_contains($kept, [ruleset, options])", {"kept": kept})
        else:
            con.execute("DELETE FROM ratings")
        if rows:  # one insert of a frame: executemany took 3.6 s for 10,000 rows, the frame 0.4 s
            values = [tuple(getattr(r, c) for c in RATING_COLUMNS) for r in rows]
            con.register("new_ratings", pl.DataFrame(values, schema=RATING_SCHEMA, orient="row"))
            con.execute(f"INSERT INTO ratings SELECT {', '.join(RATING_COLUMNS)} FROM new_ratings")
            con.unregister("new_ratings")
        con.execute("DELETE FROM meta WHERE key = ?", [STAMP_KEY])
        con.execute("INSERT INTO meta VALUES (?, ?)", [STAMP_KEY, stamp_text(plan.stamps)])
    except BaseException:
        con.rollback()
        raise
    con.commit()


def refresh_ratings(con: duckdb.DuckDBPyConnection) -> list[Rating]:
    """Fit every ruleset's and options' ratings from the store on ``con`` (open for writing) and store them."""
    plan = plan_refit(con, every=True)
    rows = fit_groups(con, plan)
    write_ratings(con, rows, plan)
    return rows


def refresh_if_stale(con: duckdb.DuckDBPyConnection) -> list[Rating] | None:
    """Refit and store the ratings of the groups whose games changed since their fit (:func:`plan_refit`), drop
    those of groups without games, keep the others; the refitted rows, or ``None`` when nothing was stale."""
    plan = plan_refit(con)
    if not plan.due:
        return None
    rows = fit_groups(con, plan)
    write_ratings(con, rows, plan)
    return rows


def stored_ratings(con: duckdb.DuckDBPyConnection) -> list[Rating]:
    """The ``ratings`` table's rows (empty when the store has none, or no such table)."""
    have = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'main' AND table_name = 'ratings'"
    ).fetchall()
    if not have[0][0]:
        return []
    sql = (
        f"SELECT {', '.join(RATING_COLUMNS)} FROM ratings ORDER BY ruleset, options, kind, mu - 3 * sigma DESC, subject"
    )
    return [Rating(*row) for row in con.execute(sql).fetchall()]


def player_ratings(con: duckdb.DuckDBPyConnection, player: str) -> list[Rating]:
    """The stored ratings of ``player``: their own and their partnerships', per ruleset and options."""
    sql = (
        f"SELECT {', '.join(RATING_COLUMNS)} FROM ratings WHERE (kind = 'player' AND subject = $p)"
        " OR (kind = 'pair' AND list_contains(string_split(subject, ' & '), $p))"
        " ORDER BY ruleset <> $plain, ruleset, options, kind DESC, mu - 3 * sigma DESC, subject"
    )
    return [Rating(*row) for row in con.execute(sql, {"p": player, "plain": PLAIN.name}).fetchall()]


def rating_text(r: Rating) -> str:
    """``μ 3.20 ± σ 1.10, conservative −0.10`` (``?`` after a provisional one)."""
    mark = " ?" if r.provisional else ""
    return f"{r.mu:.2f} ± {r.sigma:.2f} (μ − 3σ {r.conservative:.2f}){mark}"


def _line(r: Rating) -> str:
    if not r.identifiable:
        return f"  {r.subject}: not identifiable ({r.partners} partner{'s' if r.partners != 1 else ''}; {MIN_PARTNERS} needed)"
    return f"  {r.subject}: {rating_text(r)}, {r.games:,} game{'s' if r.games != 1 else ''}"


def ratings_lines(db: Path) -> list[str]:
    """``backalley ratings``: refresh the store's ``ratings`` and list every ruleset's pairs and players, best
    conservative rating first."""
    if not db.is_file():
        raise RatingError(f"no database at {db}")
    try:
        with Store.open(db) as store:
            rows = refresh_ratings(store.con)
    except StoreError as exc:
        raise RatingError(str(exc)) from None
    except duckdb.Error as exc:
        raise RatingError(f"{db}: {one_line(exc)}") from None
    return rating_lines(rows)


def rating_lines(rows: list[Rating]) -> list[str]:
    """The ratings as ``backalley ratings`` prints them: a heading per ruleset, options and kind."""
    lines: list[str] = []
    seen: tuple[str, str, str] | None = None
    for r in rows:
        if (r.ruleset, r.options, r.kind) != seen:
            seen = (r.ruleset, r.options, r.kind)
            label = "+".join([r.ruleset, *[o for o in r.options.split(",") if o]])
            lines.append(f"{label}: {'partnerships' if r.kind == 'pair' else 'players'} (μ ± σ; ? provisional)")
        lines.append(_line(r))
    return lines or ["no complete valid games to rate"]


__all__ = [
    "MIN_PARTNERS",
    "PROVISIONAL_SIGMA",
    "RATING_COLUMNS",
    "RATING_SCHEMA",
    "Group",
    "Rating",
    "RatingError",
    "Refit",
    "Result",
    "fit",
    "fit_groups",
    "games_stamp",
    "games_stamps",
    "kinds",
    "pair_name",
    "plan_refit",
    "player_ratings",
    "rating_lines",
    "rating_text",
    "ratings_current",
    "ratings_lines",
    "ratings_of",
    "read_results",
    "refresh_if_stale",
    "refresh_ratings",
    "stamp_text",
    "store_ratings",
    "stored_ratings",
    "stored_stamps",
    "times",
    "write_ratings",
]

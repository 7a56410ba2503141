"""The luck ledger: a side's result in a deal split into the cards, the bidding and the play.

For a side S of an analysed deal (``dd_deal_sides``: DD, the tricks S takes
double dummy), with its contract C, its tricks T and its points (``deal_sides``):

* **par** = the best score S could bid for knowing DD (:func:`backalley.rules.par.par`),
  plus any bonus the deal's cards gave it (bab-online's rainbows: points − score(C, T));
* **expected par** = the mean par of the same ruleset and options, hand size and
  position relative to the dealer over the analysed deals read; a group of fewer
  than :data:`MIN_EXPECTED` deals falls back to the mean over every position;
* **cards** = par − expected par; **bidding** = score(C, DD) − par (≤ 0);
  **play** = actual − score(C, DD) − bonus, split into **play_own** =
  score(C, DD − own) − score(C, DD) (the side's own card costs in ``dd_plays``) and
  **play_opponents** = the rest (what the other players' plays changed);

so that ``actual − expected par = cards + bidding + play`` exactly, for every row.
Score-sheet games (no cards) and unanalysed deals are left out; :func:`sheet_games`
counts the sheets.  :func:`luck_figures` averages the parts per deal for each player
and partnership, each mean with a 95% interval that counts a game's deals together
(the deals of one game share players and a score): a percentile bootstrap by game
(:func:`bootstrap_bounds`), and the analytic cluster half-width beside it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import duckdb
import numpy as np
import polars as pl

from backalley.cards import SEATS
from backalley.rules import Contract, Ruleset, RulesetError, find_ruleset
from backalley.rules.par import par as par_score

#: Fewest deals an (ruleset, options, hand size, position) group needs for its own expected par.
MIN_EXPECTED = 30

#: The ledger's columns, one row per player of a side of an analysed deal.
LEDGER_COLUMNS = (
    "game_id",
    "deal",
    "side",
    "seat",
    "player",
    "ruleset",
    "options",
    "hand_size",
    "position",
    "actual",
    "par",
    "expected_par",
    "expected_count",
    "cards",
    "bidding",
    "play",
    "play_own",
    "play_opponents",
)

#: Each column's type (the figures in points; expected_par and cards are means, so floats).
LEDGER_SCHEMA: dict[str, Any] = {
    c: pl.Utf8
    if c in ("game_id", "side", "seat", "player", "ruleset", "options")
    else pl.Float64
    if c in ("expected_par", "cards")
    else pl.Int64
    for c in LEDGER_COLUMNS
}

_SIDES_SQL = """
SELECT x.game_id, x.deal, x.side, x.dd, d.hand_size, d.dealer, g.ruleset, g.options,
       s.contract_kind, s.contract, s.multiplier, s.tricks, s.points,
       g.player_n, g.player_e, g.player_s, g.player_w
FROM dd_deal_sides x
JOIN dd_deals a ON a.game_id = x.game_id AND a.deal = x.deal AND a.analysed
JOIN deal_sides s ON s.game_id = x.game_id AND s.deal = x.deal AND s.side = x.side
JOIN deals d ON d.game_id = x.game_id AND d.deal = x.deal
JOIN games g ON g.game_id = x.game_id
WHERE g.valid AND NOT coalesce(g.sheet, false) AND s.points IS NOT NULL
ORDER BY x.game_id, x.deal, x.side
"""
_COSTS_SQL = "SELECT game_id, deal, seat, sum(cost) FROM dd_plays GROUP BY ALL"


class LedgerError(ValueError):
    """A stored row the ledger cannot read (an unknown ruleset, a contract its ruleset cannot hold)."""


def stored_contract(rules: Ruleset, kind: str | None, value: int | None, mult: int | None) -> Contract:
    """The :class:`Contract` behind a ``deal_sides`` row (the inverse of the store's encoding)."""
    if kind in (None, "none"):
        return Contract(False, 0, 0)
    if value is None:
        raise LedgerError(f"a {kind} contract without a value")
    if kind == "board" and not rules.levelled_boards:
        return Contract(True, int(mult or 1))  # a board claim's value is its multiplier
    if kind in ("board", "number", "declaration"):
        return Contract(kind == "board", int(value), int(1 if mult is None else mult))
    raise LedgerError(f"unknown contract kind {kind!r}")


@dataclass(frozen=True, slots=True)
class SideLedger:
    """One side of one analysed deal: the ledger's figures before the expected par."""

    game_id: str
    deal: int
    side: str
    seats: tuple[int, ...]
    players: tuple[str, ...]
    ruleset: str
    options: str
    hand_size: int
    position: int
    actual: int
    par: int
    at_dd: int
    play_own: int

    @property
    def group(self) -> tuple[str, str, int, int]:
        return (self.ruleset, self.options, self.hand_size, self.position)


@lru_cache(maxsize=256)
def _ruleset(name: str, options: str) -> Ruleset:
    try:
        return find_ruleset(name, tuple(o for o in options.split(",") if o))
    except RulesetError as exc:
        raise LedgerError(str(exc)) from None


def position(seats: tuple[int, ...], dealer: int) -> int:
    """A side's position relative to the dealer: its seat nearest the dealer's left (1) … the dealer (4)."""
    return min((s - dealer - 1) % 4 for s in seats) + 1


@lru_cache(maxsize=1024)
def side_seats(name: str, options: str, side: str) -> tuple[int, tuple[int, ...]]:
    """The side's index in its ruleset and its seats."""
    rules = _ruleset(name, options)
    if side not in rules.sides:
        raise LedgerError(f"no side {side!r} in {rules.label()}")
    index = rules.sides.index(side)
    return index, tuple(s for s in range(4) if rules.side_of[s] == index)


def side_ledger(row: tuple[Any, ...], own_cost: int) -> SideLedger:
    """The figures of one row of the side query (see :data:`_SIDES_SQL`)."""
    game_id, deal, side, dd, n, dealer, name, options, kind, value, mult, tricks, points, *names = row
    rules = _ruleset(name, options)
    index, seats = side_seats(name, options, side)
    contract = stored_contract(rules, kind, value, mult)
    bonus = points - rules.score(contract, tricks, n)
    at_dd = rules.score(contract, dd, n)
    own = rules.score(contract, min(n, max(0, dd - own_cost)), n)
    return SideLedger(
        game_id,
        deal,
        side,
        seats,
        tuple(str(names[s]) for s in seats),
        name,
        options,
        n,
        position(seats, SEATS.index(dealer)),
        int(points),
        par_score(rules, dd, n, index) + bonus,
        at_dd + bonus,
        own - at_dd,
    )


def read_sides(con: duckdb.DuckDBPyConnection) -> list[SideLedger]:
    """Every side of every analysed deal of the store's valid, played (not score-sheet) games."""
    costs: dict[tuple[str, int, str], int] = {(g, d, s): int(c) for g, d, s, c in con.execute(_COSTS_SQL).fetchall()}
    out = []
    for row in con.execute(_SIDES_SQL).fetchall():
        _, seats = side_seats(row[6], row[7], row[2])
        own = sum(costs.get((row[0], row[1], SEATS[s]), 0) for s in seats)
        out.append(side_ledger(row, own))
    return out


def expected_pars(sides: list[SideLedger]) -> dict[tuple[str, str, int, int], tuple[float, int]]:
    """Each group's expected par and the count it is the mean of (the fallback applied)."""
    by_group: dict[tuple[str, str, int, int], list[int]] = defaultdict(list)
    pooled: dict[tuple[str, str, int], list[int]] = defaultdict(list)
    for s in sides:
        by_group[s.group].append(s.par)
        pooled[s.group[:3]].append(s.par)
    out = {}
    for key, pars in by_group.items():
        use = pars if len(pars) >= MIN_EXPECTED else pooled[key[:3]]
        out[key] = (sum(use) / len(use), len(use))
    return out


def ledger_frame(sides: list[SideLedger]) -> pl.DataFrame:
    """The ledger, one row per player of each side (:data:`LEDGER_COLUMNS`)."""
    expected = expected_pars(sides)
    rows: list[tuple[Any, ...]] = []
    for s in sides:
        e, count = expected[s.group]
        play = s.actual - s.at_dd
        figures = (s.actual, s.par, e, count, s.par - e, s.at_dd - s.par, play, s.play_own, play - s.play_own)
        for seat, player in zip(s.seats, s.players, strict=True):
            key = (s.game_id, s.deal, s.side, SEATS[seat], player, s.ruleset, s.options, s.hand_size, s.position)
            rows.append(key + figures)
    return pl.DataFrame(rows, schema=LEDGER_SCHEMA, orient="row")


def luck_ledger(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """The luck ledger of the store on ``con`` (:data:`LEDGER_COLUMNS`)."""
    return ledger_frame(read_sides(con))


def sheet_games(con: duckdb.DuckDBPyConnection) -> int:
    """How many valid score-sheet games the ledger leaves out (they hold no cards)."""
    got = con.execute("SELECT count(*) FROM games WHERE valid AND coalesce(sheet, false)").fetchall()
    return int(got[0][0])


# ---------------------------------------------------------------- means per player and partnership

#: The parts averaged per deal; ``adjusted`` is the luck-adjusted points (actual − cards).
PARTS = ("actual", "cards", "bidding", "play", "play_own", "play_opponents", "adjusted")
#: The normal quantile of a 95% interval.
Z95 = 1.959963984540054


#: The bootstrap's resamples of a group's games, its seed (the same figures give the same bounds), the bound
#: on resamples × games a group may cost (a group of more games gets fewer resamples: 500 for 10,000 games),
#: and the fewest resamples a group gets whatever its games.
BOOTSTRAP, BOOTSTRAP_SEED, BOOTSTRAP_CAP, BOOTSTRAP_MIN = 1000, 20_240_601, 5_000_000, 200
#: Resamples × games drawn at a time (the memory a group's bootstrap holds: a few arrays of as many numbers).
BOOTSTRAP_BLOCK = 250_000


def resamples(games: int) -> int:
    """How many resamples a group of ``games`` games gets (:data:`BOOTSTRAP`, fewer past :data:`BOOTSTRAP_CAP`)."""
    return max(BOOTSTRAP_MIN, min(BOOTSTRAP, BOOTSTRAP_CAP // max(games, 1)))


def bootstrap_bounds(sums: np.ndarray[Any, Any], sizes: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """The 2.5% and 97.5% percentiles (rows) of each part's (columns) mean per deal over resamples of the games:
    ``sums`` is games × parts (each game's part sums S_g), ``sizes`` each game's deals n_g; a resample draws G
    games with replacement and its mean is ΣS / Σn. NaN with fewer than 2 games."""
    games = len(sizes)
    if games < 2:
        return np.full((2, sums.shape[1]), np.nan)
    rng, b = np.random.default_rng(BOOTSTRAP_SEED), resamples(games)
    step = max(1, BOOTSTRAP_BLOCK // games)
    means = np.concatenate([_resampled_means(rng, sums, sizes, min(step, b - k)) for k in range(0, b, step)])
    bounds: np.ndarray[Any, Any] = np.percentile(means, [2.5, 97.5], axis=0)
    return bounds


def _resampled_means(
    rng: np.random.Generator, sums: np.ndarray[Any, Any], sizes: np.ndarray[Any, Any], b: int
) -> np.ndarray[Any, Any]:
    """``b`` resamples' means (rows) of each part: how often each game is drawn, then ΣS / Σn."""
    games = len(sizes)
    draws = rng.integers(0, games, size=(b, games))
    weights = np.bincount((draws + games * np.arange(b)[:, None]).ravel(), minlength=b * games).reshape(b, games)
    means: np.ndarray[Any, Any] = (weights @ sums) / (weights @ sizes)[:, None]
    return means


def _bootstrap(per_game: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """Per ``keys``: each part's bootstrap bounds (``{part}_low``, ``{part}_high``) from the games' sums."""
    ordered = per_game.sort([*keys, "game_id"])
    groups = ordered.group_by(keys, maintain_order=True).agg(pl.len().alias("g"))
    sums, sizes = ordered.select(PARTS).to_numpy().astype(float), ordered["n"].to_numpy().astype(float)
    ends = np.cumsum(groups["g"].to_numpy())
    bounds = [
        bootstrap_bounds(sums[e - g : e], sizes[e - g : e]) for g, e in zip(groups["g"].to_numpy(), ends, strict=True)
    ]
    low = np.array([b[0] for b in bounds]).reshape(len(bounds), len(PARTS))
    high = np.array([b[1] for b in bounds]).reshape(len(bounds), len(PARTS))
    cols = {
        **{f"{p}_low": low[:, k] for k, p in enumerate(PARTS)},
        **{f"{p}_high": high[:, k] for k, p in enumerate(PARTS)},
    }
    return pl.concat([groups.drop("g"), pl.DataFrame(cols).fill_nan(None)], how="horizontal")


def _with_adjusted(ledger: pl.DataFrame) -> pl.DataFrame:
    return ledger.with_columns(adjusted=pl.col("actual") - pl.col("cards"))


def cluster_means(frame: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """Per ``keys``: deals, games, and each part's mean per deal with its 95% interval by game: the bootstrap's
    bounds (``{part}_low``, ``{part}_high``: :func:`bootstrap_bounds`) and the analytic half-width (``{part}_half``).

    The half-width is ``Z95 · √(G/(G−1) · Σ_g (S_g − mean·n_g)²) / N`` over the G games (game g:
    n_g deals, part sum S_g; N deals in all); all null with fewer than 2 games.
    """
    if frame.is_empty():
        return pl.DataFrame(schema={**{k: frame.schema[k] for k in keys}, "deals": pl.Int64, "games": pl.Int64})
    per_game = frame.group_by([*keys, "game_id"]).agg(pl.len().alias("n"), *[pl.col(p).sum() for p in PARTS])
    means = per_game.group_by(keys).agg(
        pl.col("n").sum().cast(pl.Int64).alias("deals"),
        pl.len().cast(pl.Int64).alias("games"),
        *[(pl.col(p).sum() / pl.col("n").sum()).alias(p) for p in PARTS],
    )
    resid = per_game.join(means.select([*keys, *[pl.col(p).alias(f"{p}_mean") for p in PARTS]]), on=keys)
    spread = resid.group_by(keys).agg(
        *[((pl.col(p) - pl.col(f"{p}_mean") * pl.col("n")) ** 2).sum().alias(f"{p}_ss") for p in PARTS]
    )
    out = means.join(spread, on=keys)
    g = pl.col("games").cast(pl.Float64)
    half = [
        pl.when(g >= 2).then(Z95 * (g / (g - 1) * pl.col(f"{p}_ss")).sqrt() / pl.col("deals")).alias(f"{p}_half")
        for p in PARTS
    ]
    return out.with_columns(half).drop([f"{p}_ss" for p in PARTS]).join(_bootstrap(per_game, keys), on=keys).sort(keys)


def pair_rows(ledger: pl.DataFrame) -> pl.DataFrame:
    """One row per side of two players and deal, with ``pair``: the two players in sorted order joined by `` & ``."""
    sides = ledger.group_by(["game_id", "deal", "side"], maintain_order=True).agg(
        pl.col("player").sort().str.join(" & ").alias("pair"),
        pl.len().alias("players"),
        *[pl.col(c).first() for c in ("ruleset", "options", *PARTS)],
    )
    return sides.filter(pl.col("players") == 2).drop("players")


def cumulative_games(ledger: pl.DataFrame, played: pl.DataFrame) -> pl.DataFrame:
    """Per ruleset, options and player, game after game (``played``: game_id, played_at): the running sums
    of cards, bidding and play (``game``: 1, 2, … in the order played, then by game id)."""
    if ledger.is_empty():
        return pl.DataFrame(schema={"ruleset": pl.Utf8, "options": pl.Utf8, "player": pl.Utf8, "game": pl.Int64})
    keys = ["ruleset", "options", "player"]
    per_game = ledger.group_by([*keys, "game_id"]).agg(*[pl.col(p).sum() for p in ("cards", "bidding", "play")])
    ordered = per_game.join(played, on="game_id", how="left").sort([*keys, "played_at", "game_id"], nulls_last=True)
    return ordered.with_columns(
        pl.int_range(1, pl.len() + 1).over(keys).cast(pl.Int64).alias("game"),
        *[pl.col(p).cum_sum().over(keys) for p in ("cards", "bidding", "play")],
    ).drop("played_at")


def luck_figures(
    con: duckdb.DuckDBPyConnection, games: set[str] | None = None, played: pl.DataFrame | None = None
) -> dict[str, Any]:
    """The report's ledger figures: per player, per partnership and for everyone; and the sheets left out.

    ``games`` restricts the averages to those games (the report's scope); the expected
    par is always the whole store's.
    """
    ledger = _with_adjusted(luck_ledger(con))
    if games is not None:
        ledger = ledger.filter(pl.col("game_id").is_in(list(games)))
    everyone = ledger.unique(["game_id", "deal", "side"], keep="first", maintain_order=True)
    if played is None:
        played = pl.DataFrame({"game_id": ledger["game_id"].unique()}).with_columns(played_at=pl.lit(None))
    return {
        "luck_games": cumulative_games(ledger, played),
        "luck_players": cluster_means(ledger, ["ruleset", "options", "player"]),
        "luck_pairs": cluster_means(pair_rows(ledger), ["ruleset", "options", "pair"]),
        "pop_luck": cluster_means(everyone, ["ruleset", "options"]),
        "luck_sheets": sheet_games(con),
    }


__all__ = [
    "BOOTSTRAP",
    "BOOTSTRAP_BLOCK",
    "BOOTSTRAP_CAP",
    "BOOTSTRAP_MIN",
    "BOOTSTRAP_SEED",
    "LEDGER_COLUMNS",
    "LEDGER_SCHEMA",
    "MIN_EXPECTED",
    "PARTS",
    "Z95",
    "LedgerError",
    "SideLedger",
    "bootstrap_bounds",
    "cluster_means",
    "cumulative_games",
    "expected_pars",
    "ledger_frame",
    "luck_figures",
    "luck_ledger",
    "pair_rows",
    "position",
    "read_sides",
    "resamples",
    "sheet_games",
    "side_ledger",
    "side_seats",
    "stored_contract",
]

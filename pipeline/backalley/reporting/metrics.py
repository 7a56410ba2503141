"""The report's figures, computed in DuckDB from the store's tables and views.

Every table is one SQL query over all players at once (never a query per
player); the page writers split the resulting polars frames by player. The
definitions are in ``docs/metrics.md``; the interface read here is fixed in
``docs/contract-views.md`` (tables ``games``, ``violations``, ``rejects`` and the
views ``player_deals``, ``player_summary``).
"""

from __future__ import annotations

import math
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from backalley.analysis.calibration import Calibration, store_calibration
from backalley.analysis.ledger import luck_figures
from backalley.analysis.ratings import RATING_COLUMNS, RATING_SCHEMA, RatingError, stored_ratings
from backalley.reporting.scope import Period
from backalley.rules import PLAIN as PLAIN_RULES
from backalley.rules import RULESETS, Ruleset
from backalley.store.database import StoreError, StoreLockedError, check_readable, connect, one_line

#: At most this many points in a player's score-over-games chart; more games are averaged in buckets.
SCORE_BUCKETS = 200

#: Columns of ``player_deals`` the reports use (copied once into a temporary table).
_PD_COLUMNS = (
    "game_id",
    "event",
    "played_at",
    "deal_number",
    "hand_size",
    "no_trump",
    "player",
    "partner",
    "team",
    "bid_position",
    "bid_kind",
    "bid_value",
    "board_level",
    "tricks_won",
    "team_contract_kind",
    "team_contract",
    "team_board_level",
    "team_tricks",
    "team_points",
    "team_made",
    "opp_contract_kind",
    "opp_board_level",
    "opp_made",
)

BOARD_LEVEL_NAMES = dict(enumerate(Ruleset.board_level_names, 1))


def sql_in(column: str, values: list[str]) -> str:
    """``(column IN ('a', 'b'))`` in SQL, or ``FALSE`` for no value."""
    if not values:
        return "FALSE"
    quoted = ", ".join("'" + v.replace("'", "''") + "'" for v in values)
    return f"({column} IN ({quoted}))"


#: Plain ``standard`` (record format 1's dialect) as the store writes it: the report's main sections
#: are about its games alone.
PLAIN: tuple[str, str] = (PLAIN_RULES.name, ",".join(PLAIN_RULES.options))
#: A stored row of plain ``standard``, in SQL.
PLAIN_SQL = f"ruleset = '{PLAIN[0]}' AND options = '{PLAIN[1]}'"
#: A stored row of a ruleset whose bidding is an auction of declarations (no number to bid exactly; an
#: auction to win), in SQL.
DECLARING_SQL = sql_in("ruleset", [n for n, cls in RULESETS.items() if cls.auction == "declarations"])


def is_plain(ruleset: str | None, options: str) -> bool:
    """Whether a stored ``ruleset`` and ``options`` are plain ``standard``'s."""
    return (ruleset, options) == PLAIN


#: Columns of ``player_deals`` that tell the rulesets apart (store schema 4); a database
#: without them (the contract's minimal shape) holds plain ``standard`` games only.
_RULESET_COLUMNS = {
    "ruleset": f"'{PLAIN[0]}'",
    "options": f"'{PLAIN[1]}'",
    "bid_multiplier": "NULL::INTEGER",
    "leads_first": "NULL::BOOLEAN",
    "rainbow": "NULL::BOOLEAN",
}
#: The rulesets ``report --ruleset`` takes (``backalley.rules``'s registry).
RULESET_NAMES = tuple(RULESETS)


class ReportError(Exception):
    """The database cannot be reported on (missing, not a store, unknown player)."""


class ReportLockedError(ReportError):
    """The database is held by a writer (``ingest``, ``serve``)."""


def wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float] | None:
    """The Wilson score interval (95% by default) for k successes in n trials; None when n = 0."""
    if n <= 0:
        return None
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def mean_interval(
    mean: float | None, sd: float | None, n: int, z: float = 1.959963984540054
) -> tuple[float, float] | None:
    """The normal-approximation interval (95% by default) of a mean: mean ± z·sd/√n; None when n < 2."""
    if mean is None or sd is None or n < 2 or sd != sd:
        return None
    half = z * sd / math.sqrt(n)
    return mean - half, mean + half


@dataclass
class Metrics:
    """All tables of one report. Frames keyed by player hold every player; use :meth:`of`."""

    event: str | None
    population: dict[str, Any]
    players: pl.DataFrame  # player, games_total, games_valid, games_incomplete, games_invalid
    leaderboard: pl.DataFrame
    bids_by_hand: pl.DataFrame
    bids_by_trump: pl.DataFrame
    bids_by_position: pl.DataFrame
    bid_errors: pl.DataFrame
    calibration: pl.DataFrame
    pop_calibration: pl.DataFrame
    pop_errors: pl.DataFrame
    contracts: pl.DataFrame
    partnerships: pl.DataFrame
    boards_by_level: pl.DataFrame
    boards_by_hand: pl.DataFrame
    boards_broken: pl.DataFrame
    scores: pl.DataFrame
    quality_status: pl.DataFrame
    quality_codes: pl.DataFrame
    quality_players: pl.DataFrame
    #: One row per ruleset and options present: ruleset, options, games, valid_games, players, deals.
    rulesets: pl.DataFrame = field(default_factory=pl.DataFrame)
    #: Per ruleset, options and player: the ruleset's own figures (docs/metrics.md, "Rulesets").
    ruleset_players: pl.DataFrame = field(default_factory=pl.DataFrame)
    #: pereulok declarations per ruleset, options, player: by declared tricks and by multiplier.
    declarations: pl.DataFrame = field(default_factory=pl.DataFrame)
    #: Board claims and bores per ruleset, options, player and level (every ruleset but plain standard).
    bores: pl.DataFrame = field(default_factory=pl.DataFrame)
    #: Double-dummy figures of plain standard games (docs/metrics.md), empty when no deal is analysed:
    #: per player (``hand_size`` null = all sizes) and for everyone, bid vs makeable and play accuracy.
    dd_bids: pl.DataFrame = field(default_factory=pl.DataFrame)
    pop_dd_bids: pl.DataFrame = field(default_factory=pl.DataFrame)
    dd_plays: pl.DataFrame = field(default_factory=pl.DataFrame)
    pop_dd_plays: pl.DataFrame = field(default_factory=pl.DataFrame)
    #: The same figures for every other ruleset and options (``ruleset``, ``options`` columns), per
    #: player and for everyone (``hand_size`` null = all sizes).
    ruleset_dd_bids: pl.DataFrame = field(default_factory=pl.DataFrame)
    pop_ruleset_dd_bids: pl.DataFrame = field(default_factory=pl.DataFrame)
    ruleset_dd_plays: pl.DataFrame = field(default_factory=pl.DataFrame)
    pop_ruleset_dd_plays: pl.DataFrame = field(default_factory=pl.DataFrame)
    #: Scored deals per ruleset, options and hand size, and how many of them have double-dummy values.
    dd_coverage: pl.DataFrame = field(default_factory=pl.DataFrame)
    #: The luck ledger's means per deal (docs/metrics.md, "Par and the luck ledger"): per ruleset, options and
    #: player, per partnership (``pair``) and for every side; and the score-sheet games it leaves out.
    luck_players: pl.DataFrame = field(default_factory=pl.DataFrame)
    luck_pairs: pl.DataFrame = field(default_factory=pl.DataFrame)
    pop_luck: pl.DataFrame = field(default_factory=pl.DataFrame)
    #: Per ruleset, options and player, game after game: the running sums of cards, bidding and play.
    luck_games: pl.DataFrame = field(default_factory=pl.DataFrame)
    luck_sheets: int = 0
    #: The stored ratings (docs/metrics.md, "Ratings"): the ``ratings`` table's columns and ``conservative``
    #: (μ − 3σ) and ``identifiable``; the whole store's, of the report's ruleset when it names one.
    ratings: pl.DataFrame = field(default_factory=pl.DataFrame)
    #: The ratings' held-out calibration per ruleset, options and kind of rating (the whole store's), or why not.
    rating_calibration: list[Calibration] = field(default_factory=list)
    rating_calibration_error: str | None = None
    #: The ruleset ``report --ruleset`` restricted the report to, if any.
    ruleset: str | None = None
    #: The days ``report --since/--until`` restricted the report to (open: every game).
    period: Period = field(default_factory=Period)
    _split: dict[str, dict[str, pl.DataFrame]] = field(default_factory=dict, repr=False)

    _PER_PLAYER = (
        "players",
        "leaderboard",
        "bids_by_hand",
        "bids_by_trump",
        "bids_by_position",
        "bid_errors",
        "calibration",
        "contracts",
        "boards_by_level",
        "boards_by_hand",
        "boards_broken",
        "scores",
        "quality_players",
        "ruleset_players",
        "declarations",
        "bores",
        "dd_bids",
        "dd_plays",
        "ruleset_dd_bids",
        "ruleset_dd_plays",
    )

    @property
    def analysed(self) -> bool:
        """Some deal of the report's plain standard games has double-dummy values."""
        return self.pop_dd_bids.height > 0

    @property
    def plain_standard_only(self) -> bool:
        """Every game is plain ``standard`` (no options): the report is the one it was before rulesets."""
        r = self.rulesets
        return r.height == 0 or (r.height == 1 and is_plain(r["ruleset"][0], r["options"][0]))

    def of(self, table: str, player: str) -> pl.DataFrame:
        """The rows of ``table`` for one player (split once, then looked up)."""
        if table not in self._split:
            frame: pl.DataFrame = getattr(self, table)
            parts = frame.partition_by("player", as_dict=True, maintain_order=True)
            self._split[table] = {str(key[0]): part for key, part in parts.items()}
        part = self._split[table].get(player)
        if part is None:
            return getattr(self, table).clear()  # type: ignore[no-any-return]
        return part

    def partners_of(self, player: str) -> pl.DataFrame:
        """Partnership rows that include ``player``, with the other member as ``partner``."""
        p = self.partnerships
        a = p.filter(pl.col("player_a") == player).rename({"player_b": "partner"}).drop("player_a")
        b = p.filter(pl.col("player_b") == player).rename({"player_a": "partner"}).drop("player_b")
        return pl.concat([a, b.select(a.columns)]).sort(["deals", "partner"], descending=[True, False])


#: DuckDB's memory cap while reporting; past it, work spills to a temporary folder
#: (without it, DuckDB may take 80% of RAM: 5 GB for 200,000 games).
REPORT_MEMORY_LIMIT = "1GB"


def open_store(db_path: Path) -> duckdb.DuckDBPyConnection:
    """Open the store read-only and check it has the contract's tables and views.

    A backalley database (one with ``meta``) must also be of the schema version
    this tool reads, as for ``query`` and ``export``.
    """
    if not db_path.is_file():
        raise ReportError(f"no database at {db_path}")
    try:
        spill = Path(tempfile.gettempdir()) / f"backalley-report-{os.getpid()}"
        con = connect(db_path, config={"memory_limit": REPORT_MEMORY_LIMIT, "temp_directory": str(spill)})
    except StoreLockedError as exc:  # in use by a writer (ingest, serve): said as query says it
        raise ReportLockedError(str(exc)) from None
    except StoreError as exc:  # not a database
        raise ReportError(str(exc)) from None
    try:
        names = {
            str(r[0])
            for r in con.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'"
                " UNION SELECT view_name FROM duckdb_views() WHERE schema_name = 'main'"
            ).fetchall()
        }
        if "meta" in names:  # a backalley database: the schema version check of query and export
            check_readable(con, db_path)
    except (StoreError, duckdb.Error) as exc:
        con.close()
        raise ReportError(str(exc) if isinstance(exc, StoreError) else f"{db_path}: {one_line(exc)}") from None
    missing = {"games", "violations", "rejects", "player_deals"} - names
    if missing:  # any database with the contract's tables and views (docs/contract-views.md) will do
        con.close()
        raise ReportError(f"{db_path} is not a backalley store (missing {', '.join(sorted(missing))})")
    return con


def _sheet_counts(con: duckdb.DuckDBPyConnection, stored: bool) -> dict[str, Any]:
    """Score sheets among the games in the figures: of plain standard (``sheet_games``), of each ruleset
    label (``sheets_by_label``: ``pereulok+no_jokers`` -> games), and the standard ones with a deal that
    does not say its trump (``sheets_no_trump``): what the figures that need cards leave out (docs/metrics.md)."""
    if not stored:
        return {"sheet_games": 0, "sheets_by_label": {}, "sheets_no_trump": 0}
    row = con.sql("""
        WITH s AS (SELECT game_id FROM games WHERE sheet)
        SELECT (SELECT count(DISTINCT game_id) FROM pd WHERE game_id IN (SELECT game_id FROM s)),
               (SELECT count(DISTINCT game_id) FROM pd WHERE no_trump IS NULL AND game_id IN (SELECT game_id FROM s))
    """).fetchall()[0]
    labels = con.sql("""
        SELECT ruleset || CASE WHEN options = '' THEN '' ELSE '+' || replace(options, ',', '+') END, count(DISTINCT game_id)
        FROM pda WHERE game_id IN (SELECT game_id FROM games WHERE sheet) GROUP BY ALL
    """).fetchall()
    return {
        "sheet_games": int(row[0]),
        "sheets_by_label": {str(k): int(n) for k, n in labels},
        "sheets_no_trump": int(row[1]),
    }


def _columns(con: duckdb.DuckDBPyConnection, name: str) -> set[str]:
    return {str(r[0]) for r in con.execute(f"DESCRIBE {name}").fetchall()}


def compute(
    con: duckdb.DuckDBPyConnection, event: str | None = None, ruleset: str | None = None, period: Period = Period()
) -> Metrics:
    """Run every report query. ``event`` restricts games, deals and violations to one event, ``ruleset`` to one ruleset,
    ``period`` to the games played on its days (a game with no date is then left out).

    The long-standing figures (leaderboard, bidding, boards, partnerships, scores)
    are those of plain ``standard`` games; every other ruleset and set of options
    has its own figures (:func:`_ruleset_figures`), so no figure mixes rulesets.
    """
    if ruleset is not None and ruleset not in RULESET_NAMES:
        raise ReportError(f"unknown ruleset {ruleset!r}; known: {', '.join(RULESET_NAMES)}")
    have_pd, have_g = _columns(con, "player_deals"), _columns(con, "games")
    if ruleset is not None and "ruleset" not in have_g:
        raise ReportError("this database does not record rulesets: --ruleset needs a backalley store")
    given = (
        ("event = $event", "event", event),
        ("ruleset = $ruleset", "ruleset", ruleset),
        ("played_at::DATE >= $since", "since", period.since),
        ("played_at::DATE <= $until", "until", period.until),
    )
    where = [c for c, _, v in given if v is not None]
    ev_games = ("WHERE " + " AND ".join(where)) if where else ""
    params: dict[str, Any] = {k: v for _, k, v in given if v is not None}

    def q(sql: str) -> pl.DataFrame:
        frame: pl.DataFrame = con.sql(sql).pl()
        return frame

    # One pass over the view into a temporary table: the view may be an expensive join,
    # and a dozen queries read it.
    con.execute("DROP TABLE IF EXISTS temp.pda")
    extra = ", ".join(c if c in have_pd else f"{v} AS {c}" for c, v in _RULESET_COLUMNS.items())
    cols = ", ".join(_PD_COLUMNS)
    con.execute(f"CREATE TEMP TABLE pda AS SELECT {cols}, {extra} FROM player_deals {ev_games}", params or None)
    # Plain standard games: a view, not a copy (copying a million rows of a large store took a seventh
    # of the whole computation; each query's filter on two columns costs a few milliseconds).
    con.execute("DROP VIEW IF EXISTS temp.pd")
    con.execute(f"CREATE TEMP VIEW pd AS SELECT * FROM pda WHERE {PLAIN_SQL}")
    con.execute("DROP TABLE IF EXISTS temp.g")
    g_extra = ", ".join(c if c in have_g else f"{_RULESET_COLUMNS[c]} AS {c}" for c in ("ruleset", "options"))
    con.execute(
        "CREATE TEMP TABLE g AS SELECT game_id, event, played_at, player_n, player_e, player_s, player_w,"
        f" status, score_ns, score_ew, winner, {g_extra} FROM games {ev_games}",
        params or None,
    )
    # Seats of every game (any status), one row per distinct player per game.
    seats = """
        SELECT DISTINCT game_id, status, player FROM (
            SELECT game_id, status, unnest([player_n, player_e, player_s, player_w]) AS player FROM g
        ) WHERE player IS NOT NULL
    """

    players = q(f"""
        WITH s AS ({seats}),
        d AS (SELECT DISTINCT player FROM pd)
        SELECT player,
               count(s.game_id)::BIGINT AS games_total,
               count(s.game_id) FILTER (WHERE s.status = 'valid')::BIGINT AS games_valid,
               count(s.game_id) FILTER (WHERE s.status = 'incomplete')::BIGINT AS games_incomplete,
               count(s.game_id) FILTER (WHERE s.status = 'invalid')::BIGINT AS games_invalid
        FROM (SELECT player FROM s UNION SELECT player FROM d) p
        LEFT JOIN s USING (player)
        GROUP BY player ORDER BY player
    """)

    # Per player per game: the player's team, its final score and the result.
    con.execute("DROP TABLE IF EXISTS temp.pg")
    con.execute("""
        CREATE TEMP TABLE pg AS
        SELECT pg.player, pg.game_id, g.played_at,
               CASE pg.team WHEN 'NS' THEN g.score_ns ELSE g.score_ew END AS score,
               CASE pg.team WHEN 'NS' THEN g.score_ew ELSE g.score_ns END AS opp_score,
               g.winner = pg.team AS won, g.winner = 'tie' AS tied
        FROM (SELECT DISTINCT player, game_id, team FROM pd) pg JOIN g USING (game_id)
    """)

    leaderboard = q("""
        WITH d AS (
            SELECT player, count(*)::BIGINT AS deals, avg(team_points) AS points_per_deal,
                   count(*) FILTER (WHERE bid_kind IN ('pass', 'number'))::BIGINT AS numeric_bids,
                   count(*) FILTER (WHERE bid_kind IN ('pass', 'number') AND tricks_won = bid_value)::BIGINT AS exact_bids,
                   avg(abs(tricks_won - bid_value)) FILTER (WHERE bid_kind IN ('pass', 'number')) AS mean_abs_error,
                   avg(tricks_won - bid_value) FILTER (WHERE bid_kind IN ('pass', 'number')) AS mean_signed_error,
                   count(*) FILTER (WHERE bid_kind = 'board')::BIGINT AS boards_claimed,
                   count(*) FILTER (WHERE bid_kind = 'board' AND team_made)::BIGINT AS boards_made
            FROM pd GROUP BY player
        ), w AS (
            SELECT player, count(*)::BIGINT AS games, count(*) FILTER (WHERE won)::BIGINT AS games_won,
                   count(*) FILTER (WHERE tied)::BIGINT AS games_tied, avg(score) AS mean_score
            FROM pg GROUP BY player
        )
        SELECT player, w.games, w.games_won, w.games_tied, w.mean_score, d.* EXCLUDE (player)
        FROM d JOIN w USING (player)
        ORDER BY points_per_deal DESC, player
    """)

    def bids_by(dim: str, key: str, known: str = "true") -> pl.DataFrame:
        return q(f"""
            SELECT player, {dim} AS {key}, count(*)::BIGINT AS n,
                   count(*) FILTER (WHERE tricks_won = bid_value)::BIGINT AS exact,
                   avg(abs(tricks_won - bid_value)) AS mean_abs_error,
                   avg(tricks_won - bid_value) AS mean_signed_error
            FROM pd WHERE bid_kind IN ('pass', 'number') AND {known}
            GROUP BY ALL ORDER BY player, {key}
        """)

    bids_by_hand = bids_by("hand_size", "hand_size")
    # (a score sheet that does not say the trump has no_trump NULL: left out of this one breakdown)
    bids_by_trump = bids_by("CASE WHEN no_trump THEN 'no trump' ELSE 'trump' END", "trump", "no_trump IS NOT NULL")
    bids_by_position = bids_by("bid_position", "position")

    bid_errors = q("""
        SELECT player, (tricks_won - bid_value)::INTEGER AS error, count(*)::BIGINT AS n
        FROM pd WHERE bid_kind IN ('pass', 'number') GROUP BY ALL ORDER BY player, error
    """)
    pop_errors = q("""
        SELECT (tricks_won - bid_value)::INTEGER AS error, count(*)::BIGINT AS n
        FROM pd WHERE bid_kind IN ('pass', 'number') GROUP BY ALL ORDER BY error
    """)
    calibration = q("""
        SELECT player, bid_value::INTEGER AS bid, count(*)::BIGINT AS n, avg(tricks_won) AS mean_tricks
        FROM pd WHERE bid_kind IN ('pass', 'number') GROUP BY ALL ORDER BY player, bid
    """)
    pop_calibration = q("""
        SELECT bid_value::INTEGER AS bid, count(*)::BIGINT AS n, avg(tricks_won) AS mean_tricks
        FROM pd WHERE bid_kind IN ('pass', 'number') GROUP BY ALL ORDER BY bid
    """)

    contract_cols = """
        count(*)::BIGINT AS deals,
        avg(team_points) AS points_per_deal,
        count(*) FILTER (WHERE team_contract_kind = 'number')::BIGINT AS contracts,
        count(*) FILTER (WHERE team_contract_kind = 'number' AND team_made)::BIGINT AS made,
        count(*) FILTER (WHERE team_contract_kind = 'number' AND team_tricks = team_contract)::BIGINT AS exact,
        count(*) FILTER (WHERE team_contract_kind = 'number' AND NOT team_made)::BIGINT AS set,
        avg(team_tricks - team_contract) FILTER (WHERE team_contract_kind = 'number' AND team_made) AS mean_overtricks
    """
    contracts = q(f"SELECT player, {contract_cols} FROM pd GROUP BY player ORDER BY player")
    partnerships = q(f"""
        SELECT player AS player_a, partner AS player_b, count(DISTINCT game_id)::BIGINT AS games, {contract_cols}
        FROM pd WHERE player < partner GROUP BY ALL ORDER BY deals DESC, player_a, player_b
    """)

    boards_by_level = q("""
        SELECT player, board_level::INTEGER AS level, count(*)::BIGINT AS claimed,
               count(*) FILTER (WHERE team_made)::BIGINT AS made,
               coalesce(sum(team_points) FILTER (WHERE team_points > 0), 0)::BIGINT AS points_won,
               coalesce(-sum(team_points) FILTER (WHERE team_points < 0), 0)::BIGINT AS points_lost
        FROM pd WHERE bid_kind = 'board' GROUP BY ALL ORDER BY player, level
    """)
    boards_by_hand = q("""
        SELECT player, hand_size::INTEGER AS hand_size, count(*)::BIGINT AS claimed,
               count(*) FILTER (WHERE team_made)::BIGINT AS made
        FROM pd WHERE bid_kind = 'board' GROUP BY ALL ORDER BY player, hand_size
    """)
    boards_broken = q("""
        SELECT player, count(*)::BIGINT AS opp_boards, count(*) FILTER (WHERE NOT opp_made)::BIGINT AS broken
        FROM pd WHERE opp_contract_kind = 'board' GROUP BY player ORDER BY player
    """)

    scores = q(f"""
        WITH s AS (
            SELECT *, row_number() OVER (PARTITION BY player ORDER BY played_at NULLS LAST, game_id) AS seq,
                   count(*) OVER (PARTITION BY player) AS n_games
            FROM pg
        )
        SELECT player, ((seq - 1) * least(n_games, {SCORE_BUCKETS}) // n_games)::BIGINT AS bucket,
               min(seq)::BIGINT AS first_game, max(seq)::BIGINT AS last_game, count(*)::BIGINT AS games,
               avg(score) AS score, avg(opp_score) AS opp_score,
               count(*) FILTER (WHERE won)::BIGINT AS won
        FROM s GROUP BY ALL ORDER BY player, bucket
    """)

    quality_status = q("""
        SELECT status, count(*)::BIGINT AS records FROM g GROUP BY status
    """)
    rejected = int(con.sql("SELECT count(*) FROM rejects").fetchall()[0][0])
    order = {"valid": 0, "incomplete": 1, "invalid": 2, "rejected": 3}
    quality_status = (
        pl.concat(
            [
                pl.DataFrame(
                    {"status": ["valid", "incomplete", "invalid"], "records": [0, 0, 0]}, schema=quality_status.schema
                ),
                quality_status,
                pl.DataFrame({"status": ["rejected"], "records": [rejected]}, schema=quality_status.schema),
            ]
        )
        .group_by("status")
        .agg(pl.col("records").sum())
        .sort(pl.col("status").replace_strict(order, default=9, return_dtype=pl.Int64))
    )
    quality_codes = q("""
        SELECT v.code, any_value(v.severity) AS severity, count(*)::BIGINT AS violations,
               count(DISTINCT v.game_id)::BIGINT AS games
        FROM violations v JOIN g USING (game_id) GROUP BY v.code ORDER BY violations DESC, v.code
    """)
    # A violation is charged to the player in the seat that made it; one with no seat (the record's
    # structure, a final score, a game left incomplete) to no player: it counts in its game only.
    charged = """
        SELECT v.game_id, v.code, p.player FROM violations v
        JOIN (SELECT game_id, unnest(['N', 'E', 'S', 'W']) AS seat,
                     unnest([player_n, player_e, player_s, player_w]) AS player FROM g) p
          ON p.game_id = v.game_id AND p.seat = v.seat
        WHERE p.player IS NOT NULL
    """
    quality_players = q(f"""
        SELECT player, count(DISTINCT game_id)::BIGINT AS games, count(*)::BIGINT AS violations,
               string_agg(DISTINCT code, ', ' ORDER BY code) AS codes
        FROM ({charged}) GROUP BY player ORDER BY violations DESC, player
    """)
    quality_codes = quality_codes.join(
        q(f"SELECT code, count(DISTINCT player)::BIGINT AS players FROM ({charged}) GROUP BY code"),
        on="code",
        how="left",
    ).with_columns(pl.col("players").fill_null(0))

    row = con.sql("""
        SELECT (SELECT count(*) FROM g), (SELECT count(*) FROM g WHERE status = 'valid'),
               (SELECT count(DISTINCT game_id) FROM pd), (SELECT count(*) // 4 FROM pd),
               (SELECT count(DISTINCT event) FROM g), (SELECT min(played_at) FROM g), (SELECT max(played_at) FROM g),
               (SELECT count(*) FROM pd WHERE bid_kind = 'board'), (SELECT count(*) FROM pd WHERE bid_kind = 'board' AND team_made)
    """).fetchall()[0]
    population: dict[str, Any] = {
        "records": int(row[0]) + rejected,
        "games": int(row[0]),
        "valid_games": int(row[1]),
        "reported_games": int(row[2]),
        "deals": int(row[3]),
        "events": int(row[4]),
        "first_played": row[5],
        "last_played": row[6],
        "players": players.height,
        "rejected": rejected,
        "boards_claimed": int(row[7]),
        "boards_made": int(row[8]),
        **_sheet_counts(con, "sheet" in have_g),
    }
    per_ruleset = _ruleset_figures(q)
    dd = _dd_figures(con, q)
    luck = _luck(con, "sheet" in have_g)
    ratings = _ratings(con, ruleset)
    calibrated, calibration_error = _calibration(con)
    return Metrics(
        ratings=ratings,
        rating_calibration=[c for c in calibrated if ruleset in (None, c.ruleset)],
        rating_calibration_error=calibration_error,
        luck_players=luck["luck_players"],
        luck_pairs=luck["luck_pairs"],
        pop_luck=luck["pop_luck"],
        luck_games=luck["luck_games"],
        luck_sheets=luck["luck_sheets"],
        dd_bids=dd["dd_bids"],
        pop_dd_bids=dd["pop_dd_bids"],
        dd_plays=dd["dd_plays"],
        pop_dd_plays=dd["pop_dd_plays"],
        ruleset_dd_bids=dd["ruleset_dd_bids"],
        pop_ruleset_dd_bids=dd["pop_ruleset_dd_bids"],
        ruleset_dd_plays=dd["ruleset_dd_plays"],
        pop_ruleset_dd_plays=dd["pop_ruleset_dd_plays"],
        dd_coverage=dd["dd_coverage"],
        ruleset=ruleset,
        period=period,
        rulesets=per_ruleset["rulesets"],
        ruleset_players=per_ruleset["ruleset_players"],
        declarations=per_ruleset["declarations"],
        bores=per_ruleset["bores"],
        event=event,
        population=population,
        players=players,
        leaderboard=with_ratings(leaderboard, ratings),
        bids_by_hand=bids_by_hand,
        bids_by_trump=bids_by_trump,
        bids_by_position=bids_by_position,
        bid_errors=bid_errors,
        calibration=calibration,
        pop_calibration=pop_calibration,
        pop_errors=pop_errors,
        contracts=contracts,
        partnerships=partnerships,
        boards_by_level=boards_by_level,
        boards_by_hand=boards_by_hand,
        boards_broken=boards_broken,
        scores=scores,
        quality_status=quality_status,
        quality_codes=quality_codes,
        quality_players=quality_players,
    )


def _ruleset_figures(q: Any) -> dict[str, pl.DataFrame]:
    """The per-ruleset frames of :class:`Metrics`, from the temporary tables ``g`` and ``pda``.

    Every figure is grouped by ruleset and options. Bidding accuracy counts numbers
    and passes (pass = 0) where a pass is a bid of no tricks (not in ``pereulok``,
    where a side declares instead).
    """
    rulesets = q(f"""
        WITH d AS (
            SELECT ruleset, options, count(DISTINCT player)::BIGINT AS players, (count(*) // 4)::BIGINT AS deals
            FROM pda GROUP BY ALL
        ), gg AS (
            SELECT ruleset, options, count(*)::BIGINT AS games,
                   count(*) FILTER (WHERE status = 'valid')::BIGINT AS valid_games
            FROM g GROUP BY ALL
        )
        SELECT gg.ruleset, gg.options, gg.games, gg.valid_games,
               coalesce(d.players, 0)::BIGINT AS players, coalesce(d.deals, 0)::BIGINT AS deals
        FROM gg LEFT JOIN d ON d.ruleset IS NOT DISTINCT FROM gg.ruleset AND d.options = gg.options
        ORDER BY gg.ruleset <> '{PLAIN[0]}', gg.ruleset, gg.options
    """)
    ruleset_players = q(f"""
        WITH pgv AS (
            SELECT DISTINCT p.ruleset, p.options, p.player, p.game_id, g.winner = p.team AS won
            FROM pda p JOIN g USING (game_id)
        ), w AS (
            SELECT ruleset, options, player, count(*)::BIGINT AS games,
                   count(*) FILTER (WHERE won)::BIGINT AS games_won
            FROM pgv GROUP BY ALL
        ), d AS (
            SELECT ruleset, options, player, count(*)::BIGINT AS deals, avg(team_points) AS points_per_deal,
                   count(*) FILTER (WHERE acc)::BIGINT AS numeric_bids,
                   count(*) FILTER (WHERE acc AND tricks_won = bid_value)::BIGINT AS exact_bids,
                   avg(abs(tricks_won - bid_value)) FILTER (WHERE acc) AS mean_abs_error,
                   count(*) FILTER (WHERE bid_kind = 'board')::BIGINT AS boards_claimed,
                   count(*) FILTER (WHERE bid_kind = 'board' AND team_made)::BIGINT AS boards_made,
                   count(*) FILTER (WHERE bid_kind = 'declaration')::BIGINT AS declarations,
                   count(*) FILTER (WHERE bid_kind = 'declaration' AND team_made)::BIGINT AS declarations_made,
                   count(*) FILTER (WHERE {DECLARING_SQL} AND leads_first)::BIGINT AS auctions_won,
                   count(*) FILTER (WHERE rainbow)::BIGINT AS rainbows
            FROM (SELECT *, bid_kind IN ('pass', 'number') AND NOT {DECLARING_SQL} AS acc FROM pda)
            GROUP BY ALL
        )
        SELECT d.player, d.ruleset, d.options, w.games, w.games_won, d.* EXCLUDE (player, ruleset, options)
        FROM d JOIN w USING (ruleset, options, player)
        ORDER BY d.ruleset, d.options, d.points_per_deal DESC, d.player
    """)
    declarations = q("""
        SELECT player, ruleset, options, 'declared tricks' AS breakdown, bid_value::INTEGER AS value,
               count(*)::BIGINT AS declared, count(*) FILTER (WHERE team_made)::BIGINT AS made
        FROM pda WHERE bid_kind = 'declaration' GROUP BY ALL
        UNION ALL
        SELECT player, ruleset, options, 'multiplier', bid_multiplier::INTEGER,
               count(*)::BIGINT, count(*) FILTER (WHERE team_made)::BIGINT
        FROM pda WHERE bid_kind = 'declaration' GROUP BY ALL
        ORDER BY player, ruleset, options, breakdown, value
    """)
    bores = q(f"""
        SELECT player, ruleset, options, board_level::INTEGER AS level, count(*)::BIGINT AS claimed,
               count(*) FILTER (WHERE team_made)::BIGINT AS made
        FROM pda WHERE bid_kind = 'board' AND NOT ({PLAIN_SQL})
        GROUP BY ALL ORDER BY player, ruleset, options, level
    """)
    return {"rulesets": rulesets, "ruleset_players": ruleset_players, "declarations": declarations, "bores": bores}


#: The columns of ``player_deals`` and the tables the double-dummy figures need.
_DD_NEEDS = {"deal_index", "seat"}


def _has_dd(con: duckdb.DuckDBPyConnection) -> bool:
    tables = {
        str(r[0])
        for r in con.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'").fetchall()
    }
    return {"dd_deals", "dd_plays", "dd_deal_sides"} <= tables and _columns(con, "player_deals") >= _DD_NEEDS


#: The ratings' columns in the report's frame: the table's, the conservative rating and whether it is identifiable.
REPORT_RATING_SCHEMA: dict[str, Any] = {**RATING_SCHEMA, "conservative": pl.Float64, "identifiable": pl.Boolean}


def _ratings(con: duckdb.DuckDBPyConnection, ruleset: str | None) -> pl.DataFrame:
    """The stored ratings (none when the store has no ``ratings`` table), of ``ruleset`` when given."""
    rows = [
        (*(getattr(r, c) for c in RATING_COLUMNS), r.conservative, r.identifiable)
        for r in stored_ratings(con)
        if ruleset in (None, r.ruleset)
    ]
    return pl.DataFrame(rows, schema=REPORT_RATING_SCHEMA, orient="row")


def with_ratings(leaderboard: pl.DataFrame, ratings: pl.DataFrame) -> pl.DataFrame:
    """The leaderboard (plain standard games) with each player's rating: ``rating`` (μ − 3σ, null when not
    identifiable), ``rating_games``, ``rating_provisional`` and ``rating_partners`` (null without a rating)."""
    mine = ratings.filter(
        (pl.col("ruleset") == PLAIN[0]) & (pl.col("options") == PLAIN[1]) & (pl.col("kind") == "player")
    ).select(
        pl.col("subject").alias("player"),
        pl.when(pl.col("identifiable")).then(pl.col("conservative")).alias("rating"),
        pl.col("games").alias("rating_games"),
        pl.col("provisional").alias("rating_provisional"),
        pl.col("partners").alias("rating_partners"),
    )
    return leaderboard.join(mine, on="player", how="left")


#: Games of each ruleset and options the calibration reads: the latest, a bound on its time (each fit
#: of TrueSkill Through Time takes about 2 ms of CPU a game).
CALIBRATION_GAMES = 2_000


def _calibration(con: duckdb.DuckDBPyConnection) -> tuple[list[Calibration], str | None]:
    """The ratings' calibration, when the store has the ratings (a backalley store of schema 9 or later); or
    why it could not be computed (the report says so in its place)."""
    if not _has_tables(con, {"ratings", "game_sides"}):
        return [], None
    try:
        return store_calibration(con, CALIBRATION_GAMES), None
    except RatingError as exc:
        return [], str(exc)


def _has_tables(con: duckdb.DuckDBPyConnection, names: set[str]) -> bool:
    found = con.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' AND table_name IN ?",
        [list(names)],
    ).fetchall()
    return {str(r[0]) for r in found} == names


def _luck(con: duckdb.DuckDBPyConnection, sheets: bool) -> dict[str, Any]:
    """The luck ledger's figures over the report's games (the temporary table ``g``); none without analysis."""
    if not (sheets and _has_dd(con)):
        none = pl.DataFrame()
        return {"luck_players": none, "luck_pairs": none, "pop_luck": none, "luck_games": none, "luck_sheets": 0}
    played: pl.DataFrame = con.sql("SELECT game_id, played_at FROM g").pl()
    return luck_figures(con, set(played["game_id"].to_list()), played)


def _dd_figures(con: duckdb.DuckDBPyConnection, q: Any) -> dict[str, pl.DataFrame]:
    """Bid vs makeable and play accuracy (docs/metrics.md) over the analysed deals, by ruleset and options.

    Reads the temporary table ``g`` (the report's games); one row per player and deal
    in ``ddp``: the side's contract, its double-dummy value (the seat's own without
    partnerships) and the player's play costs.  Plain standard games give the
    ``dd_*`` frames, every other ruleset and options the ``ruleset_dd_*`` ones.
    """
    if not _has_dd(con):
        con.execute("DROP TABLE IF EXISTS temp.ddp")
        con.execute(
            "CREATE TEMP TABLE ddp (game_id VARCHAR, deal INTEGER, hand_size INTEGER, player VARCHAR, team VARCHAR,"
            " bid_kind VARCHAR, contract_kind VARCHAR, contract INTEGER, dd INTEGER, lost BIGINT, plays BIGINT,"
            " free BIGINT, ruleset VARCHAR, options VARCHAR)"
        )
    else:
        con.execute("""
            CREATE OR REPLACE TEMP TABLE ddp AS
            WITH pc AS (
                SELECT game_id, deal, seat, sum(cost)::BIGINT AS lost, count(*)::BIGINT AS plays,
                       count(*) FILTER (WHERE cost = 0)::BIGINT AS free
                FROM dd_plays GROUP BY ALL
            )
            SELECT p.game_id, p.deal_index AS deal, d.hand_size, p.player, p.team, p.bid_kind,
                   p.team_contract_kind AS contract_kind, p.team_contract AS contract, s.dd,
                   coalesce(pc.lost, 0)::BIGINT AS lost, coalesce(pc.plays, 0)::BIGINT AS plays,
                   coalesce(pc.free, 0)::BIGINT AS free, g.ruleset, g.options
            FROM player_deals p
            JOIN g ON g.game_id = p.game_id
            JOIN dd_deals d ON d.game_id = p.game_id AND d.deal = p.deal_index AND d.analysed
            JOIN dd_deal_sides s ON s.game_id = p.game_id AND s.deal = p.deal_index AND s.side = p.team
            LEFT JOIN pc ON pc.game_id = p.game_id AND pc.deal = p.deal_index AND pc.seat = p.seat
        """)
    bids = """
        count(*) FILTER (WHERE contract_kind = 'number')::BIGINT AS contracts,
        avg(contract - dd) FILTER (WHERE contract_kind = 'number') AS mean_diff,
        stddev_samp(contract - dd) FILTER (WHERE contract_kind = 'number') AS sd_diff,
        count(*) FILTER (WHERE contract_kind = 'number' AND contract > dd)::BIGINT AS over,
        count(*) FILTER (WHERE contract_kind = 'number' AND contract = dd)::BIGINT AS exact,
        count(*) FILTER (WHERE contract_kind = 'number' AND contract < dd)::BIGINT AS under,
        count(*) FILTER (WHERE bid_kind = 'board')::BIGINT AS boards,
        count(*) FILTER (WHERE bid_kind = 'board' AND dd = hand_size)::BIGINT AS boards_makeable
    """
    plays = """
        count(*)::BIGINT AS deals, sum(lost)::BIGINT AS lost, sum(lost) / count(*) AS lost_per_deal,
        stddev_samp(lost) AS sd_lost,
        sum(plays)::BIGINT AS plays, sum(free)::BIGINT AS free
    """
    # Everyone's contracts count once per side and deal (both partners' rows hold the same contract);
    # a board counts once per side that claimed it.
    plain = PLAIN_SQL
    sides = """
        SELECT game_id, deal, team, any_value(hand_size) AS hand_size, any_value(contract_kind) AS contract_kind,
               any_value(contract) AS contract, any_value(dd) AS dd,
               CASE WHEN bool_or(bid_kind = 'board') THEN 'board' END AS bid_kind,
               any_value(ruleset) AS ruleset, any_value(options) AS options
        FROM ddp GROUP BY game_id, deal, team
    """
    v = "ruleset, options"
    # The deals that could be analysed: a score sheet has no cards, so none of its deals counts.
    sheets = "WHERE game_id NOT IN (SELECT game_id FROM games WHERE sheet)" if "sheet" in _columns(con, "games") else ""
    coverage = f"""
        SELECT p.ruleset, p.options, p.hand_size::INTEGER AS hand_size, count(*)::BIGINT AS deals,
               count(d.game_id)::BIGINT AS analysed
        FROM (SELECT DISTINCT game_id, deal_number, hand_size, ruleset, options FROM pda {sheets}) p
        LEFT JOIN dd_deals d ON d.game_id = p.game_id AND d.number = p.deal_number AND d.analysed
        GROUP BY ALL ORDER BY ALL
    """
    return {
        "dd_coverage": q(coverage) if _has_dd(con) else pl.DataFrame(),
        "dd_bids": q(f"""
            SELECT player, hand_size, {bids} FROM ddp WHERE {plain}
            GROUP BY GROUPING SETS ((player, hand_size), (player)) ORDER BY player, hand_size NULLS FIRST
        """),
        "pop_dd_bids": q(f"""
            SELECT hand_size, {bids} FROM ({sides}) WHERE {plain}
            GROUP BY GROUPING SETS ((hand_size), ()) HAVING count(*) > 0 ORDER BY hand_size NULLS FIRST
        """),
        "dd_plays": q(f"""
            SELECT player, hand_size, {plays} FROM ddp WHERE {plain}
            GROUP BY GROUPING SETS ((player, hand_size), (player)) ORDER BY player, hand_size NULLS FIRST
        """),
        "pop_dd_plays": q(f"""
            SELECT hand_size, {plays} FROM ddp WHERE {plain}
            GROUP BY GROUPING SETS ((hand_size), ()) HAVING count(*) > 0 ORDER BY hand_size NULLS FIRST
        """),
        "ruleset_dd_bids": q(f"""
            SELECT {v}, player, hand_size, {bids} FROM ddp WHERE NOT ({plain})
            GROUP BY GROUPING SETS (({v}, player, hand_size), ({v}, player))
            ORDER BY {v}, player, hand_size NULLS FIRST
        """),
        "pop_ruleset_dd_bids": q(f"""
            SELECT {v}, hand_size, {bids} FROM ({sides}) WHERE NOT ({plain})
            GROUP BY GROUPING SETS (({v}, hand_size), ({v})) ORDER BY {v}, hand_size NULLS FIRST
        """),
        "ruleset_dd_plays": q(f"""
            SELECT {v}, player, hand_size, {plays} FROM ddp WHERE NOT ({plain})
            GROUP BY GROUPING SETS (({v}, player, hand_size), ({v}, player))
            ORDER BY {v}, player, hand_size NULLS FIRST
        """),
        "pop_ruleset_dd_plays": q(f"""
            SELECT {v}, hand_size, {plays} FROM ddp WHERE NOT ({plain})
            GROUP BY GROUPING SETS (({v}, hand_size), ({v})) ORDER BY {v}, hand_size NULLS FIRST
        """),
    }

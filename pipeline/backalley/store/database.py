"""The DuckDB store: every table, view and migration in one place.

:class:`Store` wraps one DuckDB connection (in the spirit of sqlite-utils):
:meth:`Store.open` opens a database for writing (creating it, or migrating an
older schema version), :meth:`Store.open_readonly` for reading;
:meth:`Store.atomic` is a transaction; :meth:`Store.insert_batch` inserts an
Arrow table or a polars frame in one statement.  The database records its
schema version in the table ``meta``; a file written by a newer tool, or one
that is not a backalley database, is refused with a clear message.

DuckDB allows one writing process per file: a second one gets
:class:`StoreLockedError` ("database is in use by another process").
"""

from __future__ import annotations

import glob
import json
import math
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa

from backalley.cards import NO_TRUMP, SUITS
from backalley.store import raw as raw_codec
from backalley.store.rows import (
    BID_KINDS,
    CARD_CODES,
    CARD_RANKS,
    CARD_SUIT_CODES,
    CONTRACT_KINDS,
    SEAT_CODES,
    SIDE_NAMES,
    SUIT_CODES,
)

if TYPE_CHECKING:  # polars is imported only when a frame is passed in (ingest does not need it)
    import polars as pl

#: The schema version this tool writes.  Bump it with every DDL change and add a migration.
SCHEMA_VERSION = 7
#: The environment variable naming the default database.
DB_ENV = "BACKALLEY_DB"
DEFAULT_DB = Path("data/backalley.duckdb")

#: Every table, in the order a game's rows are written (``meta`` aside).
TABLES = (
    "games",
    "deals",
    "bids",
    "tricks",
    "plays",
    "violations",
    "rejects",
    "ingest_runs",
    "game_sides",
    "deal_sides",
)
#: Tables with one or more rows per game, keyed by ``game_id``.
GAME_TABLES = ("games", "deals", "bids", "tricks", "plays", "violations", "game_sides", "deal_sides")
VIEWS = ("player_deals", "player_games", "player_summary")


class StoreError(ValueError):
    """Anything wrong with the database itself (not with the games in it)."""


class StoreLockedError(StoreError):
    """Another process holds the database open."""


class SchemaVersionError(StoreError):
    """The file's schema version is one this tool cannot work with."""


class NotAStoreError(StoreError):
    """The file is not a DuckDB database, or not one of ours."""


class GameNotFoundError(StoreError):
    """No stored game has the ``game_id`` asked for."""


class QueryError(StoreError):
    """A query that failed, or that would change the database."""


class ReadOnlyQueryError(QueryError):
    """A statement that would write, refused by ``query``."""


#: DuckDB's buffer memory cap for a writing connection.
WRITE_MEMORY_LIMIT = "512MB"


def default_db() -> Path:
    """``$BACKALLEY_DB`` if set, else ``data/backalley.duckdb``."""
    env = os.environ.get(DB_ENV)
    return Path(env) if env else DEFAULT_DB


# --- DDL -------------------------------------------------------------------------------

TABLE_DDL: dict[str, str] = {
    "meta": """
CREATE TABLE meta (
    key   VARCHAR NOT NULL,
    value VARCHAR NOT NULL
)""",
    "ingest_runs": """
CREATE TABLE ingest_runs (
    run_id         INTEGER NOT NULL,
    started_at     TIMESTAMPTZ NOT NULL,
    finished_at    TIMESTAMPTZ,
    status         VARCHAR NOT NULL,
    tool_version   VARCHAR NOT NULL,
    paths          VARCHAR[] NOT NULL,
    workers        INTEGER NOT NULL,
    replace_mode   BOOLEAN NOT NULL,
    files          INTEGER NOT NULL DEFAULT 0,
    records        BIGINT NOT NULL DEFAULT 0,
    inserted       BIGINT NOT NULL DEFAULT 0,
    replaced       BIGINT NOT NULL DEFAULT 0,
    duplicates     BIGINT NOT NULL DEFAULT 0,
    conflicts      BIGINT NOT NULL DEFAULT 0,
    rejected       BIGINT NOT NULL DEFAULT 0,
    invalid        BIGINT NOT NULL DEFAULT 0
)""",
    "rejects": """
CREATE TABLE rejects (
    reject_id     VARCHAR NOT NULL,
    run_id        INTEGER NOT NULL,
    rejected_at   TIMESTAMPTZ NOT NULL,
    source        VARCHAR NOT NULL,
    line          INTEGER,
    reason        VARCHAR NOT NULL,
    message       VARCHAR NOT NULL,
    game_id       VARCHAR,
    content_hash  VARCHAR NOT NULL,
    raw           VARCHAR NOT NULL,
    raw_bytes     BLOB
)""",
    # Version 2: the API tokens of `backalley serve` (`backalley token create`), kept as
    # SHA-256 hashes only. Not in TABLES: neither counted nor exported.
    "api_tokens": """
CREATE TABLE IF NOT EXISTS api_tokens (
    name        VARCHAR NOT NULL PRIMARY KEY,
    token_hash  VARCHAR NOT NULL UNIQUE,
    created_at  TIMESTAMPTZ NOT NULL
)""",
    # Version 3: double-dummy analysis (backalley.analysis.dd), written by `backalley analyze`: one row per
    # stored deal that is not a pass-out (analysed = false: a rule violation left it unsolved).
    # The team columns (dd_ns ... cost_ew, value_ns_*) are NULL in a game without partnerships
    # (version 6); every side's figures are in dd_deal_sides and dd_plays.value_before/after.
    "dd_deals": """
CREATE TABLE dd_deals (
    game_id    VARCHAR NOT NULL,
    deal       INTEGER NOT NULL,
    number     INTEGER NOT NULL,
    hand_size  INTEGER,
    analysed   BOOLEAN NOT NULL,
    dd_ns      INTEGER,
    dd_ew      INTEGER,
    cost_ns    INTEGER,
    cost_ew    INTEGER,
    nodes      BIGINT,
    reason     VARCHAR
)""",
    "dd_plays": """
CREATE TABLE dd_plays (
    game_id          VARCHAR NOT NULL,
    deal             INTEGER NOT NULL,
    trick            INTEGER NOT NULL,
    position         INTEGER NOT NULL,
    seat             VARCHAR NOT NULL,
    card             VARCHAR NOT NULL,
    value_ns_before  INTEGER,
    value_ns_after   INTEGER,
    cost             INTEGER NOT NULL,
    value_before     INTEGER,
    value_after      INTEGER
)""",
    # Version 6: every side's double-dummy figures of an analysed deal, one row per side (teams
    # 'NS', 'EW'; or the seats 'N', 'E', 'S', 'W' of a game without partnerships).
    "dd_deal_sides": """
CREATE TABLE dd_deal_sides (
    game_id  VARCHAR NOT NULL,
    deal     INTEGER NOT NULL,
    side     VARCHAR NOT NULL,
    dd       INTEGER NOT NULL,
    cost     INTEGER NOT NULL
)""",
}

#: Version 4's side tables, as the 3 -> 4 migration creates them (version 5 has views of these names).
#: Version 4 (rulesets): every side's figures, one row per side (teams 'NS', 'EW'; or the seats
#: 'N', 'E', 'S', 'W' of a game without partnerships).
SIDE_TABLE_DDL: dict[str, str] = {
    "game_sides": """
CREATE TABLE game_sides (
    game_id         VARCHAR NOT NULL,
    side            VARCHAR NOT NULL,
    score           INTEGER,
    recorded_score  BIGINT
)""",
    "deal_sides": """
CREATE TABLE deal_sides (
    game_id          VARCHAR NOT NULL,
    deal             INTEGER NOT NULL,
    side             VARCHAR NOT NULL,
    contract_kind    VARCHAR,
    contract         BIGINT,
    multiplier       INTEGER,
    board_level      INTEGER,
    tricks           INTEGER NOT NULL,
    points           BIGINT,
    made             BOOLEAN,
    recorded_tricks  BIGINT,
    recorded_points  BIGINT
)""",
}

# --- the narrow base tables (schema version 5) ------------------------------------------------
#
# What ingest writes: an integer game key (``game_key``, given at insert; the ``game_id`` string is
# kept once, in ``g_games``), small integer codes for seats, cards, suits, kinds and sides (the
# lists below), no player names and nothing derivable in the detail rows, and the four cards of a
# trick as four columns of ``g_tricks`` (``plays`` is a view over it). The tables users query
# (``games``, ``deals``, ``bids``, ``tricks``, ``plays``, ``violations``, ``game_sides``,
# ``deal_sides``) are views over these with the columns they always had (:func:`view_sql`).

# The codes' names: :data:`backalley.store.rows.SEAT_CODES`, ``CARD_CODES``, ``CARD_SUIT_CODES``, ``CARD_RANKS``,
# ``SUIT_CODES`` (with the kinds and sides there), which the workers' page data names them by too.

#: ``g_games.raw_zstd`` is compressed already (by the workers): DuckDB is told not to try again,
#: which halved the final checkpoint's CPU in benchmarks/ingest_floor.py (the same file size).
#: The narrow tables, in the order a batch is inserted (``g_games`` first: it holds the keys).
NARROW_TABLES = ("g_games", "g_deals", "g_bids", "g_tricks", "g_violations", "g_game_sides", "g_deal_sides")

NARROW_DDL: dict[str, str] = {
    "g_games": """
CREATE TABLE g_games (
    game_key           INTEGER NOT NULL,
    game_id            VARCHAR NOT NULL,
    content_hash       VARCHAR NOT NULL,
    source             VARCHAR NOT NULL,
    line               INTEGER,
    run_id             INTEGER NOT NULL,
    ingested_at        TIMESTAMPTZ NOT NULL,
    format_version     BIGINT,
    ruleset            VARCHAR,
    played_at          TIMESTAMPTZ,
    event              VARCHAR,
    player_n           VARCHAR,
    player_e           VARCHAR,
    player_s           VARCHAR,
    player_w           VARCHAR,
    valid              BOOLEAN NOT NULL,
    complete           BOOLEAN NOT NULL,
    status             VARCHAR NOT NULL,
    schema_ok          BOOLEAN NOT NULL,
    dealings           INTEGER,
    scored_deals       INTEGER,
    pass_outs          INTEGER,
    errors             INTEGER NOT NULL,
    warnings           INTEGER NOT NULL,
    score_ns           INTEGER,
    score_ew           INTEGER,
    recorded_score_ns  BIGINT,
    recorded_score_ew  BIGINT,
    winner             VARCHAR,
    options            VARCHAR NOT NULL DEFAULT '',
    raw_zstd           BLOB NOT NULL USING COMPRESSION uncompressed
)""",
    "g_deals": """
CREATE TABLE g_deals (
    game_key          INTEGER NOT NULL,
    deal              INTEGER NOT NULL,
    number            INTEGER NOT NULL,
    hand_size         INTEGER NOT NULL,
    dealer            TINYINT NOT NULL,
    trump_card        TINYINT,
    trump             TINYINT NOT NULL,
    joker_swap_seat   TINYINT,
    joker_swap_drawn  TINYINT,
    pass_out          BOOLEAN NOT NULL,
    opening_leader    TINYINT,
    won_n             INTEGER NOT NULL,
    won_e             INTEGER NOT NULL,
    won_s             INTEGER NOT NULL,
    won_w             INTEGER NOT NULL
)""",
    "g_bids": """
CREATE TABLE g_bids (
    game_key     INTEGER NOT NULL,
    deal         INTEGER NOT NULL,
    position     TINYINT NOT NULL,
    seat         TINYINT NOT NULL,
    kind         TINYINT NOT NULL,
    value        BIGINT,
    board_level  INTEGER,
    multiplier   INTEGER,
    side         TINYINT,
    rainbow      BOOLEAN
)""",
    "g_tricks": """
CREATE TABLE g_tricks (
    game_key  INTEGER NOT NULL,
    deal      INTEGER NOT NULL,
    trick     INTEGER NOT NULL,
    leader    TINYINT NOT NULL,
    winner    TINYINT NOT NULL,
    led_suit  TINYINT NOT NULL,
    trumps    TINYINT NOT NULL,
    broken    BOOLEAN NOT NULL,
    card1     TINYINT NOT NULL,
    card2     TINYINT NOT NULL,
    card3     TINYINT NOT NULL,
    card4     TINYINT NOT NULL
)""",
    "g_violations": """
CREATE TABLE g_violations (
    game_key  INTEGER NOT NULL,
    ordinal   INTEGER NOT NULL,
    code      VARCHAR NOT NULL,
    severity  VARCHAR NOT NULL,
    message   VARCHAR NOT NULL,
    path      VARCHAR NOT NULL,
    deal      INTEGER,
    trick     INTEGER,
    seat      VARCHAR
)""",
    "g_game_sides": """
CREATE TABLE g_game_sides (
    game_key        INTEGER NOT NULL,
    side            TINYINT NOT NULL,
    score           INTEGER,
    recorded_score  BIGINT
)""",
    "g_deal_sides": """
CREATE TABLE g_deal_sides (
    game_key         INTEGER NOT NULL,
    deal             INTEGER NOT NULL,
    side             TINYINT NOT NULL,
    contract_kind    TINYINT,
    contract         BIGINT,
    multiplier       INTEGER,
    board_level      INTEGER,
    tricks           INTEGER NOT NULL,
    points           BIGINT,
    made             BOOLEAN,
    recorded_tricks  BIGINT,
    recorded_points  BIGINT
)""",
}
TABLE_DDL.update(NARROW_DDL)

#: The SQL function that turns ``g_games.raw_zstd`` into text. The database itself holds a macro
#: of this name that gives NULL, so that any DuckDB client can read every view; a backalley
#: connection (:func:`register_functions`) puts a temporary macro of the same name in front of
#: it that decompresses (a temporary macro is found first, also inside a view).
RAW_FUNCTION = "backalley_raw"
RAW_FALLBACK_DDL = f"CREATE OR REPLACE MACRO {RAW_FUNCTION}(b) AS CAST(NULL AS VARCHAR)"


def _lit(values: Sequence[object]) -> str:
    """A SQL list literal of names (NULL for ``None``) or integers."""
    return "[" + ", ".join("NULL" if v is None else str(v) if isinstance(v, int) else f"'{v}'" for v in values) + "]"


def _name(codes: Sequence[object], expr: str) -> str:
    """The name of the code ``expr`` (0-based) in ``codes``; NULL for a NULL code."""
    return f"{_lit(codes)}[{expr} + 1]"


def _player(seat: str, g: str = "g") -> str:
    """The player at the seat code ``seat``, from the game row ``g``."""
    return (
        f"CASE {seat} WHEN 0 THEN {g}.player_n WHEN 1 THEN {g}.player_e "
        f"WHEN 2 THEN {g}.player_s WHEN 3 THEN {g}.player_w END"
    )


def _table_views() -> dict[str, str]:
    """The SQL of each view over the narrow tables, with ``{g_x}`` standing for the table ``g_x``."""
    seat, card, suit = SEAT_CODES, CARD_CODES, SUIT_CODES
    kind, side = CONTRACT_KINDS, SIDE_NAMES
    team = {
        t: (
            f"{_name(kind, f'{t}.contract_kind')} AS {t}_contract_kind, "
            f"CASE WHEN {t}.contract_kind = 0 THEN NULL ELSE {t}.contract END AS {t}_contract, "
            f"{t}.board_level AS {t}_board_level"
        )
        for t in ("ns", "ew")
    }
    return {
        "games": f"""
SELECT game_id, content_hash, source, line, run_id, ingested_at, format_version, ruleset, played_at,
    event, player_n, player_e, player_s, player_w, valid, complete, status, schema_ok, dealings,
    scored_deals, pass_outs, errors, warnings, score_ns, score_ew, recorded_score_ns,
    recorded_score_ew, winner, {RAW_FUNCTION}(raw_zstd) AS raw, options
FROM {{g_games}}""",
        "deals": f"""
SELECT g.game_id, d.deal, d.number, d.hand_size,
    {_name(seat, "d.dealer")} AS dealer,
    {_name(card, "d.trump_card")} AS trump_card,
    {_name(suit, "d.trump")} AS trump_suit,
    d.trump = {NO_TRUMP} AS no_trump,
    {_name(seat, "d.joker_swap_seat")} AS joker_swap_seat,
    {_name(card, "d.joker_swap_drawn")} AS joker_swap_drawn,
    d.pass_out,
    {_name(seat, "d.opening_leader")} AS opening_leader,
    {team["ns"]},
    {team["ew"]},
    ns.tricks AS tricks_ns, ew.tricks AS tricks_ew, ns.points AS points_ns, ew.points AS points_ew,
    ns.made AS ns_made, ew.made AS ew_made,
    d.won_n, d.won_e, d.won_s, d.won_w,
    ns.recorded_tricks AS recorded_tricks_ns, ew.recorded_tricks AS recorded_tricks_ew,
    ns.recorded_points AS recorded_points_ns, ew.recorded_points AS recorded_points_ew
FROM {{g_deals}} d
JOIN {{g_games}} g ON g.game_key = d.game_key
LEFT JOIN {{g_deal_sides}} ns ON ns.game_key = d.game_key AND ns.deal = d.deal AND ns.side = 0
LEFT JOIN {{g_deal_sides}} ew ON ew.game_key = d.game_key AND ew.deal = d.deal AND ew.side = 1""",
        "bids": f"""
SELECT g.game_id, b.deal, CAST(b.position AS INTEGER) AS position,
    {_name(seat, "b.seat")} AS seat,
    {_player("b.seat")} AS player,
    {_name(BID_KINDS, "b.kind")} AS kind,
    b.value, b.board_level, b.multiplier,
    {_name(side, "b.side")} AS side,
    b.rainbow
FROM {{g_bids}} b
JOIN {{g_games}} g ON g.game_key = b.game_key""",
        "tricks": f"""
SELECT g.game_id, t.deal, t.trick,
    {_name(seat, "t.leader")} AS leader,
    {_player("t.leader")} AS leader_player,
    {_name(seat, "t.winner")} AS winner,
    {_player("t.winner")} AS winner_player,
    {_name(card, "t.card1")} AS led_card,
    {_name(suit, "t.led_suit")} AS led_suit,
    {_name(card, "[t.card1, t.card2, t.card3, t.card4][(t.winner - t.leader + 4) % 4 + 1]")} AS winning_card,
    t.broken AS trump_broken_before
FROM {{g_tricks}} t
JOIN {{g_games}} g ON g.game_key = t.game_key""",
        "plays": f"""
SELECT g.game_id, p.deal, p.trick, p.position,
    {_name(seat, "p.seat")} AS seat,
    {_player("p.seat")} AS player,
    {_name(card, "p.card")} AS card,
    {_name(CARD_SUIT_CODES, "p.card")} AS suit,
    {_name(CARD_RANKS, "p.card")} AS rank,
    (CAST(p.trumps AS INTEGER) >> (p.position - 1)) & 1 = 1 AS is_trump
FROM (
    SELECT game_key, deal, trick, trumps, position, card, (leader + position - 1) % 4 AS seat
    FROM (
        SELECT game_key, deal, trick, leader, trumps,
            unnest([1, 2, 3, 4]) AS position, unnest([card1, card2, card3, card4]) AS card
        FROM {{g_tricks}}
    )
) p
JOIN {{g_games}} g ON g.game_key = p.game_key""",
        "violations": """
SELECT g.game_id, v.ordinal, v.code, v.severity, v.message, v.path, v.deal, v.trick, v.seat
FROM {g_violations} v
JOIN {g_games} g ON g.game_key = v.game_key""",
        "game_sides": f"""
SELECT g.game_id, {_name(side, "s.side")} AS side, s.score, s.recorded_score
FROM {{g_game_sides}} s
JOIN {{g_games}} g ON g.game_key = s.game_key""",
        "deal_sides": f"""
SELECT g.game_id, s.deal, {_name(side, "s.side")} AS side,
    {_name(kind, "s.contract_kind")} AS contract_kind,
    s.contract, s.multiplier, s.board_level, s.tricks, s.points, s.made, s.recorded_tricks, s.recorded_points
FROM {{g_deal_sides}} s
JOIN {{g_games}} g ON g.game_key = s.game_key""",
        "player_deals": f"""
SELECT
    g.game_id,
    g.event,
    g.played_at,
    d.deal AS deal_index,
    d.number AS deal_number,
    d.hand_size,
    {_name(suit, "d.trump")} AS trump_suit,
    d.trump = {NO_TRUMP} AS no_trump,
    {_player("b.seat")} AS player,
    {_name(seat, "b.seat")} AS seat,
    CASE WHEN b.side = b.seat + 2 THEN NULL ELSE {_player("(b.seat + 2) % 4")} END AS partner,
    {_name(side, "b.side")} AS team,
    CAST(b.position AS INTEGER) AS bid_position,
    {_name(BID_KINDS, "b.kind")} AS bid_kind,
    TRY_CAST(b.value AS INTEGER) AS bid_value,
    b.board_level,
    CASE b.seat WHEN 0 THEN d.won_n WHEN 1 THEN d.won_e WHEN 2 THEN d.won_s ELSE d.won_w END AS tricks_won,
    {_name(kind, "t.contract_kind")} AS team_contract_kind,
    TRY_CAST(CASE WHEN t.contract_kind = 0 THEN NULL ELSE t.contract END AS INTEGER) AS team_contract,
    t.board_level AS team_board_level,
    t.tricks AS team_tricks,
    TRY_CAST(t.points AS INTEGER) AS team_points,
    t.made AS team_made,
    {_name(kind, "o.contract_kind")} AS opp_contract_kind,
    o.board_level AS opp_board_level,
    o.made AS opp_made,
    g.ruleset,
    g.options,
    b.multiplier AS bid_multiplier,
    t.multiplier AS team_multiplier,
    d.opening_leader = b.seat AS leads_first,
    b.rainbow
FROM {{g_bids}} b
JOIN {{g_deals}} d ON d.game_key = b.game_key AND d.deal = b.deal
JOIN {{g_games}} g ON g.game_key = b.game_key
JOIN {{g_deal_sides}} t ON t.game_key = b.game_key AND t.deal = b.deal AND t.side = b.side
LEFT JOIN {{g_deal_sides}} o ON o.game_key = b.game_key AND o.deal = b.deal
    AND o.side = CASE b.side WHEN 0 THEN 1 WHEN 1 THEN 0 END
WHERE g.valid AND NOT d.pass_out""",
    }


#: The views in place of version 4's tables, in the order of :data:`GAME_TABLES`.
TABLE_VIEWS = GAME_TABLES


def view_sql(source: Callable[[str], str] = str) -> dict[str, str]:
    """``CREATE OR REPLACE VIEW`` of every view, by name, in the order they must be created.

    ``source(name)`` is how the SQL reads the narrow table ``name`` (one of
    :data:`NARROW_TABLES`): the table itself here, or e.g. ``delta_scan('…')``
    for the same tables kept elsewhere.
    """
    tables = {t: source(t) for t in NARROW_TABLES}
    sql = {**_table_views(), **_PLAYER_VIEW_SQL}
    return {name: f"CREATE OR REPLACE VIEW {name} AS{body.format(**tables)}" for name, body in sql.items()}


#: The double-dummy tables (schema version 3; ``dd_deal_sides`` version 6), derived from a game's
#: rows and deleted with them.
DD_TABLES = ("dd_deals", "dd_plays", "dd_deal_sides")

#: The player views (over the views above; the games' own columns from ``g_games``).
#: Each view keeps one ruleset per figure: ``ruleset`` and ``options`` are columns, and
#: ``player_summary`` has one row per player, ruleset and options.
_PLAYER_VIEW_SQL: dict[str, str] = {
    "player_games": """
WITH seats AS (
    SELECT game_id, 'N' AS seat, player_n AS player, player_s AS partner, 'NS' AS team FROM {g_games} WHERE valid
    UNION ALL
    SELECT game_id, 'E', player_e, player_w, 'EW' FROM {g_games} WHERE valid
    UNION ALL
    SELECT game_id, 'S', player_s, player_n, 'NS' FROM {g_games} WHERE valid
    UNION ALL
    SELECT game_id, 'W', player_w, player_e, 'EW' FROM {g_games} WHERE valid
),
sided AS (
    SELECT s.*, CASE WHEN list_contains(string_split(g.options, ','), 'no_partnerships')
                     THEN s.seat ELSE s.team END AS side
    FROM seats s JOIN {g_games} g ON g.game_id = s.game_id
)
SELECT
    g.game_id,
    g.event,
    g.played_at,
    s.player,
    s.seat,
    CASE WHEN s.side = s.seat THEN NULL ELSE s.partner END AS partner,
    s.side AS team,
    g.complete,
    g.scored_deals,
    ts.score AS team_score,
    os.score AS opp_score,
    g.winner = s.side AS won,
    g.winner = 'tie' AS tied,
    g.ruleset,
    g.options
FROM sided s
JOIN {g_games} g ON g.game_id = s.game_id
LEFT JOIN game_sides ts ON ts.game_id = s.game_id AND ts.side = s.side
LEFT JOIN game_sides os ON os.game_id = s.game_id
    AND os.side = CASE s.side WHEN 'NS' THEN 'EW' WHEN 'EW' THEN 'NS' END""",
    "player_summary": """
WITH pd AS (
    SELECT
        player,
        ruleset,
        options,
        count(*) AS deals,
        count(*) FILTER (WHERE accuracy) AS numeric_bids,
        count(*) FILTER (WHERE accuracy AND tricks_won = bid_value) AS exact_bids,
        avg(abs(tricks_won - bid_value)) FILTER (WHERE accuracy) AS mean_abs_error,
        avg(tricks_won - bid_value) FILTER (WHERE accuracy) AS mean_signed_error,
        count(*) FILTER (WHERE bid_kind = 'board') AS boards_claimed,
        count(*) FILTER (WHERE bid_kind = 'board' AND team_made) AS boards_made,
        avg(team_made::INTEGER) AS team_made_rate,
        avg(team_points) AS points_per_deal,
        count(*) FILTER (WHERE bid_kind = 'declaration') AS declarations,
        count(*) FILTER (WHERE bid_kind = 'declaration' AND team_made) AS declarations_made,
        count(*) FILTER (WHERE ruleset = 'pereulok' AND leads_first) AS auctions_won
    FROM (
        SELECT *, bid_kind IN ('number', 'pass') AND ruleset <> 'pereulok' AS accuracy FROM player_deals
    )
    GROUP BY player, ruleset, options
),
pg AS (
    SELECT
        player,
        ruleset,
        options,
        count(*) AS games,
        count(*) FILTER (WHERE complete) AS complete_games,
        count(*) FILTER (WHERE complete AND won) AS games_won
    FROM player_games
    GROUP BY player, ruleset, options
)
SELECT
    pg.player,
    pg.games,
    coalesce(pd.deals, 0) AS deals,
    coalesce(pd.numeric_bids, 0) AS numeric_bids,
    coalesce(pd.exact_bids, 0) AS exact_bids,
    pd.exact_bids / nullif(pd.numeric_bids, 0) AS exact_rate,
    pd.mean_abs_error,
    pd.mean_signed_error,
    coalesce(pd.boards_claimed, 0) AS boards_claimed,
    coalesce(pd.boards_made, 0) AS boards_made,
    pd.boards_made / nullif(pd.boards_claimed, 0) AS board_success_rate,
    pd.team_made_rate,
    pd.points_per_deal,
    pg.games_won,
    pg.complete_games,
    pg.ruleset,
    pg.options,
    coalesce(pd.declarations, 0) AS declarations,
    coalesce(pd.declarations_made, 0) AS declarations_made,
    coalesce(pd.auctions_won, 0) AS auctions_won
FROM pg
LEFT JOIN pd ON pd.player = pg.player AND pd.ruleset IS NOT DISTINCT FROM pg.ruleset AND pd.options = pg.options""",
}

#: Every view's DDL, in creation order (the views over the narrow tables, then the player views).
VIEW_DDL: dict[str, str] = view_sql()


#: ``MIGRATIONS[v]`` turns a database at schema version ``v`` into version ``v + 1``
#: (inside the same transaction as the version bump).  Views are recreated after any migration.
def _add_api_tokens(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(TABLE_DDL["api_tokens"])


def _add_dd_tables(con: duckdb.DuckDBPyConnection) -> None:
    """Version 2 -> 3: the double-dummy tables."""
    for t in DD_TABLES:
        con.execute(TABLE_DDL[t].replace("CREATE TABLE", "CREATE TABLE IF NOT EXISTS", 1))


#: Version 3 -> 4, step by step: the ruleset and options of every game, nullable columns for
#: what other rulesets lack or add, and the per-side tables filled from the teams' columns.
_RULESET_STEPS = (
    "ALTER TABLE games ADD COLUMN options VARCHAR NOT NULL DEFAULT ''",
    # Before version 4 every stored game was checked as a standard game, but for a format-2 record
    # that failed the schema (stored with its SCHEMA violations): that one keeps a ruleset it names.
    """UPDATE games SET ruleset = CASE
        WHEN format_version IS DISTINCT FROM 2 THEN 'standard'
        WHEN ruleset IN ('standard', 'pereulok', 'bab-online') THEN ruleset END""",
    "ALTER TABLE deals ALTER COLUMN trump_card DROP NOT NULL",
    "ALTER TABLE deals ALTER COLUMN tricks_ns DROP NOT NULL",
    "ALTER TABLE deals ALTER COLUMN tricks_ew DROP NOT NULL",
    "ALTER TABLE bids ADD COLUMN multiplier INTEGER",
    "ALTER TABLE bids ADD COLUMN side VARCHAR",
    "ALTER TABLE bids ADD COLUMN rainbow BOOLEAN",
    "UPDATE bids SET multiplier = board_level, side = CASE WHEN seat IN ('N', 'S') THEN 'NS' ELSE 'EW' END",
    SIDE_TABLE_DDL["game_sides"],
    SIDE_TABLE_DDL["deal_sides"],
    """INSERT INTO game_sides
    SELECT game_id, side, score, recorded FROM (
        SELECT game_id, 'NS' AS side, score_ns AS score, recorded_score_ns AS recorded, 0 AS k FROM games
        WHERE schema_ok
        UNION ALL
        SELECT game_id, 'EW', score_ew, recorded_score_ew, 1 FROM games WHERE schema_ok
    ) ORDER BY game_id, k""",
    """INSERT INTO deal_sides
    SELECT game_id, deal, side, kind, contract, mult, level, tricks, points, made, rt, rp FROM (
        SELECT game_id, deal, 'NS' AS side, ns_contract_kind AS kind,
               CASE ns_contract_kind WHEN 'board' THEN hand_size ELSE ns_contract END AS contract,
               CASE ns_contract_kind WHEN 'board' THEN ns_board_level WHEN 'number' THEN 1 END AS mult,
               ns_board_level AS level, tricks_ns AS tricks, points_ns AS points, ns_made AS made,
               recorded_tricks_ns AS rt, recorded_points_ns AS rp, 0 AS k
        FROM deals
        UNION ALL
        SELECT game_id, deal, 'EW', ew_contract_kind,
               CASE ew_contract_kind WHEN 'board' THEN hand_size ELSE ew_contract END,
               CASE ew_contract_kind WHEN 'board' THEN ew_board_level WHEN 'number' THEN 1 END,
               ew_board_level, tricks_ew, points_ew, ew_made, recorded_tricks_ew, recorded_points_ew, 1
        FROM deals
    ) ORDER BY game_id, deal, k""",
)


def _add_rulesets(con: duckdb.DuckDBPyConnection) -> None:
    """Version 3 -> 4: rulesets (see :data:`_RULESET_STEPS`); the views are recreated after it.

    A database already in the version-4 shape (``games.options`` exists) is left as it is.
    """
    columns = con.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_schema = 'main' "
        "AND table_catalog = current_database() AND table_name = 'games'"
    ).fetchall()
    if ("options",) in columns:
        return
    for view in VIEWS:  # the views read columns this changes
        con.execute(f"DROP VIEW IF EXISTS {view}")
    for step in _RULESET_STEPS:
        con.execute(step)


def _code(codes: Sequence[object], expr: str) -> str:
    """The code (0-based position in ``codes``) of the name ``expr``; NULL for NULL."""
    return f"CAST(list_position({_lit(codes)}, {expr}) - 1 AS TINYINT)"


def _suit_code(expr: str) -> str:
    """A suit letter's code; NULL (no suit) is :data:`~backalley.cards.NO_TRUMP`."""
    return f"coalesce({_code(SUITS, expr)}, {NO_TRUMP})"


def _plays_pivot() -> str:
    """Version 4's ``plays``, four rows a trick, as one row a trick: the cards and the trump bitmask."""
    cards = ", ".join(
        f"max(CASE WHEN position = {k} THEN {_code(CARD_CODES, 'card')} END) AS card{k}" for k in range(1, 5)
    )
    return (
        "SELECT game_id, deal, trick, "
        "CAST(sum(CASE WHEN is_trump THEN 1 << (position - 1) ELSE 0 END) AS TINYINT) AS trumps, "
        f"{cards} FROM plays WHERE game_id IN (SELECT game_id FROM g_games WHERE game_key >= $lo AND game_key < $hi) "
        "GROUP BY game_id, deal, trick"
    )


#: Version 4 -> 5: ``games`` copied into ``g_games`` (the key from the row's place in the table,
#: so in the order the games were stored; the raw text compressed) ...
_NARROW_GAMES = """INSERT INTO g_games
    SELECT CAST(rowid + 1 AS INTEGER), game_id, content_hash, source, line,
        run_id, ingested_at, format_version, ruleset, played_at, event, player_n, player_e, player_s,
        player_w, valid, complete, status, schema_ok, dealings, scored_deals, pass_outs, errors,
        warnings, score_ns, score_ew, recorded_score_ns, recorded_score_ew, winner, options,
        backalley_zstd(raw)
    FROM games"""
#: ... then every other version-4 table into its narrow table, a batch of games at a time (the
#: games with keys in ``[$lo, $hi)``: the memory of a step stays that of a batch), and dropped.
_NARROW_STEPS = (
    f"""INSERT INTO g_deals
    SELECT k.game_key, d.deal, d.number, d.hand_size, {_code(SEAT_CODES, "d.dealer")},
        {_code(CARD_CODES, "d.trump_card")},
        CASE WHEN d.no_trump THEN {NO_TRUMP} ELSE {_suit_code("d.trump_suit")} END,
        {_code(SEAT_CODES, "d.joker_swap_seat")}, {_code(CARD_CODES, "d.joker_swap_drawn")},
        d.pass_out, {_code(SEAT_CODES, "d.opening_leader")}, d.won_n, d.won_e, d.won_s, d.won_w
    FROM deals d JOIN g_games k ON k.game_id = d.game_id WHERE k.game_key >= $lo AND k.game_key < $hi""",
    f"""INSERT INTO g_bids
    SELECT k.game_key, b.deal, b.position, {_code(SEAT_CODES, "b.seat")}, {_code(BID_KINDS, "b.kind")},
        b.value, b.board_level, b.multiplier, {_code(SIDE_NAMES, "b.side")}, b.rainbow
    FROM bids b JOIN g_games k ON k.game_id = b.game_id WHERE k.game_key >= $lo AND k.game_key < $hi""",
    f"""INSERT INTO g_tricks
    SELECT k.game_key, t.deal, t.trick, {_code(SEAT_CODES, "t.leader")}, {_code(SEAT_CODES, "t.winner")},
        {_suit_code("t.led_suit")}, p.trumps, t.trump_broken_before, p.card1, p.card2, p.card3, p.card4
    FROM tricks t
    JOIN g_games k ON k.game_id = t.game_id
    JOIN ({_plays_pivot()}) p ON p.game_id = t.game_id AND p.deal = t.deal AND p.trick = t.trick
    WHERE k.game_key >= $lo AND k.game_key < $hi""",
    """INSERT INTO g_violations
    SELECT k.game_key, v.ordinal, v.code, v.severity, v.message, v.path, v.deal, v.trick, v.seat
    FROM violations v JOIN g_games k ON k.game_id = v.game_id WHERE k.game_key >= $lo AND k.game_key < $hi""",
    f"""INSERT INTO g_game_sides
    SELECT k.game_key, {_code(SIDE_NAMES, "s.side")}, s.score, s.recorded_score
    FROM game_sides s JOIN g_games k ON k.game_id = s.game_id WHERE k.game_key >= $lo AND k.game_key < $hi""",
    f"""INSERT INTO g_deal_sides
    SELECT k.game_key, s.deal, {_code(SIDE_NAMES, "s.side")}, {_code(CONTRACT_KINDS, "s.contract_kind")},
        s.contract, s.multiplier, s.board_level, s.tricks, s.points, s.made, s.recorded_tricks, s.recorded_points
    FROM deal_sides s JOIN g_games k ON k.game_id = s.game_id WHERE k.game_key >= $lo AND k.game_key < $hi""",
)


#: Games per batch of the 4 -> 5 migration.
MIGRATION_BATCH = 5_000


def _narrow(con: duckdb.DuckDBPyConnection) -> None:
    """Version 4 -> 5: the narrow tables (see :data:`_NARROW_STEPS`); the views are created after it.

    A database already in the version-5 shape (``g_games`` exists) is left as it is.
    """
    if "g_games" in _table_names(con):
        return
    for view in VIEWS:  # they read the tables this drops
        con.execute(f"DROP VIEW IF EXISTS {view}")
    register_functions(con)
    for t in NARROW_TABLES:
        con.execute(NARROW_DDL[t])
    con.execute(RAW_FALLBACK_DDL)
    con.execute(_NARROW_GAMES)
    last = int(con.execute("SELECT coalesce(max(game_key), 0) FROM g_games").fetchall()[0][0])
    for lo in range(1, last + 1, MIGRATION_BATCH):
        for step in _NARROW_STEPS:
            con.execute(step, {"lo": lo, "hi": lo + MIGRATION_BATCH})
    for t in GAME_TABLES:
        con.execute(f"DROP TABLE {t}")


#: Version 5 -> 6: every side's double-dummy figures.  A partnership game's rows are kept (its
#: sides' figures follow from the team columns); a game without partnerships had N+S and E+W
#: pair values, which mean nothing there: its rows are deleted, and ``analyze`` solves it again.
_DD_SIDE_STEPS = (
    TABLE_DDL["dd_deal_sides"].replace("CREATE TABLE", "CREATE TABLE IF NOT EXISTS", 1),
    "ALTER TABLE dd_plays ALTER COLUMN value_ns_before DROP NOT NULL",
    "ALTER TABLE dd_plays ALTER COLUMN value_ns_after DROP NOT NULL",
    # (a file migrated from before version 3 got the tables in this shape already)
    "ALTER TABLE dd_plays ADD COLUMN IF NOT EXISTS value_before INTEGER",
    "ALTER TABLE dd_plays ADD COLUMN IF NOT EXISTS value_after INTEGER",
    """CREATE TEMP TABLE solo AS SELECT game_id FROM g_games
    WHERE list_contains(string_split(options, ','), 'no_partnerships')""",
    "DELETE FROM dd_plays WHERE game_id IN (SELECT game_id FROM temp.solo)",
    "DELETE FROM dd_deals WHERE game_id IN (SELECT game_id FROM temp.solo)",
    "DROP TABLE temp.solo",
    """UPDATE dd_plays p SET
        value_before = CASE WHEN p.seat IN ('N', 'S') THEN p.value_ns_before ELSE d.hand_size - p.value_ns_before END,
        value_after = CASE WHEN p.seat IN ('N', 'S') THEN p.value_ns_after ELSE d.hand_size - p.value_ns_after END
    FROM dd_deals d WHERE d.game_id = p.game_id AND d.deal = p.deal""",
    """INSERT INTO dd_deal_sides
    SELECT game_id, deal, 'NS', dd_ns, cost_ns FROM dd_deals WHERE analysed
    UNION ALL
    SELECT game_id, deal, 'EW', dd_ew, cost_ew FROM dd_deals WHERE analysed""",
)


def _dd_sides(con: duckdb.DuckDBPyConnection) -> None:
    """Version 5 -> 6: see :data:`_DD_SIDE_STEPS`."""
    for step in _DD_SIDE_STEPS:
        con.execute(step)


#: Version 6 -> 7: ``dd_deals.reason`` (why a deal has no values), and the values of the rulesets the
#: solver used to play by another trump-lead rule than the replay's (before version 7 it let the board
#: claimers lead trump unbroken, where ``pereulok`` lets every seat and ``bab-online`` no seat) are
#: deleted: their deals count as not analysed, and the next ``analyze`` solves them again.
_REDO_DD_STEPS = (
    "ALTER TABLE dd_deals ADD COLUMN IF NOT EXISTS reason VARCHAR",
    # (before version 7 a deal was left unanalysed only for a rule violation; the text is analyze's)
    "UPDATE dd_deals SET reason = 'the deal breaks a rule of play' WHERE NOT analysed AND reason IS NULL",
    "CREATE TEMP TABLE redo AS SELECT game_id FROM g_games WHERE ruleset IN ('pereulok', 'bab-online')",
    *(f"DELETE FROM {t} WHERE game_id IN (SELECT game_id FROM temp.redo)" for t in DD_TABLES),
    "DROP TABLE temp.redo",
)


def _redo_dd(con: duckdb.DuckDBPyConnection) -> None:
    """Version 6 -> 7: see :data:`_REDO_DD_STEPS`."""
    for step in _REDO_DD_STEPS:
        con.execute(step)


MIGRATIONS: dict[int, Callable[[duckdb.DuckDBPyConnection], None]] = {
    1: _add_api_tokens,
    2: _add_dd_tables,
    3: _add_rulesets,
    4: _narrow,
    5: _dd_sides,
    6: _redo_dd,
}


def _raw_udf(fn: Callable[[Any], Any], out: pa.DataType) -> Callable[[Any], pa.Array]:
    """An Arrow UDF applying ``fn`` to each non-NULL value."""

    def udf(col: Any) -> pa.Array:
        return pa.array([None if v is None else fn(v) for v in col.to_pylist()], out)

    return udf


def _compress_text(text: str) -> bytes:
    return raw_codec.compress(text.encode("utf-8"))


#: backalley's SQL functions: name, Python function, argument type, result type (SQL, Arrow).
_FUNCTIONS: tuple[tuple[str, Callable[[Any], Any], str, str, pa.DataType], ...] = (
    ("backalley_raw_text", raw_codec.text, "BLOB", "VARCHAR", pa.string()),
    ("backalley_raw_bytes", raw_codec.decompress, "BLOB", "BLOB", pa.binary()),
    ("backalley_zstd", _compress_text, "VARCHAR", "BLOB", pa.binary()),
)


def register_functions(con: duckdb.DuckDBPyConnection) -> None:
    """backalley's SQL functions on ``con`` (and its cursors): ``backalley_raw(raw_zstd)`` is the raw text.

    ``backalley_raw_bytes(raw_zstd)`` gives the exact bytes. The Python functions
    belong to the database instance, the ``backalley_raw`` macro to the
    connection: a cursor needs :func:`register_macro` (this call does both).
    """
    for name, fn, arg, ret, arrow in _FUNCTIONS:
        if not _has_function(con, name, arg):
            # "arrow" (a string: DuckDB 1.x and 2.x name the enum in different modules): a batch a call.
            con.create_function(  # type: ignore[call-overload]
                name, _raw_udf(fn, arrow), [duckdb.sqltype(arg)], duckdb.sqltype(ret), type="arrow", side_effects=False
            )
    register_macro(con)


def register_macro(con: duckdb.DuckDBPyConnection) -> None:
    """The ``backalley_raw`` macro on ``con``, a cursor of a connection that has the functions."""
    con.execute(f"CREATE OR REPLACE TEMP MACRO {RAW_FUNCTION}(b) AS backalley_raw_text(b)")


def _has_function(con: duckdb.DuckDBPyConnection, name: str, arg: str) -> bool:
    """Whether the database instance has the function (binding a query that runs nothing).

    Asking ``duckdb_functions()`` lists every function DuckDB has and costs some
    20 ms; binding one call costs a third of a millisecond. A bind that fails ends an
    open transaction, so call it outside one or on a connection that has the
    functions (the migrations run on a connection :func:`_connect` registered).
    """
    try:
        con.execute(f"SELECT {name}(NULL::{arg}) LIMIT 0")
    except duckdb.CatalogException:
        return False
    return True


def _create_schema(con: duckdb.DuckDBPyConnection) -> None:
    for ddl in TABLE_DDL.values():
        con.execute(ddl)
    con.execute(RAW_FALLBACK_DDL)
    _create_views(con)
    con.execute("INSERT INTO meta VALUES ('schema_version', ?), ('created_by', 'backalley')", [str(SCHEMA_VERSION)])


def _create_views(con: duckdb.DuckDBPyConnection) -> None:
    for ddl in VIEW_DDL.values():
        con.execute(ddl)


def _table_names(con: duckdb.DuckDBPyConnection) -> set[str]:
    rows = con.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' AND table_catalog = current_database()"
    ).fetchall()
    return {r[0] for r in rows}


def _read_version(con: duckdb.DuckDBPyConnection, path: str) -> int | None:
    """The file's schema version; ``None`` for an empty database; raises for a foreign one."""
    names = _table_names(con)
    if not names:
        return None
    if "meta" not in names:
        raise NotAStoreError(f"{path}: not a backalley database (it has tables but no 'meta' table)")
    rows = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchall()
    row = rows[0] if rows else None
    if row is None:
        raise NotAStoreError(f"{path}: not a backalley database (no schema_version in 'meta')")
    try:
        return int(row[0])
    except ValueError:
        raise SchemaVersionError(f"{path}: unreadable schema version {row[0]!r}") from None


def quiet(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """``con`` without DuckDB's own progress bar, which is on by default in Python for any query
    over 2 s and writes to standard output: into ``query --format csv`` output, or a report's.

    (A session setting: it cannot be given to ``duckdb.connect``; cursors inherit it.)
    """
    con.execute("SET enable_progress_bar = false")
    return con


def _connect(path: Path, read_only: bool, config: dict[str, Any] | None = None) -> duckdb.DuckDBPyConnection:
    try:
        con = quiet(duckdb.connect(str(path), read_only=read_only, config=config or {}))
    except duckdb.IOException as exc:
        text = str(exc)
        if "lock" in text.lower():
            raise StoreLockedError(
                f"{path}: database is in use by another process (DuckDB allows one writer per file; "
                "wait for it to finish)"
            ) from None
        if "not a valid DuckDB database" in text or "database file" in text:
            raise NotAStoreError(f"{path}: not a DuckDB database file") from None
        raise StoreError(f"{path}: cannot open: {text.splitlines()[0]}") from None
    except duckdb.Error as exc:
        raise StoreError(f"{path}: cannot open: {str(exc).splitlines()[0]}") from None
    try:
        register_functions(con)
    except BaseException:
        con.close()
        raise
    return con


def connect(
    path: Path | str, *, read_only: bool = True, config: dict[str, Any] | None = None
) -> duckdb.DuckDBPyConnection:
    """A plain DuckDB connection to a database, with backalley's SQL functions (:func:`register_functions`).

    Raises :class:`StoreLockedError` when another process writes the database, and
    :class:`StoreError` when it cannot be opened.
    """
    return _connect(Path(path), read_only, config)


def check_readable(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """Raise :class:`StoreError` unless ``con`` holds a backalley database of the schema version this tool reads.

    ``query``, ``export`` and ``report`` all read through this check.
    """
    try:
        version = _read_version(con, str(path))
    except duckdb.Error as exc:
        raise NotAStoreError(f"{path}: cannot read the database: {one_line(exc)}") from None
    if version is None:
        raise NotAStoreError(f"{path}: empty database (run `backalley ingest` first)")
    if version != SCHEMA_VERSION:
        newer = version > SCHEMA_VERSION
        raise SchemaVersionError(
            f"{path}: schema version {version}, this tool reads version {SCHEMA_VERSION}; "
            + (
                "upgrade backalley to read it"
                if newer
                else "open it once for writing (e.g. `backalley ingest`) to migrate it"
            )
        )


#: ``meta`` key naming a folder of Parquet files the views read (a lake attached by
#: ``backalley attach``): reading it stays allowed when all other file access is not.
LAKE_KEY = "lake"


def _lock_down(con: duckdb.DuckDBPyConnection) -> None:
    """No file access but to an attached lake's folder (``meta`` key :data:`LAKE_KEY`); the settings locked."""
    try:
        dirs = [str(r[0]) for r in con.execute("SELECT value FROM meta WHERE key = ?", [LAKE_KEY]).fetchall()]
    except duckdb.Error:  # not a backalley database: check_readable says so
        dirs = []
    if dirs:
        con.execute("SET allowed_directories = ?", [dirs])
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")


def create_views(con: duckdb.DuckDBPyConnection) -> None:
    """(Re)create every view of the schema over the tables (or views standing for them) in ``con``."""
    _create_views(con)


class Store:
    """One open database (see the module docstring)."""

    def __init__(self, con: duckdb.DuckDBPyConnection, path: Path, read_only: bool) -> None:
        self.con = con
        self.path = path
        self.read_only = read_only
        self._in_tx = False

    # -- opening -------------------------------------------------------------------------

    @classmethod
    def open(cls, path: Path | str | None = None, *, memory_limit: str = WRITE_MEMORY_LIMIT) -> Store:
        """Open for writing: create the schema in a new file, migrate an older one, refuse a newer one.

        ``memory_limit`` caps DuckDB's buffer memory (it spills to ``<db>.tmp``
        beyond it), so a long ingest stays within a fixed footprint.
        """
        p = Path(path) if path is not None else default_db()
        if p.parent and not p.parent.exists():
            try:
                p.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"{p}: cannot create its folder: {exc.strerror or exc}") from None
        con = _connect(p, read_only=False, config={"memory_limit": memory_limit})
        try:
            store = cls(con, p, read_only=False)
            store._prepare()
        except BaseException:
            con.close()
            raise
        return store

    @classmethod
    def memory(cls, *, memory_limit: str = WRITE_MEMORY_LIMIT) -> Store:
        """A new, empty database in memory with the current schema and backalley's functions.

        Each call is a database of its own (DuckDB's ``:memory:``), gone when it is closed: the
        service reads what its pages show of games it has just stored from a copy of their rows
        in one, so that the pages are computed by the same views as from the file.
        """
        con = _connect(Path(":memory:"), read_only=False, config={"memory_limit": memory_limit})
        store = cls(con, Path(":memory:"), read_only=False)
        with store.atomic():
            _create_schema(con)
        return store

    @classmethod
    def open_readonly(
        cls, path: Path | str | None = None, *, external_access: bool = False, memory_limit: str | None = None
    ) -> Store:
        """Open an existing database for reading only.

        Without ``external_access`` the connection cannot touch any file either
        (no ``COPY ... TO``, ``ATTACH``, ``read_csv``, extension installs), and
        that setting is locked.  ``memory_limit`` caps DuckDB's memory (locked too).
        """
        p = Path(path) if path is not None else default_db()
        if not p.exists():
            raise StoreError(f"{p}: no such database (run `backalley ingest` first)")
        config: dict[str, Any] = {}
        if memory_limit is not None:
            config["memory_limit"] = memory_limit
        con = _connect(p, read_only=True, config=config)
        try:
            if not external_access:
                _lock_down(con)
            check_readable(con, p)
        except BaseException:
            con.close()
            raise
        return cls(con, p, read_only=True)

    def _prepare(self) -> None:
        version = _read_version(self.con, str(self.path))
        if version is None:
            with self.atomic():
                _create_schema(self.con)
            return
        if version > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"{self.path}: schema version {version} was written by a newer backalley "
                f"(this one knows versions up to {SCHEMA_VERSION}); upgrade backalley to use it"
            )
        if version < SCHEMA_VERSION:
            self.migrate(version)

    def migrate(self, version: int) -> None:
        """Bring a database at ``version`` up to :data:`SCHEMA_VERSION`, all in one transaction."""
        with self.atomic():
            v = version
            while v < SCHEMA_VERSION:
                step = MIGRATIONS.get(v)
                if step is None:
                    raise SchemaVersionError(
                        f"{self.path}: schema version {v} cannot be migrated to {SCHEMA_VERSION} "
                        "(no migration is known from it)"
                    )
                step(self.con)
                v += 1
            _create_views(self.con)
            self.con.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", [str(v)])

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing -------------------------------------------------------------------------------

    @contextmanager
    def atomic(self) -> Iterator[None]:
        """A transaction: everything inside commits together or not at all (nesting joins the outer one)."""
        if self._in_tx:
            yield
            return
        self.con.begin()
        self._in_tx = True
        try:
            yield
        except BaseException:
            self._in_tx = False
            self.con.rollback()
            raise
        self._in_tx = False
        self.con.commit()

    def insert_batch(self, table: str, data: pa.Table | pl.DataFrame) -> int:
        """Insert the rows of an Arrow table or polars frame (columns matched by name); returns the row count."""
        if table not in TABLE_DDL:
            raise StoreError(f"unknown table {table!r}")
        arrow = data if isinstance(data, pa.Table) else data.to_arrow()
        if arrow.num_rows == 0:
            return 0
        # DuckDB scans the local variable by name (a replacement scan).  Unlike a registered
        # view, which the transaction keeps (and the Arrow table with it) until it commits,
        # nothing holds the table once the statement has run.
        _batch = arrow  # read by name in the SQL below
        self.con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM _batch")
        return int(arrow.num_rows)

    def delete_games(self, game_ids: Sequence[str]) -> None:
        """Remove every row of these games from every per-game table."""
        if not game_ids:
            return
        ids = [list(game_ids)]
        keys = "SELECT game_key FROM g_games WHERE game_id IN (SELECT unnest(?::VARCHAR[]))"
        for t in NARROW_TABLES[1:]:
            self.con.execute(f"DELETE FROM {t} WHERE game_key IN ({keys})", ids)
        for t in (*DD_TABLES, "g_games"):
            self.con.execute(f"DELETE FROM {t} WHERE game_id IN (SELECT unnest(?::VARCHAR[]))", ids)

    # -- reading -----------------------------------------------------------------------------

    def cursor(self) -> duckdb.DuckDBPyConnection:
        """A cursor of this connection, with backalley's SQL functions (the ``raw`` of ``games`` needs them)."""
        cur = self.con.cursor()
        register_macro(cur)  # the functions belong to the database instance: registered when it was opened
        return cur

    def raw(self, game_id: str) -> bytes:
        """The exact bytes a stored game was read from; :class:`GameNotFoundError` when it is not stored."""
        rows = self.con.execute("SELECT raw_zstd FROM g_games WHERE game_id = ?", [game_id]).fetchall()
        if not rows:
            raise GameNotFoundError(f"{self.path}: no stored game has game_id {game_id!r}")
        return raw_codec.decompress(rows[0][0])

    def schema_version(self) -> int | None:
        return _read_version(self.con, str(self.path))

    def count(self, table: str) -> int:
        if table not in TABLE_DDL and table not in VIEW_DDL:
            raise StoreError(f"unknown table {table!r}")
        return int(self.con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0])

    def counts(self) -> dict[str, int]:
        """Row count of every table."""
        return {t: self.count(t) for t in TABLES}

    def query(self, sql: str, params: Mapping[str, object] | None = None) -> pa.Table:
        """Run SQL (one or more statements) and return the last statement's result as Arrow.

        See :meth:`query_reader`, which this reads to the end.
        """
        return self.query_reader(sql, params).read_all()

    def query_reader(self, sql: str, params: Mapping[str, object] | None = None) -> pa.RecordBatchReader:
        """Run SQL and return a reader over the last statement's rows (memory stays flat however many).

        ``params`` gives the values of named parameters (``$name``).  On a
        read-only store only statements that read are run: each statement's type
        is read by DuckDB's own parser (looking inside ``EXPLAIN``), and anything
        else is refused before any statement runs.  DuckDB's errors become
        :class:`QueryError` with DuckDB's whole message, hints included.
        """
        statements = _parse(sql)
        values = _bind(statements, params or {})
        if self.read_only:
            for st in statements:
                check_read_only(st)
        try:
            for st, bound in zip(statements[:-1], values[:-1], strict=True):
                earlier = self.con.sql(st.query, params=bound)
                if earlier is not None:  # it reads and changes nothing: run it for its errors only
                    earlier.to_arrow_reader(QUERY_BATCH_ROWS).close()
            last = self.con.sql(statements[-1].query, params=values[-1])
            if last is None:
                return pa.table({}).to_reader()
            reader: pa.RecordBatchReader = last.to_arrow_reader(QUERY_BATCH_ROWS)
            return reader
        except duckdb.Error as exc:
            raise QueryError(str(exc).strip()) from None


#: Statement types ``query`` runs on a read-only store (``EXPLAIN`` is checked inside).
READ_STATEMENTS = frozenset({"SELECT", "EXPLAIN", "PRAGMA"})
#: The pragmas that only read: every other one is refused on a read-only store.
READ_PRAGMAS = frozenset(
    {
        "collations",
        "database_list",
        "database_size",
        "functions",
        "metadata_info",
        "platform",
        "show",
        "show_databases",
        "show_tables",
        "show_tables_expanded",
        "storage_info",
        "table_info",
        "user_agent",
        "version",
    }
)
#: Rows per Arrow batch read from a query.
QUERY_BATCH_ROWS = 8192


def _parse(sql: str) -> list[Any]:
    try:
        statements = list(duckdb.extract_statements(sql))
    except duckdb.Error as exc:
        raise QueryError(str(exc).strip()) from None
    if not statements:
        raise QueryError("no SQL statement given")
    return statements


def _bind(statements: Sequence[Any], params: Mapping[str, object]) -> list[dict[str, object] | None]:
    """Each statement's named parameter values; every given name must be used, every used name given."""
    wanted = {name for st in statements for name in st.named_parameters}
    unused = sorted(set(params) - wanted)
    if unused:
        raise QueryError(f"parameter ${unused[0]} is given but the SQL has no ${unused[0]}")
    missing = sorted(wanted - set(params))
    if missing:
        raise QueryError(f"the SQL uses ${missing[0]} but no value was given for it")
    return [{n: params[n] for n in st.named_parameters} if st.named_parameters else None for st in statements]


def _refuse(kind: str) -> ReadOnlyQueryError:
    return ReadOnlyQueryError(
        f"read-only: {kind} statements are not allowed here "
        "(query runs on a read-only connection; use `backalley ingest` to change the database)"
    )


def check_read_only(statement: Any) -> None:
    """Raise :class:`ReadOnlyQueryError` unless DuckDB's parser says the statement only reads.

    ``EXPLAIN [ANALYZE | (options)] <stmt>`` runs ``<stmt>`` when analysing, so the
    statement inside is checked too; a pragma must be one that only reads.
    """
    kind = statement.type.name
    if kind not in READ_STATEMENTS:
        raise _refuse(kind)
    text: str = statement.query
    tokens = duckdb.tokenize(text)
    if kind == "PRAGMA":
        name = _token_text(text, tokens, 1).lower() if len(tokens) > 1 else ""
        if name not in READ_PRAGMAS:
            raise _refuse(f"PRAGMA {name}".strip())
    elif kind == "EXPLAIN":
        inner = _explained(text, tokens)
        try:
            parts = duckdb.extract_statements(inner)
        except duckdb.Error:
            raise _refuse("EXPLAIN of an unreadable") from None
        if len(parts) != 1:
            raise _refuse("EXPLAIN of an unreadable")
        check_read_only(parts[0])


def _token_text(text: str, tokens: Sequence[tuple[int, Any]], i: int) -> str:
    end = tokens[i + 1][0] if i + 1 < len(tokens) else len(text)
    return text[tokens[i][0] : end].strip()


def _explained(text: str, tokens: Sequence[tuple[int, Any]]) -> str:
    """The statement an ``EXPLAIN`` explains: after the keyword, ``ANALYZE`` and any ``( options )``."""
    i = 1
    if i < len(tokens) and _token_text(text, tokens, i).upper() in ("ANALYZE", "ANALYSE"):
        i += 1
    if i < len(tokens) and _token_text(text, tokens, i) == "(":
        depth = 0
        while i < len(tokens):
            tok = _token_text(text, tokens, i)
            depth += tok.count("(") - tok.count(")")
            i += 1
            if depth <= 0:
                break
    return text[tokens[i][0] :] if i < len(tokens) else ""


def one_line(exc: BaseException) -> str:
    """The first line of an error's message (DuckDB's run on with hints and links)."""
    text = str(exc).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    return first


# --- export -----------------------------------------------------------------------------------

#: Rows per Parquet file to aim at, per table (games carry the raw text, so fewer).
ROWS_PER_FILE = {"games": 20_000}
DEFAULT_ROWS_PER_FILE = 2_000_000
#: Tables written as ``DIR/<table>/game_bucket=<k>/…`` (partitioned by a hash of ``game_id``).
PARTITIONED = frozenset(GAME_TABLES)


def _buckets(rows: int, per_file: int) -> int:
    n = max(1, math.ceil(rows / per_file))
    return 1 << (n - 1).bit_length()


def read_raw(db: Path | str | None, game_id: str) -> bytes:
    """The exact bytes a stored game was read from (``backalley raw``)."""
    with Store.open_readonly(db) as store:
        return store.raw(game_id)


def export(store: Store, out_dir: Path, *, force: bool = False) -> dict[str, Any]:
    """Write every table as Parquet under ``out_dir`` and a ``manifest.json``; returns the manifest.

    The per-game tables are partitioned by ``game_bucket`` = ``hash(game_id) % k``
    (hive style, ``game_bucket=<k>`` folders), with ``k`` a power of two chosen
    from the row count so that files stay moderate; a game's rows land in the
    same bucket in every table.  ``rejects`` and ``ingest_runs`` are single files.

    The export is written into a temporary folder beside ``out_dir`` and renamed
    into place at the end, so a failure leaves ``out_dir`` as it was.  A folder
    that is not empty is only replaced with ``force``, and only when it holds an
    earlier export and nothing else (:func:`check_earlier_export`).
    """
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise StoreError(f"{out_dir}: not a folder")
    earlier = out_dir.is_dir() and any(out_dir.iterdir())
    if earlier:
        if not force:
            raise StoreError(f"{out_dir}: not empty (use --force to replace an earlier export)")
        check_earlier_export(out_dir)
    from backalley.store.outputs import protected  # it reads what this module defines

    protected(store.path, store.con).check_tree(out_dir, "export to")
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    for left in out_dir.parent.glob(f".{glob.escape(out_dir.name)}.*-*"):  # what a killed export left
        if left.name.startswith((f".{out_dir.name}.partial-", f".{out_dir.name}.old-")) and not left.is_symlink():
            shutil.rmtree(left, ignore_errors=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.partial-", dir=out_dir.parent))
    try:
        manifest = _write_export(store, tmp)
        _swap_in(tmp, out_dir, earlier)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return manifest


def check_earlier_export(out_dir: Path) -> None:
    """Raise :class:`StoreError` unless ``out_dir`` holds an export and nothing else.

    An export is its ``manifest.json`` and a folder of Parquet files per table
    named in it (``game_bucket=<k>`` sub-folders in the partitioned ones).
    """
    manifest = out_dir / "manifest.json"
    try:
        tables = json.loads(manifest.read_text(encoding="utf-8"))["tables"]
        if not isinstance(tables, dict):
            raise TypeError
    except (OSError, ValueError, KeyError, TypeError):
        raise StoreError(
            f"{out_dir}: not an earlier export (no readable manifest.json); --force only replaces an export"
        ) from None
    for entry in out_dir.iterdir():
        if entry.name == "manifest.json":
            continue
        if entry.name not in tables or entry.is_symlink() or not entry.is_dir():
            raise StoreError(f"{entry}: not written by an export; refusing to replace {out_dir}")
        for root, dirs, files in os.walk(entry):
            for name in dirs:
                if not (Path(root) == entry and name.startswith("game_bucket=")) or os.path.islink(
                    os.path.join(root, name)
                ):
                    raise StoreError(f"{Path(root) / name}: not written by an export; refusing to replace {out_dir}")
            for name in files:
                path = Path(root) / name
                if not name.endswith(".parquet") or path.is_symlink():
                    raise StoreError(f"{path}: not written by an export; refusing to replace {out_dir}")


def _swap_in(tmp: Path, out_dir: Path, earlier: bool) -> None:
    """Rename the finished export ``tmp`` to ``out_dir``; the earlier export goes only once the new one is in."""
    umask = os.umask(0)
    os.umask(umask)
    tmp.chmod(0o777 & ~umask)  # mkdtemp made it private
    if not earlier:
        os.replace(tmp, out_dir)  # out_dir is missing or an empty folder
        return
    old = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.old-", dir=out_dir.parent))
    os.replace(out_dir, old / "export")
    try:
        os.replace(tmp, out_dir)
    except BaseException:
        os.replace(old / "export", out_dir)
        old.rmdir()
        raise
    shutil.rmtree(old, ignore_errors=True)


def _write_export(store: Store, out_dir: Path) -> dict[str, Any]:
    """Every table as Parquet, and the manifest, into the empty folder ``out_dir``."""
    manifest: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "tables": {}}
    for t in TABLES:
        rows = store.count(t)
        target = out_dir / t
        target.mkdir(parents=True, exist_ok=True)
        quoted = str(target).replace("'", "''")
        try:
            if t in PARTITIONED and rows == 0:
                # No rows, no partitions: one empty file keeps the table and its columns readable.
                (target / "game_bucket=0").mkdir()
                store.con.execute(f"COPY {t} TO '{quoted}/game_bucket=0/data_0.parquet' (FORMAT parquet)")
                manifest["tables"][t] = {"rows": 0, "partition_by": "game_bucket", "buckets": 1}
            elif t in PARTITIONED:
                k = _buckets(rows, ROWS_PER_FILE.get(t, DEFAULT_ROWS_PER_FILE))
                store.con.execute(
                    f"COPY (SELECT *, (hash(game_id) % {k})::INTEGER AS game_bucket FROM {t}) "
                    f"TO '{quoted}' (FORMAT parquet, PARTITION_BY (game_bucket), OVERWRITE_OR_IGNORE true)"
                )
                manifest["tables"][t] = {"rows": rows, "partition_by": "game_bucket", "buckets": k}
            else:
                store.con.execute(f"COPY {t} TO '{quoted}/{t}.parquet' (FORMAT parquet)")
                manifest["tables"][t] = {"rows": rows}
        except duckdb.Error as exc:
            raise StoreError(f"export of {t} failed: {one_line(exc)}") from None
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


__all__ = [
    "DB_ENV",
    "DD_TABLES",
    "DEFAULT_DB",
    "GAME_TABLES",
    "MIGRATIONS",
    "NARROW_DDL",
    "NARROW_TABLES",
    "RAW_FUNCTION",
    "SCHEMA_VERSION",
    "TABLES",
    "TABLE_VIEWS",
    "VIEWS",
    "VIEW_DDL",
    "GameNotFoundError",
    "NotAStoreError",
    "QueryError",
    "ReadOnlyQueryError",
    "SchemaVersionError",
    "Store",
    "StoreError",
    "StoreLockedError",
    "check_readable",
    "connect",
    "default_db",
    "export",
    "read_raw",
    "register_functions",
    "register_macro",
    "view_sql",
]

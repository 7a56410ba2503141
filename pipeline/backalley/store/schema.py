"""The store's schema: every table's DDL, the narrow base tables, the views users query and the schema version.

:mod:`backalley.store.migrations` turns an older file into this shape;
:mod:`backalley.store.database` creates it in a new one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import duckdb

from backalley.cards import NO_TRUMP
from backalley.rules import RULESETS
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

#: The schema version this tool writes.  Bump it with every DDL change and add a migration.
SCHEMA_VERSION = 9

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
    # Version 9: the ratings (backalley.analysis.ratings), one row per rated partnership (kind 'pair',
    # subject 'A & B' in sorted order) or player (kind 'player') of a ruleset and options; the whole
    # table rewritten after every ingest, by `backalley ratings` and by the service after uploads.
    "ratings": """
CREATE TABLE ratings (
    ruleset      VARCHAR NOT NULL,
    options      VARCHAR NOT NULL,
    kind         VARCHAR NOT NULL,
    subject      VARCHAR NOT NULL,
    mu           DOUBLE NOT NULL,
    sigma        DOUBLE NOT NULL,
    games        INTEGER NOT NULL,
    provisional  BOOLEAN NOT NULL,
    partners     INTEGER NOT NULL
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
    raw_zstd           BLOB NOT NULL USING COMPRESSION uncompressed,
    sheet              BOOLEAN DEFAULT false
)""",
    "g_deals": """
CREATE TABLE g_deals (
    game_key          INTEGER NOT NULL,
    deal              INTEGER NOT NULL,
    number            INTEGER NOT NULL,
    hand_size         INTEGER NOT NULL,
    dealer            TINYINT NOT NULL,
    trump_card        TINYINT,
    trump             TINYINT,
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
#: connection (:func:`backalley.store.functions.register_functions`) puts a temporary macro of the same name in front of
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
    recorded_score_ew, winner, {RAW_FUNCTION}(raw_zstd) AS raw, options, coalesce(sheet, false) AS sheet
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
    return {
        name: f"CREATE OR REPLACE VIEW {name} AS{body.format(**tables, declaring=_DECLARING, solo=_SOLO)}"
        for name, body in sql.items()
    }


def _quoted(names: list[str]) -> str:
    return ", ".join("'" + n.replace("'", "''") + "'" for n in names)


def _declaring_sql() -> str:
    """``(ruleset IN (…))``: the rulesets whose auction is one of declarations (no number to bid exactly)."""
    names = [n for n, cls in RULESETS.items() if cls.auction == "declarations"]
    return f"(ruleset IN ({_quoted(names)}))" if names else "FALSE"


def _solo_sql() -> str:
    """Whether a game's options (``g.options``) make every seat a side of its own, in SQL."""
    names = sorted({o for cls in RULESETS.values() for o in cls.known_options if len(cls((o,)).sides) == 4})
    return f"list_has_any(string_split(g.options, ','), [{_quoted(names)}])" if names else "FALSE"


#: The rulesets whose auction is one of declarations, in SQL (from the registry).
_DECLARING = _declaring_sql()
#: A game whose options make each seat a side (``no_partnerships``), in SQL (from the registry).
_SOLO = _solo_sql()


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
    SELECT s.*, CASE WHEN {solo} THEN s.seat ELSE s.team END AS side
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
        count(*) FILTER (WHERE {declaring} AND leads_first) AS auctions_won
    FROM (
        SELECT *, bid_kind IN ('number', 'pass') AND NOT {declaring} AS accuracy FROM player_deals
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


def create_views(con: duckdb.DuckDBPyConnection) -> None:
    """(Re)create every view of the schema over the tables (or views standing for them) in ``con``."""
    _create_views(con)


__all__ = [
    "DD_TABLES",
    "GAME_TABLES",
    "NARROW_DDL",
    "NARROW_TABLES",
    "RAW_FUNCTION",
    "SCHEMA_VERSION",
    "TABLES",
    "TABLE_DDL",
    "TABLE_VIEWS",
    "VIEWS",
    "VIEW_DDL",
    "create_views",
    "view_sql",
]

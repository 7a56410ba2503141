"""The migrations: each step turns a database at one schema version into the next (:data:`MIGRATIONS`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import duckdb

from backalley.cards import NO_TRUMP, SUITS
from backalley.store.functions import register_functions
from backalley.store.rows import BID_KINDS, CARD_CODES, CONTRACT_KINDS, SEAT_CODES, SIDE_NAMES
from backalley.store.schema import (
    DD_TABLES,
    GAME_TABLES,
    NARROW_DDL,
    NARROW_TABLES,
    RAW_FALLBACK_DDL,
    SIDE_TABLE_DDL,
    TABLE_DDL,
    VIEWS,
    _lit,
    _table_names,
)


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
        backalley_zstd(raw), false
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


#: Version 7 -> 8 (score sheets): which games are sheets, and the trump of a deal may be unknown
#: (a sheet holds no cards). (A database narrowed from version 4 has both already.)
_SHEET_STEPS = (
    "ALTER TABLE g_games ADD COLUMN IF NOT EXISTS sheet BOOLEAN DEFAULT false",
    "ALTER TABLE g_deals ALTER COLUMN trump DROP NOT NULL",
)


def _add_sheets(con: duckdb.DuckDBPyConnection) -> None:
    """Version 7 -> 8: see :data:`_SHEET_STEPS`."""
    for step in _SHEET_STEPS:
        con.execute(step)


def _add_ratings(con: duckdb.DuckDBPyConnection) -> None:
    """Version 8 -> 9: the ratings' table, empty (filled at the next refresh: ``ingest``, ``ratings``, the service)."""
    con.execute(TABLE_DDL["ratings"].replace("CREATE TABLE", "CREATE TABLE IF NOT EXISTS", 1))


MIGRATIONS: dict[int, Callable[[duckdb.DuckDBPyConnection], None]] = {
    1: _add_api_tokens,
    2: _add_dd_tables,
    3: _add_rulesets,
    4: _narrow,
    5: _dd_sides,
    6: _redo_dd,
    7: _add_sheets,
    8: _add_ratings,
}


__all__ = ["MIGRATIONS", "MIGRATION_BATCH"]

"""Downloads: a game's raw record (as ``backalley raw`` writes it), a game's deals and a set of games as CSV or JSON.

Every download is read with bound parameters and written by DuckDB's own writers
(:func:`backalley.service.sql.encode`, as ``backalley query`` writes its formats);
the games of a download are those the index's filters select, at most
:data:`MAX_GAMES` of them (more: 413, with the advice to narrow the filters).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pyarrow as pa

from backalley.service.listing import GAME_LIST_COLUMNS, GameFilters
from backalley.service.problems import Problem
from backalley.store import raw as raw_codec

if TYPE_CHECKING:
    import duckdb

#: The most games one download lists.
MAX_GAMES = 100_000
#: The formats of a table download and their media types.
TABLE_FORMATS = {"csv": "text/csv", "json": "application/json"}


def file_name(stem: str, suffix: str) -> str:
    """A safe file name for ``Content-Disposition``: the stem's letters, digits, ``.``, ``_`` and ``-`` only."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", stem).strip("._") or "download"
    return f"{safe[:100]}.{suffix}"


def attachment(stem: str, suffix: str) -> dict[str, str]:
    return {"Content-Disposition": f'attachment; filename="{file_name(stem, suffix)}"'}


def raw_record(cur: duckdb.DuckDBPyConnection, game_id: str) -> bytes | None:
    """The exact bytes a stored game was read from; ``None`` when it is not stored."""
    rows = cur.execute("SELECT raw_zstd FROM g_games WHERE game_id = ?", [game_id]).fetchall()
    return raw_codec.decompress(rows[0][0]) if rows else None


def game_deals(cur: duckdb.DuckDBPyConnection, game_id: str) -> pa.Table | None:
    """A stored game's rows of ``deals``, in order; ``None`` when the game is not stored."""
    if not cur.execute("SELECT count(*) FROM g_games WHERE game_id = ?", [game_id]).fetchall()[0][0]:
        return None
    table: pa.Table = cur.sql("SELECT * FROM deals WHERE game_id = ? ORDER BY deal", params=[game_id]).to_arrow_table()
    return table


def games(cur: duckdb.DuckDBPyConnection, filters: GameFilters) -> pa.Table:
    """Every game ``filters`` select (the index's columns), newest first; 413 past :data:`MAX_GAMES`."""
    conds, params = filters.where()
    where = f"WHERE {' AND '.join(conds)}" if conds else ""
    sql = (
        f"SELECT {', '.join(GAME_LIST_COLUMNS)} FROM games {where}"
        f" ORDER BY played_at DESC NULLS LAST, game_id DESC LIMIT {MAX_GAMES + 1}"
    )
    table: pa.Table = cur.sql(sql, params=params).to_arrow_table()
    if table.num_rows > MAX_GAMES:
        raise Problem(413, f"more than {MAX_GAMES:,} games: narrow the filters (a player, an event, dates)")
    return table


__all__ = ["MAX_GAMES", "TABLE_FORMATS", "attachment", "file_name", "game_deals", "games", "raw_record"]

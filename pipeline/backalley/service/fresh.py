"""What the pages show of games just stored, read from a copy of their rows in memory.

Reading a game back from the database file costs some 40–50 ms of DuckDB's time
(one query per view, each scanning a row group of the large narrow tables to
find one game's rows), which under uploads left the pages waiting and the
writer starved. The writer already holds the rows it has just stored, as Arrow
tables: :class:`FreshPages` inserts them into a small database in memory with
the same schema and views (:meth:`backalley.store.Store.memory`), asks it the
pages' questions (:func:`backalley.service.data.games`,
:func:`backalley.service.data.trick_winners`) and empties it again. The
answers are those the file gives, since the same views compute them from the
same rows (a test compares them); a stored game never changes while the
service runs, so they stay right.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

import pyarrow as pa

from backalley.service import data
from backalley.store import NARROW_TABLES, Store


class FreshTables:
    """The narrow tables of the chunks a group stored, the newest ``keep`` games' worth at most."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self.games = 0
        self.parts: deque[dict[str, pa.Table]] = deque()

    def add(self, tables: dict[str, pa.Table]) -> None:
        """One chunk's tables as the writer built them (``rejects`` and empty chunks are left out)."""
        narrow = {name: t for name, t in tables.items() if name in NARROW_TABLES}
        games = narrow["g_games"].num_rows if "g_games" in narrow else 0
        if not games or self.keep <= 0:
            return
        self.parts.append(narrow)
        self.games += games
        while len(self.parts) > 1 and self.games - self.parts[0]["g_games"].num_rows >= self.keep:
            self.games -= self.parts.popleft()["g_games"].num_rows

    def clear(self) -> None:
        self.parts.clear()
        self.games = 0


class FreshPages:
    """A database in memory that answers the pages' questions about games from their rows (one thread at a time)."""

    def __init__(self) -> None:
        self.store = Store.memory(memory_limit="256MB")

    def read(
        self, parts: Iterable[dict[str, pa.Table]], text: data.RecordText
    ) -> tuple[dict[str, dict[str, object]], dict[str, data.Winners]]:
        """:func:`~backalley.service.data.games` and the trick winners of every game in ``parts``.

        ``text`` gives a game's raw text (the service's cache, falling back on the copy here).
        """
        con = self.store.con
        try:
            ids: list[str] = []
            for tables in parts:
                for name, table in tables.items():
                    self.store.insert_batch(name, table)
                ids += tables["g_games"].column("game_id").to_pylist()
            return data.games(con, ids, text), data.trick_winners(con, ids)
        finally:
            for name in NARROW_TABLES:
                con.execute(f"DELETE FROM {name}")

    def close(self) -> None:
        self.store.close()


__all__ = ["FreshPages", "FreshTables"]

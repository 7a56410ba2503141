"""Relations SQL may name that are computed, not stored: registered for a query only when it names them.

``luck_ledger`` (docs/database.md, "The luck ledger") asks each deal's ruleset for its par, which the
store's SQL cannot; a query (``backalley query``, the service's ``/sql``) that names it gets it computed
from the stored tables first, inside the query's own time limit.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress

import duckdb
import pyarrow as pa

#: A computed relation: the Arrow table of its rows, read from an open store's connection.
Compute = Callable[[duckdb.DuckDBPyConnection], pa.Table]


def _ledger(con: duckdb.DuckDBPyConnection) -> pa.Table:
    from backalley.analysis.ledger import luck_ledger  # Polars: imported only for a query that names it

    return luck_ledger(con).to_arrow()


#: Every computed relation, by the name SQL gives it.
RELATIONS: Mapping[str, Compute] = {"luck_ledger": _ledger}


def named_in(sql: str) -> list[str]:
    """The computed relations ``sql`` names (as a whole word, in any case)."""
    return [name for name in RELATIONS if re.search(rf"\b{name}\b", sql, re.IGNORECASE)]


@contextmanager
def registered(con: duckdb.DuckDBPyConnection, sql: str) -> Iterator[None]:
    """The computed relations ``sql`` names, registered on ``con`` for the length of the block."""
    names = named_in(sql)
    try:
        for name in names:
            con.register(name, RELATIONS[name](con))
        yield
    finally:
        for name in names:
            with suppress(duckdb.Error):  # never registered (its computation failed): nothing to undo
                con.unregister(name)


__all__ = ["RELATIONS", "Compute", "named_in", "registered"]

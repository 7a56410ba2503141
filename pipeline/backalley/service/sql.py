"""SQL while serving: ``/sql`` and ``GET /api/v1/sql``, read-only, as ``backalley query`` runs it.

The service is the database's only writer, so a visitor's SQL runs on a cursor of
its connection, in the same sandbox as ``query`` on a read-only store: only
statements that read (:func:`backalley.store.readonly.check_read_only`), on a
connection that cannot touch any file but its own (:meth:`backalley.store.database.Store.sandbox`),
interrupted after :data:`SQL_TIMEOUT` seconds, one query at a time (the memory cap is the
service's: :attr:`backalley.service.settings.Settings.memory_limit`). Two more rules
than ``query``: the API tokens' table is not readable, nor SQL run from a string
(``query()``, ``query_table()``), and an answer is at most :data:`MAX_ANSWER_BYTES`.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import duckdb
import orjson
import pyarrow as pa

from backalley.analysis.relations import registered
from backalley.service.problems import Problem
from backalley.store.database import QueryError, ReadOnlyQueryError, read_query
from backalley.store.query import QUERY_TIMEOUT, Format, cell, copy_rows, deadline
from backalley.store.readonly import explained, parse_statements

#: Seconds a query may run (``backalley query``'s default), and the most a request may ask for.
SQL_TIMEOUT = QUERY_TIMEOUT
#: The largest answer (bytes of CSV, JSON or Parquet): past it the request is answered 413.
MAX_ANSWER_BYTES = 64 << 20
#: Rows the ``/sql`` page shows (the downloads have them all).
PAGE_ROWS = 1_000
#: The longest SQL text and the most named parameters accepted.
MAX_SQL_CHARS = 100_000
MAX_PARAMS = 50
#: Table functions that run SQL given as a string: what they run is not checked, so they are refused.
SQL_FROM_STRINGS = frozenset({"query", "query_table"})
#: Tables no visitor reads (the API tokens' names and hashes).
HIDDEN_TABLES = ("api_tokens",)
#: The download formats of the API (``table`` is ``backalley query``'s own rendering of Parquet).
FORMATS = {Format.csv: "text/csv", Format.json: "application/json", Format.ndjson: "application/x-ndjson"}
FORMATS[Format.parquet] = "application/vnd.apache.parquet"

#: Example queries the page links to: (what it asks, the SQL).
EXAMPLES = (
    (
        "Games by ruleset and status",
        "SELECT ruleset, options, status, count(*) AS games\nFROM games GROUP BY ALL ORDER BY ALL",
    ),
    (
        "The players with the most games",
        "SELECT player, count(*) AS games, avg(team_score) AS mean_score\nFROM player_games GROUP BY player\n"
        "ORDER BY games DESC LIMIT 20",
    ),
    (
        "How often a bid is made, by hand size",
        "SELECT hand_size, count(*) AS bids, avg(CASE WHEN team_made THEN 1 ELSE 0 END) AS made\n"
        "FROM player_deals GROUP BY hand_size ORDER BY hand_size",
    ),
    (
        "One player's games ($player)",
        "SELECT game_id, played_at, partner, team_score, opp_score, won\nFROM player_games WHERE player = $player\n"
        "ORDER BY played_at DESC",
    ),
    ("The commonest violations", "SELECT code, count(*) AS n FROM violations GROUP BY code ORDER BY n DESC"),
)


class SqlError(Problem):
    """A query refused or failed: the client's error, said as DuckDB (or the sandbox) says it."""


def _walk(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for v in node.values():
            yield from _walk(v)
    elif isinstance(node, list):
        for v in node:
            yield from _walk(v)


def check_service_sql(cur: duckdb.DuckDBPyConnection, sql: str) -> None:
    """The service's rules beyond ``query``'s (:class:`SqlError` when one is broken): no hidden table named,
    no SQL run from a string (each statement's syntax tree, as DuckDB's parser gives it, is looked at; an
    ``EXPLAIN``'s, the statement it explains)."""
    lowered = sql.lower()
    for name in HIDDEN_TABLES:
        if name in lowered:
            raise SqlError(403, f"the table {name} is not readable here")
    for st in parse_statements(sql):
        found = cur.execute("SELECT json_serialize_sql(?)", [explained(st)]).fetchall()[0][0]
        tree = orjson.loads(found)
        for node in _walk(tree.get("statements", [])):
            function = node.get("function") if node.get("type") == "TABLE_FUNCTION" else None
            name = str(function.get("function_name", "")).lower() if isinstance(function, dict) else ""
            if name in SQL_FROM_STRINGS:
                raise SqlError(403, f"{name}(): SQL run from a string is not allowed here")


@dataclass
class Answer:
    """What a query gave: its columns, its first rows as text (the page), their count, and all rows as Arrow."""

    columns: list[str]
    rows: list[list[str]]
    total: int
    table: pa.Table


class SqlRunner:
    """Runs visitors' SQL on the service's store, one query at a time."""

    def __init__(self) -> None:
        self.lock = threading.Lock()

    def run(
        self, cur: duckdb.DuckDBPyConnection, sql: str, params: Mapping[str, object], timeout: float = SQL_TIMEOUT
    ) -> pa.Table:
        """The whole result as Arrow (bounded by :data:`MAX_ANSWER_BYTES` in memory); :class:`SqlError` else."""
        if len(sql) > MAX_SQL_CHARS:
            raise SqlError(413, f"the SQL is {len(sql):,} characters; at most {MAX_SQL_CHARS:,}")
        if len(params) > MAX_PARAMS:
            raise SqlError(400, f"at most {MAX_PARAMS} named parameters")
        if not self.lock.acquire(timeout=5):
            raise SqlError(503, "another query is running: try again in a moment", {"Retry-After": "5"})
        try:
            with deadline(cur, timeout) as fired:
                try:
                    with registered(cur, sql):
                        check_service_sql(cur, sql)
                        return _bounded(read_query(cur, sql, params))
                except ReadOnlyQueryError as exc:
                    raise SqlError(403, str(exc).replace("`backalley ingest`", "an upload")) from None
                except (QueryError, duckdb.Error) as exc:
                    raise _failed(exc, fired.is_set(), timeout) from None
        finally:
            self.lock.release()


def _bounded(reader: pa.RecordBatchReader) -> pa.Table:
    batches = []
    size = 0
    for batch in reader:
        size += batch.nbytes
        if size > MAX_ANSWER_BYTES:
            reader.close()
            raise SqlError(413, f"the result is over {MAX_ANSWER_BYTES >> 20} MiB: ask for fewer rows or columns")
        batches.append(batch)
    return pa.Table.from_batches(batches, schema=reader.schema)


def _failed(exc: BaseException, timed_out: bool, timeout: float) -> SqlError:
    if timed_out:
        return SqlError(400, f"the query was interrupted after {timeout:g} s (the time limit of a query here)")
    text = str(exc).strip()
    if text.startswith("Permission Error"):  # a file: the sandbox has none but the database
        return SqlError(403, f"{text.splitlines()[0]} (no file but the database is readable here)")
    if "out of memory" in text.lower():
        return SqlError(413, f"the query needs more memory than the service allows: {text.splitlines()[0]}")
    return SqlError(400, text)


def answer_page(table: pa.Table, rows: int = PAGE_ROWS) -> Answer:
    """The first ``rows`` rows as text cells (control characters escaped, ``NULL`` for missing)."""
    head = table.slice(0, rows).to_pylist()
    names = [str(n) for n in table.schema.names]
    return Answer(names, [[cell(r[n]) for n in names] for r in head], table.num_rows, table)


def encode(table: pa.Table, fmt: Format, memory_limit: str) -> bytes:
    """The result in a download format, written by DuckDB's own writers as ``backalley query`` writes it."""
    out = io.BytesIO()
    copy_rows(table.to_reader(), fmt, out, memory_limit)
    if out.tell() > MAX_ANSWER_BYTES:
        raise SqlError(413, f"the answer is over {MAX_ANSWER_BYTES >> 20} MiB: ask for fewer rows or columns")
    return out.getvalue()


def schema(cur: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """The tables and views a visitor may read, each with its columns and their types (by name)."""
    rows = cur.execute(
        "SELECT c.table_name, t.table_type, c.column_name, c.data_type FROM information_schema.columns c"
        " JOIN information_schema.tables t USING (table_catalog, table_schema, table_name)"
        " WHERE c.table_schema = 'main' ORDER BY c.table_name, c.ordinal_position"
    ).fetchall()
    out: dict[str, dict[str, Any]] = {}
    for table, kind, column, dtype in rows:
        if table in HIDDEN_TABLES or table.startswith("g_"):  # the narrow tables: their views read them
            continue
        entry = out.setdefault(table, {"name": table, "kind": "view" if kind == "VIEW" else "table", "columns": []})
        entry["columns"].append({"name": column, "type": dtype})
    return list(out.values())


def request_params(query: Mapping[str, str]) -> dict[str, object]:
    """The named parameters of a request: each query parameter ``$name`` (or ``p.name``) gives ``$name`` its value."""
    out: dict[str, object] = {}
    for key, value in query.items():
        for prefix in ("$", "p."):
            if key.startswith(prefix) and len(key) > len(prefix):
                out[key[len(prefix) :]] = value
    return out


__all__ = [
    "EXAMPLES",
    "FORMATS",
    "MAX_ANSWER_BYTES",
    "SQL_TIMEOUT",
    "Answer",
    "SqlError",
    "SqlRunner",
    "answer_page",
    "check_service_sql",
    "encode",
    "request_params",
    "schema",
]

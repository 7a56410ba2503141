"""Which SQL only reads: the check ``query`` makes of every statement on a read-only store.

Each statement's type is read by DuckDB's own parser (looking inside ``EXPLAIN``);
:meth:`backalley.store.database.Store.query_reader` runs the checked statements.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import duckdb

from backalley.store.database import QueryError, ReadOnlyQueryError

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


def parse_statements(sql: str) -> list[Any]:
    try:
        statements = list(duckdb.extract_statements(sql))
    except duckdb.Error as exc:
        raise QueryError(str(exc).strip()) from None
    if not statements:
        raise QueryError("no SQL statement given")
    return statements


def bind_parameters(statements: Sequence[Any], params: Mapping[str, object]) -> list[dict[str, object] | None]:
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


def explained(statement: Any) -> str:
    """The text of the statement an ``EXPLAIN`` statement explains (the statement itself for any other)."""
    text: str = statement.query
    if statement.type.name != "EXPLAIN":
        return text
    return _explained(text, duckdb.tokenize(text))


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


__all__ = [
    "READ_PRAGMAS",
    "READ_STATEMENTS",
    "bind_parameters",
    "check_read_only",
    "explained",
    "parse_statements",
]

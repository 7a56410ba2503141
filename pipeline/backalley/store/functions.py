"""backalley's SQL functions on a DuckDB connection: the raw text of a stored game, compressed and back."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import duckdb
import pyarrow as pa

from backalley.store import raw as raw_codec
from backalley.store.schema import RAW_FUNCTION


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
    functions (the migrations run on a connection :func:`backalley.store.database.connect` registered).
    """
    try:
        con.execute(f"SELECT {name}(NULL::{arg}) LIMIT 0")
    except duckdb.CatalogException:
        return False
    return True


__all__ = ["register_functions", "register_macro"]

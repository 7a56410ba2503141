"""Where a command may write: never over the database, its write-ahead log or the lake attached to it.

Every command that writes a file or a folder (``raw -o``, ``export``, ``report --out``,
``simulate --out``, ``query --out``) asks :func:`protected` what it must not touch and
checks its target with :meth:`Protected.check_file` or :meth:`Protected.check_tree`
before it writes anything.  ``--force`` lets a command overwrite an earlier output of its
own, never these: one mistyped path must not cost a database.

A path is the same as a protected one when it resolves to it (symbolic links followed) or
is the same file (a hard link); a path inside the lake's folder is the lake's.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import duckdb

from backalley.store.database import LAKE_KEY, Store, StoreError


class OutputError(StoreError):
    """An output path that must not be written (exit 2)."""


def wal(db: Path) -> Path:
    """DuckDB's write-ahead log of the database ``db``."""
    return db.with_name(db.name + ".wal")


@dataclass(frozen=True)
class Protected:
    """What no output may overwrite: files (the database, its WAL) and folders (a lake)."""

    #: ``(what it is, path)`` of each protected file.
    files: tuple[tuple[str, Path], ...]
    #: ``(what it is, path)`` of each protected folder: nothing inside it is written either.
    folders: tuple[tuple[str, Path], ...] = ()

    def check_file(self, out: Path, flag: str) -> None:
        """Raise :class:`OutputError` when writing the file ``out`` would overwrite a protected path."""
        target = _resolved(out)
        for what, p in self.files:
            if target == _resolved(p) or _same_file(out, p):
                raise OutputError(f"{flag} {out}: is {what} ({p}); write to another file")
        for what, folder in self.folders:
            if target.is_relative_to(_resolved(folder)):
                raise OutputError(f"{flag} {out}: is inside {what} ({folder}); write to another place")

    def check_tree(self, out_dir: Path, flag: str) -> None:
        """Raise :class:`OutputError` when anything in the folder ``out_dir`` (replaced or written whole) is protected."""
        root = _resolved(out_dir)
        for what, p in (*self.files, *self.folders):
            if _resolved(p).is_relative_to(root):
                raise OutputError(f"{flag} {out_dir}: holds {what} ({p}); write to another folder")
        for what, folder in self.folders:
            if root.is_relative_to(_resolved(folder)):
                raise OutputError(f"{flag} {out_dir}: is inside {what} ({folder}); write to another folder")

    def check_files(self, out_dir: Path, flag: str, names: Sequence[str], trees: Sequence[str] = ()) -> None:
        """:meth:`check_file` for each of ``names`` in ``out_dir`` and :meth:`check_tree` for each of ``trees``."""
        for name in names:
            self.check_file(out_dir / name, flag)
        for name in trees:
            self.check_tree(out_dir / name, flag)


def protected(db: Path, con: duckdb.DuckDBPyConnection | None = None) -> Protected:
    """What no output may overwrite: the database ``db``, its WAL and the lake attached to it (if any).

    ``con``, a connection to ``db`` the caller holds, is asked for the lake; without it the
    file is opened read-only for that (a database another process writes cannot be, and
    then only the database and its WAL are known).
    """
    lake = attached_lake(con) if con is not None else _lake_of_file(db)
    return Protected(
        (("the database", db), ("the write-ahead log of the database", wal(db))),
        (("the lake attached to the database", lake),) if lake is not None else (),
    )


def attached_lake(con: duckdb.DuckDBPyConnection) -> Path | None:
    """The local lake folder ``backalley attach`` recorded in the database of ``con``, or ``None``."""
    try:
        rows = con.execute("SELECT value FROM meta WHERE key = ?", [LAKE_KEY]).fetchall()
    except duckdb.Error:  # not a backalley database: its own command says so
        return None
    return Path(str(rows[0][0])) if rows else None


def _lake_of_file(db: Path) -> Path | None:
    if not db.is_file():
        return None
    try:
        con = duckdb.connect(str(db), read_only=True)
    except duckdb.Error:  # locked by a writer, or not a database: its own command says so
        return None
    try:
        return attached_lake(con)
    finally:
        con.close()


def write_raw(db: Path, game_id: str, out: Path, *, force: bool = False) -> None:
    """``backalley raw -o``: the exact bytes of a stored game into the file ``out`` (see :func:`write_file`)."""
    with Store.open_readonly(db) as store:
        data = store.raw(game_id)
        guard = protected(store.path, store.con)
    write_file(out, data, guard=guard, flag="--output", force=force)


def write_file(out: Path, data: bytes, *, guard: Protected, flag: str, force: bool = False) -> None:
    """Write ``data`` to the new file ``out`` (an existing one only with ``force``), never over a protected path."""
    guard.check_file(out, flag)
    if out.is_dir():
        raise OutputError(f"{flag} {out}: is a folder; give the name of the file to write")
    try:
        with out.open("wb" if force else "xb") as fh:
            fh.write(data)
    except FileExistsError:
        raise OutputError(f"{flag} {out}: already exists (use --force to overwrite it)") from None
    except OSError as exc:
        raise OutputError(f"{flag} {out}: {exc.strerror or exc}") from None


def _resolved(p: Path) -> Path:
    return Path(os.path.realpath(p))


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # either is missing
        return False


__all__ = ["OutputError", "Protected", "attached_lake", "protected", "wal", "write_file", "write_raw"]

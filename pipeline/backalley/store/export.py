"""``backalley export``: every table as Parquet files and a manifest; and ``backalley raw``."""

from __future__ import annotations

import glob
import json
import math
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import duckdb

from backalley.store.database import Store, StoreError, one_line
from backalley.store.outputs import protected
from backalley.store.schema import GAME_TABLES, SCHEMA_VERSION, TABLES

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


__all__ = ["check_earlier_export", "export", "read_raw"]

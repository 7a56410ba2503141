"""The raw text of a stored game, compressed: zstd at level 3, in the worker that replays it.

A game's raw input (about 21 kB of JSON a game) is by far the largest thing
stored. Compressed by the single DuckDB writer it cost a sixth of DuckDB's
time, and more at every checkpoint that merged row groups; compressed here, in
the workers (about 125 µs a game, spread over every CPU), the store only
copies a BLOB of about a fifth of the size.

This module imports nothing but :mod:`zstandard`, so that the workers stay
light; :mod:`backalley.store.functions` turns :func:`decompress` into the SQL functions
``backalley_raw`` (text) and ``backalley_raw_bytes`` (the exact bytes).
"""

from __future__ import annotations

import threading

import zstandard

#: zstd level.  Measured on the benchmark's 10,000 standard games (23.3 kB each): level 1 takes
#: 100 µs a game to 5.25 kB, level 3 (zstd's default) 125 µs to 5.01 kB; the stored file at
#: 10,000 games is 75.8 MB at level 1 and 73.2 MB at level 3 (the target is 75 MB).  The
#: workers pay the 25 µs, spread over every CPU.  Reading does not depend on the level.
LEVEL = 3

_local = threading.local()


def _compressor() -> zstandard.ZstdCompressor:
    """This thread's compressor (a zstd context is not to be shared between threads)."""
    c: zstandard.ZstdCompressor | None = getattr(_local, "c", None)
    if c is None:
        c = _local.c = zstandard.ZstdCompressor(level=LEVEL)
    return c


def _decompressor() -> zstandard.ZstdDecompressor:
    d: zstandard.ZstdDecompressor | None = getattr(_local, "d", None)
    if d is None:
        d = _local.d = zstandard.ZstdDecompressor()
    return d


def compress(raw: bytes) -> bytes:
    """``raw`` as one zstd frame (its size is in the frame header)."""
    return _compressor().compress(raw)


def decompress(blob: bytes) -> bytes:
    """The exact bytes :func:`compress` was given."""
    return _decompressor().decompress(blob)


def text(blob: bytes) -> str:
    """The raw text as a string (bytes that are not UTF-8 read as U+FFFD, as they always were in ``games.raw``)."""
    return decompress(blob).decode("utf-8", errors="replace")


__all__ = ["LEVEL", "compress", "decompress", "text"]

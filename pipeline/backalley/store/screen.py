"""An ingest's workers read their own part of the input, hash it and screen out what is stored.

With several workers, ``backalley ingest`` hands each worker a span of the
input (:class:`~backalley.records.sources.Span`, as validation does) instead of
the records themselves: the worker reads the span, computes each record's
content hash, and replays only the records whose hash cannot be stored already
(:func:`maybe_stored`, against the keys of the hashes stored when the run
began).  The writer process then neither reads, hashes nor sends the input,
and a stored game's raw text comes back only compressed.

A record whose key is among the stored ones comes back unreplayed, with its
content hash: the writer looks the hash up in the database and replays the
record itself if it is not stored after all (a key can be stale), so a
re-run costs no replay, as before.

Like :mod:`backalley.store.rows`, this imports neither DuckDB nor Arrow: it is
what the workers' server preloads.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Iterable
from hashlib import md5

from backalley.records.sources import Item, Span, read_span
from backalley.store.rows import Built, build_item, content_hash, oversized, worker_init

#: A span's records, in order: each with its rows, or (stored already, perhaps) with its content hash.
Screened = list[tuple[Item, Built | str]]

#: The keys of the content hashes stored when the run began, sorted (set in each worker by :func:`init`).
_stored = array("Q")


def string_key(value: str) -> int:
    """The 64-bit key of a stored string: the low 64 bits of the MD5 of its UTF-8 (little-endian).

    :data:`backalley.store.ingest.KEY_SQL` computes the same key in SQL.
    """
    return int.from_bytes(md5(value.encode("utf-8", "surrogatepass")).digest()[:8], "little")


def init(stored: bytes) -> None:
    """A worker's start: its garbage-collector setting, and the stored hashes' keys (sorted uint64 bytes)."""
    global _stored
    worker_init()
    _stored = array("Q", stored)


def maybe_stored(sha: str, keys: array[int] | None = None) -> bool:
    """Could this content hash be stored already (its key is among ``keys``, by default :func:`init`'s)?"""
    keys = _stored if keys is None else keys
    key = string_key(sha)
    at = bisect_left(keys, key)
    return at < len(keys) and keys[at] == key


def build_span(span: Span, max_record_bytes: int) -> Screened:
    """Read, hash, screen and build the records of one span (in a worker)."""
    return screen(read_span(span), max_record_bytes)


def screen(items: Iterable[Item], max_record_bytes: int) -> Screened:
    """Each record too large (a reject), maybe stored (its hash), or built; a stored game's raw text dropped.

    A game's raw text travels compressed in its rows: the item that goes back keeps
    only where it came from.
    """
    out: Screened = []
    for item in items:
        if (big := oversized(item, max_record_bytes)) is not None:
            out.append(big)
            continue
        sha = content_hash(item.raw)
        if maybe_stored(sha):
            out.append((item, sha))
            continue
        built = build_item(item, sha)
        if built.raw_zstd:
            item = Item(item.source, item.line, b"", item.read_error, item.csv)
        out.append((item, built))
    return out


__all__ = ["Screened", "build_span", "init", "maybe_stored", "screen", "string_key"]

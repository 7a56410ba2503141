"""The texts of stored records (and what the pages say of them), kept in memory for the game and deal pages.

A game's raw text is what the deal viewer shows (hands, bids, plays as
recorded). The store keeps it compressed in large blocks (DuckDB picks ZSTD for
long strings), so reading one record back costs tens of milliseconds: it is
worth keeping. A stored game never changes while the service is the database's
only writer (an upload that conflicts goes to ``rejects``), so an entry is never
stale; nor is what the pages show of a game (its rows, as JSON).

Entries are zstd frames (:mod:`backalley.store.raw`: about 5 kB for a 23 kB game), and
the least recently used go first once the cache holds more than its byte budget.
The games an upload stores arrive compressed already, by the worker that
replayed them (:meth:`RecordCache.put_packed`): compressing them in the writer
thread, with zlib as this cache once did, took about 0.5 ms a game of the one
thread every upload waits for.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

from backalley.store import raw as raw_codec


class RecordCache:
    """Texts by ``game_id``, at most ``budget`` compressed bytes (0: keep nothing).

    ``pack`` makes an entry of a text and ``unpack`` turns it back (by default one zstd frame
    of :func:`backalley.store.raw.compress`)."""

    def __init__(
        self,
        budget: int,
        pack: Callable[[bytes], bytes] = raw_codec.compress,
        unpack: Callable[[bytes], bytes] = raw_codec.decompress,
    ) -> None:
        self.budget = budget
        self.pack = pack
        self.unpack = unpack
        self.size = 0
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, bytes] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def put(self, game_id: str, text: bytes) -> None:
        """Keep ``text`` (packed here)."""
        self.put_packed(game_id, self.pack(text))

    def put_packed(self, game_id: str, packed: bytes) -> None:
        """Keep an entry packed already (what ``unpack`` reads)."""
        if len(packed) > self.budget:
            return
        with self._lock:
            old = self._entries.pop(game_id, None)
            self.size += len(packed) - (len(old) if old is not None else 0)
            self._entries[game_id] = packed
            while self.size > self.budget:
                _, dropped = self._entries.popitem(last=False)
                self.size -= len(dropped)

    def get(self, game_id: str, load: Callable[[str], bytes | None]) -> bytes | None:
        """The text of ``game_id``: from the cache, else ``load(game_id)`` (kept unless ``None``)."""
        with self._lock:
            packed = self._entries.get(game_id)
            if packed is not None:
                self._entries.move_to_end(game_id)
        if packed is not None:
            return self.unpack(packed)
        text = load(game_id)
        if text is not None:
            self.put(game_id, text)
        return text

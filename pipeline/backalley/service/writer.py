"""The one thread that stores uploads: uploads waiting for it are stored together, in one ingest.

Each upload arrives replayed (its rows built); the writer takes the first one
waiting and every other one waiting behind it (up to :data:`GROUP_RECORDS`
records), and stores them with one call of
:func:`backalley.ingest.ingest_items`, in arrival order, so that several small
uploads share the fixed cost of a run (its row, its transactions) instead of
paying it each. The answer is as if they had come one after the other: a game
sent twice in the group is stored once, the second time a duplicate.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from backalley.ingest import ingest_items
from backalley.rows import Built
from backalley.sources import Item
from backalley.store import Store

log = logging.getLogger("backalley.service")

#: Records stored together at most (an upload larger than this is stored alone).
GROUP_RECORDS = 2_048


@dataclass
class _Upload:
    items: list[Item]
    built: dict[int, Built]
    progress: Callable[[int], None] | None
    fates: list[tuple[str, str]] = field(default_factory=list)
    done: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None


class Writer:
    def __init__(self, store: Store, lock: threading.Lock, after: Callable[[], None], memory_limit: str) -> None:
        self.store = store
        self.memory_limit = memory_limit
        self.lock = lock
        self.after = after
        self.queue: queue.Queue[_Upload | None] = queue.Queue()
        self.thread = threading.Thread(target=self._loop, name="backalley-writer", daemon=True)
        self.thread.start()

    def write(
        self, items: list[Item], built: list[Built], progress: Callable[[int], None] | None = None
    ) -> list[tuple[str, str]]:
        """Store ``items`` (with their rows) and wait; the ``(fate, message)`` of each, in order."""
        up = _Upload(items, {id(it): b for it, b in zip(items, built, strict=True)}, progress)
        self.queue.put(up)
        up.done.wait()
        if up.error is not None:
            raise up.error
        return up.fates

    def close(self) -> None:
        self.queue.put(None)
        self.thread.join()

    def _loop(self) -> None:
        stop = False
        while not stop:
            first = self.queue.get()
            if first is None:
                return
            group, records = [first], len(first.items)
            while records < GROUP_RECORDS:
                try:
                    nxt = self.queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    stop = True
                    break
                group.append(nxt)
                records += len(nxt.items)
            self._store(group)

    def _store(self, group: list[_Upload]) -> None:
        owner = {id(it): up for up in group for it in up.items}
        built = {k: b for up in group for k, b in up.built.items()}

        def fate(item: Item, what: str, message: str) -> None:
            up = owner[id(item)]
            up.fates.append((what, message))
            if up.progress is not None:
                up.progress(len(up.fates))

        items = [it for up in group for it in up.items]
        sources = sorted({it.source for it in items})
        try:
            with self.lock:
                ingest_items(
                    self.store,
                    items,
                    [f"backalley serve: {', '.join(sources)}"],
                    files=len(sources),
                    fate=fate,
                    checkpoint=False,
                    build=lambda it: built[id(it)],
                    memory_limit=self.memory_limit,
                )
                self.after()
        except BaseException as exc:  # every upload of the group hears it; the writer goes on
            log.error("storing %d records failed: %s", len(items), exc)
            for up in group:
                up.error = exc
        finally:
            for up in group:
                up.done.set()

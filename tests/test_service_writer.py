"""The service's writer: uploads stored together (one ingest session, a transaction per group), each with its own fate."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pytest

from backalley.records.sources import Item
from backalley.service import data
from backalley.service.cache import RecordCache
from backalley.service.settings import Settings
from backalley.service.state import Service
from backalley.store.database import Store, StoreError
from backalley.store.ingest import Session
from backalley.store.rows import Built, build_item
from tests.service_games import line, record


def item(game_id: str, seed: int = 1, n: int = 1, **changes: Any) -> Item:
    return Item("upload", n, line({**record(game_id, seed=seed), **changes}).encode())


def runs(store: Store) -> list[tuple[Any, ...]]:
    return store.con.execute(
        "SELECT status, records, inserted, duplicates, conflicts, rejected FROM ingest_runs ORDER BY run_id"
    ).fetchall()


def count(store: Store, table: str) -> int:
    return int(store.con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0])


def store_group(session: Session, items: list[Item]) -> list[str]:
    fates: list[str] = []
    session.store_group(items, lambda _it, what, _msg: fates.append(what))
    return fates


def test_a_session_stores_groups_in_one_run(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s.duckdb") as store:
        session = Session(store, ["backalley serve"])
        assert store_group(session, [item("a"), item("b", seed=2, n=2)]) == ["stored", "stored"]
        assert runs(store) == [("running", 2, 2, 0, 0, 0)]  # committed with the group
        later = [item("a"), item("b", seed=3, n=2), Item("upload", 3, b"not json")]
        assert store_group(session, later) == ["duplicate", "conflict", "rejected"]
        session.close()
        assert runs(store) == [("finished", 5, 2, 1, 1, 1)]
        assert (count(store, "games"), count(store, "rejects")) == (2, 2)


def test_a_failed_group_is_rolled_back_and_ends_the_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with Store.open(tmp_path / "s.duckdb") as store:
        session = Session(store, ["backalley serve"])
        store_group(session, [item("a")])
        real = Store.insert_batch

        def failing(self: Store, table: str, data: pa.Table) -> int:
            if table == "g_deals":  # the narrow table the view `deals` reads
                raise duckdb.IOException("disk full")
            return real(self, table, data)

        monkeypatch.setattr(Store, "insert_batch", failing)
        with pytest.raises(StoreError, match="disk full"):
            store_group(session, [item("b", seed=2)])
        assert session.failed
        with pytest.raises(StoreError, match="failed earlier"):
            store_group(session, [item("c", seed=3)])
        assert count(store, "games") == 1  # b's game row was inserted, then rolled back
        assert runs(store) == [("failed", 1, 1, 0, 0, 0)]


def test_a_large_group_commits_every_transaction(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s.duckdb") as store:
        session = Session(store, ["backalley serve"], transaction=1)
        items = [item(f"g{k}", seed=k, n=k) for k in range(3)]
        assert store_group(session, items) == ["stored"] * 3
        session.close()
        assert count(store, "games") == 3


def test_uploads_stored_together_each_get_their_own_fate_and_a_bad_one_loses_nothing_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A group that fails is stored again upload by upload: only the upload the database refuses fails."""
    real = Store.insert_batch
    groups: list[list[str]] = []
    real_group = Session.store_group

    def refusing(self: Store, table: str, data: pa.Table) -> int:
        if table == "g_games" and "poison" in data.column("game_id").to_pylist():
            raise duckdb.ConstraintException("refused")
        return real(self, table, data)

    def spying(self: Session, items: Any, *args: Any, **kwargs: Any) -> None:
        groups.append([build_item(it).game_id or "" for it in items])
        real_group(self, items, *args, **kwargs)

    monkeypatch.setattr(Store, "insert_batch", refusing)
    monkeypatch.setattr(Session, "store_group", spying)
    svc = Service(Settings(db=tmp_path / "s.duckdb"))
    answers: dict[str, Any] = {}

    def send(name: str, items: list[Item]) -> None:
        try:
            answers[name] = svc.upload(items)
        except StoreError as exc:
            answers[name] = exc

    uploads = {
        "first": [item("x1")],
        "second": [item("shared", seed=2), item("y2", seed=3, n=2)],
        "bad": [item("shared", seed=2), item("poison", seed=4, n=2)],
    }
    writer = svc._writer
    taken = threading.Event()
    real_commit = writer._commit

    def commit(group: Any) -> None:
        taken.set()
        real_commit(group)

    monkeypatch.setattr(writer, "_commit", commit)
    threads = {name: threading.Thread(target=send, args=(name, items)) for name, items in uploads.items()}
    with svc.lock:
        threads["first"].start()
        assert taken.wait(30)  # the writer holds the first upload and waits for the lock
        for k, name in enumerate(("second", "bad"), 1):
            threads[name].start()
            while writer.queue.qsize() < k:
                time.sleep(0.01)
    for t in threads.values():
        t.join()
    # second and bad were stored together, then (after the failure) each alone
    assert groups == [["x1"], ["shared", "y2", "shared", "poison"], ["shared", "y2"], ["shared", "poison"]]
    assert answers["first"]["fates"]["stored"] == 1
    assert [r["fate"] for r in answers["second"]["results"]] == ["stored", "stored"]
    assert isinstance(answers["bad"], StoreError)
    with svc.reader() as cur:
        stored = {r[0] for r in cur.execute("SELECT game_id FROM games").fetchall()}
    assert stored == {"x1", "shared", "y2"}
    svc.close()


def test_record_cache_keeps_the_newest_within_its_budget() -> None:
    import random

    cache = RecordCache(budget=3_000)
    texts = {f"g{k}": random.Random(k).randbytes(1_000) for k in range(10)}  # about 1 kB compressed
    loads: list[str] = []

    def load(gid: str) -> bytes | None:
        loads.append(gid)
        return texts.get(gid)

    for gid, text in texts.items():
        cache.put(gid, text)
    assert 0 < len(cache) < 10 and cache.size <= 3_000
    assert cache.get("g9", load) == texts["g9"] and loads == []  # the newest is kept
    assert cache.get("g0", load) == texts["g0"] and loads == ["g0"]  # the oldest went, and is read again
    assert cache.get("g0", load) == texts["g0"] and loads == ["g0"]
    assert cache.get("nope", load) is None and "nope" not in [k for k in cache._entries]
    assert len(RecordCache(0)) == 0
    packed = RecordCache(budget=10_000, pack=lambda t: t[::-1], unpack=lambda e: e[::-1])
    packed.put("a", b"abc")
    packed.put_packed("b", b"fed")
    assert packed._entries == {"a": b"cba", "b": b"fed"} and packed.get("b", load) == b"def"


def test_pages_read_from_the_cache_equal_those_read_from_the_store(tmp_path: Path) -> None:
    items = [item("c1"), item("c2", seed=5, n=2)]
    answers = []
    for budget in (0, 1 << 20):
        svc = Service(Settings(db=tmp_path / f"c{budget}.duckdb", record_cache=budget))
        svc.upload(items)
        assert len(svc.records) == (2 if budget else 0) and len(svc.games) == len(svc.winners) == 0
        with svc.reader() as cur:
            for _ in range(2):  # read (with a cache: computed from the text in memory), then read again from memory
                game = svc.game_data(cur, "c2") or {}
                game.pop("ingested_at")
                answers.append((game, data.deal(cur, "c2", 2, svc.record_text, svc.game_data, svc.trick_winners)))
        assert len(svc.games) == len(svc.winners) == (1 if budget else 0)  # only the game read
        svc.close()
    assert all(a == answers[0] for a in answers) and answers[0][0]["deal_count"] == 3 and answers[0][1] is not None
    assert answers[0][1].tricks[0].winner in ("N", "E", "S", "W")
    with Store.open(tmp_path / "c0.duckdb") as store:  # and what the command line shows, read from the store
        assert data.deal(store.con, "c2", 2) == answers[0][1]


@pytest.mark.parametrize(
    "raw",
    [
        b'{"deals": [{"number": 1}, 2, "x", null]}',
        b'{"deals": [], "x": 1}',
        b'{"deals": {"a": 1}}',
        b'{"deals": null}',
        b'{"other": 1}',
        b"[1, 2]",
        b'{"deals": [1], "deals": [1, 2, 3]}',
        b'{"deals": [{"n": 123456789012345678901234567890}, {}]}',
        b'{"deals": [1, 2',
        b"",
    ],
)
def test_deal_count_is_the_number_of_deals_the_deal_viewer_reads(raw: bytes) -> None:
    """The game page counts the record's deals without building them; the deal viewer builds them."""
    text: data.RecordText = lambda _cur, _gid: raw  # noqa: E731
    assert data._deal_count(None, "g", text) == len(data._raw_deals(None, "g", text) or [])  # type: ignore[arg-type]


def test_players_figures_rest_ten_times_as_long_as_they_took(tmp_path: Path) -> None:
    """After a write the figures are recomputed once ``metrics_max_age`` has passed and, when computing
    them took long, once ten times that long has passed (they take the CPUs uploads need)."""
    import time

    from backalley.service.state import METRICS_SHARE, _Figures

    svc = Service(Settings(db=tmp_path / "m.duckdb", metrics_max_age=1.0))
    try:
        figures = svc.metrics()
        assert METRICS_SHARE == 0.1
        now = time.monotonic()

        def cached(ago: float, took: float, generation: int = -1) -> _Figures:
            return _Figures(generation, now - ago, took, figures)

        assert not svc._stale(cached(30.0, 2.0, generation=svc.generation))  # nothing written since
        assert not svc._stale(cached(0.5, 0.01))  # metrics_max_age not passed
        assert svc._stale(cached(1.5, 0.01))
        assert not svc._stale(cached(15.0, 2.0))  # took 2 s: rests 20 s
        assert svc._stale(cached(25.0, 2.0))
    finally:
        svc.close()


def test_the_first_figures_are_computed_once_in_the_background_and_waited_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``warm`` (the service's start-up) computes the figures in a thread of their own; a request that comes
    while they are being computed waits for them instead of computing them a second time."""
    from backalley.service import state

    calls: list[str] = []
    started, release = threading.Event(), threading.Event()
    real = state.compute

    def slow(cur: duckdb.DuckDBPyConnection) -> Any:
        calls.append(threading.current_thread().name)
        started.set()
        assert release.wait(60)
        return real(cur)

    monkeypatch.setattr(state, "compute", slow)
    svc = Service(Settings(db=tmp_path / "w.duckdb"))
    try:
        svc.warm()
        assert started.wait(60) and calls == ["backalley-metrics"]
        svc.warm()  # computing already: nothing more
        answered: list[Any] = []
        request = threading.Thread(target=lambda: answered.append(svc.metrics()))
        request.start()
        request.join(0.2)
        assert request.is_alive() and not answered  # waits for the figures being computed
        release.set()
        request.join(60)
        assert answered and answered[0] is svc.metrics()
        assert calls == ["backalley-metrics"]  # computed once, in the background
    finally:
        release.set()
        svc.close()


def test_figures_that_failed_at_start_up_are_computed_by_the_first_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """If the computation at start-up fails (it is logged), the first request computes the figures itself."""
    from backalley.service import state

    real, calls = state.compute, []

    def failing_once(cur: duckdb.DuckDBPyConnection) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise duckdb.IOException("disk trouble")
        return real(cur)

    monkeypatch.setattr(state, "compute", failing_once)
    svc = Service(Settings(db=tmp_path / "f.duckdb"))
    try:
        svc.warm()
        assert svc._refresher is not None
        svc._refresher.join(60)
        assert svc._metrics is None and len(calls) == 1
        assert svc.metrics() is not None and len(calls) == 2
    finally:
        svc.close()


def test_current_figures_are_recomputed_after_a_write_within_the_figures_share(tmp_path: Path) -> None:
    """``current_metrics`` (a page about a player the figures may not hold yet) recomputes the figures after
    a write without waiting for ``metrics_max_age``, but not sooner than ten times their last computation's
    length after it (:data:`METRICS_SHARE`); unchanged figures are not recomputed."""
    svc = Service(Settings(db=tmp_path / "c.duckdb", metrics_max_age=3600.0))
    try:
        first = svc.metrics()
        assert svc.current_metrics() is first and not svc.figures_behind()  # nothing written
        svc.upload([item("c-1")])
        assert svc.figures_behind()
        assert svc._metrics is not None
        svc._metrics = replace(svc._metrics, seconds=3600.0)  # took an hour: rests ten
        assert svc.current_metrics() is first and svc._refresher is None
        svc._metrics = replace(svc._metrics, seconds=0.0)
        fresh = svc.current_metrics()
        assert fresh is not first and not svc.figures_behind()
        names = set(record("c-1")["players"].values())
        assert names <= set(fresh.players["player"].to_list()) and not names & set(first.players["player"].to_list())
    finally:
        svc.close()


def test_refreshed_figures_come_with_their_index_page_rendered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The report's index page of new figures is rendered in the thread that computed them, before
    they are served: the request for ``/players`` after a refresh renders nothing."""
    from backalley.service import pages

    svc = Service(Settings(db=tmp_path / "p.duckdb", metrics_max_age=0.0))
    report = pages._ReportPages()
    svc.prepare_figures = report.prepare
    rendered: list[object] = []
    real = pages.index_page

    def counted(m: Any, linked: Any) -> str:
        rendered.append(m)
        return real(m, linked)

    monkeypatch.setattr(pages, "index_page", counted)
    try:
        first = svc.metrics()  # computed on the first call, in the caller's thread: rendered when asked
        assert report.get(first, None) and rendered == [first]
        svc.upload([item("p-1"), item("p-2", seed=2)])
        assert svc._metrics is not None
        svc._metrics = replace(svc._metrics, seconds=0.0)  # however long the first computation took
        assert svc.metrics() is first  # stale now: served while the refresh runs
        assert svc._refresher is not None
        svc._refresher.join(60)
        fresh = svc.metrics()
        assert fresh is not first and rendered == [first, fresh]  # rendered by the refresh thread
        page = report.get(fresh, None)
        assert rendered == [first, fresh] and "p-1" not in page  # served as prepared, nothing rendered again
        assert page == real(fresh, pages.page_files(fresh.players["player"].to_list()))
    finally:
        svc.close()


def test_the_workers_send_an_uploaded_game_compressed_and_the_service_keeps_that_frame(tmp_path: Path) -> None:
    """The replay of an upload compresses a game's raw text once, in the worker, as ``build_item`` does for
    ``ingest``; the store and the record cache take that frame (nothing is compressed again in the service)."""
    from backalley.service.replays import build_and_report
    from backalley.store import raw as raw_codec
    from backalley.store.rows import build_item

    game, not_json = item("z-1"), Item("upload", 2, b"{not json")
    built, report = build_and_report(game)
    assert raw_codec.decompress(built.raw_zstd) == game.raw and report["valid"]
    assert built.raw_zstd == build_item(game).raw_zstd and build_and_report(not_json)[0].raw_zstd == b""
    svc = Service(Settings(db=tmp_path / "z.duckdb"))
    try:
        svc.upload([game])
        assert svc.records._entries["z-1"] == built.raw_zstd
        with svc.reader() as cur:
            assert data.record_text(cur, "z-1") == game.raw
    finally:
        svc.close()


def test_a_callers_rows_give_the_content_hash_of_each_input_it_is_not_hashed_again() -> None:
    """With ``build`` (the service's rows, replayed by its workers), the look-up of stored content uses each
    row's ``sha``: the writer thread does not hash every upload's text a second time."""
    from backalley.store.ingest import built_chunks
    from backalley.store.rows import content_hash

    game = item("h-1")
    row = build_item(game)
    asked: list[list[str]] = []

    def stored(shas: list[str]) -> dict[str, bool]:
        asked.append(shas)
        return {"stored-elsewhere": True}

    other = replace(row, sha="stored-elsewhere")
    chunks = list(built_chunks([game], 1, stored=stored, build=lambda _it: other))
    assert asked == [["stored-elsewhere"]]  # the row's sha, not content_hash(game.raw)
    assert chunks == [[(game, Built("stored-elsewhere", stored=True, valid=True))]]
    asked.clear()
    assert list(built_chunks([game], 1, stored=stored)) == [[(game, row)]] and asked == [[content_hash(game.raw)]]


def test_a_page_whose_worker_fails_is_read_from_the_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A stored game's pages' data are computed from its text in memory when first asked for; if that
    fails (a worker that died), the page is read from the file instead, the same."""
    svc = Service(Settings(db=tmp_path / "f.duckdb"))
    try:
        svc.upload([item("f1")])
        with svc.reader() as cur:
            want = data.game(cur, "f1")

            def broken(_item: Item) -> None:
                raise RuntimeError("the page worker died")

            monkeypatch.setattr(svc.replays, "page", broken)
            assert not svc.fresh_page("f1")
            assert svc.game_data(cur, "f1") == want and svc.trick_winners(cur, "f1")
    finally:
        svc.close()


def test_a_page_worker_that_dies_is_replaced(tmp_path: Path) -> None:
    """The pages' worker killed: the page being computed is read from the file, and the next one starts
    another worker."""
    import os
    import signal

    svc = Service(Settings(db=tmp_path / "k.duckdb", workers=2))
    try:
        svc.upload([item("k1"), item("k2", seed=2, n=2), item("k3", seed=3, n=3)])
        assert svc.fresh_page("k1")  # the pages' worker is running
        pool = svc.replays._pages
        assert pool is not None
        for pid in list(pool._processes):  # type: ignore[attr-defined]
            os.kill(pid, signal.SIGKILL)
        with svc.reader() as cur:
            assert svc.game_data(cur, "k2") == data.game(cur, "k2")  # from the file
            assert svc.fresh_page("k3") and svc.replays._pages is not pool  # a new worker
    finally:
        svc.close()

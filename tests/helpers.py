"""Helpers shared by more than one test module (moved out of the test modules that first had them)."""

from __future__ import annotations

import concurrent.futures
import concurrent.futures.process
import errno
import io
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
from fastapi.testclient import TestClient

from backalley.cards import cards_of
from backalley.engine import DealState
from backalley.replay import replay
from backalley.service.app import create_app
from backalley.service.settings import Settings
from backalley.store import database as store_mod
from backalley.store.database import Store
from tests.store_games import game_lines


def random_record(seed: int, deals: int = 25) -> dict[str, Any]:
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    dealer, number = rng.randrange(4), 1
    while number <= min(deals, 25):
        deck = list(range(54))
        rng.shuffle(deck)
        st = DealState.from_deck(number, dealer, deck)
        while st.bidding:
            st.bid(rng.choice(st.legal_bids()))
        while not st.finished:
            st.play(rng.choice(list(cards_of(st.legal_plays()))))
        out.append(st.to_record())
        dealer = (dealer + 1) & 3
        number += 0 if st.pass_out else 1
    return {
        "format_version": 1,
        "game_id": f"schema-{seed}",
        "ruleset": "standard",
        "players": {"N": "Ann", "E": "Bo", "S": "Cy", "W": "Di"},
        "played_at": "2026-11-30T10:00:00Z",
        "event": "tests",
        "deals": out,
    }


TOKEN = "test-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
NDJSON = {"content-type": "application/x-ndjson"}


def make_client(db: Path, **settings: Any) -> TestClient:
    settings.setdefault("allowed_hosts", ("testserver",))  # the test client's host
    return TestClient(create_app(Settings(db=db, tokens=frozenset({TOKEN}), **settings)), raise_server_exceptions=False)


#: Columns :func:`snapshot` compares between databases: everything but run ids and timestamps.
SNAPSHOT_VOLATILE = {"run_id", "ingested_at", "rejected_at"}


def fail_plays_insert(monkeypatch: pytest.MonkeyPatch, nth: int, error: BaseException) -> None:
    """Make the ``nth`` insert into ``g_tricks`` (the table ``plays`` reads) raise ``error`` (the others go through)."""
    real = Store.insert_batch
    calls = {"plays": 0}

    def flaky(self: Store, table: str, data: Any) -> int:
        if table == "g_tricks":
            calls["plays"] += 1
            if calls["plays"] == nth:
                raise error
        return real(self, table, data)

    monkeypatch.setattr(Store, "insert_batch", flaky)


def make_inputs(folder: Path) -> dict[str, Any]:
    """A small input set with every kind of bad line; returns what the store should hold."""
    folder.mkdir(parents=True, exist_ok=True)
    good = game_lines(1, seed=11, prefix="full") + game_lines(5, seed=12, deals=3, prefix="short")
    conflict = json.loads(good[2])
    conflict["event"] = "Changed"
    invalid = json.loads(good[3])
    invalid["game_id"] = "inv-1"
    invalid["deals"][0]["result"]["points"]["NS"] += 1
    lines = [
        *good,
        good[1],  # duplicate of a stored game
        json.dumps(conflict),  # same game_id, different content
        "{not json",
        '{"format_version": 1}',  # no game_id
        '{"game_id": 7}',  # game_id not a string
        '{"game_id": "bad id!"}',  # game_id that does not fit the format
        '{"game_id": "schema-1", "ruleset": "standard"}',  # usable id, schema errors
        json.dumps(invalid),  # a RESULT_MISMATCH
        "",
        "[1, 2]",
    ]
    (folder / "a.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (folder / "b.json").write_bytes(b"\xff\xfe not JSON and not UTF-8")
    stored = [json.loads(x) for x in good] + [invalid]
    deals = sum(len(r["deals"]) for r in stored)
    tricks = sum(len(d["tricks"]) for r in stored for d in r["deals"])
    violations = sum(len(replay(r).violations) for r in stored) + len(
        replay({"game_id": "schema-1", "ruleset": "standard"}).violations
    )
    return {
        "games": len(stored) + 1,
        "deals": deals,
        "bids": 4 * deals,
        "tricks": tricks,
        "plays": 4 * tricks,
        "violations": violations,
        "rejects": 7,
        "records": len(lines) - 1 + 1,
    }


def snapshot(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every table but ingest_runs, sorted, without run ids and timestamps."""
    out: dict[str, list[tuple[Any, ...]]] = {}
    con = duckdb.connect(str(db), read_only=True)
    try:
        for t in store_mod.TABLES:
            if t == "ingest_runs":
                continue
            cols = [r[0] for r in con.execute(f"DESCRIBE {t}").fetchall() if r[0] not in SNAPSHOT_VOLATILE]
            rows = con.execute(f"SELECT {', '.join(cols)} FROM {t}").fetchall()
            out[t] = sorted(rows, key=repr)
    finally:
        con.close()
    return out


class DeadPool(concurrent.futures.ProcessPoolExecutor):
    """What ``ProcessPoolExecutor`` does once a worker is gone: its results raise."""

    def map(self, *args: object, **kwargs: object) -> Iterator[object]:
        raise concurrent.futures.process.BrokenProcessPool("A child process terminated abruptly")


SAMPLE = Path(__file__).resolve().parents[1] / "data" / "sample"


def odd_inputs(folder: Path) -> dict[str, bytes]:
    """A game as a .json file with a BOM, CRLF line breaks and non-ASCII text, and one as a line with a
    U+FEFF and other non-ASCII inside; returns the bytes each game's record is (the file's BOM is not)."""
    folder.mkdir()
    lines = (SAMPLE / "valid-games.jsonl").read_bytes().splitlines()
    first, second = json.loads(lines[0]), json.loads(lines[1])
    first["event"] = "Café «Zürich» – ♠♥ 🂡"
    pretty = json.dumps(first, ensure_ascii=False, indent=2).replace("\n", "\r\n").encode("utf-8")
    (folder / "a.json").write_bytes(b"\xef\xbb\xbf" + pretty + b"\r\n")
    second["event"] = "\ufeffBOM inside, ñ, 日本"
    line = json.dumps(second, ensure_ascii=False).encode("utf-8")
    (folder / "b.jsonl").write_bytes(b"\n" + line + b"\r\n")
    return {first["game_id"]: pretty + b"\r\n", second["game_id"]: line}


class FailingDisk(io.RawIOBase):
    """A file whose bytes from ``bad`` on cannot be read (a bad sector): every read reaching them fails."""

    def __init__(self, data: bytes, bad: int) -> None:
        self.data, self.bad, self.pos = data, bad, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = 0) -> int:
        self.pos = offset if whence == 0 else self.pos + offset if whence == 1 else len(self.data) + offset
        return self.pos

    def tell(self) -> int:
        return self.pos

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        if self.pos >= self.bad and self.pos < len(self.data):
            raise OSError(errno.EIO, "Input/output error")
        n = min(len(b), max(0, min(self.bad, len(self.data)) - self.pos))
        b[:n] = self.data[self.pos : self.pos + n]
        self.pos += n
        return n


def failing_at(monkeypatch: pytest.MonkeyPatch, path: Path, bad: int) -> None:
    """Every later ``open`` of ``path`` reads it through a :class:`FailingDisk` failing at byte ``bad``."""
    data, real_open = path.read_bytes(), Path.open

    def open_(self: Path, mode: str = "r", *args: object, **kwargs: object) -> object:
        if self == path and mode == "rb":
            return io.BufferedReader(FailingDisk(data, bad), buffer_size=64)
        return real_open(self, mode, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(Path, "open", open_)


Contracts = dict[tuple[str, int, str], tuple[str, int]]


def contracts_and_costs(
    con: duckdb.DuckDBPyConnection,
) -> tuple[Contracts, dict[tuple[str, int, str], str], list[tuple[str, int, str, int]]]:
    """Each side's contract (kind, value), each seat's bid kind, and every stored play's cost."""
    sides = {
        (g, d, s): (k, c)
        for g, d, s, k, c in con.execute(
            "SELECT game_id, deal, side, contract_kind, contract FROM deal_sides"
        ).fetchall()
    }
    kinds = {(g, d, s): k for g, d, s, k in con.execute("SELECT game_id, deal, seat, kind FROM bids").fetchall()}
    return sides, kinds, con.execute("SELECT game_id, deal, seat, cost FROM dd_plays").fetchall()

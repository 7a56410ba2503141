"""Helpers shared by more than one test module (moved out of the test modules that first had them)."""

from __future__ import annotations

import base64
import concurrent.futures
import concurrent.futures.process
import contextlib
import copy
import errno
import io
import itertools
import json
import os
import random
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import duckdb
import pytest
from fastapi.testclient import TestClient
from hypothesis import strategies as st
from typer.testing import CliRunner

from backalley.analysis.solver import ALL_PRUNING, Pruning, SolverRules
from backalley.cards import NUM_CARDS, cards_of
from backalley.cli.app import app
from backalley.engine import DealState
from backalley.replay import replay
from backalley.rules import STANDARD, Ruleset
from backalley.service.app import create_app
from backalley.service.settings import Settings
from backalley.simulate import choose_bid, choose_play, player_pool
from backalley.store.database import Store
from backalley.store.schema import TABLES
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
        for t in TABLES:
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

    def submit(self, *args: object, **kwargs: object) -> concurrent.futures.Future[Any]:
        done: concurrent.futures.Future[Any] = concurrent.futures.Future()
        done.set_exception(concurrent.futures.process.BrokenProcessPool("A child process terminated abruptly"))
        return done


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


NS = 0b0101
EW = 0b1010
#: Multiplies every test's deal count (``BACKALLEY_SOLVER_SCALE=10`` for a long run).
SCALE = float(os.environ.get("BACKALLEY_SOLVER_SCALE", "1"))
NO_PRUNING = Pruning(tt=False, equivalence=False, quick_tricks=False, ordering=False)
ONE_OFF = [replace(ALL_PRUNING, **{name: False}) for name in ("tt", "equivalence", "quick_tricks", "ordering")]


def minimax(
    hands: list[int],
    leader: int,
    trick: list[int],
    broken: bool,
    trump: int,
    claimers: int,
    side: int,
    ruleset: Ruleset = STANDARD,
) -> int:
    """The side's tricks from here by plain minimax over every legal card (memo on exact positions only).

    Every rule is asked of ``ruleset`` directly (follows by position after the leader).
    """
    memo: dict[tuple[tuple[int, ...], int, bool], int] = {}

    def go(hands: list[int], leader: int, trick: list[int], broken: bool) -> int:
        if not trick:
            if not hands[leader]:
                return 0
            key = (tuple(hands), leader, broken)
            if key in memo:
                return memo[key]
        seat = (leader + len(trick)) & 3
        if trick:
            moves = ruleset.legal_follows(hands[seat], trick[0], trump, len(trick))
        else:
            moves = ruleset.legal_leads(hands[seat], trump, broken, bool(claimers >> seat & 1))
        values = []
        for c in cards_of(moves):
            after = list(hands)
            after[seat] &= ~(1 << c)
            played = [*trick, c]
            if len(played) < 4:
                values.append(go(after, leader, played, broken))
                continue
            winner = (leader + ruleset.trick_winner(played, trump)) & 3
            rest = go(after, winner, [], broken or ruleset.breaks_trump(played, trump))
            values.append((side >> winner & 1) + rest)
        best = max(values) if side >> seat & 1 else min(values)
        if not trick:
            memo[key] = best
        return best

    return go(list(hands), leader, list(trick), broken)


def random_deal(rng: random.Random, n: int) -> DealState:
    """A dealt (not yet bid) deal of hand size ``n``: jokers, trump and joker swap as the engine does them."""
    deck = list(range(NUM_CARDS))
    rng.shuffle(deck)
    return DealState.from_deck(14 - n, rng.randrange(4), deck)


def random_search(rng: random.Random, n: int, *, seats: bool = True) -> tuple[DealState, int, SolverRules, int]:
    """A random deal of hand size ``n`` to search: the deal, a random leader, solver rules with random board
    claimers, and a random side (a partnership, or with ``seats`` also a single seat)."""
    st = random_deal(rng, n)
    leader, claimers = rng.randrange(4), rng.randrange(16)
    side = rng.choice([NS, EW, 1 << rng.randrange(4)] if seats else [NS, EW])
    return st, leader, SolverRules(st.trump, claimers), side


def simulated_deal(rng: random.Random, n: int) -> DealState:
    """A deal bid and played by the simulator's bots."""
    pool = player_pool(4)
    while True:
        st = random_deal(rng, n)
        while st.bidding:
            st.bid(choose_bid(st, pool[st.to_act()].style, rng))
        if st.pass_out:
            continue
        played = 0
        while not st.finished:
            card = choose_play(st, pool[st.to_act()].style, rng, played)
            st.play(card)
            played |= 1 << card
        return st


def set_path(rec: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    rec = copy.deepcopy(rec)
    node: Any = rec
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return rec


def drop(rec: dict[str, Any], path: tuple[Any, ...]) -> dict[str, Any]:
    rec = copy.deepcopy(rec)
    node: Any = rec
    for key in path[:-1]:
        node = node[key]
    del node[path[-1]]
    return rec


def json_values() -> st.SearchStrategy[Any]:
    leaf = (
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(max_size=5)
    )
    return st.recursive(
        leaf,
        lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=4), kids, max_size=3),
        max_leaves=8,
    )


def paths_of(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(value, dict):
        for k, v in value.items():
            out += paths_of(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += paths_of(v, (*prefix, i))
    return out


_runner = CliRunner()


def show(db: Path, game_id: str, deal: int | None = None) -> str:
    args = ["show", game_id, "--db", str(db)] + ([] if deal is None else ["--deal", str(deal)])
    result = _runner.invoke(app, args, env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "None" not in out and "null" not in out, out
    return out


def rows(lines: list[str]) -> Iterator[list[str]]:
    """The cells of each body row of the rich tables in ``lines``."""
    for line in lines:
        if line.startswith("│"):
            yield [c.strip() for c in line.strip("│").split("│")]


def section(out: str, title: str, end: str | None = None) -> list[str]:
    """The lines from the table titled ``title`` to the one titled ``end`` (or to the end)."""
    lines = out.splitlines()
    start = lines.index(title)
    return lines[start : lines.index(end, start) if end else None]


CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--hide-scrollbars",
    "--mute-audio",
    "--remote-debugging-port=0",
]


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None


def require_chromium() -> str:
    path = find_chromium()
    if path is None:
        reason = "Chromium not found (apt-get install chromium); .ci/run installs it"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason}, and CI=true requires the browser test")
        pytest.skip(reason)
    return path


class Browser:
    """A headless Chromium with one page target, spoken to over CDP (flattened sessions)."""

    def __init__(self, binary: str, profile: Path) -> None:
        from websockets.sync.client import connect

        self.proc = subprocess.Popen(
            [binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not (port_file.is_file() and len(port_file.read_text().splitlines()) >= 2):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.close()
                raise RuntimeError("Chromium did not open its DevTools port")
            time.sleep(0.1)
        port, path = port_file.read_text().splitlines()[:2]
        self.stack = contextlib.ExitStack()
        self.ws = self.stack.enter_context(connect(f"ws://127.0.0.1:{port}{path}", max_size=None, open_timeout=30))
        self.ids = itertools.count(1)
        self.events: list[dict[str, Any]] = []
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Network", "Page"):
            self.call(f"{domain}.enable", session=True)

    def call(self, method: str, params: dict[str, Any] | None = None, session: bool = False) -> dict[str, Any]:
        msg_id = next(self.ids)
        msg: dict[str, Any] = {"id": msg_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = self.session
        self.ws.send(json.dumps(msg))
        while True:
            reply = json.loads(self.ws.recv(timeout=60))
            if reply.get("id") == msg_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})  # type: ignore[no-any-return]
            if "method" in reply:
                self.events.append(reply)

    def wait_for(self, method: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while not any(e["method"] == method for e in self.events):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(method)
            try:
                reply = json.loads(self.ws.recv(timeout=remaining))
            except TimeoutError:
                raise TimeoutError(method) from None
            if "method" in reply:
                self.events.append(reply)

    def open(self, url: str, width: int = 1100, mobile: bool = False) -> list[str]:
        """Load ``url``; return the problems seen (console errors, exceptions, failed or outside requests)."""
        self.events.clear()
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": mobile},
            session=True,
        )
        self.call("Page.navigate", {"url": url}, session=True)
        self.wait_for("Page.loadEventFired")
        time.sleep(0.2)  # let late console messages arrive
        self.call("Runtime.evaluate", {"expression": "1"}, session=True)  # flushes pending events
        return problems(self.events)

    def screenshot(self, dest: Path, width: int, mobile: bool = False, max_height: int = 6000) -> None:
        metrics = self.call("Page.getLayoutMetrics", session=True)
        height = min(int(metrics["cssContentSize"]["height"]) + 1, max_height)
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile},
            session=True,
        )
        shot = self.call("Page.captureScreenshot", {"format": "png"}, session=True)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(base64.b64decode(shot["data"]))

    def scroll_width(self) -> tuple[int, int]:
        r = self.call(
            "Runtime.evaluate",
            {"expression": "[document.documentElement.scrollWidth, window.innerWidth]", "returnByValue": True},
            session=True,
        )
        a, b = r["result"]["value"]
        return int(a), int(b)

    def close(self) -> None:
        stack = getattr(self, "stack", None)
        if stack is not None:
            stack.close()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def problems(events: list[dict[str, Any]]) -> list[str]:
    found = []
    for e in events:
        m, p = e["method"], e.get("params", {})
        if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            found.append(f"console.{p['type']}: {[a.get('value', a.get('description')) for a in p.get('args', [])]}")
        elif m == "Runtime.exceptionThrown":
            found.append(f"exception: {p['exceptionDetails'].get('text')}")
        elif m == "Log.entryAdded" and p["entry"].get("level") == "error":
            found.append(f"log error: {p['entry'].get('text')} {p['entry'].get('url', '')}")
        elif m == "Network.loadingFailed":
            found.append(f"request failed: {p.get('errorText')} {p.get('blockedReason', '')}")
        elif m == "Network.requestWillBeSent":
            url = p["request"]["url"]
            if not url.startswith(("file:", "data:", "about:")):
                found.append(f"request to another host: {url}")
    return found


def screenshots_dir() -> Path:
    env = os.environ.get("REPORT_SCREENSHOTS")
    return Path(env) if env else Path(tempfile.gettempdir()) / "backalley-report-screenshots"


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def served(db: Path, *args: str) -> Iterator[str]:
    """``backalley serve`` on ``db`` as its own process on a free port of 127.0.0.1 (more options in ``args``);
    its base URL once it answers. Stopped (SIGTERM, as Ctrl-C would) when the block ends."""
    import sys
    import urllib.request

    port = free_port()
    cmd = [sys.executable, "-m", "backalley", "serve", "--db", str(db), "--port", str(port), *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    try:
        while True:
            try:
                with urllib.request.urlopen(base + "/", timeout=5):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"the service did not start: {proc.stderr.read() if proc.stderr else ''!r}"
                    ) from None
                time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def js(b: Browser, expression: str) -> Any:
    """The value of ``expression`` in the browser's page (an exception there fails the test)."""
    r = b.call("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=True)
    if "exceptionDetails" in r:
        raise AssertionError(f"{expression}: {r['exceptionDetails']}")
    return r["result"].get("value")


def passed_out(rec: dict[str, Any], hands: bool = False) -> dict[str, Any]:
    """``rec`` with its first deal passed out by four passes (no tricks, no result), without its hands
    unless ``hands``."""
    rec = json.loads(json.dumps(rec))
    d = rec["deals"][0]
    d["bids"] = [{**b, "bid": "pass"} for b in d["bids"]]
    d["tricks"] = []
    d.pop("result", None)
    if not hands:
        del d["hands"]
    return rec


def with_redeal(rec: dict[str, Any], k: int, hands: bool) -> dict[str, Any]:
    """``rec`` with a redeal (four passes, by the same dealer, of the same number) before its deal ``k``."""
    rec = json.loads(json.dumps(rec))
    d = rec["deals"][k]
    redeal = passed_out({"deals": [d]}, hands)["deals"][0]
    rec["deals"].insert(k, redeal)
    return rec


#: The bab-online commit the fixtures of tests/fixtures/bab-online were played with.
BAB_ONLINE_PIN = "b383e0b0d2dacba58e43aa660526f469eb795d5a"
BAB_ONLINE_TOOL = Path(__file__).parent / "tools" / "bab_online_games.js"


def bab_online_games(out: Path, games: int, seed: int) -> Path:
    """Play ``games`` games with bab-online's own server code (tests/tools/bab_online_games.js) into ``out``.

    Skips the test, saying why, where node is missing or ``BAB_ONLINE_SRC`` names no checkout
    of bab-online at :data:`BAB_ONLINE_PIN`.
    """
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed (Debian: apt-get install nodejs); the bab-online harness runs under it")
    src = os.environ.get("BAB_ONLINE_SRC", "")
    why = f"a checkout of github.com/dannytakahashi/bab-online at {BAB_ONLINE_PIN[:7]}"
    if not src or not (Path(src) / "server" / "socket" / "gameHandlers.js").is_file():
        pytest.skip(f"set BAB_ONLINE_SRC to {why} (it is fetched, never vendored)")
    if (Path(src) / ".git").exists():
        head = subprocess.run(["git", "-C", src, "rev-parse", "HEAD"], capture_output=True, text=True, check=False)
        if head.stdout.strip() != BAB_ONLINE_PIN:
            pytest.skip(f"BAB_ONLINE_SRC is at {head.stdout.strip()[:7] or 'no commit'}, not {why}")
    cmd = [node, str(BAB_ONLINE_TOOL), "--src", src, "--games", str(games), "--seed", str(seed), "--out", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    return out

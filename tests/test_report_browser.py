"""Every generated page opens in headless Chromium without a console error or a request to another host.

The browser is driven over the DevTools protocol (CDP) on a websocket: Runtime,
Log and Network events are collected while the page loads, then a full-page
screenshot is saved (under $REPORT_SCREENSHOTS when set, else a tmp folder) for
people to look at. Without Chromium the test is skipped with the reason, except
under CI=true, where it fails.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from backalley.reporting import write_reports
from backalley.reporting.sample import build_hand_made

pytestmark = pytest.mark.browser

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


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    binary = require_chromium()
    try:
        import websockets  # noqa: F401
    except ImportError:
        if os.environ.get("CI") == "true":
            pytest.fail("the websockets package (dev extra) is needed to drive the browser")
        pytest.skip("the websockets package (dev extra) drives the browser: pip install -e '.[dev]'")
    b = Browser(binary, tmp_path_factory.mktemp("chromium-profile"))
    try:
        yield b
    finally:
        b.close()


def screenshots_dir() -> Path:
    env = os.environ.get("REPORT_SCREENSHOTS")
    return Path(env) if env else Path(tempfile.gettempdir()) / "backalley-report-screenshots"


def test_every_page_loads_cleanly(tmp_path: Path, browser: Browser) -> None:
    db = tmp_path / "store.duckdb"
    build_hand_made(db)
    out = tmp_path / "reports"
    summary = write_reports(db, out)
    pages = [summary.index, *summary.player_pages]
    assert len(pages) == 8
    shots = screenshots_dir()
    failures = {}
    for page in pages:
        name = page.relative_to(out).with_suffix("").as_posix().replace("/", "_")
        seen = browser.open(page.resolve().as_uri())
        browser.screenshot(shots / f"{name}.png", 1100)
        # On a phone the page must not scroll sideways (wide tables scroll inside their box).
        seen += browser.open(page.resolve().as_uri(), width=390, mobile=True)
        scroll, inner = browser.scroll_width()
        if scroll > inner + 1:
            seen.append(f"page is {scroll}px wide on a {inner}px phone screen")
        browser.screenshot(shots / f"{name}.phone.png", 390, mobile=True)
        if seen:
            failures[page.name] = seen
    print(f"screenshots in {shots}")
    assert not failures, failures


def test_detects_console_errors_and_outside_requests(tmp_path: Path, browser: Browser) -> None:
    """The checker itself works: a bad page is caught."""
    bad = tmp_path / "bad.html"
    bad.write_text(
        '<!DOCTYPE html><html><head><script>console.error("boom")</script>'
        '<link rel="stylesheet" href="http://192.0.2.1/x.css"></head><body>x</body></html>',
        encoding="utf-8",
    )
    seen = browser.open(bad.resolve().as_uri())
    assert any("console.error" in s for s in seen), seen
    assert any("another host" in s for s in seen), seen


def test_a_report_of_several_rulesets_shows_each_in_its_section(tmp_path: Path, browser: Browser) -> None:
    from backalley.store.ingest import ingest

    samples = Path(__file__).resolve().parents[1] / "data" / "sample"
    db = tmp_path / "store.duckdb"
    ingest([str(samples / "valid-games.jsonl"), *map(str, sorted((samples / "rulesets").glob("valid-*")))], db)
    out = tmp_path / "reports"
    summary = write_reports(db, out, workers=1)
    shots = screenshots_dir()
    seen = browser.open(summary.index.resolve().as_uri())
    browser.screenshot(shots / "rulesets_index.png", 1100)
    assert not seen, seen
    found = browser.call(
        "Runtime.evaluate",
        {
            "expression": "['ruleset-pereulok', 'ruleset-bab-online', 'ruleset-standard-short-deck-no-partnerships']"
            ".map(id => { const h = document.getElementById(id);"
            " return h ? h.parentElement.querySelectorAll('h2#' + id + ' ~ div.scroll')[0]"
            ".querySelectorAll('tbody tr').length : -1; })",
            "returnByValue": True,
        },
        session=True,
    )["result"]["value"]
    assert all(n > 0 for n in found), found  # each section is there, with a row per player
    listed = browser.call(
        "Runtime.evaluate",
        {"expression": "[...document.querySelectorAll('#rulesets ~ div.scroll')][0].innerText", "returnByValue": True},
        session=True,
    )["result"]["value"]
    for label in ("standard", "pereulok", "bab-online", "standard + short_deck, no_partnerships"):
        assert label in listed
    page = next(p for p in summary.player_pages)
    seen = browser.open(page.resolve().as_uri())
    assert not seen, seen


def test_double_dummy_sections_load_cleanly(tmp_path: Path, browser: Browser) -> None:
    """Analysed standard games: the bid-vs-makeable and play-accuracy tables render, on desktop and phone."""
    from typer.testing import CliRunner

    from backalley.cli.app import app
    from backalley.simulate import simulate_games

    games = tmp_path / "games.jsonl"
    games.write_text("".join(line + "\n" for line in simulate_games(2, seed=15, players=4)), encoding="utf-8")
    db = tmp_path / "store.duckdb"
    runner = CliRunner()
    assert runner.invoke(app, ["ingest", "--db", str(db), str(games)]).exit_code == 0
    assert runner.invoke(app, ["analyze", "--db", str(db), "--max-cards", "2"]).exit_code == 0
    summary = write_reports(db, tmp_path / "reports", workers=1)
    for page in (summary.index, summary.player_pages[0]):
        seen = browser.open(page.resolve().as_uri())
        rows = browser.call(
            "Runtime.evaluate",
            {
                "expression": "['bid-vs-makeable', 'play-accuracy'].map(id => document.querySelectorAll("
                "'h2#' + id + ' ~ div.scroll')[0].querySelectorAll('tbody tr').length)",
                "returnByValue": True,
            },
            session=True,
        )["result"]["value"]
        assert all(n >= 2 for n in rows), (page.name, rows)  # the "all" row and one per hand size
        seen += browser.open(page.resolve().as_uri(), width=390, mobile=True)
        scroll, inner = browser.scroll_width()
        assert scroll <= inner + 1, (page.name, scroll, inner)
        assert not seen, (page.name, seen)

"""The service in a real browser: upload through the form, read both verdicts, follow a violation to its play.

``backalley serve`` runs as its own process on a free port of 127.0.0.1;
headless Chromium is driven over the DevTools protocol as in
test_report_browser.py (skipped without Chromium, except under CI=true).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import Browser, js, problems, screenshots_dir, served
from tests.service_games import faulty, ndjson, record

pytestmark = pytest.mark.browser

TOKEN = "browser-token-0123456789"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    tokens = tmp_path / "tokens"
    tokens.write_text(TOKEN + "\n")
    with served(tmp_path / "s.duckdb", "--tokens", str(tokens)) as base:
        yield base


def page_problems(b: Browser, base: str) -> list[str]:
    """Console errors, exceptions, failed requests, and any request that leaves the service."""
    found = problems(b.events)
    return [
        p for p in found if not (p.startswith("request to another host: ") and p.split(": ", 1)[1].startswith(base))
    ]


def follow(b: Browser, expression: str) -> None:
    """Run ``expression`` (a click or a submit) and wait for the next page to load."""
    b.events.clear()
    js(b, expression)
    b.wait_for("Page.loadEventFired")
    time.sleep(0.2)
    js(b, "1")


def test_upload_in_the_browser_and_follow_a_violation(server: str, browser: Browser, tmp_path: Path) -> None:
    games = tmp_path / "games.jsonl"
    games.write_bytes(ndjson(record("good-1"), faulty(record("bad-2", seed=2))))
    seen = browser.open(server + "/")
    assert not [p for p in seen if server not in p], seen
    # Fill the form as a person would: choose the file, type the token, press the button.
    root = browser.call("DOM.getDocument", session=True)["root"]["nodeId"]
    node = browser.call("DOM.querySelector", {"nodeId": root, "selector": "#file"}, session=True)["nodeId"]
    browser.call("DOM.setFileInputFiles", {"nodeId": node, "files": [str(games)]}, session=True)
    js(browser, f"document.getElementById('token').value = {TOKEN!r}")
    follow(browser, "document.querySelector('form.upload button[type=submit]').click()")
    assert not page_problems(browser, server), page_problems(browser, server)
    verdicts = js(browser, "[...document.querySelectorAll('.record')].map(e => e.dataset.status)")
    assert verdicts == ["incomplete", "invalid"]  # a valid game of 3 deals is incomplete; the other breaks a rule
    fates = js(browser, "[...document.querySelectorAll('.record .fate')].map(e => e.textContent)")
    assert fates == ["stored", "stored"]
    link = js(
        browser,
        "[...document.querySelectorAll('a.violation')].find(a => a.closest('li').textContent.includes('NOT_IN_HAND')).href",
    )
    assert link == f"{server}/games/bad-2/deals/1#trick-1"
    follow(browser, "document.querySelector('a.violation[href=\"/games/bad-2/deals/1#trick-1\"]').click()")
    assert not page_problems(browser, server), page_problems(browser, server)
    assert js(browser, "location.href") == link
    marked = js(browser, "[...document.querySelectorAll('#trick-1 .c.fault')].map(e => [e.textContent, e.title])")
    assert marked and all("NOT_IN_HAND" in title for _, title in marked), marked
    assert js(browser, "document.querySelector('#trick-1').classList.contains('fault')")
    assert "NOT_IN_HAND" in js(browser, "document.querySelector('#trick-1').textContent")
    browser.screenshot(screenshots_dir() / "service_deal_viewer.png", 1100)
    if os.environ.get("SERVICE_SCREENSHOT"):
        browser.screenshot(Path(os.environ["SERVICE_SCREENSHOT"]), 1100)


def test_a_players_page_shows_the_ratings_and_the_luck_ledger(browser: Browser, tmp_path: Path) -> None:
    """A store rated at ingest and analysed, served: a player's page and the players' index show the ratings,
    the page the luck ledger and its chart; the API gives the same player's ratings."""
    import json
    import urllib.request

    from typer.testing import CliRunner

    from backalley.cli.app import app
    from backalley.simulate import simulate_games

    games, db = tmp_path / "games.jsonl", tmp_path / "s.duckdb"
    games.write_text("".join(line + "\n" for line in simulate_games(12, seed=17, players=6)), encoding="utf-8")
    runner = CliRunner()
    assert runner.invoke(app, ["ingest", "--db", str(db), str(games)]).exit_code == 0
    assert runner.invoke(app, ["analyze", "--db", str(db), "--max-cards", "2"]).exit_code == 0
    name = json.loads(games.read_text(encoding="utf-8").splitlines()[0])["players"]["N"]
    with served(db) as base:
        browser.open(f"{base}/players")
        assert not page_problems(browser, base), page_problems(browser, base)
        assert js(browser, "!!document.getElementById('leaderboard-by-rating') && !!document.getElementById('ratings')")
        browser.open(f"{base}/players/{name}")
        assert not page_problems(browser, base), page_problems(browser, base)
        shown = js(browser, "['ratings', 'luck-ledger'].map(id => document.getElementById(id)?.checkVisibility())")
        assert shown == [True, True], shown
        titles = js(browser, "[...document.querySelectorAll('svg title')].map(t => t.textContent)")
        assert any(t.startswith("Cards, bidding and play") for t in titles), titles
        own = js(
            browser,
            "[...document.querySelectorAll('h2#ratings ~ * tbody tr td:first-child')].map(td => td.textContent)",
        )
        assert name in own, own
        with urllib.request.urlopen(f"{base}/api/v1/players/{name}", timeout=30) as r:
            rated = json.load(r)["ratings"]
        assert {r["kind"] for r in rated} == {"pair", "player"}
        browser.screenshot(screenshots_dir() / "service_player_ratings.png", 1100)

"""The score keeper in a real browser on a phone's screen (390 × 844): a whole 25-deal game entered through
the page's buttons and forms, without a script of the page's own, is stored as the game's CSV sheet.

``backalley serve`` runs as its own process; headless Chromium is driven over the DevTools protocol
(skipped without Chromium, except under CI=true).
"""

from __future__ import annotations

import io
import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from backalley.records.sheets import csv_items, sheet_csv
from backalley.replay import replay_sheet_csv
from tests.helpers import AUTH, TOKEN, Browser, js, problems, require_chromium, screenshots_dir, served
from tests.keep_games import assert_same_game, sheet_game, start_fields

pytestmark = pytest.mark.browser

WIDTH, HEIGHT = 390, 844


def load(b: Browser, expression: str) -> None:
    """Run ``expression`` (a click) and wait for the page it leads to; nothing on it may go wrong."""
    b.events.clear()
    js(b, expression)
    b.wait_for("Page.loadEventFired")
    js(b, "1")
    found = [p for p in problems(b.events) if not p.startswith("request to another host: http://127.0.0.1:")]
    assert not found, found


def click(b: Browser, selector: str) -> None:
    load(b, f"document.querySelector({json.dumps(selector)}).click()")


def fill(b: Browser, fields: dict[str, str]) -> None:
    for name, value in fields.items():
        js(b, f"document.querySelector('[name={name}]').value = {json.dumps(value)}")


def start(b: Browser, base: str, sheet: dict[str, Any]) -> None:
    b.call(
        "Emulation.setDeviceMetricsOverride",
        {"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": True},
        session=True,
    )
    seen = b.open(base + "/games", WIDTH, mobile=True)
    assert all(p.startswith("request to another host: http://127.0.0.1:") for p in seen), seen
    load(b, "[...document.querySelectorAll('nav.site a')].find(a => a.textContent === 'Keep score').click()")
    assert js(b, "location.pathname") == "/keep"
    fields = start_fields(sheet)
    fill(b, {k: v for k, v in fields.items() if k not in ("options", "first_dealer", "ruleset")})
    fill(b, {"token": TOKEN, "first_dealer": fields["first_dealer"]})
    click(b, "form.keep button[type=submit]")
    assert js(b, "location.pathname").startswith("/keep/")


def enter_deal(b: Browser, deal: dict[str, Any]) -> None:
    """The deal's bids by their buttons (the page asks the bidders in order), then the tricks."""
    here = js(b, "[document.querySelector('#current').dataset.deal, document.querySelector('#current').dataset.dealer]")
    assert here == [str(deal["number"]), deal["dealer"]]
    for bid in deal["bids"]:
        asked = js(b, "document.querySelector('form.bids strong').textContent")
        assert f"({bid['seat']})" in asked
        click(b, f"form.bids button[value='{bid['bid']}']")
    if "tricks_won" in deal:
        fill(b, {s: str(t) for s, t in deal["tricks_won"].items()})
        click(b, "form.tricks button[type=submit]")


def test_a_whole_game_kept_on_a_phone_is_stored_as_its_csv_sheet(tmp_path: Path) -> None:
    sheet = sheet_game(31)
    assert sum(1 for d in sheet["deals"] if "tricks_won" in d) == 25
    csv = sheet_csv(sheet).encode("utf-8")
    (item,) = list(csv_items("game.csv", io.BytesIO(csv)))
    from_csv, _ = replay_sheet_csv(item.raw, item.line or 1)
    tokens = tmp_path / "tokens"
    tokens.write_text(TOKEN + "\n")
    browser = Browser(require_chromium(), tmp_path / "chromium-profile")
    try:
        with served(tmp_path / "keep.duckdb", "--tokens", str(tokens)) as base:
            start(browser, base, sheet)
            for k, deal in enumerate(sheet["deals"]):
                enter_deal(browser, deal)
                if k == 3:  # taken back by its button, and entered again
                    click(browser, "#take-back")
                    assert js(browser, "document.querySelectorAll('a.fix').length") == k
                    enter_deal(browser, deal)
                if k == 12:
                    browser.screenshot(screenshots_dir() / "service_keep.png", WIDTH, mobile=True)
                    scroll, inner = browser.scroll_width()
                    assert scroll <= inner, "the page is wider than the phone"
            assert js(browser, "document.querySelector('#over') !== null")
            click(browser, "#store")
            assert js(browser, "document.querySelector('#stored a').textContent") == sheet["game_id"]
            request = urllib.request.Request(f"{base}/api/v1/games/{sheet['game_id']}/raw", headers=AUTH)
            with urllib.request.urlopen(request, timeout=30) as answer:
                stored = json.loads(answer.read())
    finally:
        browser.close()
    assert_same_game(stored, from_csv)

"""Every generated page opens in headless Chromium without a console error or a request to another host.

The browser is driven over the DevTools protocol (CDP) on a websocket: Runtime,
Log and Network events are collected while the page loads, then a full-page
screenshot is saved (under $REPORT_SCREENSHOTS when set, else a tmp folder) for
people to look at. Without Chromium the test is skipped with the reason, except
under CI=true, where it fails.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from backalley.reporting import compute, write_reports
from backalley.reporting.metrics import open_store
from tests.helpers import Browser, require_chromium, screenshots_dir
from tests.report_sample import build_hand_made

pytestmark = pytest.mark.browser


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


def evaluate(browser: Browser, expression: str) -> Any:
    return browser.call("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=True)["result"][
        "value"
    ]


def test_contents_and_folded_tables(tmp_path: Path, browser: Browser) -> None:
    """Every page opens with its contents, each entry leading to a heading of the page; the tables by hand
    size are folded on screen and shown whole when the page is printed (CSS only: the pages run no script)."""
    db = tmp_path / "store.duckdb"
    build_hand_made(db)
    summary = write_reports(db, tmp_path / "reports", workers=1)
    page = next(p for p in summary.player_pages if p.name.startswith("alice-"))
    for each in (summary.index, page):
        assert not browser.open(each.resolve().as_uri())
        entries = evaluate(
            browser,
            "[...document.querySelectorAll('nav.contents a')].map(a => [a.textContent,"
            " document.getElementById(a.getAttribute('href').slice(1))?.tagName])",
        )
        assert len(entries) >= 3 and all(tag == "H2" for _, tag in entries), entries
        assert evaluate(  # the contents come before the first section
            browser,
            "!!(document.querySelector('nav.contents').compareDocumentPosition(document.querySelector('main h2'))"
            " & Node.DOCUMENT_POSITION_FOLLOWING)",
        )
    assert not browser.open(page.resolve().as_uri())
    folded = "[...document.querySelectorAll('details.fold')]"
    shown = ".map(d => [d.querySelector('summary').textContent, d.open, d.querySelector('table').checkVisibility(),"
    shown += " d.nextElementSibling.querySelector('table').checkVisibility()])"
    screen = evaluate(browser, folded + shown)
    assert [s[0].split(" (")[0] for s in screen] == ["By hand size", "By hand size"], screen
    assert all(not is_open and not inside and not copy for _, is_open, inside, copy in screen), screen
    browser.call("Emulation.setEmulatedMedia", {"media": "print"}, session=True)
    try:
        printed = evaluate(browser, folded + shown)
        rows = evaluate(browser, "[...document.querySelectorAll('.print-only tbody tr')].length")
    finally:
        browser.call("Emulation.setEmulatedMedia", {"media": ""}, session=True)
    assert all(copy for *_, copy in printed) and rows >= 2, printed  # the whole table, on paper


def leaderboard(db: Path) -> Any:
    """The store's leaderboard, as the report computes it."""
    con = open_store(db)
    try:
        return compute(con).leaderboard
    finally:
        con.close()


def visible_view(browser: Browser) -> list[Any]:
    """The leaderboard view on screen: its id, its players in order, the header of its sorted column."""
    return evaluate(  # type: ignore[no-any-return]
        browser,
        "(() => { const v = [...document.querySelectorAll('.views > .view')].filter(v => v.checkVisibility());"
        " return v.map(s => [s.id, [...s.querySelectorAll('tbody tr td:first-child a')].map(a => a.textContent),"
        " s.querySelector('th .sorted').textContent]); })()",
    )


def test_leaderboard_sorted_views_without_script(tmp_path: Path, browser: Browser) -> None:
    """One view at a time: points per deal unless the address names another; the headers link to each."""
    from backalley.store.ingest import ingest

    samples = Path(__file__).resolve().parents[1] / "data" / "sample"
    db = tmp_path / "store.duckdb"
    ingest([str(samples / "valid-games.jsonl"), *map(str, sorted((samples / "rulesets").glob("valid-*")))], db)
    summary = write_reports(db, tmp_path / "reports", workers=1)
    lb = leaderboard(db)
    uri = summary.index.resolve().as_uri()
    assert not browser.open(uri)
    [(anchor, players, sorted_by)] = visible_view(browser)
    assert anchor == "leaderboard-by-points" and sorted_by.startswith("points / deal")
    assert players == lb.sort(["points_per_deal", "player"], descending=[True, False])["player"].to_list()
    links = evaluate(browser, "[...document.querySelectorAll('#leaderboard-by-points th a')].map(a => a.hash)")
    assert "#leaderboard-by-won" in links and len(links) >= 4
    evaluate(
        browser, "document.querySelector('#leaderboard-by-points th a[href=\"#leaderboard-by-won\"]').click(); true"
    )
    [(anchor, players, sorted_by)] = visible_view(browser)
    won = lb.with_columns(r=pl.col("games_won") / pl.col("games")).sort(
        ["r", "games", "player"], descending=[True, True, False]
    )
    assert anchor == "leaderboard-by-won" and sorted_by.startswith("won") and players == won["player"].to_list()
    # On a phone, the key columns are on screen without scrolling the table.
    assert not browser.open(uri, width=390, mobile=True)
    right = evaluate(
        browser,
        "[...document.querySelectorAll('#leaderboard-by-points th')].slice(0, 3)"
        ".map(th => th.getBoundingClientRect().right)",
    )
    assert len(right) == 3 and max(right) <= 390, right
    broken = evaluate(  # a ruleset's name never breaks inside a word: each word is on one line
        browser,
        "[...document.querySelectorAll('#rulesets ~ div.scroll td:first-child a')].filter(a => {"
        " const r = document.createRange(); return a.textContent.split(' ').some(w => {"
        " const i = a.textContent.indexOf(w); r.setStart(a.firstChild, i); r.setEnd(a.firstChild, i + w.length);"
        " return r.getClientRects().length > 1; }); }).map(a => a.textContent)",
    )
    assert broken == [], broken
    browser.screenshot(screenshots_dir() / "rulesets_index.phone.png", 390, mobile=True)


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
    marks = evaluate(
        browser, "[...document.querySelectorAll('#leaderboard ~ .views .view:first-child .mark')].map(m => m.title)"
    )
    assert marks and all(t.startswith(("above the field", "below the field")) for t in marks), marks
    assert evaluate(browser, "document.body.innerText.includes('▲ / ▼: the player')")
    page = next(p for p in summary.player_pages)
    seen = browser.open(page.resolve().as_uri())
    assert not seen, seen


def analysed_store(tmp_path: Path, *, games: int, seed: int, players: int) -> Path:
    """A store of simulated standard games, ingested and analysed (deals of up to 2 cards) through the CLI."""
    from typer.testing import CliRunner

    from backalley.cli.app import app
    from backalley.simulate import simulate_games

    records = tmp_path / "games.jsonl"
    lines = simulate_games(games, seed=seed, players=players)
    records.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    db = tmp_path / "store.duckdb"
    runner = CliRunner()
    assert runner.invoke(app, ["ingest", "--db", str(db), str(records)]).exit_code == 0
    assert runner.invoke(app, ["analyze", "--db", str(db), "--max-cards", "2"]).exit_code == 0
    return db


def test_double_dummy_sections_load_cleanly(tmp_path: Path, browser: Browser) -> None:
    """Analysed standard games: the bid-vs-makeable and play-accuracy tables render, on desktop and phone."""
    db = analysed_store(tmp_path, games=2, seed=15, players=4)
    summary = write_reports(db, tmp_path / "reports", workers=1)
    for page in (summary.index, summary.player_pages[0]):
        seen = browser.open(page.resolve().as_uri())
        rows = browser.call(
            "Runtime.evaluate",
            {
                "expression": "['bid-vs-makeable', 'play-accuracy'].map(id => document.querySelectorAll("
                "'h2#' + id + ' ~ details.fold')[0].querySelectorAll('tbody tr').length)",
                "returnByValue": True,
            },
            session=True,
        )["result"]["value"]
        assert all(n >= 2 for n in rows), (page.name, rows)  # the "all" row and one per hand size
        seen += browser.open(page.resolve().as_uri(), width=390, mobile=True)
        scroll, inner = browser.scroll_width()
        assert scroll <= inner + 1, (page.name, scroll, inner)
        assert not seen, (page.name, seen)


def test_ratings_calibration_and_the_luck_ledger_render(tmp_path: Path, browser: Browser) -> None:
    """A store rated at ingest and analysed: the leaderboard's rating view, the ratings, their calibration
    charts, and a player's ratings and luck ledger load cleanly, on desktop and phone."""
    db = analysed_store(tmp_path, games=40, seed=16, players=6)
    summary = write_reports(db, tmp_path / "reports", workers=1)
    lb = leaderboard(db)
    uri = summary.index.resolve().as_uri()
    assert not browser.open(uri)
    evaluate(
        browser, "document.querySelector('#leaderboard-by-points th a[href=\"#leaderboard-by-rating\"]').click(); true"
    )
    [(anchor, players, sorted_by)] = visible_view(browser)
    by_rating = lb.sort(["rating", "rating_games", "player"], descending=[True, True, False], nulls_last=True)
    assert anchor == "leaderboard-by-rating" and sorted_by.startswith("rating (μ − 3σ)")
    assert players == by_rating["player"].to_list() and lb["rating"].null_count() < lb.height
    tables = evaluate(
        browser,
        "['ratings', 'ratings-calibration'].map(id => [...document.querySelectorAll('h2#' + id + ' ~ *')]"
        ".filter(e => e.querySelector('tbody')).length)",
    )
    assert all(n >= 1 for n in tables), tables
    charts = evaluate(browser, "[...document.querySelectorAll('svg title')].map(t => t.textContent)")
    assert {"Calibration: standard, partnerships", "Calibration: standard, players"} <= set(charts), charts
    browser.screenshot(screenshots_dir() / "ratings_index.png", 1100)
    assert not browser.open(uri, width=390, mobile=True)
    scroll, inner = browser.scroll_width()
    assert scroll <= inner + 1, (scroll, inner)
    page = summary.player_pages[0]
    assert not browser.open(page.resolve().as_uri())
    shown = evaluate(
        browser,
        "['ratings', 'luck-ledger'].map(id => !!document.getElementById(id) && document.getElementById(id)"
        ".checkVisibility())",
    )
    assert shown == [True, True], shown
    titles = evaluate(browser, "[...document.querySelectorAll('svg title')].map(t => t.textContent)")
    assert any(t.startswith("Cards, bidding and play") for t in titles), titles
    browser.screenshot(screenshots_dir() / "ratings_player.png", 1100)

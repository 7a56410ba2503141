"""The club's site in a real browser: the games index (filters, sort, pages), a player's games, the menu.

``backalley serve`` runs as its own process; headless Chromium is driven over the
DevTools protocol (skipped without Chromium, except under CI=true).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from backalley.store.ingest import ingest
from tests.helpers import Browser, js, problems, screenshots_dir, served
from tests.service_games import faulty, ndjson, record

pytestmark = pytest.mark.browser

GAMES = 7


def recs() -> list[dict[str, Any]]:
    out = [record(f"b{i}", seed=i + 3) for i in range(GAMES)]
    out[1] = faulty(out[1])
    return out


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, list[dict[str, Any]], Path]]:
    folder = tmp_path_factory.mktemp("site")
    games = folder / "games.jsonl"
    games.write_bytes(ndjson(*recs()))
    db = folder / "site.duckdb"
    ingest([str(games)], db)
    with served(db) as base:
        yield base, recs(), db


def follow(b: Browser, expression: str, refused: bool = False) -> None:
    """Run ``expression`` (a click or a submit) and wait for the next page to load (``refused``: a 4xx page)."""
    b.events.clear()
    js(b, expression)
    b.wait_for("Page.loadEventFired")
    time.sleep(0.2)
    js(b, "1")
    found = [p for p in problems(b.events) if not base_only(p)]
    assert not found or (refused and all("status of 4" in p for p in found)), found


def base_only(problem: str) -> bool:
    return problem.startswith("request to another host: http://127.0.0.1:")


def shown_games(b: Browser) -> list[str]:
    return list(js(b, "[...document.querySelectorAll('a.game')].map(a => a.textContent)"))


def newest_first(found: list[dict[str, Any]]) -> list[str]:
    return [r["game_id"] for r in sorted(found, key=lambda r: (r["played_at"], r["game_id"]), reverse=True)]


def test_browse_filter_sort_and_page_through_the_games(site: Any, browser: Browser) -> None:
    base, found, _ = site
    seen = browser.open(base + "/games?limit=3")
    assert all(base_only(p) for p in seen), seen
    assert shown_games(browser) == newest_first(found)[:3]
    browser.screenshot(screenshots_dir() / "service_games_index.png", 1100)
    follow(browser, "document.querySelector('a[rel=next]').click()")
    assert shown_games(browser) == newest_first(found)[3:6]
    follow(browser, "document.querySelector('a[rel=next]').click()")
    assert shown_games(browser) == newest_first(found)[6:]
    assert js(browser, "document.querySelector('a[rel=next]')") is None
    # sort by game: its column head
    follow(browser, "[...document.querySelectorAll('a.sort')].find(a => a.textContent.startsWith('game')).click()")
    assert shown_games(browser) == sorted(r["game_id"] for r in found)[:50]
    # filter by status through the form, as a person would
    js(browser, "document.querySelector('select[name=status]').value = 'invalid'")
    follow(browser, "document.querySelector('form.filters button').click()")
    assert shown_games(browser) == ["b1"]
    # a row leads to its game
    follow(browser, "document.querySelector('a.game').click()")
    assert js(browser, "location.pathname") == "/games/b1"


def test_a_players_games_and_partners_from_their_page(site: Any, browser: Browser) -> None:
    base, found, _ = site
    player = found[0]["players"]["N"]
    browser.open(base + "/games")
    follow(browser, f"[...document.querySelectorAll('a')].find(a => a.textContent === {player!r}).click()")
    deadline = time.monotonic() + 60
    while js(browser, "document.title").startswith("404"):  # the figures are computed at start, in the background
        assert time.monotonic() < deadline
        time.sleep(0.5)
        follow(browser, "location.reload()")
    theirs = newest_first([r for r in found if player in r["players"].values()])
    assert shown_games(browser) == theirs
    partner = found[0]["players"]["S"]
    follow(
        browser,
        f"[...document.querySelectorAll('table.partners a')].find(a => a.href.includes('partner=')"
        f" && a.closest('tr').textContent.includes({partner!r})).click()",
    )
    together = [
        r
        for r in found
        if {r["players"]["N"], r["players"]["S"]} == {player, partner}
        or {r["players"]["E"], r["players"]["W"]} == {player, partner}
    ]
    assert shown_games(browser) == newest_first(together)


def test_the_menu_leads_to_every_part_of_the_site(site: Any, browser: Browser) -> None:
    base, _, _ = site
    browser.open(base + "/games")
    labels = js(browser, "[...document.querySelectorAll('nav.site a')].map(a => a.textContent)")
    assert labels[:2] == ["Games", "Players"] and "Definitions" in labels
    follow(browser, "[...document.querySelectorAll('nav.site a')].find(a => a.textContent === 'Definitions').click()")
    assert js(browser, "document.querySelector('h1').textContent") == "Report metrics"
    assert js(browser, "[...document.querySelectorAll('nav.site a')].map(a => a.textContent)") == labels
    follow(browser, "[...document.querySelectorAll('nav.site a')].find(a => a.textContent === 'Games').click()")
    assert js(browser, "location.pathname") == "/games"


@pytest.fixture(scope="module")
def analysed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One simulated game, its deals of up to 6 cards analysed double-dummy."""
    from typer.testing import CliRunner

    from backalley.cli.app import app

    runner = CliRunner()
    folder = tmp_path_factory.mktemp("dd")
    src, db = folder / "g.jsonl", folder / "g.duckdb"
    assert runner.invoke(app, ["simulate", "-n", "1", "--seed", "5", "-w", "1", "-o", str(src)]).exit_code == 0
    assert runner.invoke(app, ["ingest", str(src), "--db", str(db), "--workers", "1"]).exit_code == 0
    assert runner.invoke(app, ["analyze", "--db", str(db), "--max-cards", "6", "--workers", "1"]).exit_code == 0
    return db


def test_double_dummy_on_the_deal_page(analysed: Path, browser: Browser) -> None:
    import duckdb

    with duckdb.connect(str(analysed), read_only=True) as con:
        game_id, deal, ns, ew = con.execute(
            "SELECT game_id, deal, dd_ns, dd_ew FROM dd_deals d WHERE analysed ORDER BY (SELECT count(*) FROM"
            " dd_plays p WHERE p.game_id = d.game_id AND p.deal = d.deal AND p.cost > 0) DESC, deal LIMIT 1"
        ).fetchall()[0]
        costs = con.execute(
            "SELECT trick, position, cost FROM dd_plays WHERE game_id = ? AND deal = ? AND cost > 0 ORDER BY ALL",
            [game_id, deal],
        ).fetchall()
        plain = con.execute(
            "SELECT min(deal) FROM deals d WHERE NOT pass_out AND game_id = ? AND deal NOT IN"
            " (SELECT deal FROM dd_deals WHERE game_id = ?)",
            [game_id, game_id],
        ).fetchall()[0][0]
    with served(analysed) as base:
        browser.open(f"{base}/games/{game_id}")
        assert js(browser, "[...document.querySelectorAll('th')].some(th => th.textContent === 'dd NS–EW')")
        follow(browser, f"document.querySelector('a[href$=\"/deals/{deal}\"]').click()")
        assert js(browser, "document.querySelector('.dd-values').textContent") == f"NS {ns}, EW {ew}"
        assert "all four hands" in js(browser, "document.querySelector('.dd-meaning').textContent")
        marked = js(
            browser,
            "[...document.querySelectorAll('tr[id^=trick-]')].flatMap(tr => [...tr.querySelectorAll('.play')]"
            ".map((p, k) => [Number(tr.id.slice(6)), k + 1, p.querySelector('.cost')?.textContent]))"
            ".filter(x => x[2]).map(x => [x[0], x[1], Number(x[2].slice(1))])",
        )
        assert costs and [tuple(m) for m in marked] == [tuple(c) for c in costs]
        browser.screenshot(screenshots_dir() / "service_deal_dd.png", 1100)
        browser.open(f"{base}/games/{game_id}/deals/{plain}")
        assert "not analysed" in js(browser, "document.querySelector('p.dd').textContent")


def test_sql_in_the_browser(site: Any, browser: Browser) -> None:
    import urllib.request

    base, found, _ = site
    browser.open(base + "/sql")
    assert js(browser, "document.querySelector('nav.site a[href=\"/sql\"]').textContent") == "SQL"
    js(browser, "document.getElementById('q').value = 'SELECT game_id, status FROM games WHERE status = $s ORDER BY 1'")
    js(browser, "document.getElementById('params').value = 's=invalid'")
    follow(browser, "document.querySelector('form button[type=submit]').click()")
    cells = js(browser, "[...document.querySelectorAll('table.result tbody tr')].map(tr => tr.cells[0].textContent)")
    assert cells == ["b1"]
    browser.screenshot(screenshots_dir() / "service_sql.png", 1100)
    csv_link = js(browser, "[...document.querySelectorAll('a.download')].find(a => a.textContent === 'CSV').href")
    with urllib.request.urlopen(csv_link, timeout=30) as answer:
        assert answer.read().decode().splitlines() == ["game_id,status", "b1,invalid"]
    # a query that writes: said on the page, nothing changed
    js(browser, "document.getElementById('q').value = 'DELETE FROM games'")
    js(browser, "document.getElementById('params').value = ''")
    follow(browser, "document.querySelector('form button[type=submit]').click()", refused=True)
    assert "DELETE" in js(browser, "document.getElementById('sql-error').textContent")
    # an example, then the list of tables and views
    follow(browser, "document.querySelector('ul.examples a').click()")
    assert js(browser, "document.querySelectorAll('table.result tbody tr').length") > 0
    columns = js(browser, "[...document.querySelectorAll('#table-games li code')].map(c => c.textContent)")
    assert "game_id" in columns and "played_at" in columns
    with urllib.request.urlopen(base + "/api/v1/sql?q=SELECT%20count(*)%20AS%20n%20FROM%20games", timeout=30) as a:
        assert a.read().decode().replace(" ", "").replace("\n", "").replace("\t", "") == f'[{{"n":{len(found)}}}]'


def test_downloads_from_the_game_page(site: Any, browser: Browser) -> None:
    import csv
    import io
    import urllib.request

    base, found, _ = site
    browser.open(base + "/games/b0")
    links = js(
        browser, "Object.fromEntries([...document.querySelectorAll('.downloads a')].map(a => [a.textContent, a.href]))"
    )
    with urllib.request.urlopen(links["the record as stored"], timeout=30) as answer:
        from tests.service_games import line

        assert answer.read() == line(found[0]).encode("utf-8")
    with urllib.request.urlopen(links["CSV"], timeout=30) as answer:
        rows = list(csv.DictReader(io.StringIO(answer.read().decode())))
    assert [int(r["deal"]) for r in rows] == list(range(1, len(found[0]["deals"]) + 1))

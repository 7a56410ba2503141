"""The service as a club's site: the games index, the players list, the player's games (API and pages).

Every expected list is computed here from the records sent, never read back from the service's SQL.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient

from backalley.service.listing import MAX_LIMIT, Cursors
from tests.helpers import AUTH, NDJSON, make_client
from tests.service_games import faulty, ndjson, record

PROBLEM = "application/problem+json"
GAMES = 9


def records() -> list[dict[str, Any]]:
    recs = [record(f"g{i:02d}", seed=i + 1) for i in range(GAMES)]
    recs[2] = faulty(recs[2])  # invalid
    recs[5]["played_at"] = recs[4]["played_at"]  # a tie on the sort key: game_id breaks it
    recs[6]["event"] = "Spring cup"
    return recs


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, list[dict[str, Any]], Path]]:
    db = tmp_path_factory.mktemp("site") / "site.duckdb"
    recs = records()
    with make_client(db, metrics_max_age=0) as client:
        r = client.post("/api/v1/games", content=ndjson(*recs), headers={**NDJSON, **AUTH})
        assert r.status_code == 200, r.text
        deadline = time.monotonic() + 60  # the players' figures follow the upload in the background
        while client.get(f"/players/{quote(recs[0]['players']['N'])}").status_code != 200:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        yield client, recs, db


def assert_problem(r: Any, status: int = 400) -> str:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith(PROBLEM)
    body = r.json()
    assert body["status"] == status and body["type"] == "about:blank" and body["title"] and body["instance"]
    return str(body["detail"])


def newest_first(recs: list[dict[str, Any]]) -> list[str]:
    return [r["game_id"] for r in sorted(recs, key=lambda r: (r["played_at"], r["game_id"]), reverse=True)]


def walk(client: TestClient, url: str) -> tuple[list[str], int]:
    """Every game id of every page from ``url`` on, following ``next``; and how many pages."""
    ids: list[str] = []
    pages = 0
    while url:
        r = client.get(url)
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["count"] == len(body["games"])
        ids += [g["game_id"] for g in body["games"]]
        pages += 1
        url = body["next"]
        assert (r.headers.get("link") is None) == (url is None)
    return ids, pages


def test_the_index_lists_every_game_newest_first_a_page_at_a_time(site: Any) -> None:
    client, recs, _ = site
    ids, pages = walk(client, "/api/v1/games?limit=2")
    assert ids == newest_first(recs)
    assert pages == (GAMES + 1) // 2
    one = client.get("/api/v1/games?limit=1").json()["games"][0]
    assert one["href"] == f"/api/v1/games/{one['game_id']}" and client.get(one["href"]).status_code == 200


def test_a_game_stored_after_a_page_was_read_does_not_shift_the_next_pages(tmp_path: Path) -> None:
    recs = [record(f"k{i}", seed=i + 1) for i in range(4)]
    with make_client(tmp_path / "k.duckdb") as client:
        client.post("/api/v1/games", content=ndjson(*recs), headers={**NDJSON, **AUTH})
        first = client.get("/api/v1/games?limit=2").json()
        newer = record("k9", seed=20)
        newer["played_at"] = "2099-01-01T00:00:00Z"
        client.post("/api/v1/games", content=ndjson(newer), headers={**NDJSON, **AUTH})
        rest, _ = walk(client, first["next"])
    assert [g["game_id"] for g in first["games"]] + rest == newest_first(recs)


@pytest.mark.parametrize(
    ("query", "keep"),
    [
        ("player=Ada", lambda r: "Ada" in r["players"].values()),
        ("event=Spring%20cup", lambda r: r["event"] == "Spring cup"),
        ("ruleset=standard", lambda r: True),
        ("status=invalid", lambda r: r["game_id"] == "g02"),
        ("since=2026-06-01", lambda r: r["played_at"] >= "2026-06-01"),
        ("until=2026-06-30", lambda r: r["played_at"] < "2026-07-01"),
        ("since=2026-03-01T00:00:00Z&until=2026-08-31", lambda r: "2026-03-01" <= r["played_at"] < "2026-09-01"),
    ],
)
def test_each_filter_selects_the_games_it_names(site: Any, query: str, keep: Any) -> None:
    client, recs, _ = site
    wanted = newest_first([r for r in recs if keep(r)])
    ids, _ = walk(client, f"/api/v1/games?{query}&limit=3")
    assert ids == wanted
    assert 0 < len(wanted) <= GAMES or query.startswith("ruleset")


def test_partner_filter_is_the_games_two_players_sat_opposite(site: Any) -> None:
    client, recs, _ = site
    p = recs[0]["players"]
    ids, _ = walk(client, f"/api/v1/games?player={p['N']}&partner={p['S']}")

    def together(r: dict[str, Any]) -> bool:
        q = r["players"]
        return {q["N"], q["S"]} == {p["N"], p["S"]} or {q["E"], q["W"]} == {p["N"], p["S"]}

    assert ids == newest_first([r for r in recs if together(r)])
    assert "g00" in ids


@pytest.mark.parametrize(
    ("sort", "order", "key"),
    [
        ("game_id", "asc", lambda r: r["game_id"]),
        ("game_id", "desc", lambda r: r["game_id"]),
        ("played_at", "asc", lambda r: r["played_at"]),
        ("event", "asc", lambda r: r["event"] or ""),
        ("status", "desc", lambda r: "invalid" if r["game_id"] == "g02" else "incomplete"),
    ],
)
def test_sorted_by_any_column_and_paged(site: Any, sort: str, order: str, key: Any) -> None:
    client, recs, _ = site
    ids, _ = walk(client, f"/api/v1/games?sort={sort}&order={order}&limit=2")
    expected = sorted(recs, key=lambda r: (key(r), r["game_id"]), reverse=order == "desc")
    assert ids == [r["game_id"] for r in expected]


def test_the_players_list_pages_by_name(site: Any) -> None:
    client, recs, _ = site
    names: list[str] = []
    url: str | None = "/api/v1/players?limit=2"
    while url:
        body = client.get(url).json()
        names += [p["player"] for p in body["players"]]
        url = body["next"]
    assert names == sorted({p for r in recs for p in r["players"].values()})
    first = client.get("/api/v1/players?limit=1").json()["players"][0]
    assert first["games"] == sum(first["player"] in r["players"].values() for r in recs)
    assert client.get(first["games_href"]).json()["count"] == min(first["games"], 50)


@pytest.mark.parametrize(
    "query",
    [
        "limit=1000000000",
        "limit=0",
        "limit=-1",
        "limit=abc",
        "ruleset=standard'%20OR%20'1'='1",
        "status=valid;DROP%20TABLE%20games",
        "sort=played_at;DROP%20TABLE%20games",
        "sort=game_id&order=desc;--",
        "since=yesterday",
        "until=2026-13-45",
        "partner=Ada",
        "player=" + "x" * 300,
        "player=a%00b",
        "after=abc",
        "after=abc.def",
        "after=" + "A" * 2000,
    ],
)
def test_bad_filters_limits_and_cursors_are_problems_and_touch_nothing(site: Any, query: str) -> None:
    client, _, db = site
    before = snapshot_counts(client)
    assert_problem(client.get(f"/api/v1/games?{query}"))
    assert snapshot_counts(client) == before
    assert db.exists()


def test_sql_in_a_name_filter_is_a_name_like_any_other(site: Any) -> None:
    client, _, _ = site
    before = snapshot_counts(client)
    for name in ("Ada' OR '1'='1", "Ada'); DROP TABLE g_games; --", "' UNION SELECT * FROM api_tokens --"):
        r = client.get("/api/v1/games", params={"player": name, "event": name})
        assert r.status_code == 200 and r.json()["games"] == []
    assert snapshot_counts(client) == before


def snapshot_counts(client: TestClient) -> tuple[int, ...]:
    with client.app.state.service.reader() as cur:  # type: ignore[attr-defined]
        return tuple(cur.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0] for t in ("games", "deals", "plays"))


def test_forged_and_foreign_cursors_are_refused(site: Any) -> None:
    client, _, _ = site
    issued = client.get("/api/v1/games?limit=2").json()["next"]
    cursor = issued.split("after=")[1]
    body, mac = cursor.split(".")
    forged = body[:-2] + ("AA" if body[-2:] != "AA" else "BB") + "." + mac
    assert "not issued" in assert_problem(client.get(f"/api/v1/games?limit=2&after={forged}"))
    other = Cursors().issue('["played_at","desc",{}]', "2026-01-01T00:00:00+00:00", "g00")
    assert "not issued" in assert_problem(client.get(f"/api/v1/games?limit=2&after={other}"))
    # a real cursor of other filters (or another sort) is not one of these
    assert "other filters" in assert_problem(client.get(f"/api/v1/games?limit=2&player=Ada&after={cursor}"))
    assert "other filters" in assert_problem(client.get(f"/api/v1/games?limit=2&sort=game_id&after={cursor}"))
    players_cursor = client.get("/api/v1/players?limit=1").json()["next"].split("after=")[1]
    assert_problem(client.get(f"/api/v1/games?after={players_cursor}"))


def test_the_lists_are_in_the_openapi_schema(site: Any) -> None:
    client, _, _ = site
    paths = client.get("/api/v1/openapi.json").json()["paths"]
    names = {p["name"] for p in paths["/api/v1/games"]["get"]["parameters"]}
    assert {"player", "partner", "event", "ruleset", "status", "since", "until", "limit", "after", "sort"} <= names
    limit = next(p for p in paths["/api/v1/games"]["get"]["parameters"] if p["name"] == "limit")
    assert limit["schema"]["maximum"] == MAX_LIMIT
    assert {p["name"] for p in paths["/api/v1/players"]["get"]["parameters"]} == {"limit", "after"}
    assert "post" in paths["/api/v1/games"]  # the upload is still there


def game_links(text: str) -> list[str]:
    return re.findall(r'<a class="game" href="/games/([^"]+)">', text)


def test_the_index_page_links_every_game_and_sorts_by_its_column_heads(site: Any) -> None:
    client, recs, _ = site
    r = client.get("/games?limit=4")
    assert r.status_code == 200 and "text/html" in r.headers["content-type"]
    assert game_links(r.text) == newest_first(recs)[:4]
    nxt = re.search(r'<a rel="next" href="([^"]+)"', r.text)
    assert nxt is not None
    page2 = client.get(nxt.group(1).replace("&amp;", "&"))
    assert game_links(page2.text) == newest_first(recs)[4:8]
    head = re.search(r'<a class="sort" href="([^"]+)">game</a>', r.text)
    assert head is not None
    by_id = client.get(head.group(1).replace("&amp;", "&"))
    assert game_links(by_id.text) == sorted(r["game_id"] for r in recs)
    assert client.get(f"/games/{game_links(r.text)[0]}").status_code == 200


def test_the_index_page_filters_and_says_what_is_wrong(site: Any) -> None:
    client, _, _ = site
    r = client.get("/games?status=invalid")
    assert game_links(r.text) == ["g02"]
    bad = client.get("/games?limit=1000000000")
    assert bad.status_code == 400 and "text/html" in bad.headers["content-type"] and "limit" in bad.text


def test_a_players_page_lists_their_games_and_partners(site: Any) -> None:
    client, recs, _ = site
    p = recs[0]["players"]["N"]
    r = client.get(f"/players/{quote(p)}")
    assert r.status_code == 200, r.text
    theirs = newest_first([x for x in recs if p in x["players"].values()])
    assert game_links(r.text) == theirs
    partners = re.findall(r"partner=([^\"&]+)\">(\d+)</a>", r.text)
    expected: dict[str, int] = {}
    for x in recs:
        q = x["players"]
        for a, b in (("N", "S"), ("S", "N"), ("E", "W"), ("W", "E")):
            if q[a] == p:
                expected[q[b]] = expected.get(q[b], 0) + 1
    assert {name: int(n) for name, n in partners} == expected


def test_the_database_is_unchanged_by_reading(site: Any) -> None:
    client, _, _ = site
    before = snapshot_counts(client)
    walk(client, "/api/v1/games?limit=1")
    client.get("/games?player=Ada")
    assert snapshot_counts(client) == before


def menu_links(text: str) -> list[str]:
    found = re.search(r'<nav class="site"[^>]*>(.*?)</nav>', text, flags=re.S)
    assert found is not None, text[:500]
    return re.findall(r'<a href="([^"]+)">', found.group(1))


def test_every_page_has_the_same_menu_and_its_links_answer(site: Any) -> None:
    client, recs, _ = site
    player = quote(recs[0]["players"]["N"])
    pages = ["/", "/games", "/games/g00", "/games/g00/deals/1", "/players", f"/players/{player}"]
    pages += ["/metrics.html", "/login", "/games/nothing-here"]
    menus = {page: menu_links(client.get(page).text) for page in pages}
    first = menus["/"]
    assert all(m == first for m in menus.values()), menus
    assert {"/games", "/players", "/", "/metrics.html"} <= set(first)
    for href in first:
        assert client.get(href).status_code == 200, href


def test_the_definitions_page_is_where_the_reports_pages_link(site: Any) -> None:
    client, recs, _ = site
    index = client.get("/players").text
    link = re.search(r'Definitions: <a href="([^"]+)">', index)
    assert link is not None and link.group(1) == "metrics.html"  # relative to /players: /metrics.html
    player = client.get(f"/players/{quote(recs[0]['players']['N'])}").text
    assert re.search(r'Definitions: <a href="\.\./metrics\.html">', player)  # from /players/x: /metrics.html
    r = client.get("/metrics.html")
    assert (
        r.status_code == 200
        and "<h1>Report metrics</h1>" in r.text
        and '<h2 id="rates-counts-and-intervals">' in r.text
    )

"""Downloads: a game's raw record, a game's deals and a player's games as CSV and JSON (API and the pages' links)."""

from __future__ import annotations

import csv
import io
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient

from backalley.service import downloads
from tests.helpers import AUTH, NDJSON, make_client
from tests.service_games import hostile, line, ndjson, record

PROBLEM = "application/problem+json"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, list[dict[str, Any]]]]:
    recs = [record(f"d{i}", seed=i + 1) for i in range(5)] + [hostile(record("hostile-1", seed=9))]
    with make_client(tmp_path_factory.mktemp("dl") / "dl.duckdb", metrics_max_age=0) as client:
        assert client.post("/api/v1/games", content=ndjson(*recs), headers={**NDJSON, **AUTH}).status_code == 200
        yield client, recs


def test_the_raw_record_is_the_line_uploaded(site: Any) -> None:
    client, recs = site
    for rec in recs:
        r = client.get(f"/api/v1/games/{quote(rec['game_id'], safe='')}/raw")
        assert r.status_code == 200, (rec["game_id"], r.text)
        assert r.content == line(rec).encode("utf-8")
        disposition = r.headers["content-disposition"]
        assert disposition.startswith("attachment; filename=") and re.fullmatch(
            r'attachment; filename="[A-Za-z0-9._-]+"', disposition
        )
    assert client.get("/api/v1/games/nope/raw").headers["content-type"].startswith(PROBLEM)


def test_a_games_deals_as_csv_and_json(site: Any) -> None:
    client, recs = site
    rows = list(csv.DictReader(io.StringIO(client.get("/api/v1/games/d1/deals?format=csv").text)))
    as_json = client.get("/api/v1/games/d1/deals?format=json").json()
    assert [int(r["deal"]) for r in rows] == [d["deal"] for d in as_json] == list(range(1, len(recs[1]["deals"]) + 1))
    assert [int(r["hand_size"]) for r in rows] == [len(d["hands"]["N"]) for d in recs[1]["deals"]]
    assert {r["game_id"] for r in rows} == {"d1"}
    assert client.get("/api/v1/games/d1/deals?format=xlsx").status_code == 400
    assert client.get("/api/v1/games/nope/deals").status_code == 404


def test_a_players_games_as_csv_and_json(site: Any) -> None:
    client, recs = site
    player = recs[0]["players"]["N"]
    expected = sorted((r["game_id"] for r in recs if player in r["players"].values()), reverse=True)
    rows = list(csv.DictReader(io.StringIO(client.get(f"/api/v1/export/games?player={player}&format=csv").text)))
    as_json = client.get(f"/api/v1/export/games?player={player}&format=json").json()
    key = {r["game_id"]: r["played_at"] for r in recs}
    assert sorted(r["game_id"] for r in rows) == sorted(expected)
    assert [r["game_id"] for r in as_json] == sorted(expected, key=lambda g: (key[g], g), reverse=True)
    assert client.get("/api/v1/export/games?format=json&player=nobody").json() == []
    bad = client.get("/api/v1/export/games?format=csv&status=valid';DROP TABLE games;--")
    assert bad.status_code == 400 and bad.headers["content-type"].startswith(PROBLEM)


def test_too_many_games_for_one_download(site: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    client, _ = site
    monkeypatch.setattr(downloads, "MAX_GAMES", 2)
    r = client.get("/api/v1/export/games?format=csv")
    assert r.status_code == 413 and "narrow the filters" in r.json()["detail"]


def test_the_pages_link_their_downloads(site: Any) -> None:
    client, recs = site
    links = re.findall(r'href="(/api/v1/[^"]+)"', client.get("/games/d2").text)
    links += re.findall(r'class="download" href="([^"]+)"', client.get("/games?event=Open").text)
    player = recs[0]["players"]["N"]
    deadline = time.monotonic() + 60  # the players' figures follow the upload in the background
    while (page := client.get(f"/players/{quote(player)}")).status_code != 200:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    links += re.findall(r'class="download" href="([^"]+)"', page.text)
    assert len(links) >= 8
    for href in links:
        assert client.get(href.replace("&amp;", "&")).status_code == 200, href


def test_file_names_never_carry_a_path(tmp_path: Path) -> None:
    assert downloads.file_name("../../etc/passwd", "json") == "etc_passwd.json"
    assert downloads.file_name('a"b\r\nc', "csv") == "a_b_c.csv"
    assert downloads.file_name("", "csv") == "download.csv"

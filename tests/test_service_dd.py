"""Double dummy on the web: the game page's ``dd`` column, the deal page's values and each card's cost.

Simulated games are ingested and analysed (``--max-cards 6``); what the pages show is compared
with ``dd_deals``/``dd_plays`` read straight from the file, and with what ``backalley show --deal`` prints.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from backalley.cli.app import app
from tests.helpers import make_client, show

runner = CliRunner()


@pytest.fixture(scope="module")
def analysed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("web_dd")
    src, db = folder / "g.jsonl", folder / "g.duckdb"
    assert runner.invoke(app, ["simulate", "-n", "2", "--seed", "5", "-w", "1", "-o", str(src)]).exit_code == 0
    assert runner.invoke(app, ["ingest", str(src), "--db", str(db), "--workers", "1"]).exit_code == 0
    r = runner.invoke(app, ["analyze", "--db", str(db), "--max-cards", "6", "--workers", "1"])
    assert r.exit_code == 0, r.output
    return db


@pytest.fixture(scope="module")
def stored(analysed: Path) -> dict[str, Any]:
    """The analysed deals' values and costs, and the deals left unanalysed, read from the file."""
    with duckdb.connect(str(analysed), read_only=True) as con:
        values = con.execute("SELECT game_id, deal, dd_ns, dd_ew FROM dd_deals WHERE analysed").fetchall()
        costs = con.execute("SELECT game_id, deal, trick, position, cost FROM dd_plays").fetchall()
        plain = con.execute(
            "SELECT game_id, deal FROM deals d WHERE NOT pass_out AND NOT EXISTS"
            " (SELECT 1 FROM dd_deals x WHERE x.game_id = d.game_id AND x.deal = d.deal)"
        ).fetchall()
    by_deal: dict[tuple[str, int], dict[tuple[int, int], int]] = {}
    for g, d, t, p, c in costs:
        by_deal.setdefault((g, d), {})[(t, p)] = c
    first = min((g, d) for g, d, *_ in values)
    printed = next(line for line in show(analysed, *first).splitlines() if "Double-dummy" in line)
    found = {(g, d): (ns, ew) for g, d, ns, ew in values}
    return {"values": found, "costs": by_deal, "plain": plain, "first": first, "printed": printed}


@pytest.fixture(scope="module")
def client(analysed: Path, stored: dict[str, Any]) -> Iterator[TestClient]:
    with make_client(analysed) as c:
        yield c


def page_costs(text: str) -> dict[tuple[int, int], int]:
    """Each play's cost as the deal page marks it, by (trick, position in play order)."""
    out: dict[tuple[int, int], int] = {}
    for number, body in re.findall(r'<tr id="trick-(\d+)"[^>]*>(.*?)</tr>', text, flags=re.S):
        plays = body.split('<span class="play">')[1:]
        for k, play in enumerate(plays, 1):
            m = re.search(r'<span class="cost"[^>]*>−(\d+)</span>', play)
            out[(int(number), k)] = int(m.group(1)) if m else 0
    return out


def test_the_deal_page_shows_the_values_and_each_cards_cost(client: TestClient, stored: dict[str, Any]) -> None:
    assert stored["values"], "the fixture analyses some deals"
    for (game_id, deal), (ns, ew) in stored["values"].items():
        text = client.get(f"/games/{game_id}/deals/{deal}").text
        shown = re.search(r'<span class="dd-values">([^<]*)</span>', text)
        assert shown is not None and shown.group(1) == f"NS {ns}, EW {ew}"
        assert "if everyone saw all four hands" in text
        marked = page_costs(text)
        assert marked == stored["costs"][(game_id, deal)]
        assert any(marked.values()) or all(c == 0 for c in stored["costs"][(game_id, deal)].values())


def test_the_deal_page_says_the_line_show_prints(client: TestClient, stored: dict[str, Any]) -> None:
    """(``show`` read the file before the service opened it: one process cannot do both at once.)"""
    game_id, deal = stored["first"]
    printed = stored["printed"]
    text = client.get(f"/games/{game_id}/deals/{deal}").text
    line = re.search(r'<p class="dd">(.*?)</p>', text, flags=re.S)
    assert line is not None
    assert html.unescape(re.sub(r"<[^>]+>", "", line.group(1))).strip() == printed.strip()


def test_a_deal_not_analysed_says_so(client: TestClient, stored: dict[str, Any]) -> None:
    assert stored["plain"]
    game_id, deal = stored["plain"][0]
    text = client.get(f"/games/{game_id}/deals/{deal}").text
    assert "Double-dummy: not analysed" in text and 'class="cost"' not in text
    answer = client.get(f"/api/v1/games/{game_id}/deals/{deal}").json()
    assert answer["double_dummy"] is None


def test_the_game_page_has_the_dd_column(client: TestClient, stored: dict[str, Any]) -> None:
    game_id = next(iter(stored["values"]))[0]
    text = client.get(f"/games/{game_id}").text
    assert "<th" in text and "dd NS–EW</th>" in text
    cells = re.findall(r'<a href="/games/[^/]+/deals/(\d+)">deal \d+</a>.*?<td class="dd">([^<]*)</td>', text, re.S)
    expected = {d: f"{ns}–{ew}" for (g, d), (ns, ew) in stored["values"].items() if g == game_id}
    assert {int(d): v for d, v in cells if v != "—"} == expected
    assert all(v == "—" for d, v in cells if int(d) not in expected)


def test_the_api_gives_the_deals_double_dummy_figures(client: TestClient, stored: dict[str, Any]) -> None:
    (game_id, deal), (ns, ew) = next(iter(stored["values"].items()))
    dd = client.get(f"/api/v1/games/{game_id}/deals/{deal}").json()["double_dummy"]
    assert dd["analysed"] is True and dd["values"] == {"NS": ns, "EW": ew}
    assert {(c["trick"], c["position"]): c["cost"] for c in dd["costs"]} == stored["costs"][(game_id, deal)]
    assert json.dumps(dd)

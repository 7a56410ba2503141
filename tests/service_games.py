"""Records for the service tests: short legal games, a faulty one, hostile names."""

from __future__ import annotations

import json
import random
from typing import Any

from tests.store_games import play_game

XSS = "<script>alert(1)</script>"
HOSTILE_PLAYERS = {"N": XSS, "E": "[/]", "S": "{{7*7}}", "W": "Ada"}
HOSTILE_EVENT = "<img src=x onerror=alert(1)> [bold]{{ 7*7 }}[/bold]"


def record(game_id: str, seed: int = 1, deals: int = 3) -> dict[str, Any]:
    """A legal record of ``deals`` scored deals (valid, incomplete)."""
    return play_game(game_id, random.Random(seed), deals)


def faulty(rec: dict[str, Any]) -> dict[str, Any]:
    """The record with the second and third cards of deal 1's first trick swapped: each is then
    played by a seat that does not hold it (NOT_IN_HAND at /deals/0/tricks/0/cards/1)."""
    out = json.loads(json.dumps(rec))
    cards = out["deals"][0]["tricks"][0]["cards"]
    cards[1], cards[2] = cards[2], cards[1]
    return out


def hostile(rec: dict[str, Any]) -> dict[str, Any]:
    out = json.loads(json.dumps(rec))
    out["players"] = dict(HOSTILE_PLAYERS)
    out["event"] = HOSTILE_EVENT
    return out


def line(rec: dict[str, Any]) -> str:
    return json.dumps(rec, separators=(",", ":"), ensure_ascii=False)


def ndjson(*recs: dict[str, Any]) -> bytes:
    return ("\n".join(line(r) for r in recs) + "\n").encode("utf-8")

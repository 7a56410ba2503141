"""The service's game and deal pages for every ruleset: figures by side, as the validation report gives them.

Games of rulesets and options without teams, with a named trump or with bores are
uploaded through the API; their pages must show each side's score and each
deal's tricks and points as the report computed them, and never ``None`` or
``null`` where a team figure does not exist.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from backalley.cli import app
from tests.test_service_api import AUTH, NDJSON, make_client

runner = CliRunner()
SETS = [("standard", "no_partnerships"), ("pereulok", ""), ("pereulok", "spades_trump"), ("bab-online", "")]


def simulate(tmp: Path, ruleset: str, options: str) -> bytes:
    path = tmp / f"{ruleset}-{options or 'plain'}.jsonl"
    args = ["simulate", "--ruleset", ruleset, "-n", "1", "--seed", "4", "-w", "1", "-o", str(path)]
    result = runner.invoke(app, args + (["--options", options] if options else []))
    assert result.exit_code == 0, result.output
    return path.read_bytes()


def text_of(page: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


@pytest.mark.parametrize(("ruleset", "options"), SETS)
def test_pages_show_every_side_of_every_ruleset(tmp_path: Path, ruleset: str, options: str) -> None:
    body = simulate(tmp_path, ruleset, options)
    with make_client(tmp_path / "s.duckdb") as client:
        answer = client.post("/api/v1/games", content=body, headers={**NDJSON, **AUTH})
        assert answer.status_code == 200, answer.text
        report = json.loads(body.splitlines()[0])
        validated = client.post("/api/v1/validate", content=body, headers=NDJSON)
        rep = json.loads(validated.text.splitlines()[0])
        assert rep["valid"], rep["violations"]
        game_id = report["game_id"]
        page = client.get(f"/games/{game_id}")
        assert page.status_code == 200
        words = text_of(page.text)
        assert "None" not in words and "null" not in words
        score = ", ".join(f"{side} {points}" for side, points in rep["final_score"].items())
        assert f"Final score (recomputed): {score}" in " ".join(words.split())
        for n, deal in enumerate(rep["deals"], start=1):
            view = client.get(f"/games/{game_id}/deals/{n}")
            assert view.status_code == 200
            words = " ".join(text_of(view.text).split())
            assert "None" not in words and "null" not in words
            if deal is None or deal.get("tricks") is None:
                continue
            if not report["deals"][n - 1]["tricks"]:  # a pass-out: no tricks played
                assert "Pass-out: no contract, no score." in words
                continue
            for side, tricks in deal["tricks"].items():
                assert f"{side}: contract " in words and f", {tricks} tricks, {deal['points'][side]} points" in words
            if ruleset == "pereulok" and not options:
                assert "named by" in words

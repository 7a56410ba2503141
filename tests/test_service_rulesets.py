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

from backalley.cli.app import app
from tests.helpers import AUTH, NDJSON, make_client

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
        validated = client.post("/api/v1/validate", content=body, headers={**NDJSON, **AUTH})
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


def test_games_read_together_equal_each_read_alone(tmp_path: Path) -> None:
    """The pages' data of many games of different rulesets, read in one go (as the service does after an
    upload), are each game's data read alone; so are the figures by side that ``show`` prints."""
    from backalley.service import data
    from backalley.store.database import Store
    from backalley.store.outcomes import game_figures, games_figures

    body = b"".join(simulate(tmp_path, r, o) for r, o in [*SETS, ("standard", "")])
    with make_client(tmp_path / "s.duckdb") as client:
        answer = client.post("/api/v1/games", content=body, headers={**NDJSON, **AUTH})
        assert answer.json()["fates"]["stored"] == len(SETS) + 1
    ids = [json.loads(line)["game_id"] for line in body.splitlines()]
    with Store.open(tmp_path / "s.duckdb") as st:
        cur = st.cursor()
        together = data.games(cur, [*reversed(ids), "no-such-game"])
        assert sorted(together) == sorted(ids)
        assert together == {gid: data.game(cur, gid) for gid in ids}
        figures = games_figures(cur, ids)
        assert figures == {gid: game_figures(cur, gid) for gid in ids}
        assert {len(f.sides) for f in figures.values()} == {2, 4}
        assert all(f.deals and all(d.sides for d in f.deals if not d.pass_out) for f in figures.values())


def test_pages_computed_from_the_text_in_memory_equal_the_pages_read_from_the_file(tmp_path: Path) -> None:
    """What the pages show of a game the service has just stored is computed, when a page first asks, by a
    worker that replays its text kept in memory (``service/fresh.py``), without the database; for every
    registered ruleset and option set, and faulty games, it must be byte for byte what the file answers
    for the same games.  Nothing is computed at the upload, nor for a duplicate."""
    import random

    import orjson

    from backalley.records.sources import Item
    from backalley.rules import all_rulesets
    from backalley.service import data
    from backalley.service.settings import Settings
    from backalley.service.state import Service
    from backalley.simulate import make_record, player_pool

    bodies = [simulate(tmp_path, r, o) for r, o in [*SETS, ("standard", "")]]
    faulty = tmp_path / "faulty.jsonl"
    args = ["simulate", "-n", "30", "--seed", "9", "--faults", "0.5", "-w", "1", "-o", str(faulty)]
    assert runner.invoke(app, args).exit_code == 0
    lines = [x for body in bodies for x in body.splitlines()] + faulty.read_bytes().splitlines()
    pool = player_pool(8)
    lines += [  # and one game of every registered ruleset and option set
        json.dumps(make_record(f"every-{k}", random.Random(k), pool, k, rules=rules)).encode()
        for k, rules in enumerate(all_rulesets())
    ]
    items = [Item("upload", n, raw) for n, raw in enumerate(lines, 1)]
    svc = Service(Settings(db=tmp_path / "s.duckdb", workers=2))
    try:
        done = svc.upload(items)
        stored = [
            orjson.loads(it.raw)["game_id"]
            for it, r in zip(items, done["results"], strict=True)
            if r["fate"] == "stored"
        ]
        assert len(stored) >= len(items) - 2  # a fault may make a line that is not a game
        assert {f"every-{k}" for k in range(len(all_rulesets()))} <= set(stored)
        assert not svc.games._entries and not svc.winners._entries  # nothing computed before it is asked for
        again = svc.upload([Item("again", 1, lines[-1]), *(Item("new", n, raw) for n, raw in enumerate(lines))])
        assert again["fates"]["stored"] == 0 and set(svc._fresh) == set(stored)  # duplicates keep nothing new
        with svc.reader() as cur:
            for gid in stored:
                assert svc.fresh_page(gid), gid  # from the text in memory, by the page worker
                assert svc.games.get(gid, lambda _: None) == orjson.dumps(data.game(cur, gid)), gid
                winners = orjson.loads(svc.winners.get(gid, lambda _: None) or b"null")
                assert winners == [[d, t, w] for (d, t), w in data.trick_winners(cur, [gid])[gid].items()]
            assert any(data.game(cur, gid)["violations"] for gid in stored)  # type: ignore[index]
            assert {data.game(cur, gid)["by_side"] is not None for gid in stored} == {True}  # type: ignore[index]
            assert not svc.fresh_page("no-such-game")
    finally:
        svc.close()

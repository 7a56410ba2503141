"""A deal whose recorded play the search cannot follow is that deal's error, never the whole run's.

``tests/mismatch_cli.py`` runs ``backalley`` with ruleset ``standard``'s search
tables refusing an ace led while trump is unbroken, which the replay allows.
``analyze --json`` must print every game, with an ``error`` on exactly the
deals where such a lead was recorded and values on every other deal; ``analyze
--db`` (one and two workers) must store those deals as not analysed with the
reason and every other deal's values; both end with exit status 1 and no
traceback.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from backalley.analysis.solver import NATIVE
from backalley.replay import replay
from backalley.rules import STANDARD
from backalley.simulate import make_record, player_pool
from tests.mismatch_cli import ACES

pytestmark = pytest.mark.skipif(not NATIVE, reason="the injected tables are the C search's")
SCRIPT = Path(__file__).resolve().parent / "mismatch_cli.py"
MAX_CARDS = "4"
STANDARD_TRUMPS = STANDARD.tables.trump_mask


def games(tmp_path: Path) -> tuple[Path, list[dict[str, object]]]:
    pool = player_pool(8)
    recs = [make_record(f"m{g}", random.Random(f"mismatch:{g}"), pool, g) for g in range(3)]
    path = tmp_path / "g.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    return path, recs


def refused(rec: dict[str, object]) -> set[int]:
    """The deals (1-based) of at most MAX_CARDS cards with an ace led unbroken by a leader holding another card."""
    rep = replay(rec)
    out: set[int] = set()
    for k, o in enumerate(rep.deals, 1):
        n = len(o.cards) // 4
        if o.pass_out or not o.leaders or n > int(MAX_CARDS):
            continue
        tmask = STANDARD_TRUMPS[o.trump]
        for j, leader in enumerate(o.leaders):
            rest = 0  # the leader's hand at trick j: the cards it plays from there on
            for t in range(j, n):
                rest |= 1 << o.cards[4 * t + (leader - o.leaders[t]) % 4]
            c0 = o.cards[4 * j]
            exempt = o.contracts.lead_exempt >> leader & 1
            blocked = ACES >> c0 & 1 and not tmask >> c0 & 1 and rest & ~(tmask | ACES)
            if blocked and not o.broken_before[j] and not exempt:
                out.add(k)
                break
    return out


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=300, check=False
    )


def test_json_reports_the_refused_deals_alone(tmp_path: Path) -> None:
    path, recs = games(tmp_path)
    expected = [refused(r) for r in recs]
    assert any(expected) and all(len(e) < 8 for e in expected)
    result = run("analyze", "--json", "--max-cards", MAX_CARDS, str(path))
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [g["game_id"] for g in lines] == [r["game_id"] for r in recs]
    for game, want in zip(lines, expected, strict=True):
        errors = {k for k, d in enumerate(game["deals"], 1) if "error" in d}
        assert errors == want
        for k, d in enumerate(game["deals"], 1):
            if k in want:
                assert d["dd"] is None and "not a legal play by the search's rules" in d["error"]
            elif "skipped" not in d and d["dd"] is not None:
                assert d["costs"] is not None


@pytest.mark.parametrize("workers", ["1", "2"])
def test_store_keeps_the_reason_and_analyses_the_rest(tmp_path: Path, workers: str) -> None:
    path, recs = games(tmp_path)
    expected = {(str(r["game_id"]), k) for r in recs for k in refused(r)}
    db = tmp_path / "s.duckdb"
    assert run("ingest", "--db", str(db), str(path)).returncode in (0, 1)
    result = run("analyze", "--db", str(db), "--workers", workers, "--max-cards", MAX_CARDS)
    assert result.returncode == 1 and "Traceback" not in result.stderr + result.stdout, result.stderr
    assert f"{len(expected)} deals the search could not follow" in result.stdout
    con = duckdb.connect(str(db), read_only=True)
    try:
        failed = con.execute("SELECT game_id, deal, reason FROM dd_deals WHERE reason LIKE '%search%'").fetchall()
        played = con.execute(f"SELECT count(*) FROM deals WHERE NOT pass_out AND hand_size <= {MAX_CARDS}").fetchall()[
            0
        ][0]
        rows = con.execute("SELECT count(*), count(*) FILTER (WHERE analysed) FROM dd_deals").fetchall()[0]
    finally:
        con.close()
    assert {(g, d) for g, d, _ in failed} == expected
    assert all("not a legal play" in reason for _, _, reason in failed)
    assert rows[0] == played and rows[1] == played - len(expected)

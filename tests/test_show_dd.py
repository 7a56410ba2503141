"""``backalley show`` with double-dummy figures: each analysed deal's values and each play's cost.

Standard games are simulated, ingested and shown before any analysis (no
double-dummy figures anywhere), then analysed with ``--max-cards 6``; the
figures on screen are compared with ``dd_deals`` and ``dd_plays`` read
independently, and the deals left unanalysed (more than 6 cards) show none.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import duckdb
import pytest
from typer.testing import CliRunner

from backalley.cli.app import app
from tests.helpers import rows, section, show

runner = CliRunner()

#: A card cell of the tricks table: ``N 10♥`` or ``N 10♥−2`` (the play cost its side 2 tricks).
PLAY = re.compile(r"^(.+?)(?:−(\d+))?$")


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = tmp_path_factory.mktemp("show_dd") / "g.jsonl"
    args = ["simulate", "-n", "3", "--seed", "5", "-w", "1", "-o", str(src)]
    assert runner.invoke(app, args).exit_code == 0
    return src


@pytest.fixture
def games(simulated: Path, tmp_path: Path) -> tuple[Path, list[dict[str, Any]]]:
    """The simulated games ingested into a new database, not analysed yet."""
    db = tmp_path / "g.duckdb"
    assert runner.invoke(app, ["ingest", str(simulated), "--db", str(db), "--workers", "1"]).exit_code == 0
    return db, [json.loads(line) for line in simulated.read_text(encoding="utf-8").splitlines()]


def analyse(db: Path) -> None:
    result = runner.invoke(app, ["analyze", "--db", str(db), "--max-cards", "6", "--workers", "1"])
    assert result.exit_code == 0, result.output


def stored_dd(db: Path) -> tuple[dict[tuple[str, int], tuple[int, int]], dict[tuple[str, int], dict[Any, int]]]:
    """``dd_deals`` values and ``dd_plays`` costs, read straight from the file (connection closed after)."""
    with duckdb.connect(str(db), read_only=True) as con:
        deals = con.execute(
            "SELECT game_id, deal, dd_ns, dd_ew FROM dd_deals WHERE analysed AND dd_ns IS NOT NULL"
        ).fetchall()
        plays = con.execute("SELECT game_id, deal, trick, position, cost FROM dd_plays").fetchall()
    costs: dict[tuple[str, int], dict[Any, int]] = {}
    for g, d, t, p, c in plays:
        costs.setdefault((g, d), {})[(t, p)] = c
    return {(g, d): (ns, ew) for g, d, ns, ew in deals}, costs


def shown_costs(out: str) -> dict[tuple[int, int], int]:
    """Each play's cost as the tricks table shows it (0 for an unmarked card), by (trick, position)."""
    costs = {}
    for cells in rows(section(out, "Tricks", "Result")):
        words = cells[2].split()
        for k in range(0, len(words), 2):
            m = PLAY.match(words[k + 1])
            assert m is not None
            costs[(int(cells[0]), k // 2 + 1)] = int(m.group(2) or 0)
    return costs


def test_show_says_nothing_of_double_dummy_before_analysis(games: tuple[Path, list[dict[str, Any]]]) -> None:
    db, records = games
    rec = records[0]
    assert "dd NS/EW" not in show(db, rec["game_id"])
    for k, d in enumerate(rec["deals"], 1):
        out = show(db, rec["game_id"], k)
        pass_out = all(b["bid"] == "pass" for b in d["bids"])
        # One muted line for a deal that could be analysed; nothing for a pass-out (no play to analyse).
        assert ("Double-dummy: not analysed (run backalley analyze)" in out) is not pass_out
        assert "Double-dummy: NS" not in out and "−" not in out


def test_show_gives_the_stored_values_and_every_play_cost(games: tuple[Path, list[dict[str, Any]]]) -> None:
    db, records = games
    analyse(db)
    values, costs = stored_dd(db)
    assert values and any(c > 0 for per_deal in costs.values() for c in per_deal.values())
    marked = unanalysed = 0
    for rec in records:
        game_id = rec["game_id"]
        table = {r[0]: r for r in rows(show(db, game_id).splitlines())}
        for k, d in enumerate(rec["deals"], 1):
            out = show(db, game_id, k)
            if (game_id, k) in values:
                ns, ew = values[game_id, k]
                assert table[str(k)][-1] == f"{ns}/{ew}"
                assert f"Double-dummy: NS {ns}, EW {ew} (−k after a card" in out
                assert shown_costs(out) == costs[game_id, k], (game_id, k)
                marked += sum(1 for c in costs[game_id, k].values() if c)
            else:
                assert table[str(k)][-1] == "—"
                assert "Double-dummy: NS" not in out and "−" not in "\n".join(section(out, "Tricks", "Result"))
                unanalysed += len(d["hands"]["N"]) > 6
    assert marked > 0 and unanalysed > 0


def test_a_deal_that_breaks_a_rule_and_a_game_without_partnerships(tmp_path: Path) -> None:
    """Deals left without values by a rule violation say so; values of a game without partnerships say whose."""
    faulty, single, db = tmp_path / "f.jsonl", tmp_path / "np.jsonl", tmp_path / "f.duckdb"
    sim = ["simulate", "--seed", "7", "-w", "1"]
    assert runner.invoke(app, [*sim, "-n", "12", "--faults", "1", "-o", str(faulty)]).exit_code == 0
    assert runner.invoke(app, [*sim, "-n", "1", "--options", "no_partnerships", "-o", str(single)]).exit_code == 0
    assert runner.invoke(app, ["ingest", str(faulty), str(single), "--db", str(db), "--workers", "1"]).exit_code == 1
    analyse(db)
    values, _ = stored_dd(db)
    with duckdb.connect(str(db), read_only=True) as con:
        broken = con.execute("SELECT game_id, deal FROM dd_deals WHERE NOT analysed").fetchall()
    assert broken  # seed 7 puts faults in the play of a few deals of at most 6 cards
    for game_id, k in broken:
        out = show(db, game_id, k)
        assert "Double-dummy: no values (the deal breaks a rule of play)" in out
        assert "−" not in "\n".join(section(out, "Tricks", "Result"))
        assert {r[0]: r for r in rows(show(db, game_id).splitlines())}[str(k)][-1] == "—"
    game_id = json.loads(single.read_text(encoding="utf-8"))["game_id"]
    # Without partnerships: no team values, a value per seat (dd_deal_sides), each play's cost its seat's.
    assert not any(g == game_id for g, _ in values)
    seats, costs = stored_seat_dd(db, game_id)
    assert seats and any(c for per_deal in costs.values() for c in per_deal.values())
    table = {r[0]: r for r in rows(show(db, game_id).splitlines())}
    for k, by_seat in seats.items():
        assert list(by_seat) == ["N", "E", "S", "W"]
        out = show(db, game_id, k)
        shown = ", ".join(f"{seat} {v}" for seat, v in by_seat.items())
        assert f"Double-dummy: {shown} (each seat against the other three;" in out
        assert table[str(k)][-1] == "/".join(str(v) for v in by_seat.values())
        assert shown_costs(out) == costs[k], k


def stored_seat_dd(db: Path, game_id: str) -> tuple[dict[int, dict[str, int]], dict[int, dict[Any, int]]]:
    """A game's seat values (``dd_deal_sides``, in seat order) and play costs (``dd_plays``), by deal."""
    with duckdb.connect(str(db), read_only=True) as con:
        sides = con.execute(
            "SELECT deal, side, dd FROM dd_deal_sides WHERE game_id = ? ORDER BY deal, position(side IN 'NESW')",
            [game_id],
        ).fetchall()
        plays = con.execute("SELECT deal, trick, position, cost FROM dd_plays WHERE game_id = ?", [game_id]).fetchall()
    seats: dict[int, dict[str, int]] = {}
    for d, side, dd in sides:
        seats.setdefault(d, {})[side] = dd
    costs: dict[int, dict[Any, int]] = {}
    for d, t, p, c in plays:
        costs.setdefault(d, {})[(t, p)] = c
    return seats, costs

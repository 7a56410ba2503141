"""Double-dummy analysis of records: ``backalley analyze`` on files and into the store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import orjson
import pytest
from typer.testing import CliRunner

from backalley.analysis.dd import analyse_record
from backalley.cli.app import app
from backalley.rules import find_ruleset, hand_size
from backalley.simulate import simulate_games
from backalley.store import schema
from backalley.store.database import Store

runner = CliRunner()


def small_record(seed: int) -> dict[str, Any]:
    """A simulated game cut to its deals numbered 11..14 (3, 2, 1, 2 cards; pass-outs kept).

    The first kept dealing breaks the deal-number rule (a game starts at 1), so it
    is skipped (unless passed out); the later ones follow on and are analysed.
    """
    rec: dict[str, Any] = orjson.loads(next(iter(simulate_games(1, seed=seed))))
    rec["deals"] = [d for d in rec["deals"] if 11 <= d["number"] <= 14]
    return rec


def test_analyse_record_shape_and_invariants() -> None:
    rec = small_record(4)
    game = analyse_record(rec).as_dict()
    assert game["game_id"] == rec["game_id"]
    assert [d["number"] for d in game["deals"]] == [d["number"] for d in rec["deals"]]
    for k, (out, deal) in enumerate(zip(game["deals"], rec["deals"], strict=True)):
        passed_out = all(b["bid"] == "pass" for b in deal["bids"])
        if passed_out:
            assert out["dd"] is None and out["costs"] is None
            continue
        if k == 0:  # the deal-number violation
            assert out["dd"] is None and out["costs"] is None and out["skipped"]
            continue
        n = hand_size(deal["number"])
        assert out["dd"]["NS"] + out["dd"]["EW"] == n
        assert len(out["costs"]) == n and all(len(t) == 4 and min(t) >= 0 for t in out["costs"])
        # NS's costs less EW's equal what NS could make less what it took.
        ns_cost = ew_cost = 0
        for trick_out, trick in zip(out["costs"], deal["tricks"], strict=True):
            first = "NESW".index(trick["leader"])
            for j, cost in enumerate(trick_out):
                if (first + j) % 2 == 0:
                    ns_cost += cost
                else:
                    ew_cost += cost
        assert ns_cost - ew_cost == out["dd"]["NS"] - deal["result"]["tricks"]["NS"]


def test_analyze_files_json_and_text(tmp_path: Path) -> None:
    rec = small_record(6)
    path = tmp_path / "g.jsonl"
    path.write_text(json.dumps(rec) + "\n{oops\n", encoding="utf-8")
    result = runner.invoke(app, ["analyze", "--json", str(path)])
    assert result.exit_code == 1  # a skipped deal and a line that is not JSON
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert lines[0]["game_id"] == rec["game_id"] and len(lines[0]["deals"]) == len(rec["deals"])
    assert lines[1]["game_id"] is None and lines[1]["deals"] == [] and lines[1]["error"]
    text = runner.invoke(app, ["analyze", str(path)])
    assert text.exit_code == 1 and "makeable NS" in text.stdout and f"{path}:2" in text.stdout
    path.write_text(json.dumps(rec) + "\n", encoding="utf-8")
    capped = runner.invoke(app, ["analyze", "--json", "--max-cards", "1", str(path)])
    deals = json.loads(capped.stdout)["deals"]
    assert any("over --max-cards" in d.get("skipped", "") for d in deals)
    assert all(d["dd"] is None or sum(d["dd"].values()) == 1 for d in deals)
    missing = runner.invoke(app, ["analyze", str(tmp_path / "nope.jsonl")])
    assert missing.exit_code == 2


def test_analyze_store_is_incremental(tmp_path: Path) -> None:
    recs = [small_record(s) for s in (7, 8)]
    path = tmp_path / "g.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    db = tmp_path / "s.duckdb"
    assert runner.invoke(app, ["ingest", "--db", str(db), str(path)]).exit_code in (0, 1)
    small = runner.invoke(app, ["analyze", "--db", str(db), "--max-cards", "1"])
    assert small.exit_code == 0, small.output
    con = duckdb.connect(str(db), read_only=True)
    try:
        one_card = con.execute("SELECT count(*) FROM deals WHERE NOT pass_out AND hand_size = 1").fetchall()[0][0]
        assert con.execute("SELECT count(*) FROM dd_deals").fetchall()[0][0] == one_card > 0
    finally:
        con.close()
    first = runner.invoke(app, ["analyze", "--db", str(db), "--workers", "2"])
    assert first.exit_code == 0, first.output
    assert "2 games" in first.stdout  # the larger deals of both games were left for this run
    con = duckdb.connect(str(db), read_only=True)
    try:
        played = con.execute("SELECT count(*) FROM deals WHERE NOT pass_out").fetchall()[0][0]
        rows = con.execute("SELECT count(*), count(*) FILTER (WHERE analysed) FROM dd_deals").fetchall()[0]
        plays = con.execute(
            "SELECT count(*) = (SELECT sum(4 * hand_size) FROM dd_deals WHERE analysed) FROM dd_plays"
        ).fetchall()[0][0]
        sums = con.execute("SELECT bool_and(dd_ns + dd_ew = hand_size) FROM dd_deals WHERE analysed").fetchall()[0][0]
    finally:
        con.close()
    first_played = sum(1 for r in recs if any(b["bid"] != "pass" for b in r["deals"][0]["bids"]))
    assert rows[0] == played and rows[1] == played - first_played  # a first dealing breaks the numbering
    assert plays and sums
    again = runner.invoke(app, ["analyze", "--db", str(db)])
    assert again.exit_code == 0 and "0 games" in again.stdout


def test_schema_1_gains_the_api_tokens_and_dd_tables(tmp_path: Path) -> None:
    db = tmp_path / "old.duckdb"
    with Store.open(db) as s:
        s.con.execute("DROP TABLE api_tokens")
        s.con.execute("DROP TABLE dd_deals")
        s.con.execute("DROP TABLE dd_plays")
        s.con.execute("DROP TABLE dd_deal_sides")
        s.con.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    with Store.open(db) as s:
        assert s.schema_version() == schema.SCHEMA_VERSION == 9
        assert s.count("dd_deals") == 0 and s.count("dd_plays") == 0 and s.count("dd_deal_sides") == 0
        assert s.con.execute("SELECT count(*) FROM api_tokens").fetchone() == (0,)


@pytest.mark.parametrize("args", [["analyze", "x.jsonl", "--db", "y.duckdb"]])
def test_analyze_usage_errors(args: list[str], tmp_path: Path) -> None:
    (tmp_path / "x.jsonl").write_text("", encoding="utf-8")
    result = runner.invoke(app, [args[0], str(tmp_path / args[1]), args[2], str(tmp_path / args[3])])
    assert result.exit_code == 2


def ruleset_record(seed: int, options: tuple[str, ...]) -> dict[str, Any]:
    """:func:`small_record`'s cut of a simulated game of standard with ``options``."""
    rec: dict[str, Any] = orjson.loads(
        next(iter(simulate_games(1, seed=seed, rules=find_ruleset("standard", options))))
    )
    rec["deals"] = [d for d in rec["deals"] if 11 <= d["number"] <= 14]
    return rec


@pytest.fixture(scope="module")
def sided_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    """Two games without partnerships and one with, ingested and analysed (``--db``) in one file."""
    tmp = tmp_path_factory.mktemp("sides")
    recs = [ruleset_record(11, ("no_partnerships",)), ruleset_record(12, ("no_partnerships",)), ruleset_record(13, ())]
    path, db = tmp / "g.jsonl", tmp / "s.duckdb"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    assert runner.invoke(app, ["ingest", "--db", str(db), "-w", "1", str(path)]).exit_code in (0, 1)
    result = runner.invoke(app, ["analyze", "--db", str(db)])
    assert result.exit_code == 0, result.output
    return db, recs


def test_analyze_db_stores_every_sides_values_as_analyze_file_gives_them(
    sided_store: tuple[Path, list[dict[str, Any]]], tmp_path: Path
) -> None:
    """Four seat values a deal without partnerships, two team values with: those of ``analyze FILE --json``."""
    db, recs = sided_store
    path = tmp_path / "g.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    printed = runner.invoke(app, ["analyze", "--json", str(path)])
    games = {g["game_id"]: g for g in map(json.loads, printed.stdout.splitlines())}
    with duckdb.connect(str(db), read_only=True) as con:
        sides = con.execute("SELECT game_id, deal, side, dd FROM dd_deal_sides").fetchall()
        plays = con.execute(
            "SELECT game_id, deal, cost FROM dd_plays ORDER BY game_id, deal, trick, position"
        ).fetchall()
        teams = con.execute("SELECT game_id, deal, dd_ns, dd_ew FROM dd_deals WHERE analysed").fetchall()
    stored: dict[tuple[str, int], dict[str, int]] = {}
    for g, d, side, dd in sides:
        stored.setdefault((g, d), {})[side] = dd
    costs: dict[tuple[str, int], list[int]] = {}
    for g, d, cost in plays:
        costs.setdefault((g, d), []).append(cost)
    expected = {
        (g, k): deal for g, game in games.items() for k, deal in enumerate(game["deals"], 1) if deal["dd"] is not None
    }
    assert stored.keys() == expected.keys() == costs.keys()
    for key, deal in expected.items():
        assert stored[key] == deal["dd"], key
        assert costs[key] == [c for trick in deal["costs"] for c in trick], key
    seats = [key for key, deal in expected.items() if list(deal["dd"]) == ["N", "E", "S", "W"]]
    assert {g for g, _ in seats} == {r["game_id"] for r in recs[:2]}
    # The team columns hold a partnership game's values only.
    assert {(g, d): (ns, ew) for g, d, ns, ew in teams if (g, d) not in seats} == {
        key: (deal["dd"]["NS"], deal["dd"]["EW"]) for key, deal in expected.items() if key not in seats
    }
    assert {(ns, ew) for g, d, ns, ew in teams if (g, d) in seats} == {(None, None)}


def test_stored_side_values_keep_the_invariants(sided_store: tuple[Path, list[dict[str, Any]]]) -> None:
    """Values fit the hand (partnerships' add up to it); each side's costs are its own plays' losses."""
    db, _ = sided_store
    with duckdb.connect(str(db), read_only=True) as con:
        deals = con.execute("""
            SELECT d.game_id, d.deal, d.hand_size, [d.dd_ew, d.dd_ns], list(s.side ORDER BY s.side),
                   sum(s.dd), list(s.dd ORDER BY s.side)
            FROM dd_deals d JOIN dd_deal_sides s USING (game_id, deal)
            GROUP BY d.game_id, d.deal, d.hand_size, d.dd_ew, d.dd_ns
        """).fetchall()
        # Each play: its cost is its own side's value before it less after it; the team columns agree.
        bad_plays = con.execute("""
            SELECT count(*) FROM dd_plays p JOIN dd_deals d USING (game_id, deal)
            WHERE p.cost <> p.value_before - p.value_after OR p.cost < 0
               OR p.value_ns_before IS DISTINCT FROM CASE WHEN d.dd_ns IS NULL THEN NULL
                    WHEN p.seat IN ('N', 'S') THEN p.value_before ELSE d.hand_size - p.value_before END
        """).fetchall()[0][0]
        # Per side: its dd, its tricks, its cost, and its value before and after each of its own plays.
        sides = con.execute("""
            SELECT s.game_id, s.deal, s.side, s.dd, t.tricks, s.cost,
                   list([p.value_before, p.value_after] ORDER BY p.trick, p.position)
            FROM dd_deal_sides s
            JOIN deal_sides t ON t.game_id = s.game_id AND t.deal = s.deal AND t.side = s.side
            JOIN dd_plays p ON p.game_id = s.game_id AND p.deal = s.deal AND contains(s.side, p.seat)
            GROUP BY ALL
        """).fetchall()
    assert deals and bad_plays == 0
    for game_id, k, n, teams, names, total, values in deals:
        if teams != [None, None]:
            assert names == ["EW", "NS"] and total == n and values == teams, (game_id, k)
        else:
            assert names == ["E", "N", "S", "W"] and total <= n, (game_id, k)
    assert {len(d[4]) for d in deals} == {2, 4}
    assert len(sides) == sum(len(d[4]) for d in deals)
    for game_id, k, side, dd, tricks, cost, own in sides:
        # The other side's cards can only give this side tricks: its value rises between its own
        # plays, so the tricks it lost are its costs less those gifts.
        chain = [dd, *(v for pair in own for v in pair), tricks]
        gifts = sum(chain[i + 1] - chain[i] for i in range(0, len(chain), 2))
        assert all(chain[i + 1] >= chain[i] for i in range(0, len(chain), 2)), (game_id, k, side)
        assert cost == sum(b - a for b, a in own) and dd - tricks == cost - gifts, (game_id, k, side)


def test_a_game_not_analysed_says_so_once() -> None:
    from backalley.analysis.dd import analyse_record
    from backalley.cli.app import _analysis_text

    text = _analysis_text("g.json", analyse_record({"game_id": "g", "deals": []}))
    assert text.count("not analysed:") == 1, text


def test_the_rows_arrow_schemas_are_the_store_tables_own() -> None:
    """``DD_SCHEMAS`` (what a batch's rows are, in the store and in a lake) has the DDL's columns and types."""
    from backalley.analysis.dd import DD_SCHEMAS

    assert set(DD_SCHEMAS) == set(schema.DD_TABLES)
    with Store.memory() as s:
        for name, want in DD_SCHEMAS.items():
            got = s.con.sql(f"SELECT * FROM {name}").to_arrow_table().schema.remove_metadata()
            assert got.equals(want), name

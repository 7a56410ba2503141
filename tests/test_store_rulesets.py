"""The store and every ruleset: the upgrade of a version-3 file, and format-2 games ingested.

``tests/fixtures/store-v3.duckdb.gz`` was written by the release before rulesets
were stored (see tests/fixtures/README.md); it holds that release's own views,
so the answers they gave are read from the file itself before it is upgraded.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import duckdb
import pytest

from backalley.cards import CARD_INDEX
from backalley.replay import replay
from backalley.rules import find_ruleset
from backalley.simulate import simulate_games
from backalley.store import database as store_mod
from backalley.store import schema
from backalley.store.database import Store
from backalley.store.ingest import ingest

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "store-v3.duckdb.gz"
RULESETS = ROOT / "data" / "sample" / "rulesets"
OLD_VIEWS = ("player_deals", "player_games", "player_summary")


def unpack_fixture(tmp_path: Path) -> Path:
    db = tmp_path / "old.duckdb"
    with gzip.open(FIXTURE, "rb") as src, db.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    return db


def read_all(db: Path, names: tuple[str, ...]) -> dict[str, tuple[list[str], list[tuple[Any, ...]]]]:
    """Columns and sorted rows of tables or views, read with DuckDB and backalley's SQL functions."""
    con = store_mod.connect(db)
    try:
        out = {}
        for name in names:
            cols = [r[0] for r in con.execute(f"DESCRIBE {name}").fetchall()]
            out[name] = (cols, sorted(con.execute(f"SELECT * FROM {name}").fetchall(), key=repr))
        return out
    finally:
        con.close()


def rows_of(db: Path, name: str, cols: list[str]) -> list[tuple[Any, ...]]:
    con = store_mod.connect(db)
    try:
        return sorted(con.execute(f"SELECT {', '.join(cols)} FROM {name}").fetchall(), key=repr)
    finally:
        con.close()


def sql(db: Path, query: str) -> list[tuple[Any, ...]]:
    with Store.open_readonly(db) as s:
        return s.con.execute(query).fetchall()


def schema_of(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every table's and view's columns: name, type, nullability, in order."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        names = [r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()]
        return {
            n: [(r[0], r[1], r[2]) for r in con.execute(f"DESCRIBE {n}").fetchall()]
            for n in sorted(names)
            if n != "meta"
        }
    finally:
        con.close()


def test_a_version_3_file_upgrades_in_place_and_keeps_every_row(tmp_path: Path) -> None:
    db = unpack_fixture(tmp_path)
    old_tables = tuple(t for t in schema.TABLES if t not in ("game_sides", "deal_sides"))
    before = read_all(db, old_tables + OLD_VIEWS)
    assert rows_of(db, "meta", ["value"]) == sorted([("3",), ("backalley",)])
    assert len(before["games"][1]) == 23 and len(before["rejects"][1]) == 9

    with Store.open(db) as s:
        assert s.schema_version() == schema.SCHEMA_VERSION  # 3 -> 4 -> 5

    # Every row kept, every old column unchanged (the ruleset column aside: it is filled in).
    for name in old_tables:
        cols, rows = before[name]
        keep = [c for c in cols if c != "ruleset"]
        assert rows_of(db, name, keep) == sorted([tuple(r[cols.index(c)] for c in keep) for r in rows], key=repr), name
    # The views give the same answers as the release's own views did, in their old columns.
    for name in OLD_VIEWS:
        cols, rows = before[name]
        assert rows_of(db, name, cols) == rows, name
    assert sql(db, "SELECT DISTINCT ruleset, options FROM games") == [("standard", "")]
    # Every deal has a row per team, with the team's figures; every schema-valid game a row per team.
    assert sql(db, "SELECT count(*) FROM deal_sides") == [(2 * len(before["deals"][1]),)]
    mismatched = sql(
        db,
        "SELECT count(*) FROM deals d JOIN deal_sides s ON s.game_id = d.game_id AND s.deal = d.deal "
        "WHERE (s.side = 'NS' AND (s.tricks, s.points, s.made) IS DISTINCT FROM (d.tricks_ns, d.points_ns, d.ns_made))"
        " OR (s.side = 'EW' AND (s.tricks, s.points, s.made) IS DISTINCT FROM (d.tricks_ew, d.points_ew, d.ew_made))",
    )
    assert mismatched == [(0,)]
    cols, games = before["games"]
    schema_ok = sum(1 for r in games if r[cols.index("schema_ok")])
    assert sql(db, "SELECT count(*) FROM game_sides") == [(2 * schema_ok,)]
    assert sql(db, "SELECT count(*) FROM bids WHERE side IS NULL OR (kind = 'board') <> (multiplier IS NOT NULL)") == [
        (0,)
    ]


def test_the_upgraded_schema_is_the_schema_of_a_new_file(tmp_path: Path) -> None:
    db = unpack_fixture(tmp_path)
    Store.open(db).close()
    fresh = tmp_path / "new.duckdb"
    Store.open(fresh).close()
    assert schema_of(db) == schema_of(fresh)


def test_an_upgraded_file_accepts_format_2_games(tmp_path: Path) -> None:
    db = unpack_fixture(tmp_path)
    formerly = sql_raw(db, "SELECT count(*) FROM rejects WHERE reason = 'ruleset'")
    assert formerly == [(3,)]  # the release refused the three valid pereulok games
    run = ingest([str(RULESETS)], db, workers=1)
    assert run.conflicts == 0
    # The only rejects are the samples' lines that are not JSON (made so on purpose).
    assert sql(db, "SELECT DISTINCT reason FROM rejects WHERE run_id = 2") == [("json",)]
    assert run.rejected == not_json(sorted(RULESETS.glob("*.jsonl")))
    by_ruleset = dict(sql(db, "SELECT ruleset || '+' || options, count(*) FROM games GROUP BY ALL"))
    want = expected_by_label(sorted(RULESETS.glob("*.jsonl")))
    want["standard+"] = want.get("standard+", 0) + 23
    assert by_ruleset == want
    # The old rows are still there, and still standard.
    assert sql(db, "SELECT count(*) FROM games WHERE ruleset = 'standard' AND options = ''") == [(23,)]


def sql_raw(db: Path, query: str) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(query).fetchall()
    finally:
        con.close()


def not_json(files: list[Path]) -> int:
    count = 0
    for f in files:
        for line in f.read_text(encoding="utf-8").splitlines():
            try:
                json.loads(line)
            except ValueError:
                count += 1
    return count


def expected_by_label(files: list[Path]) -> dict[str, int]:
    """Games per ``ruleset+options`` that the files should store, from plain json."""
    out: dict[str, int] = {}
    for f in files:
        for line in f.read_text(encoding="utf-8").splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if not isinstance(rec, dict) or not isinstance(rec.get("game_id"), str):
                continue
            label = f"{rec.get('ruleset')}+{','.join(find_ruleset(rec['ruleset'], rec.get('options', [])).options)}"
            out[label] = out.get(label, 0) + 1
    return out


def test_sample_games_of_every_ruleset_are_stored_valid_and_invalid(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    files = sorted(RULESETS.glob("*.jsonl"))
    run = ingest([str(RULESETS)], db, workers=2)
    valid = invalid = 0
    violations = 0
    for f in files:
        for line in f.read_text(encoding="utf-8").splitlines():
            try:
                r = replay(json.loads(line))
            except ValueError:
                continue
            valid += r.valid
            invalid += not r.valid
            violations += len(r.violations)
    assert run.inserted == valid + invalid and run.invalid == invalid and run.rejected == not_json(files)
    assert dict(sql(db, "SELECT ruleset || '+' || options, count(*) FROM games GROUP BY ALL")) == expected_by_label(
        files
    )
    assert sql(db, "SELECT count(*) FROM violations") == [(violations,)]
    codes = {r[0] for r in sql(db, "SELECT DISTINCT code FROM violations")}
    assert {"BID_LOW", "BID_TWICE", "LOWEST_TRUMP", "BORE_LEVEL", "TRUMP", "NOT_IN_DECK"} <= codes
    # Idempotent: a second run stores nothing new.
    again = ingest([str(RULESETS)], db, workers=1)
    assert again.inserted == 0 and again.duplicates == run.inserted


def test_a_changed_format_2_game_is_a_conflict(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    line = (RULESETS / "valid-pereulok.jsonl").read_text(encoding="utf-8").splitlines()[0]
    a = tmp_path / "a.jsonl"
    a.write_text(line + "\n", encoding="utf-8")
    rec = json.loads(line)
    rec["event"] = "changed"
    b = tmp_path / "b.jsonl"
    b.write_text(json.dumps(rec) + "\n", encoding="utf-8")
    ingest([str(a)], db, workers=1)
    run = ingest([str(b)], db, workers=1)
    assert run.conflicts == 1
    assert sql(db, "SELECT reason, game_id FROM rejects") == [("conflict", rec["game_id"])]


RULESET_CASES = [
    ("standard", ()),
    ("standard", ("short_deck", "no_partnerships")),
    ("standard", ("no_jokers", "spades_trump")),
    ("pereulok", ()),
    ("pereulok", ("no_jokers", "short_deck", "spades_trump", "no_partnerships")),
    ("bab-online", ()),
]


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Simulated games of several rulesets and options, ingested into one database."""
    folder = tmp_path_factory.mktemp("sim")
    for k, (name, options) in enumerate(RULESET_CASES):
        rules = find_ruleset(name, options)
        lines = list(simulate_games(3, seed=40 + k, rules=rules))
        (folder / f"{rules.label()}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    db = folder / "s.duckdb"
    run = ingest([str(folder)], db, workers=2)
    assert run.invalid == 0 and run.rejected == 0 and run.inserted == 3 * len(RULESET_CASES)
    return db


def test_simulated_games_are_counted_by_ruleset(simulated: Path) -> None:
    got = sql(simulated, "SELECT ruleset, options, count(*), bool_and(complete) FROM games GROUP BY ALL ORDER BY ALL")
    want = sorted((name, ",".join(find_ruleset(name, opts).options), 3, True) for name, opts in RULESET_CASES)
    assert got == want


def test_every_side_has_its_rows_and_they_add_up(simulated: Path) -> None:
    # A deal has one row per side: two teams, or four seats without partnerships.
    per_deal = sql(
        simulated,
        "SELECT g.options LIKE '%no_partnerships%', count(*) / count(DISTINCT (s.game_id, s.deal)) "
        "FROM deal_sides s JOIN games g USING (game_id) GROUP BY ALL ORDER BY ALL",
    )
    assert per_deal == [(False, 2), (True, 4)]
    # Each side's deal points add up to its final score, and the sides' tricks to the hand size.
    assert sql(
        simulated,
        "SELECT count(*) FROM game_sides g JOIN (SELECT game_id, side, sum(points) AS p FROM deal_sides GROUP BY ALL) d"
        " USING (game_id, side) WHERE g.score <> d.p OR g.score IS DISTINCT FROM g.recorded_score",
    ) == [(0,)]
    assert sql(
        simulated,
        "SELECT count(*) FROM (SELECT d.game_id, d.deal, any_value(d.hand_size) AS n, sum(s.tricks) AS t"
        " FROM deals d JOIN deal_sides s USING (game_id, deal) WHERE NOT d.pass_out GROUP BY ALL) WHERE n <> t",
    ) == [(0,)]
    # The team columns of deals are those of the sides for teams, and NULL without partnerships.
    assert sql(
        simulated,
        "SELECT count(*) FROM deals d JOIN games g USING (game_id) WHERE g.options LIKE '%no_partnerships%'"
        " AND (d.tricks_ns IS NOT NULL OR d.points_ew IS NOT NULL OR g.score_ns IS NOT NULL)",
    ) == [(0,)]


def test_bids_hold_declarations_multipliers_and_bore_levels(simulated: Path) -> None:
    kinds = dict(
        sql(
            simulated,
            "SELECT ruleset, list(DISTINCT kind ORDER BY kind) FROM bids JOIN games USING (game_id) GROUP BY 1",
        )
    )
    assert kinds["pereulok"] == ["declaration", "pass"]
    assert "declaration" not in kinds["standard"] and "declaration" not in kinds["bab-online"]
    # A pereulok declaration's multiplier is 2, 3 or 4 exactly for a multiple of the declaration before it.
    rows = sql(
        simulated,
        "SELECT b.game_id, b.deal, b.position, b.value, b.multiplier FROM bids b JOIN games g USING (game_id)"
        " WHERE g.ruleset = 'pereulok' AND b.kind = 'declaration' ORDER BY ALL",
    )
    assert rows
    previous: dict[tuple[str, int], int] = {}
    for gid, deal, _, value, mult in rows:
        before = previous.get((gid, deal), 0)
        want = next((m for m in (2, 3, 4) if before >= 1 and value == m * before), 1)
        assert mult == want
        previous[(gid, deal)] = value
    # bab-online bores: level 1..4 and multiplier 2 ** level; pereulok has no boards.
    assert sql(
        simulated,
        "SELECT count(*) FROM bids b JOIN games g USING (game_id) WHERE g.ruleset = 'bab-online' AND b.kind = 'board'"
        " AND (b.board_level NOT BETWEEN 1 AND 4 OR b.multiplier <> 2 ** b.board_level)",
    ) == [(0,)]
    assert sql(
        simulated,
        "SELECT count(*) FROM deal_sides s JOIN games g USING (game_id) WHERE g.ruleset = 'pereulok'"
        " AND (s.board_level IS NOT NULL OR s.contract_kind = 'board')",
    ) == [(0,)]


def test_bab_online_rainbows_are_stored_per_bidder(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    lines = list(simulate_games(12, seed=5, rules=find_ruleset("bab-online")))
    (tmp_path / "g.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    ingest([str(tmp_path / "g.jsonl")], db, workers=1)
    rules = find_ruleset("bab-online")
    want = 0
    for line in lines:
        for d in json.loads(line)["deals"]:
            n = rules.hand_size(d["number"])
            if n != 4 or all(b["bid"] == "pass" for b in d["bids"]):
                continue
            masks = [sum(1 << CARD_INDEX[c] for c in d["hands"][s]) for s in "NESW"]
            want += sum(rules.bonus(masks, rules.trump_of(CARD_INDEX[d["trump_card"]]), n)) // 10
    assert want > 0
    assert sql(db, "SELECT count(*) FILTER (WHERE rainbow), count(rainbow) FROM bids") == [(want, 4 * 13 * 12)]
    assert sql(db, "SELECT count(*) FROM player_deals WHERE rainbow AND hand_size <> 4") == [(0,)]


def test_views_keep_rulesets_apart(simulated: Path) -> None:
    # player_summary has one row per player, ruleset and options; games add up per ruleset.
    got = sql(simulated, "SELECT ruleset, options, sum(games) FROM player_summary GROUP BY ALL ORDER BY ALL")
    want = sorted((name, ",".join(find_ruleset(name, opts).options), 12) for name, opts in RULESET_CASES)
    assert got == want
    # Bidding accuracy is not a pereulok figure; declarations are only pereulok's.
    assert sql(
        simulated,
        "SELECT count(*) FROM player_summary WHERE (ruleset = 'pereulok' AND numeric_bids > 0)"
        " OR (ruleset <> 'pereulok' AND (declarations > 0 OR auctions_won > 0))",
    ) == [(0,)]
    # Every pereulok deal that is not passed out has exactly one auction winner.
    assert sql(
        simulated,
        "SELECT count(*) FROM (SELECT game_id, deal_index, count(*) FILTER (WHERE leads_first) AS w"
        " FROM player_deals WHERE ruleset = 'pereulok' GROUP BY ALL) WHERE w <> 1",
    ) == [(0,)]
    # Without partnerships a player's team is their seat and there is no partner.
    assert sql(
        simulated,
        "SELECT DISTINCT team = seat, partner IS NULL FROM player_games WHERE options LIKE '%no_partnerships%'",
    ) == [(True, True)]

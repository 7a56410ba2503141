"""The narrow schema (version 5): views with the old tables' names and columns, the raw text, the upgrade.

``tests/fixtures/store-v4.duckdb.gz`` was written by the release before the
narrow schema (see tests/fixtures/README.md): its tables are what the views must
still show, read from the file itself before it is upgraded.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import duckdb
import pytest
from typer.testing import CliRunner

from backalley.cli.app import app
from backalley.store import database as store_mod
from backalley.store import functions, migrations, schema
from backalley.store.database import Store
from backalley.store.ingest import ingest
from tests.helpers import odd_inputs

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "store-v4.duckdb.gz"
SAMPLE = ROOT / "data" / "sample"
#: Sample files as they were when ``store-v4.duckdb.gz`` was written (regenerated since).
V4_SAMPLES = ROOT / "tests" / "fixtures" / "store-v4-samples"
#: Every name users query: the version-4 tables and the views.
NAMES = (*schema.TABLES, *schema.VIEWS, *schema.DD_TABLES)
#: What a version-4 file has of them (``dd_deal_sides`` came with version 6).
V4_NAMES = tuple(n for n in NAMES if n != "dd_deal_sides")
#: Columns that differ between two ingests of the same inputs (times; run counters by file).
VOLATILE = {"ingested_at", "rejected_at", "started_at", "finished_at"}
runner = CliRunner()


def unpack_fixture(tmp_path: Path) -> Path:
    db = tmp_path / "v4.duckdb"
    with gzip.open(FIXTURE, "rb") as src, db.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    return db


def without_sheet(table: tuple[Any, Any], name: str) -> tuple[Any, Any]:
    """``games``' contents without its version-8 column ``sheet`` (checked false in every row); others as they are."""
    cols, rows = table
    names = [c[0] for c in cols]
    if name != "games" or "sheet" not in names:
        return table
    k = names.index("sheet")
    assert {row[k] for row in rows} <= {False}
    return [c for c in cols if c[0] != "sheet"], [(*row[:k], *row[k + 1 :]) for row in rows]


def without_column(table: tuple[Any, Any], column: str) -> tuple[Any, Any]:
    """A name's contents without one of its columns, the rows sorted again."""
    cols, rows = table
    k = [c[0] for c in cols].index(column)
    return [c for c in cols if c[0] != column], sorted(((*r[:k], *r[k + 1 :]) for r in rows), key=repr)


def columns(con: duckdb.DuckDBPyConnection, name: str) -> list[tuple[str, str]]:
    return [(r[0], r[1]) for r in con.execute(f"DESCRIBE {name}").fetchall()]


def contents(con: duckdb.DuckDBPyConnection, names: tuple[str, ...]) -> dict[str, Any]:
    """Columns (name, type) and sorted rows of each name, without the volatile columns."""
    out = {}
    for name in names:
        cols = [c for c in columns(con, name) if c[0] not in VOLATILE]
        rows = con.execute(f"SELECT {', '.join(c[0] for c in cols)} FROM {name}").fetchall()
        out[name] = (cols, sorted(rows, key=repr))
    return out


def fixture_inputs(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the fixture was made of, ingested in the same runs, by the same paths (the double-dummy tables aside).

    The inputs are the committed samples as they were when it was written: a sample file
    regenerated since is replaced by its copy in ``tests/fixtures/store-v4-samples/``.
    """
    tree = db.parent / "v4-inputs"
    shutil.copytree(SAMPLE, tree / "data" / "sample")
    for old in V4_SAMPLES.rglob("*.jsonl"):
        shutil.copyfile(old, tree / "data" / "sample" / old.relative_to(V4_SAMPLES))
    monkeypatch.chdir(tree)
    files = ("valid-games.jsonl", "faulty-games.jsonl", "bad-inputs.jsonl")
    ingest([f"data/sample/{f}" for f in files], db.resolve(), workers=1)
    ingest(["data/sample/rulesets/"], db.resolve(), workers=1)


@pytest.mark.skipif(not SAMPLE.is_dir(), reason="no committed sample data")
def test_a_version_4_file_upgrades_in_place_and_answers_as_a_fresh_ingest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = unpack_fixture(tmp_path)
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchall() == [("4",)]
        before = contents(con, V4_NAMES)
    assert len(before["games"][1]) == 118 and len(before["dd_deals"][1]) == 154

    monkeypatch.setattr(migrations, "MIGRATION_BATCH", 7)  # many batches of games, as a large file has
    with Store.open(db) as s:
        assert s.schema_version() == schema.SCHEMA_VERSION == 9
        kinds = dict(s.con.execute("SELECT table_name, table_type FROM information_schema.tables").fetchall())
    assert {kinds[t] for t in schema.GAME_TABLES} == {"VIEW"}
    assert {kinds[t] for t in schema.NARROW_TABLES} == {"BASE TABLE"}
    with store_mod.connect(db) as con:
        after = contents(con, V4_NAMES)
        # dd_plays gained each play's value for its own side (version 6), dd_deals the reason (version 7),
        # and the pereulok and bab-online games lost their values (version 7): the rest is as it was.
        redo = {
            g
            for (g,) in con.execute("SELECT game_id FROM games WHERE ruleset IN ('pereulok', 'bab-online')").fetchall()
        }
        assert (
            redo
            and not con.execute(
                "SELECT count(*) FROM dd_deals WHERE game_id IN (SELECT game_id FROM games WHERE ruleset <> 'standard')"
            ).fetchall()[0][0]
        )
        for name in ("dd_plays", "dd_deals"):
            old = ", ".join(c[0] for c in before[name][0])
            rows = con.execute(f"SELECT {old} FROM {name}").fetchall()
            after[name] = (after[name][0][: len(before[name][0])], sorted(rows, key=repr))
            kept = [row for row in before[name][1] if row[0] not in redo]
            before[name] = (before[name][0], kept)
    # Every name keeps its columns (names, types, order) and every row, the raw text included; the games
    # view gained `sheet` (version 8), false for every game written before score sheets existed.
    for name in V4_NAMES:
        assert without_sheet(after[name], name) == before[name], name

    fresh = tmp_path / "fresh.duckdb"
    fixture_inputs(fresh, monkeypatch)
    with store_mod.connect(fresh) as con:
        again = contents(con, tuple(n for n in NAMES if n not in schema.DD_TABLES))
    for name, (cols, rows) in again.items():
        if name == "violations":  # (a message is stored as written then: the score messages read differently now)
            cols, rows = without_column((cols, rows), "message")
            assert (cols, rows) == without_column(after[name], "message"), name
            continue
        assert (cols, rows) == after[name], name


#: The double-dummy tables without the search's node counts (which depend on the solver's version).
DD_SQL = {
    "dd_deals": "SELECT * EXCLUDE (nodes) FROM dd_deals",
    "dd_plays": "SELECT * FROM dd_plays",
    "dd_deal_sides": "SELECT * FROM dd_deal_sides",
}


def dd_contents(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    with store_mod.connect(db) as con:
        return {t: sorted(con.execute(sql).fetchall(), key=repr) for t, sql in DD_SQL.items()}


@pytest.mark.skipif(not SAMPLE.is_dir(), reason="no committed sample data")
def test_version_6_keeps_partnership_values_and_drops_pair_values_of_games_without(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The upgrade derives every side's figures of a partnership game from its team columns, and deletes
    the N+S/E+W values version 5 stored for a game without partnerships; ``analyze`` then solves that
    game by seat, and the file holds what a fresh ingest and analysis of the same inputs holds."""
    db = unpack_fixture(tmp_path)
    with duckdb.connect(str(db)) as con:  # the pair rows version 5 wrote for games without partnerships
        solo = [
            r[0] for r in con.execute("SELECT game_id FROM games WHERE options LIKE '%no_partnerships%'").fetchall()
        ]
        con.execute("""
            INSERT INTO dd_deals SELECT game_id, deal, number, hand_size, true, 1, hand_size - 1, 0, 0, -1
            FROM deals WHERE game_id IN (SELECT game_id FROM games WHERE options LIKE '%no_partnerships%' AND valid)
              AND NOT pass_out AND hand_size <= 4""")
        con.execute("""
            INSERT INTO dd_plays SELECT p.game_id, p.deal, p.trick, p.position, p.seat, p.card, 1, 1, 0
            FROM plays p JOIN dd_deals d ON d.game_id = p.game_id AND d.deal = p.deal AND d.nodes = -1""")
        kept, analysed, pairs = con.execute(
            "SELECT count(*) FILTER (WHERE nodes IS DISTINCT FROM -1),"
            " count(*) FILTER (WHERE analysed AND nodes IS DISTINCT FROM -1), count(*) FILTER (WHERE nodes = -1)"
            " FROM dd_deals"
        ).fetchall()[0]
    assert solo and kept == 154 and analysed and pairs
    Store.open(db).close()
    migrated = dd_contents(db)
    assert len(migrated["dd_deals"]) == kept and len(migrated["dd_deal_sides"]) == 2 * analysed
    assert not {r[0] for t in DD_SQL for r in migrated[t]} & set(solo)

    fresh = tmp_path / "fresh.duckdb"
    fixture_inputs(fresh, monkeypatch)
    for path in (db, fresh):
        assert runner.invoke(app, ["analyze", "--db", str(path), "--max-cards", "4"]).exit_code == 0
    want = dd_contents(fresh)
    games = {r[0] for r in migrated["dd_deals"]}
    for t in DD_SQL:  # the upgraded rows are those the analysis writes now ...
        assert migrated[t] == [r for r in want[t] if r[0] in games], t
    got = dd_contents(db)
    assert got == want  # ... and so are the rows of the games it left to analyse again
    assert {r[2] for r in want["dd_deal_sides"] if r[0] in solo} == {"N", "E", "S", "W"}


def test_the_upgraded_schema_is_the_schema_of_a_new_file(tmp_path: Path) -> None:
    db = unpack_fixture(tmp_path)
    Store.open(db).close()
    fresh = tmp_path / "new.duckdb"
    Store.open(fresh).close()

    def schema(path: Path) -> dict[str, Any]:
        with store_mod.connect(path) as con:
            names = [r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()]
            views = con.execute("SELECT view_name, sql FROM duckdb_views() WHERE NOT internal").fetchall()
            return {"columns": {n: con.execute(f"DESCRIBE {n}").fetchall() for n in sorted(names)}, "views": views}

    assert schema(db) == schema(fresh)


def test_the_narrow_tables_hold_codes_and_one_row_a_trick(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "s.duckdb"
    fixture_inputs(db, monkeypatch)
    with Store.open_readonly(db) as s:
        con = s.con
        strings = con.execute(
            "SELECT table_name, column_name FROM information_schema.columns WHERE data_type = 'VARCHAR' "
            "AND table_name IN ('g_deals', 'g_bids', 'g_tricks', 'g_game_sides', 'g_deal_sides')"
        ).fetchall()
        assert strings == []
        assert (
            con.execute("SELECT count(*) * 4 FROM g_tricks").fetchall()
            == con.execute("SELECT count(*) FROM plays").fetchall()
        )
        # The game key is the one link: every detail row has its game.
        for t in schema.NARROW_TABLES[1:]:
            orphans = con.execute(f"SELECT count(*) FROM {t} WHERE game_key NOT IN (SELECT game_key FROM g_games)")
            assert orphans.fetchall() == [(0,)], t
        # A trick's winning card is the card its winner played.
        assert con.execute(
            "SELECT count(*) FROM tricks t JOIN plays p USING (game_id, deal, trick) "
            "WHERE p.seat = t.winner AND p.card <> t.winning_card"
        ).fetchall() == [(0,)]


def test_any_duckdb_client_reads_every_view_and_backalley_reads_the_raw_text(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    line = (SAMPLE / "valid-games.jsonl").read_bytes().splitlines()[0]
    (tmp_path / "g.jsonl").write_bytes(line + b"\n")
    ingest([str(tmp_path / "g.jsonl")], db)
    with duckdb.connect(str(db), read_only=True) as con:  # no backalley function: raw reads NULL
        for name in NAMES:
            con.execute(f"SELECT * FROM {name}").fetchall()
        assert con.execute("SELECT raw IS NULL, game_id FROM games").fetchall()[0][0] is True
    with store_mod.connect(db) as con:
        assert con.execute("SELECT raw FROM games").fetchall() == [(line.decode("utf-8"),)]
        assert con.execute("SELECT backalley_raw_bytes(raw_zstd) FROM g_games").fetchall() == [(line,)]
        assert con.execute("SELECT octet_length(raw_zstd) < ? FROM g_games", [len(line) // 3]).fetchall() == [(True,)]


def test_view_sql_reads_the_narrow_tables_from_anywhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same views over the same tables kept elsewhere (here: another attached database) answer the same."""
    db = tmp_path / "s.duckdb"
    fixture_inputs(db, monkeypatch)
    ddl = schema.view_sql(lambda t: f"elsewhere.main.{t}")
    assert all("FROM g_" not in sql and "JOIN g_" not in sql for sql in ddl.values())
    with store_mod.connect(db) as con:
        want = contents(con, (*schema.GAME_TABLES, *schema.VIEWS))
    con = duckdb.connect()
    try:
        functions.register_functions(con)
        con.execute(f"ATTACH '{db}' AS elsewhere (READ_ONLY)")
        for sql in ddl.values():
            con.execute(sql)
        got = contents(con, (*schema.GAME_TABLES, *schema.VIEWS))
    finally:
        con.close()
    assert got == want


def test_store_cursors_and_second_connections_read_the_raw_text(tmp_path: Path) -> None:
    """The functions belong to the database instance: a cursor (the service opens one per read) needs only
    the macro, and a second connection to an instance that has them registers nothing twice."""
    db = tmp_path / "s.duckdb"
    line = (SAMPLE / "valid-games.jsonl").read_bytes().splitlines()[0]
    (tmp_path / "g.jsonl").write_bytes(line + b"\n")
    ingest([str(tmp_path / "g.jsonl")], db)
    with Store.open(db) as st:
        for _ in range(2):
            cur = st.cursor()
            assert cur.execute("SELECT raw FROM games").fetchall() == [(line.decode("utf-8"),)]
            cur.close()
    with store_mod.connect(db) as first, store_mod.connect(db) as second:  # one instance, registered once
        for con in (first, second):
            assert con.execute("SELECT backalley_raw_bytes(raw_zstd) FROM g_games").fetchall() == [(line,)]
    plain = duckdb.connect()
    try:
        with pytest.raises(duckdb.CatalogException):
            plain.execute("SELECT backalley_raw_text(NULL::BLOB)")
        functions.register_functions(plain)
        functions.register_functions(plain)  # again: it finds them
        assert plain.execute("SELECT backalley_raw(backalley_zstd('é'))").fetchall() == [("é",)]
    finally:
        plain.close()


# --- the raw text: exact bytes -------------------------------------------------------------------


@pytest.mark.skipif(not SAMPLE.is_dir(), reason="no committed sample data")
def test_backalley_raw_writes_the_exact_bytes(tmp_path: Path) -> None:
    want = odd_inputs(tmp_path / "in")
    db = tmp_path / "s.duckdb"
    assert ingest([str(tmp_path / "in")], db).inserted == 2
    for gid, data in want.items():
        result = runner.invoke(app, ["raw", gid, "--db", str(db)])
        assert result.exit_code == 0, result.output
        assert result.stdout_bytes == data
        with Store.open_readonly(db) as s:
            assert s.con.execute("SELECT content_hash, raw FROM games WHERE game_id = ?", [gid]).fetchall() == [
                (hashlib.sha256(data).hexdigest(), data.decode("utf-8"))
            ]
    gid, data = next(iter(want.items()))
    target = tmp_path / "out.json"
    assert runner.invoke(app, ["raw", gid, "--db", str(db), "-o", str(target)]).exit_code == 0
    assert target.read_bytes() == data
    again = runner.invoke(app, ["raw", gid, "--db", str(db), "-o", str(target)])
    assert again.exit_code == 2 and "already exists" in again.output
    assert runner.invoke(app, ["raw", gid, "--db", str(db), "-o", str(target), "--force"]).exit_code == 0
    missing = runner.invoke(app, ["raw", "no-such-game", "--db", str(db)])
    assert missing.exit_code == 2 and "no stored game has game_id 'no-such-game'" in missing.output
    query = runner.invoke(
        app, ["query", "--db", str(db), "--format", "ndjson", "SELECT backalley_raw(raw_zstd) AS t FROM g_games"]
    )
    assert query.exit_code == 0 and {json.loads(r)["t"] for r in query.stdout.splitlines() if r.strip()} == {
        d.decode("utf-8") for d in want.values()
    }

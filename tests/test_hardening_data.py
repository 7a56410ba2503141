"""Issue 29 (hardening, round 3), the data findings: nothing a command writes lands on the database,
its WAL or its lake; nothing wrongly accepted; no crash on huge numbers; bounded reports.

Each test names the finding it covers and uses the input the issue names.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import duckdb
import pytest
from typer.testing import CliRunner

from backalley.cli.app import app
from tests.store_games import game_lines

runner = CliRunner()


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """A store of 3 games whose meta names an attached lake folder (as `backalley attach` records it)."""
    f = write_lines(tmp_path / "games.jsonl", game_lines(3, seed=5, deals=2))
    db = tmp_path / "s.duckdb"
    result = runner.invoke(app, ["ingest", str(f), "--db", str(db), "--workers", "1"])
    assert result.exit_code == 0, result.output
    lake = tmp_path / "lake"
    (lake / "g_games").mkdir(parents=True)
    (lake / "g_games" / "part-0.parquet").write_bytes(b"PAR1 data")
    with duckdb.connect(str(db)) as con:
        con.execute("INSERT INTO meta VALUES ('lake', ?)", [str(lake) + "/"])
    return db


def files_under(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def game_id(db: Path) -> str:
    with duckdb.connect(str(db), read_only=True) as con:
        return str(con.execute("SELECT min(game_id) FROM g_games").fetchall()[0][0])


def protected_targets(db: Path) -> list[Path]:
    """The database, its WAL (made to exist), a link to the database, a file inside the lake."""
    wal = db.with_name(db.name + ".wal")
    wal.write_bytes(b"wal")
    link = db.parent / "link.duckdb"
    link.symlink_to(db)
    return [db, wal, link, db.parent / "." / db.name, db.parent / "lake" / "g_games" / "part-0.parquet"]


def assert_refused(result: Any) -> None:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and len(result.stderr.strip().splitlines()) == 1
    assert "database" in result.stderr or "lake" in result.stderr


def test_raw_output_never_overwrites_the_database_its_wal_or_its_lake(store: Path) -> None:
    before, lake = store.read_bytes(), files_under(store.parent / "lake")
    gid = game_id(store)
    for target in protected_targets(store):
        for force in ([], ["--force"]):
            assert_refused(runner.invoke(app, ["raw", gid, "--db", str(store), "-o", str(target), *force]))
    assert store.read_bytes() == before and files_under(store.parent / "lake") == lake
    assert store.with_name(store.name + ".wal").read_bytes() == b"wal"


def test_query_out_never_writes_into_the_lake(store: Path) -> None:
    lake = files_under(store.parent / "lake")
    for target in protected_targets(store):
        result = runner.invoke(
            app, ["query", "SELECT 1", "-F", "csv", "-o", str(target), "--force", "--db", str(store)]
        )
        assert_refused(result)
    assert files_under(store.parent / "lake") == lake


@pytest.mark.parametrize("where", ["lake/new", "lake/g_games/new", "lake", "."])
def test_export_never_writes_into_or_over_the_lake_or_the_database(store: Path, where: str) -> None:
    before, lake = store.read_bytes(), files_under(store.parent / "lake")
    out = store.parent / where
    result = runner.invoke(app, ["export", str(out), "--db", str(store), "--force"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    if where.startswith("lake/"):
        assert "is inside the lake attached to the database" in result.stderr
    assert store.read_bytes() == before and files_under(store.parent / "lake") == lake


def test_report_out_never_writes_into_the_lake_or_over_the_database(store: Path, tmp_path: Path) -> None:
    before, lake = store.read_bytes(), files_under(store.parent / "lake")
    for out in (store.parent / "lake", store.parent / "lake" / "g_games" / "pages"):
        assert_refused(runner.invoke(app, ["report", "--db", str(store), "--out", str(out)]))
    named = tmp_path / "pages"
    named.mkdir()
    db = named / "summary.md"  # a database whose name is one of the report's files
    os.link(store, db)
    assert_refused(runner.invoke(app, ["report", "--db", str(db), "--out", str(named)]))
    assert store.read_bytes() == before and files_under(store.parent / "lake") == lake
    ok = runner.invoke(app, ["report", "--db", str(store), "--out", str(store.parent)])  # beside the database: fine
    assert ok.exit_code == 0, ok.output
    assert store.read_bytes() == before


def test_simulate_out_never_overwrites_the_database(
    store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BACKALLEY_DB", str(store))
    before = store.read_bytes()
    for target in protected_targets(store):
        assert_refused(runner.invoke(app, ["simulate", "--games", "1", "--workers", "1", "--out", str(target)]))
    assert store.read_bytes() == before
    ok = runner.invoke(app, ["simulate", "--games", "1", "--workers", "1", "--out", str(tmp_path / "g.jsonl")])
    assert ok.exit_code == 0, ok.output
    assert json.loads((tmp_path / "g.jsonl").read_text(encoding="utf-8"))["game_id"]


# --- integers of any size: a number, never a parse error or a crash ----------------------------

MARK = 987654321987
HUGE = ["2" + "0" * 18, "9" + "0" * 18, "1" + "0" * 30, "-" + "1" * 30, "9" * 5000]


def huge_records(game_ids: list[str]) -> list[str]:
    """A game per value of HUGE, every bid of its first deal and its recorded points that value."""
    lines = []
    for gid, digits in zip(game_ids, HUGE, strict=True):
        rec = json.loads(game_lines(1, seed=5, deals=2)[0])
        rec["game_id"] = gid
        for bid in rec["deals"][0]["bids"]:
            bid["bid"] = MARK
        if "result" in rec["deals"][0]:
            rec["deals"][0]["result"]["points"]["NS"] = MARK
        lines.append(json.dumps(rec).replace(str(MARK), digits))
    return lines


def test_a_5000_digit_bid_is_a_bid_range_violation_at_its_path(tmp_path: Path) -> None:
    f = write_lines(tmp_path / "g.jsonl", huge_records([f"h{k}" for k in range(len(HUGE))]))
    result = runner.invoke(app, ["validate", "--json", str(f)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    reports = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(reports) == len(HUGE)
    for rep in reports:
        codes = {(v["code"], v["path"]) for v in rep["violations"]}
        assert ("BID_RANGE", "/deals/0/bids/0/bid") in codes and "JSON" not in {c for c, _ in codes}, rep


def test_huge_bids_crash_nothing_in_the_store_show_report_or_query(tmp_path: Path) -> None:
    ids = [f"h{k}" for k in range(len(HUGE))]
    f = write_lines(tmp_path / "g.jsonl", huge_records(ids))
    db = tmp_path / "s.duckdb"
    result = runner.invoke(app, ["ingest", str(f), "--db", str(db), "--workers", "1", "--json"])
    assert result.exit_code == 1, result.output
    assert json.loads(result.stdout)["invalid"] == len(HUGE)
    for gid in ids:
        for extra in ([], ["--deal", "1"], ["--deal", "2"]):
            shown = runner.invoke(app, ["show", gid, "--db", str(db), *extra])
            assert shown.exit_code == 0 and "Traceback" not in shown.output, shown.output
    report = runner.invoke(app, ["report", "--db", str(db), "--out", str(tmp_path / "r")])
    assert report.exit_code == 0, report.output
    for view in (
        "games",
        "deals",
        "bids",
        "deal_sides",
        "game_sides",
        "player_deals",
        "player_games",
        "player_summary",
    ):
        q = runner.invoke(app, ["query", f"SELECT * FROM {view}", "-F", "ndjson", "--db", str(db)])
        assert q.exit_code == 0, (view, q.output)
    with duckdb.connect(str(db), read_only=True) as con:  # beyond 64 bits: NULL, never a wrong number
        values = con.execute("SELECT value FROM bids WHERE deal = 1 AND game_id = 'h2'").fetchall()
    assert values == [(None,)] * 4


def test_huge_bids_crash_nothing_in_the_service(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from backalley.service.app import create_app
    from backalley.service.settings import Settings

    token = "test-token-0123456789"
    ids = [f"h{k}" for k in range(len(HUGE))]
    body = "".join(line + "\n" for line in huge_records(ids)).encode()
    ndjson = {"content-type": "application/x-ndjson"}
    app_ = create_app(Settings(db=tmp_path / "s.duckdb", tokens=frozenset({token}), allowed_hosts=("testserver",)))
    with TestClient(app_, raise_server_exceptions=False) as client:
        checked = client.post("/api/v1/validate", content=body, headers={**ndjson, "Authorization": f"Bearer {token}"})
        assert checked.status_code == 200, checked.text
        assert len(checked.text.splitlines()) == len(HUGE)
        stored = client.post("/api/v1/games", content=body, headers={**ndjson, "Authorization": f"Bearer {token}"})
        assert stored.status_code == 200, stored.text
        for gid in ids:
            for url in (f"/games/{gid}", f"/games/{gid}/deals/1", f"/api/v1/games/{gid}"):
                assert client.get(url).status_code == 200, url


# --- duplicate keys: the last one counts, everywhere -----------------------------------------


def test_duplicate_keys_the_last_one_counts_in_every_column_and_page(tmp_path: Path) -> None:
    rec = json.loads(game_lines(1, seed=5, deals=2)[0])
    rec["game_id"], rec["players"]["N"] = "last-id", "LastName"
    raw = json.dumps(rec, separators=(",", ":"))
    raw = raw.replace('"game_id":', '"game_id":"first-id","game_id":', 1)
    raw = raw.replace('"players":{', '"players":{"N":"FirstName",', 1)
    f = write_lines(tmp_path / "g.jsonl", [raw])
    db = tmp_path / "s.duckdb"
    assert runner.invoke(app, ["ingest", str(f), "--db", str(db), "--workers", "1"]).exit_code in (0, 1)
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT game_id, player_n FROM g_games").fetchall() == [("last-id", "LastName")]
        players = {r[0] for r in con.execute("SELECT player FROM player_games").fetchall()}
    assert "LastName" in players and "FirstName" not in players
    shown = runner.invoke(app, ["show", "last-id", "--db", str(db), "--deal", "1"])
    assert shown.exit_code == 0 and "LastName" in shown.stdout and "FirstName" not in shown.stdout
    exact = runner.invoke(app, ["raw", "last-id", "--db", str(db)])
    assert exact.stdout_bytes == raw.encode()  # the input itself is kept as it was

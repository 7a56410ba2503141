"""SQL while serving: ``GET /api/v1/sql`` and the ``/sql`` page, read-only in ``query``'s sandbox.

Every refused query leaves the database as it was (its row counts) and no file behind.
"""

from __future__ import annotations

import csv
import io
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pyarrow.parquet as pq
import pytest
from fastapi.testclient import TestClient

from backalley.service.sql import EXAMPLES
from tests.helpers import AUTH, NDJSON, make_client
from tests.service_games import ndjson, record

PROBLEM = "application/problem+json"
IDS = [f"q{i}" for i in range(4)]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, Path]]:
    folder = tmp_path_factory.mktemp("sql")
    with make_client(folder / "sql.duckdb") as client:
        r = client.post(
            "/api/v1/games",
            content=ndjson(*(record(g, seed=k + 1) for k, g in enumerate(IDS))),
            headers={**NDJSON, **AUTH},
        )
        assert r.status_code == 200
        yield client, folder


def counts(client: TestClient) -> tuple[int, ...]:
    with client.app.state.service.reader() as cur:  # type: ignore[attr-defined]
        found = cur.execute(
            "SELECT (SELECT count(*) FROM g_games), (SELECT count(*) FROM g_tricks), (SELECT count(*) FROM meta),"
            " (SELECT count(*) FROM api_tokens), (SELECT count(*) FROM duckdb_tables())"
        ).fetchall()[0]
    return tuple(int(n) for n in found)


def sql(client: TestClient, q: str, fmt: str = "json", **params: str) -> Any:
    return client.get("/api/v1/sql", params={"q": q, "format": fmt, **params})


def assert_problem(r: Any, status: int) -> str:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith(PROBLEM)
    body = r.json()
    assert body["status"] == status and body["type"] == "about:blank" and body["instance"] == "/api/v1/sql"
    return str(body["detail"])


Q = "SELECT game_id, scored_deals FROM games WHERE game_id LIKE 'q%' ORDER BY game_id"


def others(folder: Path) -> list[str]:
    """The files of the folder but the database's own (its WAL and spill folder come and go)."""
    return sorted(p.name for p in folder.iterdir() if not p.name.startswith("sql.duckdb"))


def test_a_query_in_every_format(served: Any) -> None:
    client, _ = served
    as_json = sql(client, Q).json()
    assert [r["game_id"] for r in as_json] == IDS and all(r["scored_deals"] == 3 for r in as_json)
    as_csv = list(csv.DictReader(io.StringIO(sql(client, Q, "csv").text)))
    assert [r["game_id"] for r in as_csv] == IDS
    lines = [json.loads(line) for line in sql(client, Q, "ndjson").text.splitlines()]
    assert lines == as_json
    parquet = pq.read_table(io.BytesIO(sql(client, Q, "parquet").content))
    assert parquet.to_pylist() == as_json
    assert sql(client, Q, "csv").headers["content-type"].startswith("text/csv")


def test_named_parameters(served: Any) -> None:
    client, _ = served
    r = sql(
        client, "SELECT game_id FROM games WHERE game_id = $g OR game_id = $h ORDER BY 1", **{"$g": "q1", "p.h": "q3"}
    )
    assert r.json() == [{"game_id": "q1"}, {"game_id": "q3"}]
    assert "no value was given" in assert_problem(sql(client, "SELECT $g AS v"), 400)
    assert "no $x" in assert_problem(sql(client, "SELECT 1", **{"$x": "1"}), 400)


@pytest.mark.parametrize(
    ("q", "status"),
    [
        ("DELETE FROM games", 403),
        ("DELETE FROM g_games", 403),
        ("INSERT INTO meta VALUES ('k', 'v')", 403),
        ("UPDATE g_games SET status = 'valid'", 403),
        ("DROP TABLE g_games", 403),
        ("CREATE TABLE x AS SELECT 1", 403),
        ("SELECT 1; DROP TABLE meta; SELECT 2", 403),
        ("EXPLAIN ANALYZE DELETE FROM g_games", 403),
        ("ATTACH '{folder}/other.duckdb' AS other", 403),
        ("COPY g_games TO '{folder}/stolen.csv'", 403),
        ("EXPORT DATABASE '{folder}/stolen'", 403),
        ("SELECT * FROM read_csv('/etc/passwd')", 403),
        ("SELECT * FROM read_text('/etc/hostname')", 403),
        ("SELECT * FROM glob('/*')", 403),
        ("SELECT * FROM '{folder}/sql.duckdb'", 400),  # the database itself: DuckDB refuses to attach it twice
        ("INSTALL httpfs", 403),
        ("LOAD httpfs", 403),
        ("SET enable_external_access = true", 403),
        ("PRAGMA enable_profiling", 403),
        ("CALL pragma_version()", 403),
        ("SELECT * FROM api_tokens", 403),
        ("SELECT * FROM query_table('api_' || 'tokens')", 403),
        ("SELECT * FROM query('SELECT 1')", 403),
        ("EXPLAIN ANALYZE SELECT * FROM query_table('api_' || 'tokens')", 403),
        ("SELECT (SELECT count(*) FROM query('SELECT 1'))", 403),
        ("SELEC 1", 400),
        ("SELECT * FROM no_such_table", 400),
        ("", 400),
        ("SELECT repeat('x', 1000000) FROM range(100)", 413),
        ("SELECT string_agg(repeat('x', 1000000), '') FROM range(20000)", 413),
    ],
)
def test_what_does_not_only_read_is_a_problem_and_changes_nothing(served: Any, q: str, status: int) -> None:
    client, folder = served
    before = counts(client)
    files = others(folder)
    assert_problem(sql(client, q.format(folder=folder), "csv"), status)
    assert counts(client) == before
    assert others(folder) == files


def test_a_query_past_the_time_limit_is_interrupted(served: Any) -> None:
    client, _ = served
    start = time.monotonic()
    detail = assert_problem(
        sql(client, "SELECT count(*) FROM range(100000000000) a, range(100000) b", timeout="0.5"), 400
    )
    assert "interrupted after 0.5 s" in detail and time.monotonic() - start < 30
    assert sql(client, "SELECT 1 AS one").json() == [{"one": 1}]  # the next query runs as usual
    assert_problem(sql(client, "SELECT 1", timeout="600"), 400)  # more than the service's limit


def test_bad_format_and_uploads_still_stored_afterwards(served: Any) -> None:
    client, _ = served
    assert "format" in assert_problem(sql(client, "SELECT 1", "xlsx"), 400)
    r = client.post("/api/v1/games", content=ndjson(record("late", seed=9)), headers={**NDJSON, **AUTH})
    assert r.json()["fates"]["stored"] == 1  # the sandboxed connection still stores uploads
    assert sql(client, "SELECT count(*) AS n FROM games WHERE game_id = 'late'").json() == [{"n": 1}]


def test_the_sql_page(served: Any) -> None:
    client, _ = served
    r = client.get("/sql", params={"q": Q})
    assert r.status_code == 200
    cells = re.findall(r"<tr><td>([^<]*)</td><td>3</td></tr>", r.text)
    assert cells[:4] == IDS
    links = dict(re.findall(r'<a class="download" href="([^"]+)">([A-Z]+)</a>', r.text))
    assert set(links.values()) == {"CSV", "JSON", "NDJSON", "PARQUET"}
    for href in links:
        assert client.get(href.replace("&amp;", "&")).status_code == 200
    # the tables and views with their columns
    assert '<details class="box" id="table-games">' in r.text and "<code>played_at</code>" in r.text
    assert "api_tokens" not in r.text


def test_the_sql_page_says_what_is_wrong(served: Any) -> None:
    client, _ = served
    r = client.get("/sql", params={"q": "DELETE FROM games"})
    assert r.status_code == 403 and 'id="sql-error"' in r.text and "DELETE" in r.text
    r = client.get("/sql", params={"q": "SELECT $who AS who", "params": "who=<b>Ada</b>"})
    assert r.status_code == 200 and "<td>&lt;b&gt;Ada&lt;/b&gt;</td>" in r.text
    assert client.get("/sql", params={"q": "SELECT 1", "params": "not a pair"}).status_code == 400


def test_every_example_query_runs(served: Any) -> None:
    client, _ = served
    page = client.get("/sql").text
    hrefs = re.findall(r'<ul class="examples">(.*?)</ul>', page, flags=re.S)[0]
    links = re.findall(r'href="(/sql\?[^"]+)"', hrefs)
    assert len(links) == len(EXAMPLES)
    for href in links:
        query = dict(parse_qsl(urlsplit(href.replace("&amp;", "&")).query))
        r = client.get("/sql", params=query)
        assert r.status_code == 200 and 'id="sql-error"' not in r.text, (query, r.text[-800:])


def test_private_mode_needs_a_token_for_sql(tmp_path: Path) -> None:
    with make_client(tmp_path / "p.duckdb", private=True) as client:
        assert client.get("/api/v1/sql", params={"q": "SELECT 1"}).status_code == 401
        assert client.get("/sql").status_code == 401
        assert client.get("/api/v1/sql", params={"q": "SELECT 1 AS x"}, headers=AUTH).json() == [{"x": 1}]


def test_the_luck_ledger_is_computed_for_a_query_that_names_it(served: Any) -> None:
    """``luck_ledger`` is no stored table: registered for the query that names it (none analysed here:
    no row, the ledger's columns), and gone again after it (a second query computes it again)."""
    from backalley.analysis.ledger import LEDGER_COLUMNS

    client, _ = served
    for _ in range(2):
        assert sql(client, "SELECT count(*) AS n FROM Luck_Ledger").json() == [{"n": 0}]
    header = sql(client, "SELECT * FROM luck_ledger", "csv").text.splitlines()[0]
    assert header.split(",") == list(LEDGER_COLUMNS)
    with client.app.state.service.reader() as cur:  # type: ignore[attr-defined]
        assert "luck_ledger" not in {r[0] for r in cur.execute("SELECT view_name FROM duckdb_views()").fetchall()}

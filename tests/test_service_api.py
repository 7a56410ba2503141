"""``backalley serve``'s API and pages through FastAPI's test client: every endpoint and status."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import duckdb
import pytest
from fastapi.testclient import TestClient

from backalley.reporting import write_reports
from backalley.reporting.html import player_file
from tests.helpers import AUTH, NDJSON, TOKEN, make_client
from tests.service_games import HOSTILE_PLAYERS, XSS, faulty, hostile, line, ndjson, record

PROBLEM = "application/problem+json"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "service.duckdb"


@pytest.fixture
def client(db: Path) -> Iterator[TestClient]:
    with make_client(db) as c:
        yield c


def upload(client: TestClient, body: bytes, headers: dict[str, str] | None = None) -> Any:
    return client.post("/api/v1/games", content=body, headers={**NDJSON, **AUTH, **(headers or {})})


def counts(client: TestClient) -> tuple[int, int]:
    with client.app.state.service.reader() as cur:  # type: ignore[attr-defined]
        return (
            cur.execute("SELECT count(*) FROM games").fetchall()[0][0],
            cur.execute("SELECT count(*) FROM rejects").fetchall()[0][0],
        )


def assert_problem(r: Any, status: int) -> dict[str, Any]:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith(PROBLEM)
    body: dict[str, Any] = r.json()
    assert body["status"] == status and body["title"] and body["detail"] and body["type"] == "about:blank"
    assert "Traceback" not in r.text
    return body


# --- validate: stores nothing -------------------------------------------------------------


def test_validate_one_json_record(client: TestClient) -> None:
    r = client.post(
        "/api/v1/validate", content=line(record("v1")), headers={"content-type": "application/json", **AUTH}
    )
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/x-ndjson")
    reports = [json.loads(x) for x in r.text.splitlines()]
    assert len(reports) == 1
    rep = reports[0]
    assert rep["game_id"] == "v1" and rep["valid"] and not rep["complete"] and rep["line"] is None
    assert set(rep) == {"source", "line", "game_id", "valid", "complete", "sheet", "violations", "deals", "final_score"}
    assert counts(client) == (0, 0)


def test_validate_ndjson_and_multipart(client: TestClient) -> None:
    body = ndjson(record("v1"), faulty(record("v2", seed=2)))
    r = client.post("/api/v1/validate", content=body, headers={**NDJSON, **AUTH})
    reports = [json.loads(x) for x in r.text.splitlines()]
    assert [(x["game_id"], x["valid"], x["line"]) for x in reports] == [("v1", True, 1), ("v2", False, 2)]
    assert "NOT_IN_HAND" in {v["code"] for v in reports[1]["violations"]}
    r = client.post("/api/v1/validate", headers=AUTH, files={"file": ("games.jsonl", body, "application/octet-stream")})
    assert r.status_code == 200
    assert [json.loads(x)["source"] for x in r.text.splitlines()] == ["games.jsonl", "games.jsonl"]
    r = client.post(
        "/api/v1/validate", headers=AUTH, files={"file": ("one.json", line(record("v3")).encode(), "application/json")}
    )
    assert [json.loads(x)["game_id"] for x in r.text.splitlines()] == ["v3"]
    assert counts(client) == (0, 0)


# --- upload: fates, idempotence, conflicts ------------------------------------------------------


def test_upload_stores_and_reports_each_fate(client: TestClient) -> None:
    body = ndjson(record("g1"), faulty(record("g2", seed=2))) + b"this is not json\n"
    r = upload(client, body)
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["records"] == 3
    assert out["fates"] == {"stored": 2, "duplicate": 0, "conflict": 0, "rejected": 1}
    assert [x["fate"] for x in out["results"]] == ["stored", "stored", "rejected"]
    assert [x["report"]["valid"] for x in out["results"]] == [True, False, False]
    assert out["results"][2]["report"]["violations"][0]["code"] == "JSON"
    assert counts(client) == (2, 1)


def test_reupload_is_idempotent(client: TestClient) -> None:
    body = ndjson(record("g1"), record("g2", seed=2)) + b"{broken\n"
    first = upload(client, body).json()
    again = upload(client, body).json()
    assert first["fates"]["stored"] == 2
    assert again["fates"] == {"stored": 0, "duplicate": 2, "conflict": 0, "rejected": 1}
    assert counts(client) == (2, 1)  # the same reject (source, line, content) is not kept twice


def test_conflict_is_kept_in_rejects(client: TestClient) -> None:
    upload(client, ndjson(record("g1")))
    other = record("g1", seed=9)  # same game_id, different content
    out = upload(client, ndjson(other)).json()
    assert out["fates"]["conflict"] == 1
    assert "already stored" in out["results"][0]["message"]
    with client.app.state.service.reader() as cur:  # type: ignore[attr-defined]
        rows = cur.execute("SELECT reason, game_id, raw FROM rejects").fetchall()
    assert rows == [("conflict", "g1", line(other))]
    stored = client.get("/api/v1/games/g1").json()
    assert stored["players"] == record("g1")["players"]  # the first upload stays


def test_large_upload_becomes_a_job(db: Path) -> None:
    with make_client(db, job_threshold=2) as client:
        body = ndjson(record("j1"), record("j2", seed=2), record("j3", seed=3))
        r = upload(client, body)
        assert r.status_code == 202, r.text
        href = r.headers["location"]
        assert href == r.json()["href"] and href.startswith("/api/v1/jobs/")
        deadline = time.monotonic() + 60
        while (job := client.get(href, headers=AUTH).json())["status"] in ("queued", "running"):
            assert time.monotonic() < deadline, job
            time.sleep(0.05)
        assert job["status"] == "finished" and job["done"] == 3
        assert job["result"]["fates"]["stored"] == 3
        assert_problem(client.get(href), 401)
        assert_problem(client.get("/api/v1/jobs/nope", headers=AUTH), 404)
        assert counts(client) == (3, 0)


# --- reading --------------------------------------------------------------------------------


def test_get_game_deal_player(client: TestClient) -> None:
    rec = faulty(record("g2", seed=2))
    upload(client, ndjson(rec))
    g = client.get("/api/v1/games/g2").json()
    assert g["game_id"] == "g2" and g["status"] == "invalid" and len(g["deals"]) == 3
    assert g["players"] == rec["players"]
    assert "NOT_IN_HAND" in {v["code"] for v in g["violations"]}
    d = client.get("/api/v1/games/g2/deals/1").json()
    assert [h["cards"] for h in d["hands"]] == [rec["deals"][0]["hands"][s] for s in "NESW"]
    assert d["trump_card"] == rec["deals"][0]["trump_card"]
    first = d["tricks"][0]
    assert [p["card"] for p in first["plays"]] == rec["deals"][0]["tricks"][0]["cards"]
    assert [v["code"] for v in first["plays"][1]["faults"]] == ["NOT_IN_HAND"]
    assert first["plays"][0]["faults"] == []
    name = rec["players"]["N"]
    p = client.get(f"/api/v1/players/{name}").json()
    assert p["player"] == name and [x["game_id"] for x in p["games"]] == ["g2"]
    assert_problem(client.get("/api/v1/games/nope"), 404)
    assert_problem(client.get("/api/v1/games/g2/deals/4"), 404)
    assert_problem(client.get("/api/v1/games/g2/deals/0"), 404)
    assert_problem(client.get("/api/v1/games/g2/deals/x"), 404)
    assert_problem(client.get("/api/v1/players/nobody"), 404)
    assert_problem(client.get("/api/v1/no/such/endpoint"), 404)
    assert_problem(client.delete("/api/v1/games/g2"), 405)


def test_openapi_describes_the_api(client: TestClient) -> None:
    spec = client.get("/api/v1/openapi.json").json()
    assert {
        "/api/v1/validate",
        "/api/v1/games",
        "/api/v1/jobs/{job_id}",
        "/api/v1/games/{game_id}",
        "/api/v1/games/{game_id}/deals/{n}",
        "/api/v1/players/{player_id}",
    } <= set(spec["paths"])
    body = spec["paths"]["/api/v1/games"]["post"]["requestBody"]["content"]
    assert {"application/json", "application/x-ndjson", "multipart/form-data"} <= set(body)


# --- tokens ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "headers", [{}, {"Authorization": "Bearer wrong-token-0123456789"}, {"Authorization": f"Basic {TOKEN}"}]
)
def test_upload_without_a_good_token_is_refused(client: TestClient, headers: dict[str, str]) -> None:
    r = client.post("/api/v1/games", content=ndjson(record("g1")), headers={**NDJSON, **headers})
    assert_problem(r, 401)
    assert r.headers["www-authenticate"].startswith("Bearer")
    assert counts(client) == (0, 0)
    assert client.get("/api/v1/games/g1").status_code == 404


def test_token_created_in_the_database(client: TestClient) -> None:
    svc = client.app.state.service  # type: ignore[attr-defined]
    token = svc.create_token("club server")
    r = client.post(
        "/api/v1/games", content=ndjson(record("g1")), headers={**NDJSON, "Authorization": f"Bearer {token}"}
    )
    assert r.status_code == 200
    with svc.reader() as cur:
        assert cur.execute("SELECT name, token_hash <> ? FROM api_tokens", [token]).fetchall() == [
            ("club server", True)
        ]
    with pytest.raises(ValueError, match="exists already"):
        svc.create_token("club server")


def test_private_mode_needs_a_token_to_read(db: Path) -> None:
    with make_client(db, private=True) as client:
        upload(client, ndjson(record("g1")))
        assert_problem(client.get("/api/v1/games/g1"), 401)
        assert client.get("/api/v1/games/g1", headers=AUTH).status_code == 200
        page = client.get("/games/g1")
        assert page.status_code == 401 and page.headers["content-type"].startswith("text/html")
        assert client.get("/games/g1", headers=AUTH).status_code == 200
        assert client.get("/players").status_code == 401
    with make_client(db) as client:  # open by default
        assert client.get("/api/v1/games/g1").status_code == 200


def test_private_mode_browser_signs_in_with_a_cookie(db: Path) -> None:
    """--private: a browser signs in once at /login; the token is kept in an HttpOnly cookie for reads only."""
    with make_client(db, private=True) as client:
        upload(client, ndjson(record("g1")))
        refused = client.get("/games/g1")
        assert refused.status_code == 401 and 'href="/login"' in refused.text
        form = client.get("/login", params={"next": "/games/g1"})
        assert form.status_code == 200 and 'name="token"' in form.text and 'value="/games/g1"' in form.text
        wrong = client.post("/login", data={"token": "not-a-known-token-000", "next": "/games/g1"})
        assert wrong.status_code == 401 and "not known" in wrong.text and "set-cookie" not in wrong.headers
        signed = client.post("/login", data={"token": TOKEN, "next": "/games/g1"}, follow_redirects=False)
        assert signed.status_code == 303 and signed.headers["location"] == "/games/g1"
        cookie = signed.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie and "path=/" in cookie
        assert client.get("/games/g1").status_code == 200
        assert client.get("/games/g1/deals/1").status_code == 200
        assert client.get("/players").status_code == 200
        assert client.get("/api/v1/games/g1").status_code == 200
        # writes never take the cookie: the API still needs the header
        stored = client.post("/api/v1/games", content=ndjson(record("g2", seed=2)), headers=NDJSON)
        assert_problem(stored, 401)
        out = client.post("/logout", follow_redirects=False)
        assert out.status_code == 303 and "backalley_token=" in out.headers["set-cookie"]
        assert client.get("/games/g1").status_code == 401
        for target in ("//evil.example/x", "https://evil.example/", "/\\evil.example"):
            away = client.post("/login", data={"token": TOKEN, "next": target}, follow_redirects=False)
            assert away.headers["location"] == "/", target


# --- limits ---------------------------------------------------------------------------------


def test_body_too_large(db: Path) -> None:
    with make_client(db, max_body=10_000) as client:
        body = ndjson(*(record(f"g{i}", seed=i) for i in range(3)))
        assert len(body) > 10_000
        assert_problem(upload(client, body), 413)

        def chunks() -> Iterator[bytes]:  # no Content-Length: the limit is counted while reading
            yield body

        assert_problem(client.post("/api/v1/games", content=chunks(), headers={**NDJSON, **AUTH}), 413)
        assert counts(client) == (0, 0)


def test_record_too_large(db: Path) -> None:
    with make_client(db, max_record=1_000) as client:
        body = ndjson(record("g1"))
        problem = assert_problem(upload(client, body), 413)
        assert "upload:1" in problem["detail"] and "1,000-byte" in problem["detail"]
        assert problem["too_large"] == ["upload:1"] and problem["fates"]["rejected"] == 1
        assert counts(client) == (0, 1)  # kept as the reject too_large, as ingest keeps it


def test_one_record_limit_with_ingest_and_the_other_records_stored(client: TestClient) -> None:
    """A record between ingest's limit (1,000,000 bytes) and 1 MiB was a KeyError, a 500 and the upload lost."""
    from backalley.validate import MAX_RECORD_BYTES

    big = record("big")
    big["event"] = "x" * (MAX_RECORD_BYTES + 10)
    body = ndjson(record("g1"), big, record("g2", seed=2))
    problem = assert_problem(upload(client, body), 413)
    assert problem["detail"].startswith("upload:2: a record over the 1,000,000-byte limit")
    assert problem["too_large"] == ["upload:2"] and problem["fates"] == {
        "stored": 2,
        "duplicate": 0,
        "conflict": 0,
        "rejected": 1,
    }
    assert [r["fate"] for r in problem["results"]] == ["stored", "rejected", "stored"]
    assert counts(client) == (2, 1)
    reports = client.post("/api/v1/validate", content=body, headers={**NDJSON, **AUTH}).text.splitlines()
    assert "record too large" in json.loads(reports[1])["violations"][0]["message"]
    assert json.loads(reports[0])["valid"] and json.loads(reports[2])["valid"]


def test_validate_needs_a_token_unless_public(db: Path) -> None:
    body = ndjson(record("v1"))
    with make_client(db) as client:
        assert_problem(client.post("/api/v1/validate", content=body, headers=NDJSON), 401)
        assert client.post("/api/v1/validate", content=body, headers={**NDJSON, **AUTH}).status_code == 200
    with make_client(db, public_validate=True) as client:
        assert client.post("/api/v1/validate", content=body, headers=NDJSON).status_code == 200
    with make_client(db, public_validate=True, private=True) as client:  # private: every request shows a token
        assert_problem(client.post("/api/v1/validate", content=body, headers=NDJSON), 401)


def test_validate_bounds_body_and_records(db: Path) -> None:
    """A 2 MB body of ``1`` lines took 42 s and returned 264 MB: a validation is bounded before any work."""
    with make_client(db, public_validate=True, validate_max_body=100_000, validate_max_records=50) as client:
        ones = client.post("/api/v1/validate", content=b"1\n" * 51, headers=NDJSON)
        assert "51 records: a validation takes at most 50" in assert_problem(ones, 413)["detail"]
        assert client.post("/api/v1/validate", content=b"1\n" * 50, headers=NDJSON).status_code == 200
        long = b'"' + b"x" * 100_000 + b'"\n'
        assert "100,000-byte limit" in assert_problem(client.post("/api/v1/validate", content=long), 413)["detail"]
        assert upload(client, long).status_code == 200  # the upload's own, larger, body limit


def test_validate_bounds_violations_and_answer(db: Path) -> None:
    body = ndjson(*(faulty(record(f"v{i}", seed=i)) for i in range(4)))
    with make_client(db, public_validate=True) as client:
        whole = [json.loads(x) for x in client.post("/api/v1/validate", content=body, headers=NDJSON).text.splitlines()]
    each = [len(r["violations"]) for r in whole]
    assert all(n >= 1 for n in each)
    most = each[0] + 1  # the second report reaches the bound
    with make_client(db, public_validate=True, validate_max_violations=most) as client:
        reports = [
            json.loads(x) for x in client.post("/api/v1/validate", content=body, headers=NDJSON).text.splitlines()
        ]
    assert reports[0] == whole[0]
    second = reports[1]["violations"]
    assert second[:-1] == whole[1]["violations"][:1] and second[-1]["code"] == "TOO_MANY"
    assert second[-1]["message"].startswith(f"{each[1] - 1:,} more violations left out")
    for r, w in zip(reports[2:], whole[2:], strict=True):
        assert [v["code"] for v in r["violations"]] == ["TOO_MANY"] and r["valid"] == w["valid"] is False
    with make_client(db, public_validate=True, validate_max_answer=1_000) as client:
        answer = client.post("/api/v1/validate", content=body, headers=NDJSON)
        assert "1,000-byte limit of an answer" in assert_problem(answer, 413)["detail"]


def test_finished_jobs_are_bounded_and_large_results_kept_on_disk(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """200 finished jobs kept their full results in memory: 0.5 MB uploaded left the service 520 MB larger."""
    from backalley.service import state

    monkeypatch.setattr(state, "JOB_MEMORY", 100)  # every result here is larger: on disk
    monkeypatch.setattr(state, "KEEP_JOBS", 2)
    with make_client(db, job_threshold=1) as client:
        svc = client.app.state.service  # type: ignore[attr-defined]
        hrefs = []
        for n in range(3):
            r = upload(client, ndjson(record(f"a{n}", seed=n), record(f"b{n}", seed=n + 9)))
            assert r.status_code == 202
            hrefs.append(r.headers["location"])
            deadline = time.monotonic() + 60
            while (job := client.get(hrefs[-1], headers=AUTH).json())["status"] in ("queued", "running"):
                assert time.monotonic() < deadline, job
                time.sleep(0.05)
            assert job["result"]["fates"]["stored"] == 2
        folder = svc._job_folder
        assert len(list(folder.iterdir())) == 2 and all(j._result is None for j in svc.jobs.values())
        assert_problem(client.get(hrefs[0], headers=AUTH), 404)  # the oldest finished job is forgotten
        assert client.get(hrefs[2], headers=AUTH).json()["result"]["records"] == 2
        monkeypatch.setattr(state, "JOB_BYTES", 1)  # the bytes bound: only the newest job is kept
        with svc._jobs_lock:
            svc._forget_jobs()
        assert len(svc.jobs) == 1 and len(list(folder.iterdir())) == 1
    assert not folder.exists()  # removed at stop


@pytest.mark.parametrize("how", ["deleted", "replaced"])
def test_database_deleted_or_replaced_while_serving_refuses_uploads(
    db: Path, how: str, caplog: pytest.LogCaptureFixture
) -> None:
    with make_client(db) as client:
        assert upload(client, ndjson(record("g1"))).json()["fates"]["stored"] == 1
        db.unlink()
        if how == "replaced":
            db.write_bytes(b"another file")
        with caplog.at_level("ERROR", logger="backalley.service"):
            for _ in range(2):
                gone = assert_problem(upload(client, ndjson(record("g2", seed=2))), 503)
                assert "deleted or replaced" in gone["detail"] and "nothing was stored" in gone["detail"]
        assert [r.getMessage() for r in caplog.records].count(
            f"{db} was deleted or replaced while the service runs: uploads are refused; restart the service"
        ) == 1  # one line, not one per upload
        page = client.post("/upload", files={"file": ("g.jsonl", ndjson(record("g3")))}, data={"token": TOKEN})
        assert page.status_code == 503


def test_host_header_is_not_trusted(db: Path) -> None:
    with make_client(db, allowed_hosts=("127.0.0.1", "localhost")) as client:
        for host in ("evil.example", "evil.example:8000", "127.0.0.1.evil.example"):
            refused = client.get("/players/", headers={"host": host}, follow_redirects=False)
            assert refused.status_code == 400 and "evil.example" not in refused.headers.get("location", "")
            assert refused.headers["x-content-type-options"] == "nosniff"
            assert_problem(client.get("/api/v1/openapi.json", headers={"host": host}), 400)
        for host in ("127.0.0.1:8000", "localhost", "LOCALHOST:1"):
            assert client.get("/api/v1/openapi.json", headers={"host": host}).status_code == 200
    with make_client(db, allowed_hosts=("*",)) as client:
        assert client.get("/api/v1/openapi.json", headers={"host": "any.example"}).status_code == 200


def test_security_headers_on_every_answer(db: Path) -> None:
    with make_client(db, max_body=1_000) as client:
        answers = {
            "page": client.get("/"),
            "api": client.get("/api/v1/openapi.json"),
            "404 page": client.get("/games/nope"),
            "404 api": client.get("/api/v1/games/nope"),
            "413 page": client.post("/upload", content=b"x" * 2_000),
            "413 api": upload(client, b"x" * 2_000),
            "job": client.get("/api/v1/jobs/nope", headers=AUTH),
        }
        for what, r in answers.items():
            assert r.headers["x-content-type-options"] == "nosniff", what
            assert "default-src 'none'" in r.headers["content-security-policy"], what
        assert answers["413 page"].status_code == 413 and answers["413 api"].status_code == 413
        for private in ("413 api", "job"):
            assert answers[private].headers["cache-control"] == "no-store"
        assert "no-store" not in answers["page"].headers.get("cache-control", "")
    with make_client(db, private=True) as client:
        assert client.get("/api/v1/games/nope", headers=AUTH).headers["cache-control"] == "no-store"


def test_deal_numbers_are_digits_only(client: TestClient) -> None:
    upload(client, ndjson(record("g1", deals=3)))
    assert client.get("/api/v1/games/g1/deals/1").status_code == 200
    for n in ("1_0", "+1", "%201", "01", "1.0", "0x1"):
        assert_problem(client.get(f"/api/v1/games/g1/deals/{n}"), 404)
        assert client.get(f"/games/g1/deals/{n}").status_code == 404


def test_compressed_bodies_are_refused_415(client: TestClient) -> None:
    import gzip

    packed = gzip.compress(ndjson(record("g1")))
    for headers in ({"content-encoding": "gzip"}, {}):  # said so, or not
        gz = assert_problem(upload(client, packed, headers), 415)
        assert "gzip" in gz["detail"] and "uncompressed" in gz["detail"]
    brotli = assert_problem(upload(client, ndjson(record("g1")), {"content-encoding": "br"}), 415)
    assert "'br' is not accepted" in brotli["detail"]
    form = client.post("/upload", files={"file": ("g.jsonl.gz", packed)}, data={"token": TOKEN})
    assert form.status_code == 415 and "gzip" in form.text
    assert counts(client) == (0, 0)


def test_clients_never_see_server_paths(db: Path) -> None:
    from backalley.records.sources import Item
    from backalley.store.database import Store
    from backalley.store.ingest import ingest_items

    secret = "/srv/club-secret/archive/games.jsonl"
    with Store.open(db) as store:
        ingest_items(store, [Item(secret, 3, ndjson(record("g1")).strip())], [secret])
    with make_client(db) as client:
        assert client.get("/api/v1/games/g1").json()["source"] == "games.jsonl"
        assert "club-secret" not in client.get("/games/g1").text
        changed = record("g1")
        changed["event"] = "another"
        (result,) = upload(client, ndjson(changed)).json()["results"]
        assert result["fate"] == "conflict" and "club-secret" not in result["message"]
        assert "already stored from games.jsonl:3 with different content" in result["message"]
        assert "--replace" not in result["message"]


def test_a_full_disk_is_said_as_it_is(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from backalley.service.writer import Writer
    from backalley.store.database import StoreError

    def full(*_: Any, **__: Any) -> None:
        raise StoreError(f"{db}: the database failed during the ingest: IO Error: No space left on device")

    with make_client(db) as client:
        monkeypatch.setattr(Writer, "write", full)
        answer = assert_problem(upload(client, ndjson(record("g1"))), 507)
        assert "disk is full: this upload was not stored" in answer["detail"] and str(db) not in answer["detail"]
        page = client.post("/upload", files={"file": ("g.jsonl", ndjson(record("g1")))}, data={"token": TOKEN})
        assert page.status_code == 507 and "disk is full" in page.text
        monkeypatch.setattr(Writer, "write", lambda *_, **__: (_ for _ in ()).throw(StoreError("locked")))
        assert "the database failed" in assert_problem(upload(client, ndjson(record("g1"))), 503)["detail"]


def test_wrong_content_type(client: TestClient) -> None:
    for kind in ("text/plain", "application/xml", ""):
        assert_problem(upload(client, b"{}", {"content-type": kind}), 415)
        assert_problem(client.post("/api/v1/validate", content=b"{}", headers={"content-type": kind, **AUTH}), 415)


def test_malformed_multipart(client: TestClient) -> None:
    broken = {"content-type": "multipart/form-data; boundary=xyz"}
    assert_problem(upload(client, b"--xyz\r\nContent-Disposition: form-data; name=\r\n\r\nnope", broken), 400)
    assert_problem(
        client.post("/api/v1/games", data={"note": "no file"}, files={"other": ("a", b"b")}, headers=AUTH), 400
    )
    no_boundary = {"content-type": "multipart/form-data"}
    assert_problem(upload(client, b"garbage", no_boundary), 400)
    assert counts(client) == (0, 0)


# --- pages -----------------------------------------------------------------------------------------


def test_upload_form_and_report(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200 and 'name="token"' in page.text and 'type="file"' in page.text
    body = ndjson(record("g1"), faulty(record("g2", seed=2)))
    r = client.post("/upload", data={"token": TOKEN}, files={"file": ("games.jsonl", body, "application/x-ndjson")})
    assert r.status_code == 200
    assert r.text.count('class="box record"') == 2
    assert 'data-status="incomplete"' in r.text and 'data-status="invalid"' in r.text
    assert 'href="/games/g2/deals/1#trick-1"' in r.text
    refused = client.post("/upload", data={"token": "nope"}, files={"file": ("g.jsonl", ndjson(record("g3")), "x")})
    assert refused.status_code == 401 and "nothing was stored" in refused.text
    assert counts(client) == (2, 0)


def test_deal_viewer_marks_the_faulty_play(client: TestClient) -> None:
    upload(client, ndjson(faulty(record("g2", seed=2))))
    page = client.get("/games/g2/deals/1")
    assert page.status_code == 200
    assert 'class="c red fault"' in page.text or 'class="c black fault"' in page.text or "joker fault" in page.text
    assert "NOT_IN_HAND" in page.text and 'rel="next"' in page.text and 'rel="prev"' not in page.text
    assert 'rel="prev"' in client.get("/games/g2/deals/2").text
    game = client.get("/games/g2")
    assert game.status_code == 200 and "/games/g2/deals/1#trick-1" in game.text


def test_web_errors_are_plain_pages(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    for path in ("/games/nope", "/games/nope/deals/1", "/players/nobody", "/no/such/page"):
        r = client.get(path)
        assert r.status_code == 404 and r.headers["content-type"].startswith("text/html"), path
    assert client.post("/upload", content=b"x", headers={"content-type": "text/plain"}).status_code == 415
    from backalley.service import data

    def boom(*_: Any) -> None:
        raise RuntimeError("secret internals")

    monkeypatch.setattr(data, "game", boom)
    for path in ("/games/g1", "/api/v1/games/g1"):
        r = client.get(path)
        assert r.status_code == 500 and "secret internals" not in r.text and "Traceback" not in r.text


def test_hostile_text_is_escaped_everywhere(client: TestClient) -> None:
    rec = hostile(faulty(record("g9", seed=4)))
    r = client.post("/upload", data={"token": TOKEN}, files={"file": ("<b>x</b>.jsonl", ndjson(rec), "x")})
    pages = {"upload": r.text}
    for path in ("/games/g9", "/games/g9/deals/1", "/players"):
        pages[path] = client.get(path).text
    for name in HOSTILE_PLAYERS.values():
        res = player_page(client, name)
        assert res.status_code == 200, name
        pages[name] = res.text
    for where, text in pages.items():
        assert XSS not in text and "<img src=x" not in text and "<b>x</b>" not in text, where
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in pages["/games/g9"]
    assert "{{7*7}}" in pages["/games/g9"] and "[/]" in pages["/games/g9"]
    assert "&lt;img src=x onerror=alert(1)&gt;" in pages["/games/g9"]


def test_player_pages_show_the_report_figures(db: Path, tmp_path: Path) -> None:
    with make_client(db) as client:
        upload(client, ndjson(record("g1"), record("g2", seed=2), hostile(record("g3", seed=3))))
    out = tmp_path / "reports"
    write_reports(db, out)
    with make_client(db) as client:
        with client.app.state.service.reader() as cur:  # type: ignore[attr-defined]
            names = [r[0] for r in cur.execute("SELECT DISTINCT player FROM player_games").fetchall()]
        assert XSS in names
        for name in names:
            served = client.get(f"/players/{name}").text
            assert 'id="games"' in served
            assert report_part(served) == (out / player_file(name)).read_text(encoding="utf-8"), name
        assert report_part(client.get("/players").text) == (out / "index.html").read_text(encoding="utf-8")
        # The report's own links work in the service: players/<slug>.html and ../index.html.
        slug = player_file(names[0]).removeprefix("players/")
        expected = (out / player_file(names[0])).read_text(encoding="utf-8")
        assert report_part(client.get(f"/players/{slug}").text) == expected
        assert client.get("/index.html", follow_redirects=False).headers["location"] == "/players"


def report_part(page: str) -> str:
    """A served report page without what the service adds to it: the site's menu, a player's games."""
    page = re.sub(r'<nav class="site"[^>]*>.*?</nav>', "", page, count=1, flags=re.S)
    return re.sub(r'<h2 id="games">.*?(?=<footer>)', "", page, count=1, flags=re.S)


def test_only_writer_of_the_database(client: TestClient, db: Path) -> None:
    """While the service runs, nothing else can write the file (DuckDB's lock; one writer)."""
    upload(client, ndjson(record("g1")))
    with pytest.raises(duckdb.Error):
        duckdb.connect(str(db)).execute("SELECT 1")


def test_worker_processes_give_the_same_answers(tmp_path: Path) -> None:
    """Replays in worker processes (``serve --workers``) answer exactly as in the service's own process."""
    body = ndjson(record("g1"), faulty(record("g2", seed=2)), hostile(record("g3", seed=3))) + b"[1, 2]\n{oops\n"
    answers = []
    for workers in (1, 2):
        with make_client(tmp_path / f"w{workers}.duckdb", workers=workers) as client:
            answers.append(
                (
                    upload(client, body).json(),
                    client.post("/api/v1/validate", content=body, headers={**NDJSON, **AUTH}).text,
                    client.get("/api/v1/games/g2/deals/1").json(),
                )
            )
    assert answers[0] == answers[1]
    assert answers[0][0]["fates"] == {"stored": 3, "duplicate": 0, "conflict": 0, "rejected": 2}


def test_concurrent_uploads_are_stored_as_if_one_after_the_other(client: TestClient) -> None:
    """Uploads waiting for the writer are stored together: a game sent by two of them is stored once."""
    import threading

    svc = client.app.state.service  # type: ignore[attr-defined]
    from backalley.records.sources import Item

    same = line(record("shared")).encode()
    answers: list[dict[str, Any]] = []
    uploads = [
        [Item("upload", 1, same), Item("upload", 2, line(record(f"own{k}", seed=k + 5)).encode())] for k in range(6)
    ]
    threads = [threading.Thread(target=lambda items=items: answers.append(svc.upload(items))) for items in uploads]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    shared = sorted(a["results"][0]["fate"] for a in answers)
    assert shared == ["duplicate"] * 5 + ["stored"]
    assert all(a["results"][1]["fate"] == "stored" for a in answers)
    assert counts(client) == (7, 0)


def test_player_figures_follow_the_uploads(db: Path) -> None:
    """After a write the figures are recomputed in the background; the page shows the last ones meanwhile."""
    with make_client(db, metrics_max_age=0) as client:
        upload(client, ndjson(record("g1")))
        assert "Newcomer" not in client.get("/players").text
        rec = record("g2", seed=2)
        rec["players"]["N"] = "Newcomer"
        upload(client, ndjson(rec))
        deadline = time.monotonic() + 60
        while "Newcomer" not in client.get("/players").text:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert client.get("/players/Newcomer").status_code == 200


def test_pages_read_their_templates_once(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    """The templates are the package's files: a page does not look at their times again (Jinja's
    ``auto_reload`` did, a ``stat`` per template per page)."""
    import os.path

    assert client.get("/").status_code == 200

    def no_stat(path: Any) -> float:
        raise AssertionError(f"looked at {path}")

    monkeypatch.setattr(os.path, "getmtime", no_stat)
    assert client.get("/").status_code == 200


def player_page(client: TestClient, name: str, timeout: float = 60.0) -> Any:
    """``/players/{name}`` once the players' figures hold the games stored so far: they are recomputed in
    the background, a page asking for a new player at most :data:`~backalley.service.state.METRICS_SHARE`
    of the time."""
    deadline = time.monotonic() + timeout
    while (res := client.get(f"/players/{name}")).status_code == 404 and time.monotonic() < deadline:
        time.sleep(0.1)
    return res


def test_the_service_starts_computing_the_players_figures_when_it_starts(db: Path) -> None:
    """The players' figures are computed in the background from start-up: the first ``/players`` does not
    compute them itself (on a large store they take seconds)."""
    with make_client(db) as client:
        svc = client.app.state.service  # type: ignore[attr-defined]
        assert svc._refresher is not None
        svc._refresher.join(60)
        warm = svc._metrics
        assert warm is not None
        assert client.get("/players").status_code == 200
        assert svc._metrics is warm  # served from the start-up's figures


def test_a_new_players_page_is_there_once_the_figures_are_recomputed(db: Path) -> None:
    """A player whose first games were stored after the figures were computed: a 404 that says as of when
    the figures are, while they may not be recomputed yet; the page once they are."""
    with make_client(db, metrics_max_age=3600) as client:
        svc = client.app.state.service  # type: ignore[attr-defined]
        svc.metrics()
        rec = record("np-1", seed=8)
        assert upload(client, ndjson(rec)).status_code == 200
        name = rec["players"]["N"]
        assert svc._metrics is not None
        svc._metrics = replace(svc._metrics, seconds=3600.0)  # computing them took long: they rest
        missing = client.get(f"/players/{name}")
        assert missing.status_code == 404 and "as of" in missing.text and "recomputed in the background" in missing.text
        svc._metrics = replace(svc._metrics, seconds=0.0)
        assert client.get(f"/players/{name}").status_code == 200
        assert client.get("/players/nobody-at-all").status_code == 404

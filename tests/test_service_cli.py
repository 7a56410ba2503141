"""``backalley show``, ``backalley token create`` and ``backalley serve``'s option errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from backalley.cli.app import app
from backalley.service.settings import ServiceError, read_tokens_file
from tests.service_games import HOSTILE_PLAYERS, faulty, hostile, ndjson, record

runner = CliRunner()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    src = tmp_path / "games.jsonl"
    src.write_bytes(ndjson(hostile(faulty(record("g1")))))
    path = tmp_path / "s.duckdb"
    result = runner.invoke(app, ["ingest", str(src), "--db", str(path), "--workers", "1"])
    assert result.exit_code == 1, result.output  # the game is invalid: stored, exit 1
    return path


def test_show_deal_prints_the_deal_and_its_faults(db: Path) -> None:
    result = runner.invoke(app, ["show", "g1", "--deal", "1", "--db", str(db)])
    assert result.exit_code == 0, result.output
    text = result.stdout
    for name in HOSTILE_PLAYERS.values():  # data printed as text, never read as markup
        assert name in text
    assert "NOT_IN_HAND" in text and "Hands as dealt" in text and "Tricks" in text and "Score after" in text


def test_show_game_and_errors(db: Path, tmp_path: Path) -> None:
    result = runner.invoke(app, ["show", "g1", "--db", str(db)])
    assert result.exit_code == 0 and "Deals" in result.stdout and "[/]" in result.stdout
    for args, message in (
        (["show", "nope", "--db", str(db)], "no game 'nope'"),
        (["show", "g1", "--deal", "9", "--db", str(db)], "has no deal 9"),
        (["show", "g1", "--db", str(tmp_path / "none.duckdb")], "no such database"),
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 2 and message in result.output, result.output
        assert "Traceback" not in result.output


def test_token_create(db: Path) -> None:
    result = runner.invoke(app, ["token", "create", "club", "--db", str(db)])
    assert result.exit_code == 0
    token = result.stdout.strip()
    assert token.startswith("ba_") and len(token) > 30
    again = runner.invoke(app, ["token", "create", "club", "--db", str(db)])
    assert again.exit_code == 2 and "exists already" in again.output


def test_tokens_file(tmp_path: Path) -> None:
    f = tmp_path / "tokens"
    f.write_text("# the club's game server\nfirst-token-0123456789\n\n  second-token-0123456789  \n")
    assert read_tokens_file(f) == {"first-token-0123456789", "second-token-0123456789"}
    f.write_text("short\n")
    with pytest.raises(ServiceError, match=r"tokens:1: a token must be at least 16"):
        read_tokens_file(f)
    result = runner.invoke(app, ["serve", "--tokens", str(tmp_path / "missing"), "--db", str(tmp_path / "x.duckdb")])
    assert result.exit_code == 2 and "cannot read the tokens file" in result.output


def test_serve_freezes_what_start_up_made_and_collects_rarely(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gc

    import uvicorn

    from backalley.service import serve
    from backalley.service.settings import Settings
    from backalley.validate import GC_THRESHOLD

    seen: dict[str, object] = {}

    def run(app: object, **kwargs: object) -> None:  # what the service runs with, instead of running it
        seen.update(app=app, threshold=gc.get_threshold(), frozen=gc.get_freeze_count(), **kwargs)

    monkeypatch.setattr(uvicorn, "run", run)
    threshold = gc.get_threshold()
    try:
        serve(Settings(db=tmp_path / "gc.duckdb"), port=8123)
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)
    assert seen["threshold"] == (GC_THRESHOLD, 50, 100) and seen["port"] == 8123
    from backalley.service.server import BoundedH11
    from backalley.service.settings import KEEP_ALIVE_TIMEOUT, MAX_CONNECTIONS, MAX_HEADER_BYTES

    assert seen["limit_concurrency"] == MAX_CONNECTIONS and seen["timeout_keep_alive"] == KEEP_ALIVE_TIMEOUT
    assert seen["h11_max_incomplete_event_size"] == MAX_HEADER_BYTES and seen["http"] is BoundedH11
    assert isinstance(seen["frozen"], int) and seen["frozen"] > 10_000  # the modules, the app, the templates
    seen["app"].state.service.close()  # type: ignore[attr-defined]


def test_serve_workers_capped_at_the_cpu_count(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import backalley.service
    from backalley.validate import default_workers

    seen: list[object] = []
    monkeypatch.setattr(backalley.service, "serve", lambda settings, host, port: seen.append(settings))
    result = runner.invoke(app, ["serve", "--db", str(tmp_path / "w.duckdb"), "--workers", "64", "--public-validate"])
    assert result.exit_code == 0, result.output
    (settings,) = seen
    assert settings.workers == default_workers() and settings.public_validate  # type: ignore[attr-defined]


def test_token_list_and_revoke(db: Path) -> None:
    from backalley.service.app import create_app
    from backalley.service.settings import Settings

    first = runner.invoke(app, ["token", "create", "club", "--db", str(db)]).stdout.strip()
    runner.invoke(app, ["token", "create", "bot", "--db", str(db)])
    listed = runner.invoke(app, ["token", "list", "--db", str(db)])
    assert listed.exit_code == 0 and [x.split("\t")[0] for x in listed.stdout.splitlines()] == ["club", "bot"]
    assert first not in listed.stdout
    revoked = runner.invoke(app, ["token", "revoke", "club", "--db", str(db)])
    assert revoked.exit_code == 0 and "revoked the token 'club'" in revoked.output
    assert [x.split("\t")[0] for x in runner.invoke(app, ["token", "list", "--db", str(db)]).stdout.splitlines()] == [
        "bot"
    ]
    again = runner.invoke(app, ["token", "revoke", "club", "--db", str(db)])
    assert again.exit_code == 2 and "no token named 'club'" in again.output
    from fastapi.testclient import TestClient

    with TestClient(create_app(Settings(db=db, allowed_hosts=("testserver",)))) as client:
        refused = client.post(
            "/api/v1/games",
            content=b"{}",
            headers={"Authorization": f"Bearer {first}", "content-type": "application/json"},
        )
        assert refused.status_code == 401

"""``backalley record bab-online`` live, against python-socketio's server replaying a fixture game
(tests/fake_bab_online.py), and offline (``--replay``)."""

from __future__ import annotations

import gzip
import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from backalley.recorder.command import Request, record_bab_online
from backalley.recorder.live import Backoff, Options, Recorder, RecorderError
from backalley.recorder.sink import Sink, Upload
from backalley.records.observed import transcribe
from backalley.validate import check
from tests.fake_bab_online import PASSWORD, Game, server, serving

FIXTURE = Path(__file__).parent / "fixtures" / "bab-online" / "game-03.jsonl.gz"
EVENTS = [json.loads(line) for line in gzip.decompress(FIXTURE.read_bytes()).decode().splitlines()]
FULL = transcribe(json.dumps(e) for e in EVENTS)[0].record
assert FULL is not None


def where(event: str, k: int) -> int:
    """The index of the ``k``-th ``event`` of the fixture, once the fake server has dropped its spectatorJoined."""
    evs = [e for e in EVENTS if e["event"] != "spectatorJoined"]
    return [i for i, e in enumerate(evs) if e["event"] == event][k]


def run_cli(tmp_path: Path, url: str, *extra: str, timeout: float = 90) -> tuple[int, str, list[dict[str, Any]]]:
    pw = tmp_path / "password"
    pw.write_text(PASSWORD + "\n")
    out = tmp_path / "games.jsonl"
    cmd = [sys.executable, "-m", "backalley", "record", "bab-online", "--server", url, "--user", "watcher",
           "--password-file", str(pw), "--out", str(out), *extra]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    records = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stderr, records


def without_time(rec: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in rec.items() if k != "played_at"}


def test_a_whole_game_is_written_kept_as_a_transcript_and_replayed_offline_the_same(tmp_path: Path) -> None:
    game = Game(EVENTS)
    transcripts = tmp_path / "transcripts"
    with serving(server(game)) as url:
        status, said, records = run_cli(tmp_path, url, "--game", game.game_id, "--save-transcript", str(transcripts))
    assert status == 0, said
    assert [without_time(r) for r in records] == [FULL], said
    assert records[0]["played_at"].endswith("Z")
    assert f"signed in to {url} as watcher" in said and f"watching game {game.game_id}" in said
    assert "13 of 13 deals" in said and "complete, valid" in said
    saved = transcripts / f"bab-online-{game.game_id}.jsonl"
    lines = saved.read_text().splitlines()
    assert json.loads(lines[-1])["event"] == "gameEnd" and all("at" in json.loads(line) for line in lines)
    again = tmp_path / "again.jsonl"
    assert record_bab_online(Request(out=again, replay=[saved]), lambda line: None) == 0
    assert [json.loads(line) for line in again.read_text().splitlines()] == records


def test_a_disconnect_in_the_middle_of_a_dealing_ends_the_record_at_the_dealing_before(tmp_path: Path) -> None:
    drop = where("cardPlayed", 100)  # in the third or fourth dealing
    game = Game(EVENTS, drop_at=drop, resume_at=drop + 6)
    with serving(server(game)) as url:
        status, said, records = run_cli(tmp_path, url, "--game", game.game_id)
    assert status == 0 and game.joins == 2, said
    (rec,) = records
    assert 0 < len(rec["deals"]) < len(FULL["deals"]) and rec["deals"] == FULL["deals"][: len(rec["deals"])]
    assert "final_score" not in rec and "not seen whole: the connection was lost" in said
    assert "joining again in" in said and "incomplete, valid" in said


def test_a_disconnect_between_dealings_loses_nothing(tmp_path: Path) -> None:
    game = Game(EVENTS, drop_at=where("handComplete", 5) + 1)
    with serving(server(game)) as url:
        status, said, records = run_cli(tmp_path, url, "--game", game.game_id)
    assert status == 0 and game.joins == 2 and [without_time(r) for r in records] == [FULL], said


def test_a_game_joined_after_it_began_is_written_from_the_next_dealing_with_all(tmp_path: Path) -> None:
    start = where("cardPlayed", 70)
    game = Game(EVENTS, start_at=start)
    with serving(server(game)) as url:
        pw = tmp_path / "password"
        pw.write_text(PASSWORD + "\n")
        out = tmp_path / "all.jsonl"
        cmd = [sys.executable, "-m", "backalley", "record", "bab-online", "--server", url, "--user", "watcher",
               "--password-file", str(pw), "--out", str(out), "--all"]  # fmt: skip
        proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while (not out.exists() or not out.read_text()) and time.monotonic() < deadline:
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        said = proc.communicate(timeout=30)[1]
    assert proc.returncode == 0 and "Traceback" not in said, said
    (rec,) = [json.loads(line) for line in out.read_text().splitlines()]
    n = len(rec["deals"])
    assert rec["deals"] == FULL["deals"][-n:] and rec["deals"][0]["number"] > 1 and "final_score" not in rec
    assert "joined at deal" in said and "watching every game in progress" in said
    assert {v.code for v in check(json.dumps(rec).encode()).violations} == {"INCOMPLETE", "DEAL_NUMBER"}


def test_ctrl_c_writes_what_was_seen_whole_of_a_game_in_progress(tmp_path: Path) -> None:
    hold = where("cardPlayed", 130)
    game = Game(EVENTS, hold_at=hold)
    pw = tmp_path / "password"
    pw.write_text(PASSWORD + "\n")
    out = tmp_path / "games.jsonl"
    with serving(server(game)) as url:
        cmd = [sys.executable, "-m", "backalley", "record", "bab-online", "--server", url, "--user", "watcher",
               "--password-file", str(pw), "--out", str(out), "--game", game.game_id]  # fmt: skip
        proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while game.cursor < hold and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        said = proc.communicate(timeout=30)[1]
    assert proc.returncode == 0 and "Traceback" not in said and "stopping (Ctrl-C)" in said, said
    (rec,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert 0 < len(rec["deals"]) < len(FULL["deals"]) and rec["deals"] == FULL["deals"][: len(rec["deals"])]
    assert "1 game written" in said


def test_a_refused_sign_in_and_a_server_that_answers_nothing_are_one_line_each(tmp_path: Path) -> None:
    lines: list[str] = []
    sink = Sink(tmp_path / "o.jsonl", None, lines.append)
    with serving(server(Game(EVENTS))) as url:
        recorder = Recorder(Options(url, "watcher", "wrong", ["x"], timeout=5), sink, lines.append)
        with pytest.raises(RecorderError, match="refused the sign-in of 'watcher': Invalid username or password"):
            recorder.run()
    import socket

    with socket.socket() as mute:  # accepts connections, answers nothing
        mute.bind(("127.0.0.1", 0))
        mute.listen()
        url = f"http://127.0.0.1:{mute.getsockname()[1]}"
        opts = Options(url, "watcher", PASSWORD, ["x"], timeout=0.5, first_tries=2, backoff=Backoff(0.01, 0.02))
        with pytest.raises(RecorderError, match=f"cannot connect to {url}"):
            Recorder(opts, sink, lines.append).run()
    status = record_bab_online(Request(url="http://127.0.0.1:9", user="u", password_file=tmp_path / "none",
                                       games=["g"], out=tmp_path / "o.jsonl"), lines.append)  # fmt: skip
    assert status == 2 and "cannot read the password file" in lines[-1]


def test_a_game_the_server_does_not_have_is_one_line(tmp_path: Path) -> None:
    lines: list[str] = []
    with serving(server(Game(EVENTS))) as url:
        opts = Options(url, "watcher", PASSWORD, ["no-such-game"], timeout=5, backoff=Backoff(0.01, 0.02))
        Recorder(opts, Sink(tmp_path / "o.jsonl", None, lines.append), lines.append).run()
    assert any("the server says 'Game not found'; not watching it" in line for line in lines), lines
    assert lines[-1] == "0 games written"


def test_upload_to_a_running_service(tmp_path: Path) -> None:
    from backalley.service.app import create_app
    from backalley.service.settings import Settings

    token = "recorder-test-token-0123456789"
    (tmp_path / "token").write_text(token + "\n")
    app = create_app(Settings(db=tmp_path / "s.duckdb", tokens=frozenset({token})))
    lines: list[str] = []
    with serving(app) as service:
        status = record_bab_online(
            Request(upload=service, token_file=tmp_path / "token", replay=[FIXTURE]), lines.append
        )
        wrong = Upload(service, "not-the-token-000000000", pause=0.01).send(json.dumps(FULL).encode())
    assert status == 0 and "stored" in lines[0] and lines[-1] == "1 game written", lines
    assert wrong.startswith("upload failed (HTTP 401")


def test_options_that_do_not_go_together_are_one_line_and_exit_2(tmp_path: Path) -> None:
    for req in (
        Request(replay=[FIXTURE]),
        Request(replay=[FIXTURE], out=tmp_path / "o", games=["g"]),
        Request(upload="http://x", out=tmp_path / "o", replay=[FIXTURE]),
        Request(url="http://x", user="u", password_file=tmp_path, out=tmp_path / "o"),
    ):
        lines: list[str] = []
        assert record_bab_online(req, lines.append) == 2 and len(lines) == 1, (req, lines)


def test_a_transcript_that_cannot_be_read_whole_is_written_as_far_as_it_was(tmp_path: Path) -> None:
    torn = tmp_path / "torn.jsonl.gz"
    torn.write_bytes(FIXTURE.read_bytes()[: FIXTURE.stat().st_size // 2])
    lines: list[str] = []
    assert record_bab_online(Request(out=tmp_path / "o.jsonl", replay=[torn, tmp_path / "nothing"]), lines.append) == 0
    assert any("cannot read it to the end" in line for line in lines), lines
    recs = [json.loads(line) for line in (tmp_path / "o.jsonl").read_text().splitlines()]
    assert len(recs) == 1 and recs[0]["deals"] == FULL["deals"][: len(recs[0]["deals"])]


def test_several_games_may_end_at_once(tmp_path: Path) -> None:
    """The sink is shared by every watched game's thread: lines are never interleaved."""
    from backalley.records.observed import Written

    out = tmp_path / "o.jsonl"
    sink = Sink(out, None, lambda line: None)
    threads = [threading.Thread(target=sink.write, args=(Written(f"g{k}", {**FULL, "game_id": f"g{k}"}),))
               for k in range(8)]  # fmt: skip
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(json.loads(line)["game_id"] for line in out.read_text().splitlines()) == [f"g{k}" for k in range(8)]

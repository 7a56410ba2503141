"""The report's figures, checked against values worked out by hand.

The store is built by ``tests/report_sample.py`` from five hand-made deals
in two valid games (plus an invalid game, an incomplete one and a rejected
line). Per player, bids and tricks won personally (error = tricks − bid):

alice  G1 N: 2→0 (−2), pass→0 (0), board×1 failed (NS −40) | G2 N: 2→0 (−2), 1→3 (+2)
       → 4 bids, 1 exact, MAE 6/4 = 1.50, mean error −2/4 = −0.50;
         team points −15, +5, −40, −20, +21 → −49/5 = −9.80 per deal;
         numeric contracts 3 (set), 1 (exact), 4 (set), 4 (made +1) → made 2/4, exact 1/4, set 2/4, overtricks 0.50;
         opponents' boards 3, broken 1 (EW's double in G1 deal 3).
bob    G1 E: pass→1 (+1), 1→1 (0), double board failed (−80) | G2 W: board made (+50), 1→0 (−1)
       → 3 bids, 1 exact, MAE 2/3, mean 0; points (30+5−80+50−5)/5 = 0; boards ×1 1/1 (+50), ×2 0/1 (−80); won 2/2.
carol  1→0, 1→1, 1→1, 2→0, 3→2 → 5 bids, 2 exact, MAE 0.80, mean −0.80.
XSS    (W in G1) board made (+30), pass→0, 1→1 → 2/2 exact, −45/3 = −15.00 per deal.
DOTS   (E in G2) 1→1, pass→0 → 2/2 exact, 45/2 = 22.50 per deal.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from backalley.cli.app import app
from backalley.reporting import ReportError, compute, write_reports
from backalley.reporting.cells import esc
from backalley.reporting.html import player_file, player_slug
from backalley.reporting.metrics import open_store, wilson
from tests.report_sample import DOTS, XSS, build_hand_made


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("store") / "store.duckdb"
    build_hand_made(path)
    return path


@pytest.fixture(scope="module")
def out(db: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("reports")
    write_reports(db, folder)
    return folder


def row(frame: object, **where: object) -> dict[str, object]:
    import polars as pl

    assert isinstance(frame, pl.DataFrame)
    f = frame
    for k, v in where.items():
        f = f.filter(pl.col(k) == v)
    assert f.height == 1, (where, f)
    return f.row(0, named=True)


def test_wilson() -> None:
    assert wilson(0, 0) is None
    lo, hi = wilson(1, 4)  # type: ignore[misc]
    assert lo == pytest.approx(0.0456, abs=1e-4) and hi == pytest.approx(0.6994, abs=1e-4)
    lo, hi = wilson(1, 1)  # type: ignore[misc]
    assert lo == pytest.approx(0.2065, abs=1e-4) and hi == 1.0


def test_bidding_accuracy(db: Path) -> None:
    con = open_store(db)
    m = compute(con)
    con.close()
    a = row(m.leaderboard, player="alice")
    assert (a["numeric_bids"], a["exact_bids"]) == (4, 1)
    assert a["mean_abs_error"] == pytest.approx(1.5) and a["mean_signed_error"] == pytest.approx(-0.5)
    assert a["points_per_deal"] == pytest.approx(-9.8) and (a["games"], a["games_won"], a["deals"]) == (2, 0, 5)
    b = row(m.leaderboard, player="bob")
    assert (b["numeric_bids"], b["exact_bids"], b["games_won"]) == (3, 1, 2)
    assert b["mean_abs_error"] == pytest.approx(2 / 3) and b["mean_signed_error"] == pytest.approx(0)
    c = row(m.leaderboard, player="carol")
    assert (c["numeric_bids"], c["exact_bids"]) == (5, 2) and c["mean_signed_error"] == pytest.approx(-0.8)
    assert m.leaderboard["player"].to_list() == [DOTS, "bob", "alice", "carol", XSS]

    errors = m.of("bid_errors", "alice")
    assert dict(zip(errors["error"], errors["n"], strict=True)) == {-2: 2, 0: 1, 2: 1}
    t = row(m.of("bids_by_trump", "alice"), trump="trump")
    assert (t["n"], t["exact"]) == (3, 0) and t["mean_signed_error"] == pytest.approx(-2 / 3)
    assert row(m.of("bids_by_trump", "alice"), trump="no trump")["exact"] == 1
    p4 = row(m.of("bids_by_position", "alice"), position=4)
    assert (p4["n"], p4["exact"], p4["mean_abs_error"], p4["mean_signed_error"]) == (2, 0, 2.0, 0.0)
    h5 = row(m.of("bids_by_hand", "alice"), hand_size=5)
    assert (h5["n"], h5["mean_abs_error"]) == (2, 2.0)
    cal = m.of("calibration", "alice")
    assert dict(zip(cal["bid"], cal["mean_tricks"], strict=True)) == {0: 0.0, 1: 3.0, 2: 0.0}


def test_contracts_and_boards(db: Path) -> None:
    con = open_store(db)
    m = compute(con)
    con.close()
    c = row(m.contracts, player="alice")
    assert (c["deals"], c["contracts"], c["made"], c["exact"], c["set"]) == (5, 4, 2, 1, 2)
    assert c["mean_overtricks"] == pytest.approx(0.5) and c["points_per_deal"] == pytest.approx(-9.8)
    pair = row(m.partnerships, player_a="alice", player_b="carol")
    assert (pair["games"], pair["deals"], pair["made"]) == (2, 5, 2)
    pair = row(m.partnerships, player_a=XSS, player_b="bob")
    assert (pair["deals"], pair["contracts"], pair["exact"]) == (3, 1, 1) and pair["points_per_deal"] == -15

    b1 = row(m.boards_by_level, player="bob", level=1)
    b2 = row(m.boards_by_level, player="bob", level=2)
    assert (b1["claimed"], b1["made"], b1["points_won"], b1["points_lost"]) == (1, 1, 50, 0)
    assert (b2["claimed"], b2["made"], b2["points_won"], b2["points_lost"]) == (1, 0, 0, 80)
    assert row(m.boards_by_hand, player="bob", hand_size=4)["made"] == 0
    a = row(m.boards_broken, player="alice")
    assert (a["opp_boards"], a["broken"]) == (3, 1)
    assert (m.population["boards_claimed"], m.population["boards_made"], m.population["deals"]) == (4, 2, 5)


def test_data_quality(db: Path) -> None:
    con = open_store(db)
    m = compute(con)
    con.close()
    assert dict(zip(m.quality_status["status"], m.quality_status["records"], strict=True)) == {
        "valid": 2,
        "incomplete": 1,
        "invalid": 1,
        "rejected": 1,
    }
    # Each violation is charged to its seat (G3: bob and erin revoked, alice led out of turn); G4's
    # INCOMPLETE has no seat: it counts in its game, against no player.
    revoke = row(m.quality_codes, code="REVOKE")
    assert (revoke["violations"], revoke["games"], revoke["players"]) == (2, 1, 2)
    incomplete = row(m.quality_codes, code="INCOMPLETE")
    assert (incomplete["violations"], incomplete["games"], incomplete["players"]) == (1, 1, 0)
    charged = {r["player"]: (r["violations"], r["codes"]) for r in m.quality_players.iter_rows(named=True)}
    assert charged == {"alice": (1, "LEADER"), "bob": (1, "REVOKE"), "erin": (1, "REVOKE")}
    assert sorted(m.players["player"]) == sorted([DOTS, XSS, "alice", "bob", "carol", "dave", "erin"])


def test_event_filter(db: Path) -> None:
    con = open_store(db)
    m = compute(con, event="cup")
    con.close()
    a = row(m.leaderboard, player="alice")
    assert (a["numeric_bids"], a["exact_bids"], a["games"], a["deals"]) == (2, 0, 1, 2)
    assert a["mean_signed_error"] == pytest.approx(0.0)
    assert XSS not in m.leaderboard["player"].to_list()
    assert m.population["valid_games"] == 1


def test_files_show_the_figures(out: Path) -> None:
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert "| alice | 2 | 0% (0/2; 95% CI 0–66%) | −9.80 | — | 25.0% (1/4; 95% CI 5–70%) | 1.50 | −0.50 |" in summary
    assert "| bob | 2 | 100% (2/2; 95% CI 34–100%) | 0.00 |" in summary
    assert "| rejected | 1 |" in summary and "| REVOKE | 2 | 1 | 2 |" in summary
    page = (out / player_file("alice")).read_text(encoding="utf-8")
    text = re.sub(r"<[^>]+>", " ", page.split('<h2 id="bidding-accuracy">Bidding accuracy</h2>')[1])
    assert re.search(r"all\s+4\s+25\.0%\s+1/4\s+5–70%\s+1\.50\s+−0\.50", text), text[:400]
    assert re.search(r"as a team member\s+5\s+−9\.80\s+4\s+50\.0%\s+2/4", text)
    assert "33.3% (1/3; 95% CI 6–79%)" in text  # opponents' boards broken
    bob = re.sub(r"<[^>]+>", " ", (out / player_file("bob")).read_text(encoding="utf-8"))
    assert re.search(r"double \(×2\)\s+1\s+0%\s+0/1\s+0–79%\s+0\s+80\s+−80", bob)
    # Rates with no cases are a dash, never 0% of 0.
    carol = re.sub(r"<[^>]+>", " ", (out / player_file("carol")).read_text(encoding="utf-8"))
    assert re.search(r"BOARDS MADE\s+—\s+0 cases", carol, re.IGNORECASE)
    for f in [out / "index.html", *(out / "players").iterdir()]:
        html = f.read_text(encoding="utf-8")
        assert "&lt;td" not in html and "&lt;span" not in html, f  # no double escaping
        assert "<svg" in html or "no scored deal" in html or f.name == "index.html"


def test_untrusted_ids_are_escaped_and_files_safe(out: Path) -> None:
    names = sorted(p.name for p in (out / "players").iterdir())
    assert all(re.fullmatch(r"[a-z0-9-]+-[0-9a-f]{8}\.html", n) for n in names), names
    assert player_file(DOTS).startswith("players/etc-") and "/" not in player_slug(DOTS)
    assert player_slug("Ünïcødé") != player_slug("Unicode")  # the hash keeps distinct ids apart
    assert player_slug("ß∂ƒ").startswith("player-") or player_slug("ß∂ƒ")[0].isalnum()
    for f in [out / "index.html", *(out / "players").iterdir()]:
        html = f.read_text(encoding="utf-8")
        assert "<script" not in html, f
        assert not re.search(r"""(src|href)=["']?(https?:)?//""", html), f
    xss_page = (out / player_file(XSS)).read_text(encoding="utf-8")
    assert "<title>&lt;script&gt;alert(1)&lt;/script&gt;</title>" in xss_page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in (out / "summary.md").read_text(encoding="utf-8")


def test_output_is_deterministic(db: Path, out: Path, tmp_path: Path) -> None:
    write_reports(db, tmp_path)
    for f in [Path("index.html"), Path("summary.md"), Path(player_file("bob"))]:
        assert (tmp_path / f).read_bytes() == (out / f).read_bytes(), f


def test_one_player_and_unknown_player(db: Path, tmp_path: Path) -> None:
    s = write_reports(db, tmp_path, player="bob")
    assert [p.name for p in s.player_pages] == [Path(player_file("bob")).name]
    assert [p.name for p in (tmp_path / "players").iterdir()] == [Path(player_file("bob")).name]
    index = (tmp_path / "index.html").read_text(encoding="utf-8")
    assert f'href="{player_file("bob")}"' in index and f'href="{player_file("alice")}"' not in index
    with pytest.raises(ReportError, match="no player"):
        write_reports(db, tmp_path, player="nobody")


def test_cli(db: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["report", "--db", str(db), "--out", str(tmp_path / "r"), "--event", "club"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "r" / "index.html").is_file() and (tmp_path / "r" / "summary.md").is_file()
    assert "event club" in (tmp_path / "r" / "summary.md").read_text(encoding="utf-8")
    result = runner.invoke(app, ["report", "--db", str(tmp_path / "missing.duckdb"), "--out", str(tmp_path / "x")])
    assert result.exit_code == 2
    result = runner.invoke(app, ["report", "--db", str(db), "--out", str(tmp_path / "y"), "--player", "nobody"])
    assert result.exit_code == 2


@settings(max_examples=300, deadline=None)
@given(st.text(min_size=1, max_size=64))
def test_any_player_id_gives_a_safe_distinct_file_name(player: str) -> None:
    name = player_file(player)
    assert re.fullmatch(r"players/[a-z0-9-]{1,41}-[0-9a-f]{8}\.html", name), name
    assert player_slug(player) != player_slug(player + "x")
    assert "<" not in esc(player) and '"' not in esc(player)


def test_markers_say_where_an_interval_lies_wholly_above_or_below_the_field() -> None:
    from backalley.reporting.cells import ABOVE, BELOW, rate

    lo, hi = wilson(9, 10)  # about 60–98%
    assert ABOVE in rate(9, 10, field=lo - 0.01) and BELOW not in rate(9, 10, field=lo - 0.01)
    assert BELOW in rate(9, 10, field=hi + 0.01)
    assert ABOVE not in rate(9, 10, field=0.7) and BELOW not in rate(9, 10, field=0.7)  # within the range
    assert ABOVE not in rate(9, 10) and ABOVE not in rate(0, 0, field=0.1)  # no field, no cases: no marker


def test_leaderboard_marks_against_the_pooled_field_and_has_a_legend(out: Path, db: Path) -> None:
    """The field is everyone's rate together: games won, exact bids, boards made over all the leaderboard."""
    con = open_store(db)
    m = compute(con)
    con.close()
    lb = m.leaderboard
    field = int(lb["exact_bids"].sum()) / int(lb["numeric_bids"].sum())
    index = (out / "index.html").read_text(encoding="utf-8")
    board = index.split('id="leaderboard"')[1].split("</table>")[0]
    assert "▲ / ▼: the player&#39;s 95% interval lies wholly above / below the field" in index
    for r in lb.iter_rows(named=True):
        low, high = wilson(r["exact_bids"], r["numeric_bids"]) or (0.0, 1.0)
        row_html = next(t for t in board.split("<tr>") if f">{esc(r['player'])}</a>" in t)
        cell = row_html.split("<td>")[4]  # player, points / deal, won, exact bids
        assert ("▲" in cell) == (low > field) and ("▼" in cell) == (high < field), (r["player"], cell)


@pytest.mark.parametrize(
    ("since", "until", "games"),
    [("2026-01-11", None, ["G2"]), (None, "2026-01-10", ["G1"]), ("2026-01-10", "2026-01-11", ["G1", "G2"])],
)
def test_cli_report_since_until(
    db: Path, tmp_path: Path, since: str | None, until: str | None, games: list[str]
) -> None:
    """Both days are included; the figures count the games played in the period; the pages name it."""
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    dates = dict(con.execute("SELECT game_id, played_at::DATE::VARCHAR FROM games WHERE status = 'valid'").fetchall())
    con.close()
    assert sorted(g for g, d in dates.items() if (since or d) <= d <= (until or d)) == games  # the oracle
    args = [*(["--since", since] if since else []), *(["--until", until] if until else [])]
    result = CliRunner().invoke(app, ["report", "--db", str(db), "--out", str(tmp_path / "r"), *args])
    assert result.exit_code == 0, result.output
    index = (tmp_path / "r" / "index.html").read_text(encoding="utf-8")
    words = {
        (True, True): f"played {since} to {until}",
        (True, False): f"played from {since}",
        (False, True): f"played until {until}",
    }[since is not None, until is not None]
    assert f"all events, {words} · {len(games)} valid games" in index
    assert words in (tmp_path / "r" / "summary.md").read_text(encoding="utf-8")
    page = (tmp_path / "r" / player_file("alice")).read_text(encoding="utf-8")
    assert words in page


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--since", "2026-13-01"], "--since '2026-13-01': not a date; write it as YYYY-MM-DD"),
        (["--until", "last week"], "--until 'last week': not a date"),
        (["--since", "2026-01-12", "--until", "2026-01-11"], "--until 2026-01-11 is before --since 2026-01-12"),
        (["--since", "2027-01-01"], "no games played from 2027-01-01 in "),
        (["--since", "2026-01-10", "--event", "nope"], "no games played from 2026-01-10 of event 'nope'"),
    ],
)
def test_cli_report_bad_period_is_a_clear_error(db: Path, tmp_path: Path, args: list[str], message: str) -> None:
    result = CliRunner().invoke(app, ["report", "--db", str(db), "--out", str(tmp_path / "r"), *args])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert message in " ".join(result.stderr.split()), result.stderr
    assert not (tmp_path / "r" / "index.html").exists()

"""Reports of a store holding several rulesets: each ruleset's figures apart, checked against the records."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from typer.testing import CliRunner

from backalley.cli.app import app
from backalley.replay import replay
from backalley.reporting import ReportError, write_reports
from backalley.reporting.metrics import compute, open_store
from backalley.rules import RULESETS
from backalley.store.ingest import ingest

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "sample"
FILES = [SAMPLES / "valid-games.jsonl", *sorted((SAMPLES / "rulesets").glob("*.jsonl"))]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("rs") / "s.duckdb"
    ingest([str(f) for f in FILES], path, workers=1)
    return path


def valid_records(ruleset: str, options: tuple[str, ...] = ()) -> list[dict[str, object]]:
    out = []
    for f in FILES:
        for line in f.read_text(encoding="utf-8").splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if rec.get("ruleset") != ruleset or tuple(rec.get("options", ())) != options:
                continue
            r = replay(rec)
            if r.valid and any(not d.pass_out for d in r.deals):  # a game in the figures: a scored deal
                out.append(rec)
    return out


def test_each_ruleset_has_its_own_rows(db: Path) -> None:
    con = open_store(db)
    try:
        m = compute(con)
    finally:
        con.close()
    labels = {(r["ruleset"], r["options"]) for r in m.rulesets.iter_rows(named=True)}
    assert labels == {
        ("standard", ""),
        ("standard", "short_deck,no_partnerships"),
        ("pereulok", ""),
        ("pereulok", "no_jokers,spades_trump"),
        ("bab-online", ""),
    }
    # The long-standing figures are plain standard's: their games are the plain standard games.
    assert int(m.leaderboard["games"].sum()) == 4 * len(valid_records("standard"))
    games = m.ruleset_players.group_by("ruleset", "options").agg(pl.col("games").sum().alias("g"))
    for r in games.iter_rows(named=True):
        opts = tuple(r["options"].split(",")) if r["options"] else ()
        assert r["g"] == 4 * len(valid_records(r["ruleset"], opts)), r


def test_pereulok_declarations_and_auctions_match_the_records(db: Path) -> None:
    con = open_store(db)
    try:
        m = compute(con, ruleset="pereulok")
    finally:
        con.close()
    declared: Counter[str] = Counter()
    won: Counter[str] = Counter()
    for rec in valid_records("pereulok"):
        players = rec["players"]
        assert isinstance(players, dict)
        for d in rec["deals"]:  # type: ignore[attr-defined]
            calls = [(b["seat"], b["bid"]) for b in d["bids"] if isinstance(b["bid"], int)]
            for seat, _ in calls:
                declared[players[seat]] += 1
            if calls:
                top = max(v for _, v in calls)
                won[players[next(s for s, v in calls if v == top)]] += 1
    plain = m.ruleset_players.filter(m.ruleset_players["options"] == "")
    assert dict(zip(plain["player"], plain["declarations"], strict=True)) == {p: declared[p] for p in plain["player"]}
    assert dict(zip(plain["player"], plain["auctions_won"], strict=True)) == {p: won[p] for p in plain["player"]}
    assert sum(declared.values()) > 0 and m.leaderboard.height == 0  # no standard figure in a pereulok report
    by_mult = m.declarations.filter((m.declarations["breakdown"] == "multiplier") & (m.declarations["options"] == ""))
    assert int(by_mult["declared"].sum()) == sum(declared.values())


def everything_metrics(db: Path) -> Any:
    con = open_store(db)
    try:
        return compute(con)
    finally:
        con.close()


def test_report_pages_name_every_ruleset_and_restrict_to_one(db: Path, tmp_path: Path) -> None:
    everything = write_reports(db, tmp_path / "all", workers=1)
    text = everything.index.read_text(encoding="utf-8")
    for anchor in ("ruleset-pereulok", "ruleset-bab-online", "ruleset-standard-short-deck-no-partnerships"):
        assert f'id="{anchor}"' in text
    assert "Leaderboard: standard" in text and "Bores by level" in text and "By multiplier" in text
    m = everything_metrics(db)
    plain = m.rulesets.filter((m.rulesets["ruleset"] == "standard") & (m.rulesets["options"] == ""))
    valid = int(m.rulesets["valid_games"].sum())
    assert int(plain["valid_games"][0]) < valid  # the card says which of the valid games the leaderboard counts
    assert f'{valid}</div><div class="sub">{m.population["reported_games"]} plain standard in the leaderboard' in text
    only = write_reports(db, tmp_path / "one", ruleset="bab-online", workers=1)
    text = only.index.read_text(encoding="utf-8")
    assert 'id="ruleset-bab-online"' in text and "ruleset-pereulok" not in text and "Leaderboard" not in text
    with pytest.raises(ReportError, match="unknown ruleset 'chess'"):
        write_reports(db, tmp_path / "x", ruleset="chess")


def test_cli_report_ruleset(db: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    bad = runner.invoke(app, ["report", "--db", str(db), "-o", str(tmp_path / "r"), "--ruleset", "chess"])
    assert bad.exit_code == 2
    assert bad.output.strip().splitlines() == [f"error: unknown ruleset 'chess'; known: {', '.join(RULESETS)}"]
    ok = runner.invoke(app, ["report", "--db", str(db), "-o", str(tmp_path / "r"), "--ruleset", "pereulok", "-w", "1"])
    assert ok.exit_code == 0, ok.output

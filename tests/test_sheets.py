"""Score sheets (docs/sheets.md): sheet records of every ruleset, both decoders, CSV, the store.

The oracle of a sheet is the full game it was written from: a sheet made from a
simulated game (each player's tricks counted from its cards) must validate,
complete, with the game's scores; a fault injected into the game must be reported
by its sheet with the same code at the same deal; and the same sheet as CSV must
give the same report.
"""

from __future__ import annotations

import gzip
import io
import json
import random
import shutil
from pathlib import Path
from typing import Any

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backalley.records.models import fast_decode_any
from backalley.records.sheets import csv_items, sheet_csv, sheet_record, template_csv
from backalley.records.sources import Item, parse
from backalley.replay import Replay, replay, replay_sheet_csv
from backalley.rules import all_rulesets, find_ruleset
from backalley.simulate import SHEET_FAULTS, as_sheet, fault_codes, inject_fault, make_record, player_pool
from backalley.store.database import Store
from backalley.store.ingest import ingest
from backalley.validate import check, check_item
from tests.helpers import json_values, paths_of, set_path

FIXTURES = Path(__file__).parent / "fixtures"
POOL = player_pool(8)
RULESETS = list(all_rulesets())


#: Faults a CSV sheet cannot hold: it has no final score, a seat bids once a dealing (a second row
#: of a seat is a SCHEMA error of the game), and a result's tricks are summed from the players' rows
#: (the injected RESULT_MISMATCH may change only the tricks; the worked example checks the points).
NOT_IN_CSV = {"FINAL_SCORE_MISMATCH", "BID_TWICE", "RESULT_MISMATCH"}


def game(rules_label: str, seed: int) -> dict[str, Any]:
    name, *options = rules_label.split("+")
    return make_record(f"g{seed}", random.Random(seed), POOL, seed, rules=find_ruleset(name, options))


def from_csv(rec: dict[str, Any], source: str = "s.csv") -> list[Replay]:
    text = sheet_csv(rec).encode()
    return [check_item(item) for item in csv_items(source, io.BytesIO(text))]


def plain(r: Replay) -> dict[str, Any]:
    """A report without the CSV lines in its messages (JSON and CSV differ only there)."""
    rep = r.report("s", None)
    for v in rep["violations"]:
        v["message"] = v["message"].split(" (CSV line ")[0]
    return rep


@pytest.mark.parametrize("rules", RULESETS, ids=[r.label() for r in RULESETS])
def test_sheets_of_played_games_validate_complete_with_their_scores(rules: Any) -> None:
    for seed in (1, 2):
        rec = game(rules.label(), seed)
        sheet = as_sheet(rec)
        full, r = replay(rec), replay(sheet)
        assert r.sheet and r.valid and r.complete, [v.message for v in r.violations]
        assert r.final_score == full.final_score
        assert [(d.tricks, d.points) for d in r.deals] == [(d.tricks, d.points) for d in full.deals]
        raw = json.dumps(sheet).encode()
        assert fast_decode_any(raw) is not None  # the fast path takes it
        assert check(raw).report("s", None) == r.report("s", None)
        (via_csv,) = from_csv(sheet)
        assert plain(via_csv) == r.report("s", None)


@pytest.mark.parametrize("rules", RULESETS, ids=[r.label() for r in RULESETS])
def test_single_fault_sheets_report_their_code_at_its_deal(rules: Any) -> None:
    codes = sorted(set(SHEET_FAULTS) & set(fault_codes(rules)))
    assert {"BID_ORDER", "BID_RANGE", "RESULT_MISMATCH"} <= set(codes)
    for k, code in enumerate(codes):
        rec = game(rules.label(), 10 + k)
        faulty = inject_fault(rec, code, random.Random(k), rules)
        if faulty is None:
            continue
        want = {(v.code, v.deal) for v in replay(faulty).violations if v.code == code}
        assert want, code
        as_csv = [] if code in NOT_IN_CSV else from_csv(as_sheet(faulty))
        for r in (replay(as_sheet(faulty)), *as_csv):
            assert want <= {(v.code, v.deal) for v in r.violations}, (code, r.violations)


def test_trick_total_is_reported_at_the_deal_and_it_is_still_scored() -> None:
    sheet = as_sheet(game("standard", 3))
    played = next(i for i, d in enumerate(sheet["deals"]) if "tricks_won" in d)
    sheet["deals"][played]["tricks_won"]["N"] += 1
    r = replay(sheet)
    (v,) = [v for v in r.violations if v.code == "TRICK_TOTAL"]
    assert v.path == f"/deals/{played}/tricks_won" and v.deal == played + 1 and v.seat is None
    assert "RESULT_MISMATCH" in {v.code for v in r.violations if v.deal == played + 1}


def test_pass_out_on_a_sheet_both_ways() -> None:
    sheet = as_sheet(game("standard", 4))
    played = next(i for i, d in enumerate(sheet["deals"]) if "tricks_won" in d)
    del sheet["deals"][played]["tricks_won"]
    r = replay(sheet)
    assert ("PASS_OUT", f"/deals/{played}") in {(v.code, v.path) for v in r.violations}
    passed = {**sheet["deals"][0], "bids": [{**b, "bid": "pass"} for b in sheet["deals"][0]["bids"]]}
    passed["tricks_won"] = {"N": 0, "E": 0, "S": 0, "W": 0}
    r = replay({**sheet, "deals": [passed]})
    assert ("PASS_OUT", "/deals/0/tricks_won") in {(v.code, v.path) for v in r.violations}


SPEC_CSV = b"""game_id,deal,dealer,seat,player,bid,tricks,points
kitchen-2026-11-28,1,N,E,Kavya,pass,,
kitchen-2026-11-28,1,,S,Chiara,pass,,
kitchen-2026-11-28,1,,W,Farida,pass,,
kitchen-2026-11-28,1,,N,Eun-ji,pass,,
kitchen-2026-11-28,1,E,S,Chiara,4,5,21
kitchen-2026-11-28,1,,W,Farida,board,0,130
kitchen-2026-11-28,1,,N,Eun-ji,3,0,21
kitchen-2026-11-28,1,,E,Kavya,0,8,130
"""


def test_the_worked_csv_example() -> None:
    """docs/sheets.md's example: a redeal keeps number 1; EW's board fails (-130), NS are set (-35).

    E's bid of 0 is outside the bid range (a number bid is 1 to n - 1): reported too."""
    (item,) = csv_items("k.csv", io.BytesIO(SPEC_CSV))
    assert item.line == 2 and item.raw == SPEC_CSV
    record, r = replay_sheet_csv(item.raw, item.line or 1)
    assert record["deals"][1]["tricks_won"] == {"S": 5, "W": 0, "N": 0, "E": 8}
    assert [d.points for d in r.deals] == [(0, 0), (-35, -130)]
    found = {v.code: v for v in r.violations}
    assert found["RESULT_MISMATCH"].path == "/deals/1/result"
    assert found["RESULT_MISMATCH"].message.endswith("(CSV line 6)")
    assert found["BID_RANGE"].message.endswith("(CSV line 9)")
    assert "TRICK_TOTAL" not in found and found["INCOMPLETE"].severity == "warning"


def csv_errors(text: bytes) -> list[str]:
    out = []
    for item in csv_items("bad.csv", io.BytesIO(text)):
        r = check_item(item)
        out += [v.message for v in r.violations if v.severity == "error"]
    return out


HEAD = b"game_id,deal,dealer,seat,player,bid,tricks\n"
GOOD = b"g1,1,N,E,b,2,3\ng1,1,,S,c,3,4\ng1,1,,W,d,2,3\ng1,1,,N,a,2,3\n"


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        (b"game_id,deal,dealer,seat,player,tricks\n" + GOOD, "line 1: missing column bid"),
        (HEAD.replace(b"\n", b",colour\n") + GOOD.replace(b"\n", b",red\n"), "unknown column 'colour'"),
        (HEAD + GOOD.replace(b"g1,1,,N,a,2,3\n", b""), "line 2: a dealing of 3 rows, not 4"),
        (HEAD + GOOD.replace(b",N,a,", b",S,a,"), "line 5: seat 'S' is given twice in a dealing (line 3)"),
        (HEAD + GOOD + GOOD.replace(b",1,", b",2,").replace(b",b,", b",x,"), "line 6: 'x' sits at E"),
        (HEAD + GOOD.replace(b"2,3\ng1,1,,S", b"2,three\ng1,1,,S"), "line 2: tricks 'three' is not a whole number"),
        (HEAD + GOOD.replace(b",c,", b",\xff\xfe,"), "line 3 is not UTF-8"),
        (HEAD + GOOD.replace(b"g1,1,,S,c,3,4\n", b"g1,1,,S,c,3,4" + b"x" * (1 << 20) + b"\n"), "more than"),
        (HEAD + b"g1,1,N,E,b,2,3,9\n" + GOOD[15:], "line 2: 8 fields, the header has 7"),
        (HEAD + GOOD.replace(b",1,,S,", b",1,W,S,"), "line 3: dealer 'W', but line 2 has another"),
    ],
    ids=[
        "missing column",
        "extra column",
        "three rows",
        "seat twice",
        "player changes seat",
        "text for a number",
        "not utf-8",
        "line of 1 MB",
        "row of 8 fields",
        "two dealers",
    ],
)
def test_a_broken_csv_game_is_a_located_error(text: bytes, wanted: str) -> None:
    errors = csv_errors(text)
    assert any(wanted in e for e in errors), errors


def test_one_broken_game_does_not_stop_the_others_and_a_bom_and_crlf_are_fine() -> None:
    broken = GOOD.replace(b"g1", b"g2").replace(b",3,4\n", b",x,4\n")
    text = b"\xef\xbb\xbf" + HEAD + GOOD.replace(b"\n", b"\r\n") + broken + GOOD.replace(b"g1", b"g3")
    reports = [check_item(item) for item in csv_items("m.csv", io.BytesIO(text))]
    assert [r.game_id for r in reports] == ["g1", "g2", "g3"]
    assert [r.valid for r in reports] == [True, False, True]
    (v,) = reports[1].violations  # "x" is no bid: the models say so, at the row's line
    assert v.code == "SCHEMA" and v.path == "/deals/0/bids/1/bid" and v.message.endswith("(CSV line 7)")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=600) | st.text(max_size=400).map(lambda t: (HEAD.decode() + t).encode()))
def test_the_csv_reader_never_raises_and_keeps_every_byte(data: bytes) -> None:
    items = list(csv_items("h.csv", io.BytesIO(data)))
    for item in items:
        r = check_item(item)
        assert r.sheet or r.violations[0].code == "JSON"
    if data.startswith(HEAD) and items and all(i.read_error is None for i in items):
        assert all(i.raw.startswith(HEAD) for i in items)
        assert HEAD + b"".join(i.raw[len(HEAD) :] for i in items) == data


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([r.label() for r in RULESETS]), st.integers(0, 10_000))
def test_a_sheet_written_as_csv_reads_back_as_the_same_record(label: str, seed: int) -> None:
    sheet = as_sheet(game(label, seed))
    sheet.pop("final_score")
    (item,) = csv_items("r.csv", io.BytesIO(sheet_csv(sheet).encode()))
    again = sheet_record(item.raw, item.line or 1)
    assert not again.errors
    want = {k: v for k, v in sheet.items() if k != "options"}
    got = {k: v for k, v in again.record.items() if k != "options"}
    assert got == want
    assert again.record.get("options", []) == sheet.get("options", [])


SHEET = as_sheet(game("bab-online", 7))
SMALL_SHEET = {**SHEET, "deals": SHEET["deals"][3:5]}
SMALL_SHEET.pop("final_score")
SHEET_PATHS = paths_of(SMALL_SHEET)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(SHEET_PATHS), json_values())
def test_sheet_fast_and_full_paths_agree_on_random_edits(path: tuple[Any, ...], value: Any) -> None:
    rec = set_path(SMALL_SHEET, path, value)
    raw = json.dumps(rec).encode()
    full = not [v for v in replay(rec).violations if v.code == "SCHEMA"]
    assert (fast_decode_any(raw) is not None) == full
    assert check(raw).report("s", None) == replay(parse(raw)[0]).report("s", None)


@pytest.mark.parametrize(
    ("edit", "path"),
    [
        (lambda r: {**r, "sheet": "yes"}, "/sheet"),
        (lambda r: set_path(r, ("deals", 0, "hands"), {"N": [], "E": [], "S": [], "W": []}), "/deals/0/hands"),
        (lambda r: set_path(r, ("deals", 0, "tricks_won", "N"), 14), "/deals/0/tricks_won/N"),
        (lambda r: set_path(r, ("deals", 0, "tricks_won", "N"), -1), "/deals/0/tricks_won/N"),
        (lambda r: set_path(r, ("deals", 0, "trump"), "X"), "/deals/0/trump"),
        (lambda r: set_path(r, ("deals", 0, "rainbows"), ["N"]), "/deals/0/rainbows"),
        (lambda r: set_path(r, ("deals", 1, "rainbows"), ["N", "N"]), "/deals/1/rainbows"),
        (lambda r: {**r, "format_version": 1}, "/ruleset"),
    ],
    ids=[
        "sheet not boolean",
        "hands",
        "tricks above 13",
        "negative tricks",
        "trump",
        "rainbow off 4",
        "seat twice",
        "version 1",
    ],
)
def test_sheet_schema_rules_and_both_decoders(edit: Any, path: str) -> None:
    rec = edit(SMALL_SHEET)
    paths = [v.path for v in replay(rec).violations if v.code == "SCHEMA"]
    assert path in paths, paths
    assert fast_decode_any(json.dumps(rec).encode()) is None


def test_tricks_won_in_a_record_with_cards_is_a_schema_error() -> None:
    rec = game("pereulok", 2)
    rec["deals"][0]["tricks_won"] = {"N": 1, "E": 1, "S": 1, "W": 1}
    assert "/deals/0/tricks_won" in [v.path for v in replay(rec).violations if v.code == "SCHEMA"]


def test_rainbows_belong_to_bab_online_only() -> None:
    sheet = as_sheet(game("standard", 5))
    sheet["deals"][0]["rainbows"] = ["N"]
    assert "/deals/0/rainbows" in [v.path for v in replay(sheet).violations if v.code == "SCHEMA"]


def test_template_has_four_rows_for_every_deal_of_the_schedule() -> None:
    for rules in RULESETS:
        lines = template_csv(rules, ("a", "b", "c", "d")).splitlines()
        assert len(lines) == 1 + 4 * rules.scored_deals
        assert lines[1].split(",")[:5] == ["", "1", "", "E", "b"]


def unpack(tmp_path: Path) -> Path:
    db = tmp_path / "v7.duckdb"
    with gzip.open(FIXTURES / "store-v7.duckdb.gz", "rb") as src, db.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    return db


def test_a_version_7_store_upgrades_and_then_stores_sheets(tmp_path: Path) -> None:
    db = unpack(tmp_path)
    with duckdb.connect(str(db), read_only=True) as con:
        before = con.execute("SELECT game_id, status, score_ns, score_ew FROM games ORDER BY game_id").fetchall()
        deals = con.execute("SELECT count(*) FROM deals").fetchone()
    with Store.open(db) as s:
        assert s.schema_version() == 9
        assert s.con.execute("SELECT count(*) FROM games WHERE sheet").fetchone() == (0,)
        after = s.con.execute("SELECT game_id, status, score_ns, score_ew FROM games ORDER BY game_id").fetchall()
        assert after == before and s.con.execute("SELECT count(*) FROM deals").fetchone() == deals
    sheet_file = tmp_path / "table.csv"
    sheet_file.write_text(sheet_csv(as_sheet(game("standard", 9))), encoding="utf-8")
    ingest([str(sheet_file)], db, workers=1)
    with duckdb.connect(str(db), read_only=True) as con:
        got = con.execute("SELECT game_id, sheet, status FROM games WHERE sheet").fetchall()
        assert got == [("g9", True, "valid")]
        rows = {
            t: con.execute(f"SELECT count(*) FROM {t} WHERE game_id = 'g9'").fetchone() for t in ("tricks", "plays")
        }
        assert rows == {"tricks": (0,), "plays": (0,)}
        bids = con.execute("SELECT count(*) FROM bids WHERE game_id = 'g9'").fetchone()
        assert bids is not None and bids[0] >= 4 * 25


def test_an_unreadable_csv_game_is_a_reject_and_nothing_else_is_lost(tmp_path: Path) -> None:
    f = tmp_path / "two.csv"
    f.write_bytes(
        HEAD
        + GOOD
        + GOOD.replace(b"g1", b"g2").replace(b"g2,1,,S,c,3,4\n", b"g2,1,,S,c,3,4" + b"y" * (1 << 20) + b"\n")
    )
    db = tmp_path / "s.duckdb"
    ingest([str(f)], db, workers=1)
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT game_id, sheet FROM games").fetchall() == [("g1", True)]
        assert con.execute("SELECT reason FROM rejects").fetchall() == [("json",)]


def test_item_of_a_csv_keeps_its_header_and_rows_byte_for_byte() -> None:
    text = HEAD + GOOD + GOOD.replace(b"g1", b"g2")
    items = list(csv_items("x.csv", io.BytesIO(text)))
    assert [i.raw for i in items] == [HEAD + GOOD, HEAD + GOOD.replace(b"g1", b"g2")]
    assert [i.line for i in items] == [2, 6]
    assert all(isinstance(i, Item) and i.csv for i in items)


def test_a_game_over_the_size_bound_is_cut_and_the_next_game_still_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """Memory stays bounded however large a file's game is (a 2 GB file included): past
    ``MAX_GAME_BYTES`` a game's rows are not kept, the game is an error that says so, the next is read."""
    from backalley.records import sheets

    monkeypatch.setattr(sheets, "MAX_GAME_BYTES", 400)
    head = b"game_id,deal,dealer,seat,player,bid,tricks\n"
    rows = b"".join(b"big,%d,N,E,b,2,3\n" % k for k in range(1, 200))
    small = b"g9,1,N,E,b,2,3\ng9,1,,S,c,3,4\ng9,1,,W,d,2,3\ng9,1,,N,a,2,3\n"
    big, last = csv_items("huge.csv", io.BytesIO(head + rows + small))
    assert big.read_error is not None and "more than 400 bytes of rows" in big.read_error and len(big.raw) < 500
    assert last.read_error is None and last.raw == head + small

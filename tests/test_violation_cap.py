"""At most 1,000 violations a record, then one ``TOO_MANY`` (issue 29: one record of 300,000 empty
deals gave 1.8 M violations, a 275 MB report and 2.4 GB of memory).

The cap is the replay's, so the report, ``validate``, the store's ``violations`` table and the
service's ``/api/v1/validate`` all list the same capped list.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest
from typer.testing import CliRunner

from backalley.cli.app import app
from backalley.replay import CODES, CODES_V2, MAX_VIOLATIONS, TOO_MANY, Violation, capped, replay
from backalley.validate import check

runner = CliRunner()
ROOT = Path(__file__).resolve().parent.parent
DEALS = 3_000


def empty_deal() -> dict[str, Any]:
    """A deal that fits the format and breaks several rules: no cards, four passes, no tricks."""
    return {
        "number": 1,
        "dealer": "N",
        "hands": {"N": [], "E": [], "S": [], "W": []},
        "trump_card": "2C",
        "bids": [{"seat": s, "bid": "pass"} for s in "ESWN"],
        "tricks": [],
    }


def record(deals: list[dict[str, Any]], game_id: str = "cap-1") -> dict[str, Any]:
    return {
        "format_version": 1,
        "game_id": game_id,
        "ruleset": "standard",
        "players": {"N": "Ann", "E": "Bo", "S": "Cy", "W": "Di"},
        "deals": deals,
    }


def many_faults(deals: int = DEALS) -> dict[str, Any]:
    return record([empty_deal() for _ in range(deals)])


def uncapped_count(deals: int = DEALS) -> int:
    """How many violations :func:`many_faults` breaks in all, from two counts under the cap.

    Each deal after the first breaks the same rules: the count grows by the same step a deal.
    """
    ten, twenty = (len(replay(many_faults(n)).violations) for n in (10, 20))
    assert twenty < MAX_VIOLATIONS and (twenty - ten) % 10 == 0
    return ten + (twenty - ten) // 10 * (deals - 10)


def assert_capped(violations: list[dict[str, Any]], left_out: int) -> None:
    """``violations`` (report dicts): the first 1,000, then one TOO_MANY naming ``left_out``."""
    assert len(violations) == MAX_VIOLATIONS + 1
    assert all(v["code"] != TOO_MANY for v in violations[:-1])
    last = violations[-1]
    assert (last["code"], last["severity"], last["path"], last["deal"], last["trick"], last["seat"]) == (
        TOO_MANY,
        "error",
        "",
        None,
        None,
        None,
    )
    assert last["message"] == f"{left_out:,} more violations left out: a record lists at most 1,000"


# --- the replay ---------------------------------------------------------------------------------


def test_too_many_a_record_lists_1000_violations_then_one_too_many() -> None:
    r = replay(many_faults())
    assert_capped([v.as_dict() for v in r.violations], uncapped_count() - MAX_VIOLATIONS)
    assert r.violations[:-1] == replay(many_faults(DEALS // 2)).violations[:-1]  # the first ones found, in order
    assert not r.valid and not r.complete
    assert len(r.deals) == DEALS  # the record is still replayed whole: its deals and score are reported


def test_too_many_is_the_same_through_the_bytes_path() -> None:
    rec = many_faults()
    r = check(json.dumps(rec).encode())
    assert [v.as_dict() for v in r.violations] == [v.as_dict() for v in replay(rec).violations]


def test_too_many_only_past_1000() -> None:
    step = uncapped_count(11) - uncapped_count(10)
    for deals in range(1, DEALS):
        total = uncapped_count(deals)
        if total > MAX_VIOLATIONS + step:
            break
        listed = replay(many_faults(deals)).violations
        assert len(listed) == min(total, MAX_VIOLATIONS + 1)
        assert (listed[-1].code == TOO_MANY) == (total > MAX_VIOLATIONS)


def test_too_many_caps_schema_violations() -> None:
    deals = [{**empty_deal(), "dealer": "X"} for _ in range(DEALS)]  # one SCHEMA violation a deal
    r = replay(record(deals))
    assert {v.code for v in r.violations[:-1]} == {"SCHEMA"}
    assert_capped([v.as_dict() for v in r.violations], DEALS - MAX_VIOLATIONS)
    assert not r.valid


def test_too_many_capped_keeps_a_short_list_as_it_is() -> None:
    short = [Violation("REVOKE", "m", "/x")] * MAX_VIOLATIONS
    assert capped(short) is short
    longer = capped(short + [Violation("LEADER", "m", "/y")] * 5)
    assert len(longer) == MAX_VIOLATIONS + 1 and longer[-1].message.startswith("5 more violations left out")


def test_too_many_is_a_documented_code() -> None:
    doc = (ROOT / "docs" / "record-format.md").read_text(encoding="utf-8")
    for code in (*CODES, *CODES_V2, TOO_MANY):
        if code in CODES_V2:
            continue  # (documented with their rulesets)
        assert f"| `{code}` |" in doc, code
    assert TOO_MANY not in CODES  # not a fault a record can be given on purpose (simulate --faults)


# --- every consumer sees the capped list ----------------------------------------------------------


@pytest.fixture
def faulty_file(tmp_path: Path) -> Path:
    """A JSON Lines file: the record of 3,000 empty deals, then a small valid-format game."""
    f = tmp_path / "many.jsonl"
    small = record([], game_id="cap-2")
    f.write_text(json.dumps(many_faults()) + "\n" + json.dumps(small) + "\n", encoding="utf-8")
    return f


@pytest.mark.parametrize("workers", ["1", "2"])
def test_too_many_in_the_validate_report(faulty_file: Path, workers: str) -> None:
    result = runner.invoke(app, ["validate", "--json", "--workers", workers, str(faulty_file)])
    assert result.exit_code == 1, result.output
    first, second = (json.loads(x) for x in result.stdout.splitlines())
    left_out = uncapped_count() - MAX_VIOLATIONS
    assert_capped(first["violations"], left_out)
    assert first["valid"] is False and len(first["deals"]) == DEALS
    assert [v["code"] for v in second["violations"]] == ["INCOMPLETE"]


def test_too_many_in_the_validate_human_output(faulty_file: Path) -> None:
    result = runner.invoke(app, ["validate", str(faulty_file)])
    assert result.exit_code == 1
    assert result.stdout.count("TOO_MANY") >= 1
    assert "more violations left out: a record lists at most 1,000" in result.stdout


def test_too_many_in_the_violations_table(faulty_file: Path, tmp_path: Path) -> None:
    db = tmp_path / "cap.duckdb"
    result = runner.invoke(app, ["ingest", str(faulty_file), "--db", str(db), "--workers", "1"])
    assert result.exit_code == 1, result.output  # an invalid game: stored, and counted
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute(
            "SELECT ordinal, code, severity, message FROM violations WHERE game_id = 'cap-1' ORDER BY ordinal"
        ).fetchall()
        errors, warnings, valid = con.execute(
            "SELECT errors, warnings, valid FROM games WHERE game_id = 'cap-1'"
        ).fetchall()[0]
    assert len(rows) == MAX_VIOLATIONS + 1 and [r[0] for r in rows] == list(range(1, MAX_VIOLATIONS + 2))
    left_out = uncapped_count() - MAX_VIOLATIONS
    assert rows[-1][1:] == (TOO_MANY, "error", f"{left_out:,} more violations left out: a record lists at most 1,000")
    assert (errors, warnings, valid) == (MAX_VIOLATIONS + 1, 0, False)


def test_too_many_in_the_service_validate(tmp_path: Path) -> None:
    from tests.helpers import NDJSON, make_client

    body = (json.dumps(many_faults()) + "\n").encode()
    with make_client(tmp_path / "s.duckdb", public_validate=True) as client:
        answer = client.post("/api/v1/validate", content=body, headers=NDJSON)
    assert answer.status_code == 200, answer.text
    (report,) = (json.loads(x) for x in answer.text.splitlines())
    assert_capped(report["violations"], uncapped_count() - MAX_VIOLATIONS)


def test_too_many_in_a_service_upload(tmp_path: Path) -> None:
    from tests.helpers import AUTH, NDJSON, make_client

    body = (json.dumps(many_faults()) + "\n").encode()
    with make_client(tmp_path / "s.duckdb") as client:
        answer = client.post("/api/v1/games", content=body, headers={**NDJSON, **AUTH})
        assert answer.status_code == 200, answer.text
        with client.app.state.service.reader() as cur:  # type: ignore[attr-defined]
            rows = cur.execute(
                "SELECT code, message FROM violations WHERE game_id = 'cap-1' ORDER BY ordinal"
            ).fetchall()
    assert len(rows) == MAX_VIOLATIONS + 1
    left_out = uncapped_count() - MAX_VIOLATIONS
    assert rows[-1] == (TOO_MANY, f"{left_out:,} more violations left out: a record lists at most 1,000")


def test_too_many_still_names_every_deal_at_fault() -> None:
    """The analysis skips every deal that breaks a rule: those of the errors left out too."""
    r = replay(many_faults())
    listed = {v.deal for v in r.violations if v.deal is not None}
    assert max(listed) < DEALS  # (most deals' violations are left out)
    assert r.error_deals() == set(range(1, DEALS + 1))
    assert replay(many_faults(10)).unlisted_deals == frozenset()

"""Every ruleset end to end: simulated games are valid and complete, injected faults are caught, the CLI."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from typer.testing import CliRunner

from backalley.cli.app import app
from backalley.records.models import FORMAT_VERSIONS, RULESETS
from backalley.replay import replay
from backalley.rules import RULESETS as REGISTRY
from backalley.rules import Ruleset, all_rulesets, describe_rulesets
from backalley.simulate import fault_codes, inject_fault, make_record, player_pool

runner = CliRunner()
ALL = all_rulesets()


@pytest.mark.parametrize("rules", ALL, ids=[r.label() for r in ALL])
def test_every_injected_fault_is_reported_with_its_code(rules: Ruleset) -> None:
    pool = player_pool(8)
    caught: set[str] = set()
    for g in range(3):
        rec = make_record(f"f{g}", random.Random(g), pool, g, rules=rules)
        r = replay(rec)
        assert r.valid and r.complete
        for code in fault_codes(rules):
            if code == "JSON":
                continue
            bad = inject_fault(rec, code, random.Random(f"{g}:{code}"), rules)
            if bad is None:
                continue
            got = {v.code for v in replay(bad).violations}
            assert code in got, (rules.label(), code, sorted(got))
            caught.add(code)
    # the codes every ruleset always has a place for
    assert {"DEAL_NUMBER", "DEALER", "HAND_SIZE", "LEADER", "NOT_IN_HAND", "RESULT_MISMATCH"} <= caught
    assert set(rules.extra_codes) - {"BID_LOW", "BID_TWICE", "LOWEST_TRUMP"} <= caught


@pytest.mark.parametrize("rules", ALL, ids=[r.label() for r in ALL])
def test_every_code_that_applies_to_a_ruleset_is_injected_and_caught(rules: Ruleset) -> None:
    """No applicable code is left without a place: an empty stock, seats without partners included."""
    pool = player_pool(8)
    wanted = set(fault_codes(rules)) - {"JSON"}  # JSON is a corrupted line (corrupt_json), not a record
    caught: set[str] = set()
    for g in range(80):  # a lowest-trump lead with a short deck is rare: up to some tens of games
        rec = make_record(f"c{g}", random.Random(100 + g), pool, g, rules=rules)
        for code in sorted(wanted - caught):
            bad = inject_fault(rec, code, random.Random(f"{g}:{code}"), rules)
            if bad is not None and code in {v.code for v in replay(bad).violations}:
                caught.add(code)
        if caught == wanted:
            break
    assert caught == wanted, sorted(wanted - caught)


def test_rulesets_command_lists_every_ruleset_and_option() -> None:
    result = runner.invoke(app, ["rulesets"])
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert lines == describe_rulesets()
    assert {line.split(":")[0] for line in lines if not line.startswith(" ")} == set(RULESETS)
    options = sum(len(cls.known_options) for cls in REGISTRY.values())
    assert options and sum("--options" in line for line in lines) == options


def test_version_lists_formats_and_rulesets() -> None:
    result = runner.invoke(app, ["--version"])
    assert "record formats: 1, 2" in result.output and FORMAT_VERSIONS == (1, 2)
    assert "rulesets: standard, pereulok, bab-online" in result.output


def test_schema_format_version_two() -> None:
    result = runner.invoke(app, ["schema", "--format-version", "2"])
    assert result.exit_code == 0
    assert json.loads(result.output)["$id"].endswith("game-record.v2.schema.json")
    assert runner.invoke(app, ["schema", "--format-version", "3"]).exit_code == 2


def test_simulate_a_ruleset_with_options(tmp_path: Path) -> None:
    out = tmp_path / "p.jsonl"
    args = ["simulate", "--games", "2", "--ruleset", "pereulok", "--options", "short_deck,no_jokers", "--out", str(out)]
    assert runner.invoke(app, args).exit_code == 0
    recs = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["options"] for r in recs] == [["no_jokers", "short_deck"]] * 2
    result = runner.invoke(app, ["validate", "--json", str(out)])
    assert result.exit_code == 0
    assert all(json.loads(line)["complete"] for line in result.output.splitlines())


@pytest.mark.parametrize(
    ("ruleset", "options", "says"),
    [("bridge", "", "unknown ruleset"), ("bab-online", "no_jokers", "takes no option"), ("standard", "jokers", "not")],
)
def test_simulate_refuses_an_unknown_ruleset_or_option(tmp_path: Path, ruleset: str, options: str, says: str) -> None:
    args = ["simulate", "--games", "1", "--ruleset", ruleset, "--options", options, "--out", str(tmp_path / "x")]
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert says in result.output

"""The committed JSON Schema matches the models, and real records validate against it."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from backalley.records.models import MODELS_V2, SCHEMA_FILE, SCHEMA_FILES, json_schema, json_schema_text
from backalley.rules import all_rulesets, find_ruleset
from backalley.simulate import make_record, player_pool
from tests.helpers import random_record

ROOT = Path(__file__).resolve().parent.parent
COMMITTED = ROOT / "schemas" / SCHEMA_FILE


def test_committed_schema_matches_models() -> None:
    assert COMMITTED.read_text(encoding="utf-8") == json_schema_text(), (
        "schemas/ drifted from the pydantic models: run `make schema` and commit the result"
    )


def test_schema_is_draft_2020_12_with_id_and_title() -> None:
    schema = json.loads(COMMITTED.read_text(encoding="utf-8"))
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"].endswith("game-record.v1.schema.json")
    assert schema["title"]
    jsonschema.Draft202012Validator.check_schema(schema)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_simulated_records_validate_against_committed_schema(seed: int) -> None:
    schema = json.loads(COMMITTED.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(schema).validate(random_record(seed))


@pytest.mark.parametrize(
    "mutate",
    [
        lambda r: r.update(extra=1),
        lambda r: r.update(format_version=2),
        lambda r: r["deals"][0]["bids"][0].update(bid="2"),
        lambda r: r["deals"][0]["hands"]["N"].append("10H"),
        lambda r: r["deals"][0].update(stock=None),
        lambda r: r["deals"][0]["tricks"][0]["cards"].append("2S"),
        lambda r: r["players"].update(N=""),
        lambda r: r.update(game_id="has space"),
    ],
)
def test_schema_rejects_what_the_models_reject(mutate: Any) -> None:
    schema = json.loads(COMMITTED.read_text(encoding="utf-8"))
    rec = random_record(4, deals=2)
    mutate(rec)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(schema).validate(rec)


def test_schema_generation_is_stable() -> None:
    assert json_schema() == json_schema()


# --- format 2 ------------------------------------------------------------------------------

COMMITTED_V2 = ROOT / "schemas" / SCHEMA_FILES[2]


def test_committed_v2_schema_matches_models() -> None:
    assert COMMITTED_V2.read_text(encoding="utf-8") == json_schema_text(2), (
        "schemas/ drifted from the pydantic models: run `make schema` and commit the result"
    )


def test_v2_schema_is_draft_2020_12_one_of_on_the_ruleset() -> None:
    schema = json.loads(COMMITTED_V2.read_text(encoding="utf-8"))
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"].endswith("game-record.v2.schema.json")
    jsonschema.Draft202012Validator.check_schema(schema)
    consts = {schema["$defs"][ref["$ref"].split("/")[-1]]["properties"]["ruleset"]["const"] for ref in schema["oneOf"]}
    assert consts == set(MODELS_V2)


def test_simulated_v2_records_validate_against_the_v2_schema() -> None:
    validator = jsonschema.Draft202012Validator(json.loads(COMMITTED_V2.read_text(encoding="utf-8")))
    pool = player_pool(8)
    for rules in all_rulesets():
        if rules.label() == "standard":
            continue
        rec = make_record(f"v2-{rules.label().replace('+', '.')}", random.Random(5), pool, 0, rules=rules)
        assert not list(validator.iter_errors(rec)), rules.label()


def test_v2_schema_refuses_what_the_models_refuse() -> None:
    validator = jsonschema.Draft202012Validator(json.loads(COMMITTED_V2.read_text(encoding="utf-8")))
    rec = make_record("v2-bab", random.Random(5), player_pool(8), 0, rules=find_ruleset("bab-online"))
    bad_bore = json.loads(json.dumps(rec))
    bad_bore["deals"][0]["bids"][0]["bid"] = "2B"
    no_trump_card = json.loads(json.dumps(rec))
    del no_trump_card["deals"][0]["trump_card"]
    with_options = {**rec, "options": ["no_jokers"]}
    for bad in (bad_bore, no_trump_card, with_options):
        assert list(validator.iter_errors(bad))


def test_v2_schema_lets_only_a_deal_of_four_passes_leave_out_its_hands() -> None:
    from tests.helpers import drop, passed_out

    validator = jsonschema.Draft202012Validator(json.loads(COMMITTED_V2.read_text(encoding="utf-8")))
    for rules in ("bab-online", "pereulok"):
        rec = make_record("v2-hands", random.Random(5), player_pool(8), 0, rules=find_ruleset(rules))
        assert not list(validator.iter_errors(passed_out(rec))), rules
        assert list(validator.iter_errors(drop(rec, ("deals", 0, "hands")))), rules
        assert list(validator.iter_errors({**rec, "deals": [{**rec["deals"][0], "hands": None}]})), rules

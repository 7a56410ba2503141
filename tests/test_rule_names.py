"""One rule in one place: outside ``backalley.rules`` nothing branches on a ruleset's or an option's name
(docs/development.md, "Adding a ruleset").  Consumers ask the ruleset's properties and hooks; lists of
names are derived from the registry."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from backalley.reporting.metrics import DECLARING_SQL, PLAIN, PLAIN_SQL, is_plain, sql_in
from backalley.rules import PLAIN as PLAIN_RULES
from backalley.rules import RULESETS

PACKAGE = Path(__file__).resolve().parent.parent / "pipeline" / "backalley"
#: Every registered ruleset name and every option any ruleset takes.
NAMES = frozenset(RULESETS) | {o for cls in RULESETS.values() for o in cls.known_options}
#: Files that may name rulesets in SQL, and why: their text is fixed history, not a rule.
EXEMPT = {
    "store/migrations.py": "migrations to old schema versions (they name the rulesets that existed then)",
}
#: Files whose ``Literal`` types may name a ruleset: each ruleset's pydantic model is named in the JSON
#: Schema ($defs, title, description) and written out; tests/test_record_v2.py checks the msgspec Structs,
#: built from the registry, against them, and tests/test_schema.py checks they cover the registry.
LITERALS_ALLOWED = {"records/models.py"}


def _named(node: ast.AST) -> str | None:
    """The name a constant (or a tuple, list or set of constants) gives, if any."""
    if isinstance(node, ast.Constant) and node.value in NAMES:
        return str(node.value)
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return next((n for n in map(_named, node.elts) if n), None)
    return None


def _sql_named(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return next((m for m in re.findall(r"'([a-z_-]+)'", node.value) if m in NAMES), None)
    return None


def name_branches(source: str, literals: bool = True) -> list[tuple[int, str]]:
    """``(line, name)`` of every comparison with a name, dict keyed by names, ``Literal`` of names or SQL
    condition on a quoted name in ``source``."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        parts: list[ast.AST] = []
        if isinstance(node, ast.Compare):
            parts = [node.left, *node.comparators]
        elif isinstance(node, ast.Dict):
            parts = [k for k in node.keys if k is not None]
        elif (
            literals
            and isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Name)
            and node.value.id == "Literal"
        ):
            parts = [node.slice]
        elif isinstance(node, ast.Constant):
            named = _sql_named(node)
            found += [(node.lineno, named)] if named else []
        found += [(node.lineno, n) for n in map(_named, parts) if n]
    return found


def package_branches() -> list[str]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith("rules/") or rel in EXEMPT or "_build" in rel:
            continue
        found = name_branches(path.read_text(encoding="utf-8"), literals=rel not in LITERALS_ALLOWED)
        out += [f"{rel}:{line}: {name}" for line, name in found]
    return out


def test_no_module_outside_rules_branches_on_a_ruleset_or_option_name() -> None:
    assert package_branches() == []


def test_the_check_sees_every_kind_of_name_branch() -> None:
    source = """
if rules.name == "pereulok": pass
if ruleset in ("x", "bab-online"): pass
NOTES = {"short_deck": "no 2s"}
Kind = Literal["standard"]
SQL = "SELECT * FROM pda WHERE ruleset <> 'pereulok'"
"""
    assert [n for _, n in name_branches(source)] == ["pereulok", "bab-online", "short_deck", "standard", "pereulok"]


def test_the_check_lets_data_through() -> None:
    source = """
rules = find_ruleset("bab-online")
SAMPLES = [("pereulok", ())]
label = f"{name} + {options}"
if kind.auction == "declarations": pass
"""
    assert name_branches(source) == []


def test_plain_standard_is_found_by_its_format_not_its_name() -> None:
    assert PLAIN_RULES.format_version == 1 and not PLAIN_RULES.options
    assert [r.label() for r in (cls() for cls in RULESETS.values()) if r.format_version == 1] == [PLAIN_RULES.label()]
    assert (PLAIN, PLAIN_SQL) == (("standard", ""), "ruleset = 'standard' AND options = ''")
    assert is_plain(*PLAIN) and not is_plain(PLAIN[0], "short_deck")


def test_the_declaring_rulesets_are_those_with_an_auction_of_declarations() -> None:
    assert DECLARING_SQL == "(ruleset IN ('pereulok'))"
    assert sql_in("ruleset", ["a", "o'b"]) == "(ruleset IN ('a', 'o''b'))"
    assert sql_in("ruleset", []) == "FALSE"

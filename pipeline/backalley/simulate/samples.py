"""The committed sample data of ``data/sample/`` (see its README.md, written from sample_readme.py)."""

from __future__ import annotations

import copy
import random
from collections.abc import Iterable
from pathlib import Path

import orjson

from backalley.cards import SEATS
from backalley.records.sheets import sheet_csv
from backalley.rules import STANDARD, Ruleset, find_ruleset
from backalley.simulate.bots import player_pool
from backalley.simulate.faults import corrupt_json, fault_codes, inject_fault
from backalley.simulate.games import Record, dumps, id_tag, make_record
from backalley.simulate.sample_readme import readme
from backalley.simulate.sheets import SHEET_FAULTS, as_sheet
from backalley.simulate.writer import simulate_games

#: The example deal of docs/record-format.md (deal 11, hand size 3, dealer N, trump 5H; no stock).
EXAMPLE_DEAL: Record = {
    "number": 11,
    "dealer": "N",
    "hands": {
        "N": ["2H", "KS", "9D"],
        "E": ["4C", "7S", "QD"],
        "S": ["AS", "3H", "8C"],
        "W": ["BJ", "AH", "KD"],
    },
    "trump_card": "5H",
    "bids": [
        {"seat": "E", "bid": "pass"},
        {"seat": "S", "bid": 1},
        {"seat": "W", "bid": "board"},
        {"seat": "N", "bid": 2},
    ],
    "tricks": [
        {"leader": "W", "cards": ["BJ", "2H", "4C", "3H"]},
        {"leader": "W", "cards": ["AH", "9D", "7S", "8C"]},
        {"leader": "W", "cards": ["KD", "KS", "QD", "AS"]},
    ],
    "result": {"tricks": {"NS": 0, "EW": 3}, "points": {"NS": -15, "EW": 30}},
}


class _Misplaced(Exception):
    """The example deal's dealer does not come round at deal 11 in this game."""


def worked_example(seed: int = 11) -> Record:
    """A complete valid game whose deal number 11 is exactly :data:`EXAMPLE_DEAL`.

    Deals 1-10 and 12-25 are played by the bots; seeds are tried from ``seed`` on
    until N deals deal 11 (pass-outs shift the dealer).
    """

    def fixed(number: int, dealer: int) -> Record | None:
        if number != EXAMPLE_DEAL["number"]:
            return None
        if SEATS[dealer] != EXAMPLE_DEAL["dealer"]:
            raise _Misplaced
        return copy.deepcopy(EXAMPLE_DEAL)

    pool = player_pool(12)
    for s in range(seed, seed + 1000):
        try:
            return make_record(f"worked-example-{s}", random.Random(s), pool, 0, fixed)
        except _Misplaced:
            continue
    raise RuntimeError("no seed puts N in the dealer's seat at deal 11")  # pragma: no cover


#: Lines of ``bad-inputs.jsonl`` (each a JSON string of bytes, with why it is there).
BAD_INPUTS: tuple[tuple[str, str], ...] = (
    ("this is not JSON", "`JSON`: plain text"),
    (
        '{"format_version": 1, "game_id": "bad-2", "ruleset": "standard", "players": {"N": "Ada", "E": "Hana"',
        "`JSON`: a record cut short",
    ),
    ('{"format_version": 1, "game_id": "bad-3", "final_score": {"NS": NaN, "EW": 0}}', "`JSON`: `NaN` is not JSON"),
    ("[1, 2, 3]", '`SCHEMA` at path `""`: JSON, but an array, not an object'),
    ("", "blank: skipped, no report"),
    (
        '{"format_version": 1, "ruleset": "standard", "players": {"N": "Ada", "E": "Hana", "S": "Luca", "W": "Olga"},'
        ' "deals": []}',
        "`SCHEMA` at `/game_id`: the record has no `game_id` (otherwise a valid, empty record)",
    ),
)


def faulty_samples(seed: int, rules: Ruleset = STANDARD) -> list[tuple[str, str]]:
    """``(code, line)`` for every code of :func:`fault_codes`, in order, each in a game of its own.

    A code that finds no place in 200 games in a row is left out.
    """
    pool = player_pool(12)
    seeds = random.Random(seed)
    frng = random.Random(f"faults:{seed}")
    out: list[tuple[str, str]] = []
    i = 0
    for code in fault_codes(rules):
        for _ in range(200):
            rec = make_record(
                f"sim-{id_tag(rules)}{seed}-{i:06d}", random.Random(seeds.getrandbits(64)), pool, i, rules=rules
            )
            i += 1
            if code == "JSON":
                out.append((code, corrupt_json(dumps(rec), frng)))
                break
            bad = inject_fault(rec, code, frng, rules)
            if bad is not None:
                out.append((code, dumps(bad)))
                break
    return out


#: The rulesets of ``data/sample/rulesets/``: (folder-safe label, ruleset name, options).
SAMPLE_RULESETS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("pereulok", ()),
    ("bab-online", ()),
    ("standard", ("short_deck", "no_partnerships")),
    ("pereulok", ("no_jokers", "spades_trump")),
)


def write_ruleset_samples(folder: Path, seed: int = 2026) -> list[tuple[str, list[str]]]:
    """Valid and faulty games of each of :data:`SAMPLE_RULESETS`; returns each label with its faulty codes."""
    folder.mkdir(parents=True, exist_ok=True)
    made: list[tuple[str, list[str]]] = []
    for name, options in SAMPLE_RULESETS:
        rules = find_ruleset(name, options)
        label = rules.label()
        _write_lines(folder / f"valid-{label}.jsonl", simulate_games(3, seed, rules=rules))
        faulty = faulty_samples(seed + 1, rules)
        _write_lines(folder / f"faulty-{label}.jsonl", (line for _, line in faulty))
        made.append((label, [code for code, _ in faulty]))
    return made


def sheet_samples(seed: int, prefix: str, rules: Ruleset = STANDARD) -> list[tuple[str | None, Record]]:
    """``(injected code or None, sheet)``: 2 valid games of ``rules`` written as score sheets, then one
    sheet per code of :data:`SHEET_FAULTS` the ruleset has; the game ids start with ``prefix``."""
    pool = player_pool(12)
    seeds = random.Random(seed)
    frng = random.Random(f"sheet-faults:{seed}")

    def played(i: int) -> Record:
        return make_record(f"{prefix}{seed}-{i:03d}", random.Random(seeds.getrandbits(64)), pool, i, rules=rules)

    out: list[tuple[str | None, Record]] = [(None, as_sheet(played(i))) for i in range(2)]
    for code in (c for c in fault_codes(rules) if c in SHEET_FAULTS):
        for _ in range(50):
            bad = inject_fault(played(len(out)), code, frng, rules)
            if bad is not None:
                out.append((code, as_sheet(bad)))
                break
    return out


#: What a CSV sheet cannot hold: a final score, or a seat's second call in a dealing.
NOT_IN_CSV = ("FINAL_SCORE_MISMATCH", "BID_TWICE")


def write_sheet_samples(folder: Path, seed: int = 2026) -> tuple[list[str | None], list[str | None]]:
    """``sheets/``: score sheets of standard games as JSON Lines and of bab-online games as CSV;
    returns each file's injected codes in order (``None``: a valid game)."""
    folder.mkdir(parents=True, exist_ok=True)
    as_json = sheet_samples(seed, "sheet-")
    _write_lines(folder / "sheets.jsonl", (dumps(r) for _, r in as_json))
    as_csv = [(c, r) for c, r in sheet_samples(seed, "table-", find_ruleset("bab-online")) if c not in NOT_IN_CSV]
    text = "".join(sheet_csv(r) if k == 0 else sheet_csv(r).partition("\n")[2] for k, (_, r) in enumerate(as_csv))
    (folder / "table.csv").write_text(text, encoding="utf-8", newline="\n")
    return [c for c, _ in as_json], [c for c, _ in as_csv]


def write_samples(folder: Path, seed: int = 2026) -> None:
    """Write the committed sample data of ``data/sample/`` (see its README.md)."""
    folder.mkdir(parents=True, exist_ok=True)
    _write_lines(folder / "valid-games.jsonl", simulate_games(3, seed))
    faulty = faulty_samples(seed + 1)
    _write_lines(folder / "faulty-games.jsonl", (line for _, line in faulty))
    example = orjson.dumps(worked_example(), option=orjson.OPT_INDENT_2).decode("utf-8") + "\n"
    (folder / "worked-example.json").write_text(example, encoding="utf-8", newline="\n")
    _write_lines(folder / "bad-inputs.jsonl", (line for line, _ in BAD_INPUTS))
    made = write_ruleset_samples(folder / "rulesets", seed)
    sheets = write_sheet_samples(folder / "sheets", seed)
    text = readme(seed, [code for code, _ in faulty], BAD_INPUTS, made, sheets)
    (folder / "README.md").write_text(text, encoding="utf-8", newline="\n")


def _write_lines(path: Path, lines: Iterable[str]) -> None:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8", newline="\n")

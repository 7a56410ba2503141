"""The writer's Arrow tables (backalley.store.tables) against a plain per-row reference.

:func:`~backalley.store.tables.game_tables` builds ``g_tricks`` column-wise, with
look-ups of every ruleset's ``suit_of`` and ``is_trump`` indexed by numpy; the
reference here walks the row data trick by trick and asks the ruleset itself.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pytest

from backalley.records.sources import Item
from backalley.rules import RULESETS, find_ruleset
from backalley.simulate import simulate_games
from backalley.store import ingest as ingest_mod
from backalley.store.rows import DEAL_INTS, Built, build_item, build_rows
from backalley.store.tables import game_tables, rekeyed, task_tables

#: Every registered ruleset, and the standard options that change the deck, the trump or the sides.
LABELS = [
    *((name, ()) for name in RULESETS),
    ("standard", ("no_jokers", "spades_trump")),
    ("standard", ("short_deck", "no_partnerships")),
    ("pereulok", ("no_jokers", "no_partnerships")),
]
_TRUMP = DEAL_INTS.index("trump")
_TRICKS = DEAL_INTS.index("tricks")


def plain_tricks(games: list[Built], first_key: int, label: str | None = None) -> list[tuple[Any, ...]]:
    """The ``g_tricks`` rows of these games, one trick at a time, the ruleset asked per card (the
    ruleset of ``label`` for every game when given)."""
    rows: list[tuple[Any, ...]] = []
    for key, b in enumerate(games, first_key):
        name, *options = (label or b.rules).split("+")
        rules = find_ruleset(name, tuple(options))
        deals = struct.unpack(f"{len(b.deals) // 8}q", b.deals)
        at = 0
        for d in range(len(deals) // len(DEAL_INTS)):
            fields = deals[d * len(DEAL_INTS) : (d + 1) * len(DEAL_INTS)]
            trump = fields[_TRUMP]
            for t in range(fields[_TRICKS]):
                cards = tuple(b.cards[4 * (at + t) : 4 * (at + t) + 4])
                mask = sum(int(rules.is_trump(c, trump)) << k for k, c in enumerate(cards))
                led = rules.suit_of(cards[0], trump)
                leader, winner = b.leaders[at + t], b.winners[at + t]
                rows.append((key, d + 1, t + 1, leader, winner, led, mask, bool(b.broken[at + t]), *cards))
            at += fields[_TRICKS]
    return rows


@pytest.mark.parametrize(("name", "options"), LABELS, ids=["+".join((n, *o)) for n, o in LABELS])
def test_tricks_table_equals_the_plain_reference(name: str, options: tuple[str, ...]) -> None:
    lines = list(simulate_games(60, seed=11, faults=0.3, rules=find_ruleset(name, options)))
    built = [build_rows(Item("t.jsonl", k, line.encode())) for k, line in enumerate(lines, 1)]
    games = [(Item("t.jsonl", k, b"{}"), b) for k, b in enumerate(built, 1) if b.reject is None and b.deals]
    assert len(games) > 30
    tricks = game_tables(games, first_key=7)["g_tricks"]
    got = list(zip(*(tricks.column(c).to_pylist() for c in tricks.column_names), strict=True))
    want = plain_tricks([b for _, b in games], 7)
    assert len(want) > 1000
    assert got == want


def test_a_chunk_of_mixed_rulesets_equals_the_plain_reference() -> None:
    """Games of several rulesets in one chunk: each trick looks up its own game's ruleset (bab-online's
    jokers differ from standard's, and some of its tricks hold one where that shows)."""
    built: list[Built] = []
    for k, (name, options) in enumerate(LABELS):
        games = 40 if name == "bab-online" else 6
        for line in simulate_games(games, seed=20 + k, faults=0.2, rules=find_ruleset(name, options)):
            built.append(build_rows(Item("t.jsonl", len(built), line.encode())))
    games = [(Item("t.jsonl", 0, b"{}"), b) for b in built if b.reject is None and b.deals]
    assert len({b.rules for _, b in games}) == len(LABELS)
    tricks = game_tables(games)["g_tricks"]
    got = list(zip(*(tricks.column(c).to_pylist() for c in tricks.column_names), strict=True))
    want = plain_tricks([b for _, b in games], 1)
    assert got == want
    # The first game's ruleset would have given other answers (else this test could not fail).
    assert plain_tricks([b for _, b in games], 1, label=games[0][1].rules) != want


def _task_parts(
    items: list[Item], stored: list[bool], first_key: int, task: int
) -> list[tuple[np.ndarray[Any, Any], dict[str, bytes]]]:
    """What the writer hands :func:`rekeyed`: per task of ``task`` inputs, each of its games' new key
    (-1: not stored) and the task's tables as a worker serialised them."""
    keys = np.where(stored, np.cumsum(stored) - 1 + first_key, -1)
    parts = []
    for k in range(0, len(items), task):
        built, blobs = task_tables(items[k : k + task], [None] * len(items[k : k + task]))
        at = [k + j for j, b in enumerate(built) if b.reject is None and b.game_id is not None]
        parts.append((keys[at], blobs))
    return parts


@pytest.mark.parametrize(("name", "options"), LABELS, ids=["+".join((n, *o)) for n, o in LABELS])
def test_tables_built_in_tasks_equal_the_chunks_tables(name: str, options: tuple[str, ...]) -> None:
    """Tables built per task and sent as Arrow IPC (the workers' path), then re-keyed with some games left
    out (duplicates, conflicts), equal :func:`game_tables` of the stored games (the writer's path)."""
    lines = list(simulate_games(70, seed=5, faults=0.3, rules=find_ruleset(name, options)))
    lines[3:3] = ["not json", '{"no": "game_id"}', '{"game_id": "x", "format_version": 99}']
    items = [Item("t.jsonl", k, line.encode()) for k, line in enumerate(lines, 1)]
    built = [build_item(x) for x in items]
    games = [b.reject is None and b.game_id is not None for b in built]
    for skip in (0, 4, 3):  # every game stored; every 4th one left out; every 3rd one
        stored = [g and (not skip or k % skip != 1) for k, g in enumerate(games)]
        want = game_tables([(x, b) for x, b, s in zip(items, built, stored, strict=True) if s], first_key=9)
        got = rekeyed(_task_parts(items, stored, 9, task=8))
        assert list(got) == list(want)
        for table in want:
            assert got[table].equals(want[table]), table
        assert want["g_tricks"].num_rows > 0 and want["g_violations"].num_rows > 0


def test_tables_of_tasks_whose_games_are_all_left_out() -> None:
    """A task none of whose games is stored adds nothing; no stored game at all: no table."""
    items = [Item("t.jsonl", k, line.encode()) for k, line in enumerate(simulate_games(12, seed=3), 1)]
    stored = [k >= 6 for k in range(12)]
    want = game_tables([(x, build_item(x)) for x, s in zip(items, stored, strict=True) if s], first_key=1)
    got = rekeyed(_task_parts(items, stored, 1, task=6))
    assert list(got) == list(want) and all(got[t].equals(want[t]) for t in want)
    assert rekeyed(_task_parts(items, [False] * 12, 1, task=6)) == {}


def _store_rows(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every narrow table's rows and the rejects, sorted, without the times of the run."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        out = {}
        for name in (*NARROW_ORDER, "rejects"):
            cols = [
                r[0] for r in con.execute(f"DESCRIBE {name}").fetchall() if r[0] not in ("ingested_at", "rejected_at")
            ]
            out[name] = sorted(con.execute(f"SELECT {', '.join(cols)} FROM {name}").fetchall(), key=repr)
        return out
    finally:
        con.close()


NARROW_ORDER = ("g_games", "g_deals", "g_bids", "g_tricks", "g_violations", "g_game_sides", "g_deal_sides")


def test_an_ingest_whose_workers_build_the_tables_stores_what_the_writer_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every ruleset, faulty games, rejects, duplicates and conflicts, then a replacing run: the same
    stores whether the workers (Arrow IPC) or the writer build the tables."""
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    lines = [
        line
        for k, (name, options) in enumerate(LABELS)
        for line in simulate_games(30, seed=40 + k, faults=0.3, rules=find_ruleset(name, options))
    ]
    first.write_text("\n".join([*lines[:200], "not json", '{"x": 1}', lines[5], *lines[200:]]) + "\n")
    changed = [line.replace('"played_at":"2026', '"played_at":"2027', 1) for line in lines[::3]]
    assert sum(a != b for a, b in zip(changed, lines[::3], strict=True)) > 30
    second.write_text("\n".join(changed) + "\n")
    stores = []
    for in_workers in (False, True):
        monkeypatch.setattr(ingest_mod, "WORKER_TABLES", in_workers)
        db = tmp_path / f"{in_workers}.duckdb"
        ingest_mod.ingest([str(first)], db, workers=2, chunk=64)
        ingest_mod.ingest([str(second)], db, workers=2, chunk=64, replace=True)
        ingest_mod.ingest([str(second), str(first)], db, workers=2, chunk=64)
        stores.append(_store_rows(db))
    assert stores[0] == stores[1]
    assert all(stores[0][name] for name in (*NARROW_ORDER, "rejects"))

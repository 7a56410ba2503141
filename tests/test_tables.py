"""The writer's Arrow tables (backalley.store.tables) against a plain per-row reference.

:func:`~backalley.store.tables.game_tables` builds ``g_tricks`` column-wise, with
look-ups of every ruleset's ``suit_of`` and ``is_trump`` indexed by numpy; the
reference here walks the row data trick by trick and asks the ruleset itself.
"""

from __future__ import annotations

import struct
from typing import Any

import pytest

from backalley.records.sources import Item
from backalley.rules import RULESETS, find_ruleset
from backalley.simulate import simulate_games
from backalley.store.rows import DEAL_INTS, Built, build_rows
from backalley.store.tables import game_tables

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

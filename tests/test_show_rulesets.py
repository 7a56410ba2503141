"""``backalley show`` on stored games of every ruleset: the figures by side, checked against the records.

Games are simulated and ingested through the CLI, then shown; every figure on
screen (tricks, points, running and final scores, contracts, declarations and
their multipliers, named trump, bore levels, rainbows) is compared with what
the record itself says, and nothing shows as ``None`` or ``null``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from backalley.cli.app import app
from tests.helpers import rows, section, show

runner = CliRunner()
SYMBOL = {"S": "♠", "H": "♥", "D": "♦", "C": "♣"}
JOKERS = ("LJ", "BJ")
#: (ruleset, options, games, seed): enough games that doubles, bores (level 2 too) and rainbows occur.
SETS = [
    ("standard", "", 2, 1),
    ("standard", "no_partnerships", 2, 1),
    ("standard", "no_jokers,short_deck", 1, 1),
    ("pereulok", "", 4, 1),
    ("pereulok", "spades_trump,no_partnerships", 3, 1),
    ("bab-online", "", 20, 3),
]
Record = dict[str, Any]


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Record]]:
    tmp = tmp_path_factory.mktemp("show")
    files = []
    for ruleset, options, games, seed in SETS:
        path = tmp / f"{ruleset}-{options or 'plain'}.jsonl"
        args = ["simulate", "--ruleset", ruleset, "-n", str(games), "--seed", str(seed), "-w", "1", "-o", str(path)]
        result = runner.invoke(app, args + (["--options", options] if options else []))
        assert result.exit_code == 0, result.output
        files.append(path)
    db = tmp / "s.duckdb"
    result = runner.invoke(app, ["ingest", *map(str, files), "--db", str(db), "--workers", "1"])
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for f in files for line in f.read_text(encoding="utf-8").splitlines()]
    return db, records


def sides_of(rec: Record) -> list[str]:
    return list(rec["final_score"])


def is_pass_out(d: Record) -> bool:
    return all(b["bid"] == "pass" for b in d["bids"])


def side_of(rec: Record, seat: str) -> str:
    return next(s for s in sides_of(rec) if seat in s)


def declarations(d: Record) -> list[tuple[str, int, int]]:
    """pereulok: (seat, declared tricks, multiplier) of every call, the multiplier by docs/rules.md §14.2, "Auction"."""
    out, previous = [], 0
    for b in d["bids"]:
        if isinstance(b["bid"], int):
            m = next((k for k in (2, 3, 4) if previous >= 1 and b["bid"] == k * previous), 1)
            out.append((b["seat"], b["bid"], m))
            previous = b["bid"]
    return out


def card(name: str) -> str:
    if name in JOKERS:
        return name
    return ("10" if name[0] == "T" else name[0]) + SYMBOL[name[1]]


def trump_cell(rec: Record, d: Record) -> str:
    """The game view's trump column, from the record."""
    if "trump_card" in d:
        return card(d["trump_card"]) + (" no trump" if d["trump_card"] in JOKERS else "")
    if "trump" in d:
        declarer = max(declarations(d), key=lambda x: x[1])[0]  # max keeps the earliest of equals
        return f"{SYMBOL[d['trump']]} by {declarer}"
    if "spades_trump" in rec.get("options", ()):
        return "♠ always"
    return "none" if is_pass_out(d) else "no trump"


def pereulok_contracts(rec: Record, d: Record) -> str:
    out = []
    for side in sides_of(rec):
        mine = [x for x in declarations(d) if x[0] in side]
        if not mine:
            out.append("pass")
            continue
        _, value, m = mine[-1]
        made = d["result"]["tricks"][side] >= value
        out.append(f"{value}{f'×{m}' if m > 1 else ''}{'✓' if made else '✗'}")
    return "/".join(out)


def test_game_view_has_every_side_figures_and_trump(stored: tuple[Path, list[Record]]) -> None:
    db, records = stored
    for rec in records:
        out = show(db, rec["game_id"])
        sides = sides_of(rec)
        final = ", ".join(f"{s} {rec['final_score'][s]}" for s in sides)
        assert f"Final score (recomputed): {final}" in out
        assert f"points {'/'.join(sides)}" in out and rec["ruleset"] in out
        table = {r[0]: r for r in rows(out.splitlines())}
        assert len(table) == len(rec["deals"])
        for k, d in enumerate(rec["deals"], 1):
            row = table[str(k)]
            assert row[1:4] == [str(d["number"]), str(len(d["hands"]["N"])), d["dealer"]]
            assert row[4] == trump_cell(rec, d), (rec["game_id"], k)
            assert row[6] == "/".join(str(d["result"]["tricks"][s]) for s in sides)
            assert row[7] == "/".join(str(d["result"]["points"][s]) for s in sides)
            if is_pass_out(d):
                assert row[5] == "pass-out"
            elif rec["ruleset"] == "pereulok":
                assert row[5] == pereulok_contracts(rec, d), (rec["game_id"], k)
            else:
                assert len(row[5].split("/")) == len(sides)


def rainbow(rec: Record, d: Record, seat: str) -> bool:
    """bab-online: a 4-card hand as dealt with all four suits, a joker counting as the trump suit."""
    hand = d["hands"][seat]
    suits = {c[1] for c in hand if c not in JOKERS}
    turned = d["trump_card"]
    if turned not in JOKERS and any(c in JOKERS for c in hand):
        suits.add(turned[1])
    return len(hand) == 4 and len(suits) == 4 and not is_pass_out(d)


def expected_meaning(rec: Record, d: Record, k: int) -> str:
    bid = d["bids"][k]["bid"]
    if rec["ruleset"] == "pereulok" and isinstance(bid, int):
        m = next(m for seat, v, m in declarations(d) if seat == d["bids"][k]["seat"])
        text = f"declares {bid}, ×{m}" + {1: "", 2: " (double)", 3: " (triple)", 4: " (quadruple)"}[m]
    elif rec["ruleset"] == "bab-online" and isinstance(bid, str) and bid.startswith("board"):
        level = int(bid[5:] or 1)
        text = f"board level {level}, ×{2**level}"  # bores ×2, ×4, ×8, ×16 (docs/rules.md §14.3, "Contracts")
    elif isinstance(bid, int):
        text = f"{bid} trick" + ("" if bid == 1 else "s")
    else:
        text = bid if bid == "pass" else text_of_board(d, k)
    if rec["ruleset"] == "bab-online" and rainbow(rec, d, d["bids"][k]["seat"]):
        text += ", rainbow"
    return text


def text_of_board(d: Record, k: int) -> str:
    level = sum(1 for b in d["bids"][: k + 1] if b["bid"] == "board")  # standard: claims counted in order
    return f"board level {level}, ×{level}"


def trump_line(rec: Record, d: Record) -> str:
    if "trump_card" in d:
        turned = d["trump_card"]
        return f"turned {card(turned)}: " + ("no trump" if turned in JOKERS else f"trump {SYMBOL[turned[1]]}")
    if "trump" in d:
        declarer = max(declarations(d), key=lambda x: x[1])[0]
        return f"trump {SYMBOL[d['trump']]} named by the declarer {declarer}"
    if "spades_trump" in rec.get("options", ()):
        return "trump ♠ in every deal"
    return "passed out: no trump" if is_pass_out(d) else "no trump (no card turned)"


def chosen_deals(rec: Record) -> list[int]:
    """Deals worth a look: all of pereulok; bab-online's bores and its 4-card deal; standard's first and last."""
    deals = rec["deals"]
    if rec["ruleset"] == "pereulok":
        return list(range(1, len(deals) + 1))
    if rec["ruleset"] == "bab-online":
        return [
            k
            for k, d in enumerate(deals, 1)
            if len(d["hands"]["N"]) == 4 or any(str(b["bid"]).startswith("board") for b in d["bids"])
        ]
    return [1, len(deals)]


def test_deal_view_shows_calls_trump_and_result_by_side(stored: tuple[Path, list[Record]]) -> None:
    db, records = stored
    seen: set[str] = set()
    for rec in records:
        sides = sides_of(rec)
        for k in chosen_deals(rec):
            d = rec["deals"][k - 1]
            out = show(db, rec["game_id"], k)
            assert trump_line(rec, d) in out, (rec["game_id"], k)
            bids = list(rows(section(out, "Bids", "Tricks")))
            assert [b[0] for b in bids] == [b["seat"] for b in d["bids"]]
            for j, b in enumerate(bids):
                assert b[2] == side_of(rec, b[0])
                assert b[4] == expected_meaning(rec, d, j), (rec["game_id"], k, j)
                seen.update(w for w in ("×2", "×3", "×4", "board level 2", "rainbow") if w in b[4])
            before = rec["deals"][:k]
            result = {r[0]: r for r in rows(section(out, "Result"))}
            assert list(result) == sides
            for s in sides:
                total = sum(x["result"]["points"][s] for x in before)
                assert result[s][2:] == [str(d["result"]["tricks"][s]), str(d["result"]["points"][s]), str(total)]
    # The games above hold every feature shown: doubles, a level-2 bore, rainbows.
    assert {"×2", "board level 2", "rainbow"} <= seen, seen


def test_a_record_that_does_not_fit_the_format_is_shown_without_figures(
    stored: tuple[Path, list[Record]], tmp_path: Path
) -> None:
    rec = next(r for r in stored[1] if r["ruleset"] == "pereulok")
    rec = {**rec, "game_id": "broken", "players": {**rec["players"], "N": "[b]Ada[/]"}}
    rec["deals"] = [{**rec["deals"][0], "bids": [{"seat": "W", "bid": "board"}, *rec["deals"][0]["bids"][1:]]}]
    src, db = tmp_path / "broken.jsonl", tmp_path / "b.duckdb"
    src.write_text(json.dumps(rec) + "\n", encoding="utf-8")
    assert runner.invoke(app, ["ingest", str(src), "--db", str(db), "--workers", "1"]).exit_code == 1
    out = show(db, "broken")
    assert "Not replayed: the record does not fit the format." in out and "[b]Ada[/]" in out
    assert "SCHEMA" in out and "Final score" not in out
    out = show(db, "broken", 1)
    assert "not replayed" in out and "board" in out and "[b]Ada[/]" in out


def test_a_redeal_recorded_without_hands_says_so(tmp_path: Path) -> None:
    """A bab-online game recorded by a spectator: its redeals have no hands, and show says they are not recorded."""
    fixture = Path(__file__).parent / "fixtures" / "bab-online" / "game-01.jsonl.gz"
    out, db = tmp_path / "bab.jsonl", tmp_path / "s.duckdb"
    result = runner.invoke(app, ["record", "bab-online", "--replay", str(fixture), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert runner.invoke(app, ["ingest", str(out), "--db", str(db), "--workers", "1"]).exit_code == 0
    rec = json.loads(out.read_text(encoding="utf-8"))
    k = next(k for k, d in enumerate(rec["deals"], 1) if "hands" not in d)
    assert "Hands as dealt: not in the record" in show(db, rec["game_id"], k)
    played = next(k for k, d in enumerate(rec["deals"], 1) if "hands" in d)
    assert "not in the record" not in show(db, rec["game_id"], played)

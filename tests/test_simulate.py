"""The simulator: legal complete games, card conservation, determinism, bot styles, injected faults, samples."""

from __future__ import annotations

import random
import re
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backalley.cards import CARD_INDEX, FULL_DECK, SEATS
from backalley.records.sources import InputFile, read_file
from backalley.replay import SHEET_CODES, TOO_MANY, replay
from backalley.rules import contracts, hand_size, made
from backalley.simulate import (
    BAD_INPUTS,
    EXAMPLE_DEAL,
    FAULT_CODES,
    corrupt_json,
    dumps,
    inject_fault,
    make_record,
    player_pool,
    simulate_games,
    worked_example,
    write_games,
    write_samples,
)
from backalley.validate import check

SAMPLE = Path(__file__).resolve().parent.parent / "data" / "sample"
DOCS = Path(__file__).resolve().parent.parent / "docs"


@pytest.fixture(scope="module")
def games() -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in simulate_games(40, seed=3)]


@pytest.fixture(scope="module")
def hundred() -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in simulate_games(100, seed=12345)]


def _mask(cards: list[str]) -> int:
    m = 0
    for c in cards:
        m |= 1 << CARD_INDEX[c]
    return m


# --- legal, complete games with the right scores ----------------------------------------------


def test_games_replay_valid_complete_with_recorded_scores(games: list[dict[str, Any]]) -> None:
    for rec in games:
        r = replay(rec)
        assert r.valid and r.complete, (rec["game_id"], [(v.code, v.message) for v in r.violations])
        assert not r.violations
        assert r.final_score == (rec["final_score"]["NS"], rec["final_score"]["EW"])
        assert len(r.deals) == len(rec["deals"])
        for d, out in zip(rec["deals"], r.deals, strict=True):
            res = d["result"]
            assert out.tricks == (res["tricks"]["NS"], res["tricks"]["EW"])
            assert out.points == (res["points"]["NS"], res["points"]["EW"])
            assert out.pass_out == (not d["tricks"])
        assert sum(1 for d in rec["deals"] if d["tricks"]) == 25
        assert [d["number"] for d in rec["deals"] if d["tricks"]] == list(range(1, 26))


def test_record_shape(games: list[dict[str, Any]]) -> None:
    for i, rec in enumerate(games):
        assert rec["game_id"] == f"sim-3-{i:06d}"
        assert list(rec) == [
            "format_version",
            "game_id",
            "ruleset",
            "players",
            "played_at",
            "event",
            "deals",
            "final_score",
        ]
        assert len(set(rec["players"].values())) == 4
        assert rec["played_at"].endswith("Z")


def test_card_conservation(games: list[dict[str, Any]]) -> None:
    for rec in games:
        for d in rec["deals"]:
            n = hand_size(d["number"])
            hands = [d["hands"][s] for s in SEATS]
            every = [c for h in hands for c in h] + d["stock"]
            assert len(every) == 54 and _mask(every) == FULL_DECK
            assert all(len(h) == n for h in hands)
            assert d["stock"][0] == d["trump_card"]
            after = [_mask(h) for h in hands]
            if "joker_swap" in d:
                other = "BJ" if d["trump_card"] == "LJ" else "LJ"
                s = SEATS.index(d["joker_swap"]["seat"])
                assert other in d["hands"][d["joker_swap"]["seat"]]
                assert d["joker_swap"]["drawn"] == d["stock"][1]
                after[s] = after[s] & ~(1 << CARD_INDEX[other]) | 1 << CARD_INDEX[d["joker_swap"]["drawn"]]
            if not d["tricks"]:
                assert all(b["bid"] == "pass" for b in d["bids"])
                continue
            played = [0, 0, 0, 0]
            count = 0
            for t in d["tricks"]:
                leader = SEATS.index(t["leader"])
                for k, c in enumerate(t["cards"]):
                    bit = 1 << CARD_INDEX[c]
                    s = (leader + k) & 3
                    assert not played[s] & bit
                    played[s] |= bit
                    count += 1
            assert count == 4 * n
            assert played == after


# --- determinism ---------------------------------------------------------------------------------


def test_same_seed_same_bytes(tmp_path: Path) -> None:
    a = list(simulate_games(6, seed=99, faults=0.5))
    b = list(simulate_games(6, seed=99, faults=0.5))
    assert a == b
    write_games(tmp_path / "a.jsonl", games=6, seed=99, players=12, faults=0.5)
    assert (tmp_path / "a.jsonl").read_text(encoding="utf-8") == "".join(line + "\n" for line in a)


def test_different_seeds_differ() -> None:
    assert list(simulate_games(2, seed=1)) != list(simulate_games(2, seed=2))


def test_faults_do_not_change_the_games_dealt() -> None:
    """Fault draws come from a stream of their own: the clean games stay the same."""
    clean = list(simulate_games(8, seed=5))
    mixed = list(simulate_games(8, seed=5, faults=0.5))
    same = sum(a == b for a, b in zip(clean, mixed, strict=True))
    assert 0 < same < 8


def test_write_games_summary(tmp_path: Path) -> None:
    out = tmp_path / "g.jsonl"
    assert write_games(out, games=3, seed=1, players=6, faults=0.0) == "3 games"
    assert len(out.read_text(encoding="utf-8").splitlines()) == 3
    summary = write_games(out, games=20, seed=1, players=6, faults=1.0)
    assert summary == "20 games (20 with an injected fault)"
    reports = [check(line) for line in out.read_bytes().splitlines()]
    # INCOMPLETE is a warning: that game stays valid.
    assert sum(not r.valid for r in reports) >= 15


def test_player_pool() -> None:
    pool = player_pool(40)
    names = [p.name for p in pool]
    assert len(set(names)) == 40
    assert all(1 <= len(n) <= 64 and n.isprintable() for n in names)
    assert {p.style.name for p in pool} == {"cautious", "bold", "erratic"}
    with pytest.raises(ValueError):
        list(simulate_games(1, seed=1, players=3))


def test_small_pool_games_are_valid() -> None:
    for line in simulate_games(3, seed=8, players=4):
        r = check(line.encode())
        assert r.valid and r.complete


# --- the bots ---------------------------------------------------------------------------------


def _style_stats(recs: list[dict[str, Any]]) -> dict[str, Counter[str]]:
    style = {p.name: p.style.name for p in player_pool(12)}
    stats: dict[str, Counter[str]] = {}
    for rec in recs:
        for d in rec["deals"]:
            if not d["tricks"]:
                continue
            n = hand_size(d["number"])
            seats = [SEATS.index(b["seat"]) for b in d["bids"]]
            con = contracts(tuple(zip(seats, [b["bid"] for b in d["bids"]], strict=True)))
            tricks = (d["result"]["tricks"]["NS"], d["result"]["tricks"]["EW"])
            for b in d["bids"]:
                seat = SEATS.index(b["seat"])
                c = stats.setdefault(style[rec["players"][b["seat"]]], Counter())
                c["bids"] += 1
                if b["bid"] == "pass":
                    c["pass"] += 1
                elif b["bid"] == "board":
                    c["board"] += 1
                else:
                    c["number"] += 1
                    c["made"] += made(con.of(seat & 1), tricks[seat & 1], n)
    return stats


def test_bots_bid_boards_pass_out_and_differ(hundred: list[dict[str, Any]]) -> None:
    bids = Counter(
        "board" if b["bid"] == "board" else "pass" if b["bid"] == "pass" else "number"
        for rec in hundred
        for d in rec["deals"]
        for b in d["bids"]
    )
    pass_outs = sum(1 for rec in hundred for d in rec["deals"] if not d["tricks"])
    double_boards = sum(1 for rec in hundred for d in rec["deals"] if sum(b["bid"] == "board" for b in d["bids"]) >= 2)
    assert bids["board"] > 20
    assert bids["number"] > bids["pass"] > bids["board"]
    assert pass_outs > 20
    assert double_boards > 0

    stats = _style_stats(hundred)
    assert set(stats) == {"cautious", "bold", "erratic"}
    rate = {k: v["made"] / v["number"] for k, v in stats.items()}
    board = {k: v["board"] / v["bids"] for k, v in stats.items()}
    passes = {k: v["pass"] / v["bids"] for k, v in stats.items()}
    # Cautious players make their numeric contracts far more often than bold ones ...
    assert rate["cautious"] > rate["bold"] + 0.15
    # ... bold ones claim board more and pass less.
    assert board["bold"] > 2 * board["cautious"]
    assert passes["bold"] < passes["cautious"] / 2


# --- injected faults ------------------------------------------------------------------------------


def _inject(code: str, seed: int) -> bytes:
    """A faulty line for ``code`` from the first game of ``seed`` that has a place for it."""
    rng = random.Random(seed)
    pool = player_pool(12)
    for i in range(20):
        rec = make_record(f"t-{seed}-{i}", random.Random(seed * 1000 + i), pool, i)
        before = dumps(rec)
        if code == "JSON":
            bad_line = corrupt_json(before, rng)
            return bad_line.encode()
        bad = inject_fault(rec, code, rng)
        assert dumps(rec) == before, "inject_fault changed its input"
        if bad is not None:
            return orjson.dumps(bad)
    raise AssertionError(f"no place for {code} in 20 games of seed {seed}")


def documented_codes(doc: str = (DOCS / "record-format.md").read_text(encoding="utf-8")) -> list[str]:
    """The codes of the "Violations" table of docs/record-format.md, in its order."""
    section = doc.split("\n## Violations\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `([A-Z_]+)` \|", section, re.MULTILINE)


def test_fault_codes_are_the_documented_record_codes() -> None:
    # Every code the format documents can be given to a record on purpose, but a score sheet's and TOO_MANY.
    assert list(FAULT_CODES) == [c for c in documented_codes() if c not in (*SHEET_CODES, TOO_MANY)]


def test_the_documented_codes_come_from_the_table_alone() -> None:
    doc = "## Violations\n| code |\n|---|\n| `JSON` | error |\n| `TOO_MANY` | x |\n## Next\n| `SCHEMA` | error |\n"
    assert documented_codes("intro\n" + doc) == ["JSON", "TOO_MANY"]


@pytest.mark.parametrize("code", FAULT_CODES)
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(min_value=0, max_value=2**31))
def test_injected_fault_is_reported(code: str, seed: int) -> None:
    r = check(_inject(code, seed))
    codes = {v.code for v in r.violations}
    assert code in codes, (code, sorted(codes))
    if code == "INCOMPLETE":
        assert r.valid and not r.complete
    else:
        assert not r.valid


def test_inject_fault_json_and_unknown() -> None:
    rec = orjson.loads(next(simulate_games(1, seed=4)))
    assert inject_fault(rec, "JSON", random.Random(1)) is None
    with pytest.raises(ValueError):
        inject_fault(rec, "NOPE", random.Random(1))


# --- the committed sample data ------------------------------------------------------------------


def _lines(path: Path) -> list[bytes]:
    return [item.raw for item in read_file(InputFile(str(path), path, True))]


def test_sample_valid_games() -> None:
    lines = _lines(SAMPLE / "valid-games.jsonl")
    assert len(lines) == 3
    for raw in lines:
        r = check(raw)
        assert r.valid and r.complete and not r.violations


def test_sample_faulty_games_one_code_per_line() -> None:
    lines = _lines(SAMPLE / "faulty-games.jsonl")
    assert len(lines) == len(FAULT_CODES)
    readme = (SAMPLE / "README.md").read_text(encoding="utf-8")
    for k, (code, raw) in enumerate(zip(FAULT_CODES, lines, strict=True), 1):
        codes = {v.code for v in check(raw).violations}
        assert code in codes, (k, code, codes)
        assert f"| {k} | `{code}` |" in readme
        assert code.encode() not in raw  # the record does not name its fault


def test_sample_worked_example() -> None:
    raw = (SAMPLE / "worked-example.json").read_bytes()
    r = check(raw)
    assert r.valid and r.complete and not r.violations
    rec = orjson.loads(raw)
    eleven = [d for d in rec["deals"] if d["number"] == 11]
    assert eleven == [EXAMPLE_DEAL]
    assert rec == worked_example()


def test_sample_bad_inputs() -> None:
    lines = _lines(SAMPLE / "bad-inputs.jsonl")
    raw_lines = (SAMPLE / "bad-inputs.jsonl").read_bytes().split(b"\n")
    assert b"" in raw_lines[:-1]  # a blank line, skipped by the reader
    assert len(lines) == len(BAD_INPUTS) - 1
    codes = [[(v.code, v.path) for v in check(raw).violations] for raw in lines]
    assert codes == [
        [("JSON", "")],
        [("JSON", "")],
        [("JSON", "")],
        [("SCHEMA", "")],
        [("SCHEMA", "/game_id")],
    ]


def test_samples_regenerate_identically(tmp_path: Path) -> None:
    write_samples(tmp_path)
    for name in ("valid-games.jsonl", "faulty-games.jsonl", "worked-example.json", "bad-inputs.jsonl", "README.md"):
        assert (tmp_path / name).read_bytes() == (SAMPLE / name).read_bytes(), name


def test_simulator_example_deal_is_the_spec_example() -> None:
    from backalley.simulate import EXAMPLE_DEAL
    from tests.spec_examples import record_example_deal

    assert record_example_deal() == EXAMPLE_DEAL


def test_ruleset_samples_valid_and_faulty(tmp_path: Path) -> None:
    from backalley.rules import find_ruleset
    from backalley.simulate import SAMPLE_RULESETS, fault_codes, write_ruleset_samples

    made = write_ruleset_samples(tmp_path)
    readme = (SAMPLE / "README.md").read_text(encoding="utf-8")
    for (name, options), (label, codes) in zip(SAMPLE_RULESETS, made, strict=True):
        rules = find_ruleset(name, options)
        for kind in ("valid", "faulty"):
            assert (tmp_path / f"{kind}-{label}.jsonl").read_bytes() == (
                SAMPLE / "rulesets" / f"{kind}-{label}.jsonl"
            ).read_bytes()
        for raw in _lines(SAMPLE / "rulesets" / f"valid-{label}.jsonl"):
            r = check(raw)
            assert r.valid and r.complete and not r.violations
        lines = _lines(SAMPLE / "rulesets" / f"faulty-{label}.jsonl")
        assert len(lines) == len(codes) and set(codes) <= set(fault_codes(rules))
        for code, raw in zip(codes, lines, strict=True):
            assert code in {v.code for v in check(raw).violations}, (label, code)
        assert f"`faulty-{label}.jsonl`" in readme

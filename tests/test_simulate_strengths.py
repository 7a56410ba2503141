"""Bot strengths (backalley.simulate.strength): `simulate --players`, every level's games legal under
every ruleset, and the ratings of a simulated population ordering the levels, intervals and all."""

from __future__ import annotations

import math
import random
import statistics
from pathlib import Path

import duckdb
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from backalley.analysis.ratings import Rating, store_ratings
from backalley.cli.app import app
from backalley.engine import DealState
from backalley.replay import replay
from backalley.rules import STANDARD, Ruleset, all_rulesets
from backalley.simulate import player_pool, simulate_games
from backalley.simulate.bots import NAMES, STYLES, Player
from backalley.simulate.games import play_out
from backalley.simulate.strength import LEVELS, PlayersError, parse_players, playout, strong_bid

runner = CliRunner()
#: Three players of each level; the basic ones first, so that they take the three styles in turn.
POPULATION = "Ann,Bea,Cal,Sam:strong,Sue:strong,Sid:strong,Rex:random,Ray:random,Roy:random"
MIXED = "Ada:random,Bo:basic,Cy:strong,Di:random,Ed:strong,Flo"


@pytest.fixture(scope="module")
def rated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Rating]:
    """The players' ratings of 300 games of the population, simulated and ingested by the CLI."""
    folder = tmp_path_factory.mktemp("strengths")
    games, db = folder / "games.jsonl", folder / "store.duckdb"
    result = runner.invoke(app, ["simulate", "-n", "300", "--seed", "2", "--players", POPULATION, "-o", str(games)])
    assert result.exit_code == 0, result.output
    assert runner.invoke(app, ["ingest", "--db", str(db), "-w", "1", str(games)]).exit_code == 0
    with duckdb.connect(str(db), read_only=True) as con:
        return {r.subject: r for r in store_ratings(con) if r.kind == "player"}


def _group(rated: dict[str, Rating], level: str) -> tuple[float, float]:
    """A level's players: the mean of their μ and its standard error (from their σ)."""
    members = [rated[p.name] for p in parse_players(POPULATION) if p.level == level]
    return statistics.fmean(r.mu for r in members), math.sqrt(sum(r.sigma**2 for r in members)) / len(members)


def test_ratings_recover_the_strengths(rated: dict[str, Rating]) -> None:
    assert len(rated) == 9 and all(r.identifiable and not r.provisional for r in rated.values())
    (weak, weak_se), (basic, basic_se), (strong, strong_se) = (_group(rated, level) for level in LEVELS)
    # The levels in order, each gap wider than two standard errors of the two means.
    assert strong - basic > 2 * math.hypot(strong_se, basic_se), (strong, basic)
    assert basic - weak > 2 * math.hypot(basic_se, weak_se), (basic, weak)
    # Each random player's interval lies below each other player's.
    randoms = [rated[p.name] for p in parse_players(POPULATION) if p.level == "random"]
    others = [r for r in rated.values() if r not in randoms]
    assert max(r.mu + 2 * r.sigma for r in randoms) < min(r.mu - 2 * r.sigma for r in others)


@pytest.mark.parametrize("rules", all_rulesets(), ids=lambda r: r.label())
def test_every_level_plays_legal_games_under_every_ruleset(rules: Ruleset) -> None:
    lines = list(simulate_games(2, seed=11, players=parse_players(MIXED), rules=rules))
    for line in lines:
        r = replay(orjson.loads(line))
        assert r.valid and r.complete and not r.violations, [(v.code, v.message) for v in r.violations]


@settings(max_examples=30, deadline=None)
@given(
    rules=st.sampled_from(all_rulesets()),
    levels=st.lists(st.sampled_from(LEVELS), min_size=4, max_size=7),
    seed=st.integers(0, 2**32),
)
def test_any_mix_of_levels_plays_legal_games(rules: Ruleset, levels: list[str], seed: int) -> None:
    players = parse_players(",".join(f"p{k}:{level}" for k, level in enumerate(levels)))
    for line in simulate_games(1, seed=seed, players=players, rules=rules):
        r = replay(orjson.loads(line))
        assert r.valid and r.complete and not r.violations, [(v.code, v.message) for v in r.violations]


def test_named_basic_players_are_the_default_pool() -> None:
    names = ",".join(NAMES[:12])
    assert parse_players(names) == player_pool(12)
    assert list(simulate_games(3, seed=7, players=parse_players(names))) == list(simulate_games(3, seed=7))


def test_levels_and_styles_of_the_list() -> None:
    players = parse_players(" Ada:strong , Bo:random,Cy , Di:basic,Ed")
    assert [(p.name, p.level) for p in players] == [
        ("Ada", "strong"),
        ("Bo", "random"),
        ("Cy", "basic"),
        ("Di", "basic"),
        ("Ed", "basic"),
    ]
    assert [p.style for p in players] == [*STYLES, *STYLES[:2]]
    assert parse_players("a:b:strong,c,d,e")[0] == Player("a:b", STYLES[0], "strong")


@pytest.mark.parametrize(
    ("players", "message"),
    [
        (
            "Ada:strong,Bo:weak,Cy,Di",
            "player 2 ('Bo:weak'): unknown level 'weak'; the levels are random, basic, strong",
        ),
        ("Ada,,Cy,Di", "player 2 (''): the name is empty"),
        ("Ada,:strong,Cy,Di", "player 2 (':strong'): the name is empty"),
        ("Ada,Bo,Ada,Di", "player 3 ('Ada'): 'Ada' is named twice"),
        ("Ada,Bo,Cy", "3 players; a game needs at least 4"),
        ("Ada,Bo,Cy,D\x01i", "player 4 ('D\\x01i'): a player id is 1-64 characters"),
        ("Ada,Bo,Cy," + "x" * 65, "player 4"),
        ("Ada,Bo,Cy," + "x" * 5000, "player 4 ('" + "x" * 80 + "…'): a player id is 1-64 characters"),
        ("Café,Bo,Cy,Cafe\u0301", "player 4 ('Cafe\u0301'): 'Cafe\u0301' is named twice"),  # one id in NFC
        (",".join(f"p{k}" for k in range(1001)), "1001 players; at most 1000"),
    ],
)
def test_a_bad_list_is_refused_naming_the_entry(players: str, message: str) -> None:
    with pytest.raises(PlayersError) as caught:
        parse_players(players)
    assert message in str(caught.value) and len(str(caught.value)) < 200


@pytest.mark.parametrize(
    ("players", "message"),
    [
        ("Ada:strong,Bo:weak,Cy,Di", "--players: player 2 ('Bo:weak'): unknown level 'weak'"),
        ("3", "--players 3: a pool of 4 to 1000 players"),
        ("123456789", "--players 123456789: a pool of 4 to 1000 players"),
        ("[red]Ada[/],Bo,Cy,Cy", "--players: player 4 ('Cy'): 'Cy' is named twice"),
        ("[b]x[/b]:mega,Bo,Cy,Di", "player 1 ('[b]x[/b]:mega'): unknown level 'mega'"),
    ],
)
def test_cli_refuses_a_bad_list_with_exit_2(tmp_path: Path, players: str, message: str) -> None:
    out = tmp_path / "games.jsonl"
    result = runner.invoke(app, ["simulate", "-n", "2", "--players", players, "-o", str(out)])
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit), result.output
    assert message in " ".join(result.output.split()), result.output
    assert "Traceback" not in result.output and not out.exists()


def test_cli_seats_the_named_players(tmp_path: Path) -> None:
    out = tmp_path / "games.jsonl"
    result = runner.invoke(app, ["simulate", "-n", "30", "--seed", "4", "--players", MIXED, "-o", str(out)])
    assert result.exit_code == 0, result.output
    games = [orjson.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    seated = [set(g["players"].values()) for g in games]
    names = {p.name for p in parse_players(MIXED)}
    assert set().union(*seated) == names and all(len(s) == 4 <= len(names) for s in seated)
    partners = {
        n: {g["players"][b] for g in games for a, b in ("NS", "SN", "EW", "WE") if g["players"][a] == n} for n in names
    }
    assert all(len(p) >= 3 for p in partners.values())  # enough partners for an individual rating


def _deal(seed: int, number: int) -> DealState:
    deck = list(range(54))
    random.Random(seed).shuffle(deck)
    return DealState.from_deck(number, 0, deck, STANDARD)


def test_strong_bids_the_tricks_its_play_out_takes() -> None:
    """The first strong call is within a trick of the play-out's; four strong players then score
    for their contracts at least four times in five."""
    scored = deals = 0
    seated = [Player(f"p{k}", STYLES[0], "strong") for k in range(4)]
    for seed in range(60):
        deal = _deal(seed, 1 + seed % 25)
        won = playout(deal)
        bid = strong_bid(deal, STYLES[0], random.Random(0))
        if isinstance(bid, int):
            assert abs(bid - won[deal.to_act()]) <= 1, (seed, bid, won)
        while deal.bidding:
            deal.bid(strong_bid(deal, STYLES[0], random.Random(0)))
        if deal.pass_out:
            continue
        play_out(deal, seated, random.Random(0))
        deals += 1
        scored += sum(p > 0 for p in deal.points())
    assert deals > 40 and scored > 0.8 * 2 * deals

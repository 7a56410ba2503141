"""A tiny store with the contract's shape (docs/contract-views.md), from hand-made deals.

Used by the report tests (whose expected figures are worked out by hand from
the deals below).  The deals follow docs/rules.md: team contracts, board
multipliers and points are worked out here from the bids and each player's
tricks, apart from the rulesets on purpose (an independent statement of
``standard``'s scoring for the tests, not shipped in the package).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

SEATS = ("N", "E", "S", "W")
TEAM = {"N": "NS", "S": "NS", "E": "EW", "W": "EW"}
PARTNER = {"N": "S", "S": "N", "E": "W", "W": "E"}

XSS = "<script>alert(1)</script>"
DOTS = "../../etc"


@dataclass(frozen=True)
class Deal:
    number: int
    hand_size: int
    trump: str | None  # None: no trump
    dealer: str
    bids: dict[str, int | str]  # seat -> 'pass' | 'board' | number
    tricks: dict[str, int]  # seat -> tricks won personally


@dataclass(frozen=True)
class Game:
    game_id: str
    event: str
    played_at: str
    players: dict[str, str]  # seat -> player
    status: str
    deals: tuple[Deal, ...] = ()


def _order(dealer: str) -> list[str]:
    i = SEATS.index(dealer)
    return [SEATS[(i + k) % 4] for k in range(1, 5)]


def _team_contract(d: Deal, team: str, levels: dict[str, int]) -> tuple[str, int | None, int | None]:
    members = [s for s in SEATS if TEAM[s] == team]
    boards = [levels[s] for s in members if s in levels]
    if boards:
        return "board", None, max(boards)
    return "number", sum(int(d.bids[s]) if d.bids[s] != "pass" else 0 for s in members), None


def _points(kind: str, contract: int | None, level: int | None, tricks: int, n: int) -> tuple[int, bool]:
    if kind == "board":
        assert level is not None
        return (10 * n * level, True) if tricks == n else (-10 * n * level, False)
    assert contract is not None
    if tricks >= contract:
        return 5 * contract + (tricks - contract), True
    return -5 * contract, False


def deal_rows(g: Game, index: int, d: Deal) -> list[dict[str, Any]]:
    order = _order(d.dealer)
    levels: dict[str, int] = {}
    for seat in order:
        if d.bids[seat] == "board":
            levels[seat] = len(levels) + 1
    team_tricks = {t: sum(d.tricks[s] for s in SEATS if TEAM[s] == t) for t in ("NS", "EW")}
    assert sum(team_tricks.values()) == d.hand_size, (g.game_id, d.number)
    contract = {t: _team_contract(d, t, levels) for t in ("NS", "EW")}
    result = {t: _points(*contract[t], team_tricks[t], d.hand_size) for t in ("NS", "EW")}
    rows = []
    for seat in SEATS:
        team = TEAM[seat]
        opp = "EW" if team == "NS" else "NS"
        bid = d.bids[seat]
        kind = "board" if bid == "board" else "pass" if bid == "pass" else "number"
        rows.append(
            {
                "game_id": g.game_id,
                "event": g.event,
                "played_at": g.played_at,
                "deal_index": index,
                "deal_number": d.number,
                "hand_size": d.hand_size,
                "trump_suit": d.trump,
                "no_trump": d.trump is None,
                "player": g.players[seat],
                "seat": seat,
                "partner": g.players[PARTNER[seat]],
                "team": team,
                "bid_position": order.index(seat) + 1,
                "bid_kind": kind,
                "bid_value": None if kind == "board" else 0 if kind == "pass" else int(bid),
                "board_level": levels.get(seat),
                "tricks_won": d.tricks[seat],
                "team_contract_kind": contract[team][0],
                "team_contract": contract[team][1],
                "team_board_level": contract[team][2],
                "team_tricks": team_tricks[team],
                "team_points": result[team][0],
                "team_made": result[team][1],
                "opp_contract_kind": contract[opp][0],
                "opp_board_level": contract[opp][2],
                "opp_made": result[opp][1],
            }
        )
    return rows


_PD_SCHEMA = """
    game_id VARCHAR, event VARCHAR, played_at TIMESTAMPTZ, deal_index INTEGER, deal_number INTEGER,
    hand_size INTEGER, trump_suit VARCHAR, no_trump BOOLEAN, player VARCHAR, seat VARCHAR, partner VARCHAR,
    team VARCHAR, bid_position INTEGER, bid_kind VARCHAR, bid_value INTEGER, board_level INTEGER,
    tricks_won INTEGER, team_contract_kind VARCHAR, team_contract INTEGER, team_board_level INTEGER,
    team_tricks INTEGER, team_points INTEGER, team_made BOOLEAN, opp_contract_kind VARCHAR,
    opp_board_level INTEGER, opp_made BOOLEAN
"""


def build_store(
    path: Path, games: list[Game], violations: list[tuple[str, str, str, str | None]], rejects: int
) -> None:
    """Write a contract-shaped DuckDB file: tables games, violations, rejects; views player_deals, player_summary."""
    con = duckdb.connect(str(path))
    try:
        con.execute("""
            CREATE TABLE games (game_id VARCHAR PRIMARY KEY, event VARCHAR, played_at TIMESTAMPTZ,
                player_n VARCHAR, player_e VARCHAR, player_s VARCHAR, player_w VARCHAR, valid BOOLEAN,
                complete BOOLEAN, status VARCHAR, score_ns INTEGER, score_ew INTEGER, winner VARCHAR,
                ingested_at TIMESTAMPTZ DEFAULT now())
        """)
        con.execute("""CREATE TABLE violations (game_id VARCHAR, code VARCHAR, severity VARCHAR, message VARCHAR,
                path VARCHAR, deal INTEGER, trick INTEGER, seat VARCHAR)""")
        con.execute("""CREATE TABLE rejects (source VARCHAR, line INTEGER, reason VARCHAR, message VARCHAR,
                raw VARCHAR, rejected_at TIMESTAMPTZ DEFAULT now())""")
        con.execute(f"CREATE TABLE player_deals_t ({_PD_SCHEMA})")
        con.execute("CREATE VIEW player_deals AS SELECT * FROM player_deals_t")
        cols = [c.split()[0] for c in _PD_SCHEMA.replace("\n", " ").split(",")]
        for g in games:
            rows = [r for i, d in enumerate(g.deals, 1) for r in deal_rows(g, i, d)]
            ns = sum(r["team_points"] for r in rows if r["seat"] == "N")
            ew = sum(r["team_points"] for r in rows if r["seat"] == "E")
            scored = g.status in ("valid", "incomplete")
            winner = None if not scored else "NS" if ns > ew else "EW" if ew > ns else "tie"
            con.execute(
                "INSERT INTO games (game_id, event, played_at, player_n, player_e, player_s, player_w, valid, complete,"
                " status, score_ns, score_ew, winner) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    g.game_id,
                    g.event,
                    g.played_at,
                    *(g.players[s] for s in SEATS),
                    scored,
                    g.status == "valid",
                    g.status,
                    ns if scored else None,
                    ew if scored else None,
                    winner,
                ],
            )
            if g.status == "valid":
                for r in rows:
                    con.execute(
                        f"INSERT INTO player_deals_t VALUES ({', '.join('?' * len(cols))})", [r[c] for c in cols]
                    )
        for game_id, code, severity, seat in violations:
            con.execute(
                "INSERT INTO violations VALUES (?, ?, ?, ?, ?, NULL, NULL, ?)",
                [game_id, code, severity, code, "/", seat],
            )
        for i in range(rejects):
            con.execute(
                "INSERT INTO rejects (source, line, reason, message, raw) VALUES (?, ?, 'json', 'not JSON', '{')",
                ["sample.jsonl", i + 1],
            )
        con.execute("""
            CREATE VIEW player_summary AS
            SELECT player, count(DISTINCT game_id) AS games, count(*) AS deals,
                   count(*) FILTER (WHERE bid_kind <> 'board') AS numeric_bids,
                   count(*) FILTER (WHERE bid_kind <> 'board' AND tricks_won = bid_value) AS exact_bids,
                   NULL::DOUBLE AS exact_rate, NULL::DOUBLE AS mean_abs_error, NULL::DOUBLE AS mean_signed_error,
                   count(*) FILTER (WHERE bid_kind = 'board') AS boards_claimed,
                   count(*) FILTER (WHERE bid_kind = 'board' AND team_made) AS boards_made,
                   NULL::DOUBLE AS board_success_rate, NULL::DOUBLE AS team_made_rate,
                   avg(team_points) AS points_per_deal, NULL::BIGINT AS games_won
            FROM player_deals GROUP BY player
        """)
    finally:
        con.close()


def hand_made() -> tuple[list[Game], list[tuple[str, str, str]], int]:
    """The games behind the report tests; docs in tests/test_report.py work the figures out by hand."""
    g1 = Game(
        "G1",
        "club",
        "2026-01-10 19:00:00+00",
        {"N": "alice", "E": "bob", "S": "carol", "W": XSS},
        "valid",
        (
            Deal(1, 3, "H", "N", {"E": "pass", "S": 1, "W": "board", "N": 2}, {"N": 0, "E": 1, "S": 0, "W": 2}),
            Deal(2, 2, None, "E", {"S": 1, "W": "pass", "N": "pass", "E": 1}, {"N": 0, "E": 1, "S": 1, "W": 0}),
            Deal(3, 4, "S", "S", {"W": 1, "N": "board", "E": "board", "S": 1}, {"N": 2, "E": 0, "S": 1, "W": 1}),
        ),
    )
    g2 = Game(
        "G2",
        "cup",
        "2026-01-11 19:00:00+00",
        {"N": "alice", "E": DOTS, "S": "carol", "W": "bob"},
        "valid",
        (
            Deal(1, 5, "D", "W", {"N": 2, "E": 1, "S": 2, "W": "board"}, {"N": 0, "E": 1, "S": 0, "W": 4}),
            Deal(2, 5, "C", "N", {"E": "pass", "S": 3, "W": 1, "N": 1}, {"N": 3, "E": 0, "S": 2, "W": 0}),
        ),
    )
    g3 = Game("G3", "club", "2026-01-12 19:00:00+00", {"N": "alice", "E": "bob", "S": "dave", "W": "erin"}, "invalid")
    g4 = Game(
        "G4", "club", "2026-01-13 19:00:00+00", {"N": "alice", "E": "bob", "S": "carol", "W": "dave"}, "incomplete"
    )
    violations = [  # (game, code, severity, the seat that made it: none for a game-level finding)
        ("G3", "REVOKE", "error", "E"),  # bob
        ("G3", "REVOKE", "error", "W"),  # erin
        ("G3", "LEADER", "error", "N"),  # alice
        ("G4", "INCOMPLETE", "warning", None),
    ]
    return [g1, g2, g3, g4], violations, 1


def build_hand_made(path: Path) -> None:
    build_store(path, *hand_made())

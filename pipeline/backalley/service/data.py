"""What the pages, the API and ``backalley show`` say about a stored game, a deal and a player.

Everything is read from the store: the recomputed figures from the tables, and
the deal as recorded (hands, bids, plays) from the record's raw text, which is
kept for every stored game. A record may be stored although it does not fit the
format (a ``SCHEMA`` error), so the raw text is read defensively: whatever is
not where the format puts it is shown as missing.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec
import orjson

from backalley.analysis.ratings import player_ratings
from backalley.cards import SEATS
from backalley.records.sources import dumps, parse
from backalley.rules import PLAIN
from backalley.store.outcomes import GameFigures, among_ids, games_figures, page_sides

if TYPE_CHECKING:  # only for annotations: the workers compute pages without a database
    import duckdb

#: The columns of ``games``, ``deals`` and ``violations`` a game's page shows.
GAME_COLUMNS = (
    *("game_id", "source", "line", "ingested_at", "ruleset", "played_at", "event"),
    *("player_n", "player_e", "player_s", "player_w", "valid", "complete", "status", "dealings", "scored_deals"),
    *("pass_outs", "errors", "warnings", "score_ns", "score_ew", "recorded_score_ns", "recorded_score_ew", "winner"),
)
DEAL_COLUMNS = (
    *("deal", "number", "hand_size", "dealer", "trump_card", "trump_suit", "no_trump", "joker_swap_seat"),
    *("joker_swap_drawn", "pass_out", "ns_contract_kind", "ns_contract", "ns_board_level", "ew_contract_kind"),
    *("ew_contract", "ew_board_level", "tricks_ns", "tricks_ew", "points_ns", "points_ew", "ns_made", "ew_made"),
    *("recorded_tricks_ns", "recorded_tricks_ew", "recorded_points_ns", "recorded_points_ew"),
)
VIOLATION_COLUMNS = ("ordinal", "code", "severity", "message", "path", "deal", "trick", "seat")
#: A violation's path down to one card of a trick: /deals/<d>/tricks/<t>/cards/<k>.
_CARD_PATH = re.compile(r"^/deals/(\d+)/tricks/(\d+)/cards/(\d+)$")
SUIT_SYMBOLS = {"S": "♠", "H": "♥", "D": "♦", "C": "♣"}


def card_text(card: Any) -> str:
    """A card for people: ``10♥``, ``A♠``, ``LJ``; anything that is not a card name, as it is."""
    name = card if isinstance(card, str) else dumps(card).decode()
    if len(name) == 2 and name[1] in SUIT_SYMBOLS and name[0] in "23456789TJQKA":
        return ("10" if name[0] == "T" else name[0]) + SUIT_SYMBOLS[name[1]]
    return name


def card_color(card: Any) -> str:
    """``red``, ``black`` or ``joker``: how a card is drawn."""
    if isinstance(card, str) and len(card) == 2 and card[1] in "HD":
        return "red"
    return "joker" if card in ("LJ", "BJ") else "black"


def _rows(cur: duckdb.DuckDBPyConnection, sql: str, params: list[Any]) -> list[dict[str, Any]]:
    rel = cur.execute(sql, params)
    names = [d[0] for d in rel.description or []]
    return [dict(zip(names, row, strict=True)) for row in rel.fetchall()]


def _json_safe(row: dict[str, Any]) -> dict[str, Any]:
    return {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in row.items()}


#: ``text(cur, game_id)``: a stored game's raw text; ``None`` when the game is not stored.
RecordText = Callable[["duckdb.DuckDBPyConnection", str], "bytes | None"]


def record_text(cur: duckdb.DuckDBPyConnection, game_id: str) -> bytes | None:
    """A stored game's raw text, read from the store."""
    row = cur.execute("SELECT raw FROM games WHERE game_id = ?", [game_id]).fetchall()
    return str(row[0][0]).encode("utf-8") if row else None


def game(cur: duckdb.DuckDBPyConnection, game_id: str, text: RecordText = record_text) -> dict[str, Any] | None:
    """A stored game: its row, its deals and its violations; ``None`` when it is not stored.

    ``text`` gives the game's raw text (a cache may stand in for the store).
    """
    return games(cur, [game_id], text).get(game_id)


def games(
    cur: duckdb.DuckDBPyConnection, game_ids: list[str], text: RecordText = record_text
) -> dict[str, dict[str, Any]]:
    """:func:`game` of each of ``game_ids`` that is stored, read together (a query per table for them all)."""
    ids = list(dict.fromkeys(game_ids))
    if not ids:
        return {}
    among = among_ids(ids)
    rows = cur.execute(f"SELECT {', '.join(GAME_COLUMNS)} FROM games WHERE {among}", ids).fetchall()
    # Each game's deal rows as one JSON array built by DuckDB (no column of deals is a date or time):
    # building the rows' dicts in Python cost more than all the queries.
    deals = f"to_json(list(struct_pack({', '.join(DEAL_COLUMNS)}) ORDER BY deal))"
    deal_rows = cur.execute(f"SELECT game_id, {deals} FROM deals WHERE {among} GROUP BY game_id", ids).fetchall()
    found = cur.execute(
        f"SELECT game_id, {', '.join(VIOLATION_COLUMNS)} FROM violations WHERE {among} ORDER BY ordinal", ids
    ).fetchall()
    figures = games_figures(cur, [r[0] for r in rows])  # by side: two teams, or four seats without partnerships
    return games_from_rows(
        rows,
        {gid: orjson.loads(d) for gid, d in deal_rows},
        found,
        figures,
        lambda gid: _deal_count(cur, gid, text),
    )


def games_from_rows(
    rows: list[tuple[Any, ...]],
    deals: dict[str, list[dict[str, Any]]],
    found: list[tuple[Any, ...]],
    figures: dict[str, GameFigures],
    deal_count: Callable[[str], int],
) -> dict[str, dict[str, Any]]:
    """What :func:`game` says of each game, from its rows however they were read: ``games``
    (:data:`GAME_COLUMNS`), its ``deals`` as dicts (:data:`DEAL_COLUMNS`, in order), ``violations``
    (``game_id`` and :data:`VIOLATION_COLUMNS`, in order), its figures and its number of recorded deals."""
    out: dict[str, dict[str, Any]] = {}
    for row in rows:
        g = _json_safe(dict(zip(GAME_COLUMNS, row, strict=True)))
        g["players"] = {s: g.pop(f"player_{s.lower()}") for s in SEATS}
        g["deals"], g["violations"] = deals.get(g["game_id"], []), []
        out[g["game_id"]] = g
    for gid, *v in found:
        out[gid]["violations"].append(dict(zip(VIOLATION_COLUMNS, v, strict=True)))
    for gid, g in out.items():
        g["deal_count"] = deal_count(gid)
        g["by_side"] = page_sides(figures[gid]) if gid in figures else None
    return out


def violations(cur: duckdb.DuckDBPyConnection, game_id: str) -> list[dict[str, Any]]:
    """A stored game's violations in report order (``backalley show`` lists them)."""
    return _rows(
        cur, f"SELECT {', '.join(VIOLATION_COLUMNS)} FROM violations WHERE game_id = ? ORDER BY ordinal", [game_id]
    )


def _raw_deals(cur: duckdb.DuckDBPyConnection, game_id: str, text: RecordText) -> list[Any] | None:
    """The record's ``deals`` as recorded (``[]`` when it has none); ``None`` for a game not stored."""
    raw = text(cur, game_id)
    return None if raw is None else _recorded_deals(raw)


def _recorded_deals(raw: bytes) -> list[Any]:
    rec, _ = parse(raw)  # as ingest read it: integers of any size are JSON
    deals = rec.get("deals") if isinstance(rec, dict) else None
    return deals if isinstance(deals, list) else []


class _DealsOnly(msgspec.Struct):
    deals: list[msgspec.Raw] = []


_DEALS_ONLY = msgspec.json.Decoder(_DealsOnly)


def _deal_count(cur: duckdb.DuckDBPyConnection, game_id: str, text: RecordText) -> int:
    """``len(_raw_deals(...) or [])`` without building the deals (:func:`deal_count`)."""
    raw = text(cur, game_id)
    return 0 if raw is None else deal_count(raw)


def deal_count(raw: bytes) -> int:
    """How many deals a record's text holds, as the deal viewer reads them: msgspec only skips over them."""
    try:
        return len(_DEALS_ONLY.decode(raw).deals)
    except msgspec.MsgspecError:  # not an object, or deals not a list, or not JSON: as _raw_deals says
        return len(_recorded_deals(raw))


@dataclass
class Play:
    seat: str
    player: str | None
    card: str
    faults: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Trick:
    number: int
    leader: str
    plays: list[Play]
    winner: str | None
    winner_player: str | None
    #: Violations of this trick not tied to one card (a wrong leader, a missing card).
    faults: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class DealView:
    game_id: str
    n: int
    deal_count: int
    players: dict[str, str | None]
    number: Any
    dealer: str
    trump_card: str
    joker_swap: dict[str, str] | None
    hands: list[dict[str, Any]]
    bids: list[dict[str, Any]]
    tricks: list[Trick]
    #: The recomputed figures (``None`` when the deal could not be replayed).
    result: dict[str, Any] | None
    #: The running score after this deal (recomputed), by side.
    score: dict[str, int] | None
    violations: list[dict[str, Any]]
    #: The trump in words (``♥``, ``no trump``, ``♠ named by N``); ``None`` when not replayed.
    trump: str | None = None
    #: Each side's contract, tricks and points (two teams, or four seats without partnerships).
    sides: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _text(v: Any) -> str:
    return v if isinstance(v, str) else ("" if v is None else dumps(v).decode())


def _seat_map(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


#: ``game_of(cur, game_id)``: what :func:`game` says of a stored game (a cache may stand in for it).
GameOf = Callable[["duckdb.DuckDBPyConnection", str], "dict[str, Any] | None"]


def deal(
    cur: duckdb.DuckDBPyConnection,
    game_id: str,
    n: int,
    text: RecordText = record_text,
    game_of: GameOf | None = None,
    winners_of: WinnersOf | None = None,
) -> DealView | None:
    """Deal ``n`` (1-based position in the record's ``deals``) of a stored game; ``None`` if there is none.

    The game's players, deal rows and violations come from ``game_of`` (by default :func:`game`), its
    trick winners from ``winners_of`` (by default :func:`trick_winners`).
    """
    found_game = game_of(cur, game_id) if game_of is not None else game(cur, game_id, text)
    raw = _raw_deals(cur, game_id, text) if found_game is not None else None
    if raw is None or found_game is None or not 1 <= n <= len(raw):
        return None
    g: dict[str, str | None] = found_game["players"]
    rows: list[dict[str, Any]] = found_game["deals"]
    d = raw[n - 1] if isinstance(raw[n - 1], dict) else {}
    found = [v for v in found_game["violations"] if v["deal"] == n]
    winners = winners_of(cur, game_id) if winners_of is not None else trick_winners(cur, [game_id])[game_id]
    swap = _seat_map(d.get("joker_swap"))
    hands = _seat_map(d.get("hands"))
    return DealView(
        game_id=game_id,
        n=n,
        deal_count=len(raw),
        players=g,
        number=d.get("number"),
        dealer=_text(d.get("dealer")),
        trump_card=_text(d.get("trump_card")),
        joker_swap={"seat": _text(swap.get("seat")), "drawn": _text(swap.get("drawn"))} if swap else None,
        hands=[
            {
                "seat": s,
                "player": g.get(s),
                "cards": [_text(c) for c in hands.get(s, [])] if isinstance(hands.get(s), list) else [],
            }
            for s in SEATS
        ],
        bids=_bids(d, g, n, found),
        tricks=_tricks(n, d, g, found, winners),
        result=next((r for r in rows if r["deal"] == n), None),
        score=_score(found_game.get("by_side"), n),
        violations=found,
        **_by_side(found_game.get("by_side"), n),
    )


def _by_side(by_side: dict[str, Any] | None, n: int) -> dict[str, Any]:
    line = next((d for d in (by_side or {}).get("deals", []) if d["deal"] == n), None)
    return {"trump": line["trump"], "sides": line["sides"]} if line else {}


def _bids(
    d: dict[str, Any], players: dict[str, str | None], n: int, found: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The bids in order, each with the violations whose path points into it."""
    out = []
    for k, b in enumerate(_list(d.get("bids"))):
        seat = _text(_seat_map(b).get("seat"))
        prefix = f"/deals/{n - 1}/bids/{k}"
        faults = [v for v in found if v["path"] == prefix or (v["path"] or "").startswith(prefix + "/")]
        out.append({"seat": seat, "player": players.get(seat), "bid": _text(_seat_map(b).get("bid")), "faults": faults})
    return out


#: The winner of each replayed trick of a game, by ``(deal, trick)``.
Winners = dict[tuple[int, int], str]
#: ``winners_of(cur, game_id)``: a stored game's :data:`Winners` (a cache may stand in for the store).
WinnersOf = Callable[["duckdb.DuckDBPyConnection", str], Winners]


def winners_json(winners: Winners) -> bytes:
    """:data:`Winners` as the service caches them: ``[[deal, trick, winner], ...]``."""
    return orjson.dumps([[d, t, w] for (d, t), w in winners.items()])


def trick_winners(cur: duckdb.DuckDBPyConnection, game_ids: list[str]) -> dict[str, Winners]:
    """The :data:`Winners` of each of ``game_ids`` (empty for a game not stored or without tricks)."""
    out: dict[str, Winners] = {gid: {} for gid in game_ids}
    if not out:
        return out
    rows = cur.execute(
        f"SELECT game_id, deal, trick, winner FROM tricks WHERE {among_ids(list(out))}", list(out)
    ).fetchall()
    for gid, deal_n, trick, winner in rows:
        out[gid][(deal_n, trick)] = winner
    return out


def _tricks(
    n: int,
    d: dict[str, Any],
    players: dict[str, str | None],
    found: list[dict[str, Any]],
    winners: Winners,
) -> list[Trick]:
    recorded = _list(d.get("tricks"))
    out: list[Trick] = []
    for t, trick in enumerate(recorded, 1):
        trick = _seat_map(trick)
        leader = _text(trick.get("leader"))
        cards = _list(trick.get("cards"))
        start = SEATS.index(leader) if leader in SEATS else 0
        plays = [
            Play(SEATS[(start + k) % 4], players.get(SEATS[(start + k) % 4]), _text(c)) for k, c in enumerate(cards)
        ]
        winner = winners.get((n, t))
        out.append(Trick(t, leader, plays, winner, players.get(winner) if winner else None))
    for v in found:
        m = _CARD_PATH.match(v["path"] or "")
        if (
            m
            and int(m.group(1)) == n - 1
            and int(m.group(2)) < len(out)
            and int(m.group(3)) < len(out[int(m.group(2))].plays)
        ):
            out[int(m.group(2))].plays[int(m.group(3))].faults.append(v)
        elif v["trick"] is not None and 1 <= v["trick"] <= len(out):
            out[v["trick"] - 1].faults.append(v)
    return out


def _score(by_side: dict[str, Any] | None, n: int) -> dict[str, int] | None:
    """The running score of every side after deal ``n`` (the deals' points summed, as SQL's ``sum`` skips nulls)."""
    if not by_side:
        return None
    totals: dict[str, int] = {}
    for line in by_side["deals"]:
        for r in line["sides"] if line["deal"] <= n else []:
            if r["points"] is not None:
                totals[r["side"]] = totals.get(r["side"], 0) + int(r["points"])
    return {side: totals[side] for side in by_side["sides"] if side in totals} or None


def player(cur: duckdb.DuckDBPyConnection, player_id: str) -> dict[str, Any] | None:
    """A player's figures (the ``player_summary`` view) and games; ``None`` for an unknown player."""
    summary = _rows(  # one row per ruleset and options: plain standard's first
        cur,
        f"SELECT * FROM player_summary WHERE player = ? ORDER BY ruleset <> '{PLAIN.name}', options <> '', ruleset, options",
        [player_id],
    )
    games = _rows(
        cur,
        "SELECT DISTINCT game_id, status, played_at, event FROM ("
        " SELECT game_id, status, played_at, event, unnest([player_n, player_e, player_s, player_w]) AS p FROM games"
        ") WHERE p = ? ORDER BY played_at NULLS LAST, game_id",
        [player_id],
    )
    if not summary and not games:
        return None
    return {
        "player": player_id,
        "summary": _json_safe(summary[0]) if summary else None,
        "ratings": [r.as_dict() for r in player_ratings(cur, player_id)],
        "games": [_json_safe(g) for g in games],
    }

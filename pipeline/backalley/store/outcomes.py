"""Every ruleset's figures of a stored game and deal, side by side: what ``backalley show`` prints.

The teams' columns of ``games`` and ``deals`` (``score_ns``, ``tricks_ew``, …)
are NULL in a game without partnerships and say nothing of declarations,
multipliers, bore levels, named trump or rainbows.  This module reads the
per-side tables (``game_sides``, ``deal_sides``), the ``bids`` table and the
deal's trump columns instead, so one code path serves every ruleset and option
set.  It reads the store only (no rendering, no service): the service's pages
can ask it the same questions.  The order of the sides and whether trump is
named are asked of the game's ruleset.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from backalley.cards import SEATS, TEAMS
from backalley.rules import RulesetError, find_ruleset
from backalley.store.rows import GAME_SIDE_FIELDS, SIDE_INTS

if TYPE_CHECKING:  # only for annotations: the workers compute pages without a database
    import duckdb


@dataclass(slots=True)
class SideResult:
    """One side's line of ``deal_sides``: its contract, tricks and points in one dealing."""

    side: str
    #: ``number``, ``board``, ``declaration``, ``none`` (a pereulok side that did not declare); ``None``: pass-out.
    contract_kind: str | None
    contract: int | None
    multiplier: int | None
    board_level: int | None
    tricks: int
    points: int | None
    made: bool | None
    recorded_tricks: int | None
    recorded_points: int | None


@dataclass(slots=True)
class DealLine:
    """One dealing of a stored game: how trump was fixed and every side's result."""

    deal: int
    number: int
    hand_size: int
    dealer: str
    #: The turned card (``None`` where none is turned: pereulok, ``spades_trump``, no card left).
    trump_card: str | None
    #: The trump the replay used (``S`` … ``C``), ``None`` for no trump.
    trump_suit: str | None
    #: Whether the trump suit was named by the declarer (pereulok without ``spades_trump``).
    trump_named: bool
    pass_out: bool
    #: The seat that leads trick 1 by the bids (pereulok: the declarer who named trump).
    opening_leader: str | None
    sides: list[SideResult]


@dataclass(slots=True)
class BidLine:
    """One call of the ``bids`` table, with what it asks for."""

    position: int
    seat: str
    player: str | None
    #: ``pass``, ``number``, ``board`` (a board claim or a bab-online bore) or ``declaration``.
    kind: str
    value: int | None
    board_level: int | None
    multiplier: int | None
    side: str | None
    #: bab-online: the bidder's hand as dealt earned the rainbow bonus (``None`` elsewhere).
    rainbow: bool | None


@dataclass(slots=True)
class GameFigures:
    """A stored game: its ruleset, options, sides, recomputed and recorded scores and dealings."""

    game_id: str
    status: str
    ruleset: str | None
    options: tuple[str, ...]
    players: dict[str, str | None]
    #: The sides in the ruleset's order (empty for a record that does not fit the format).
    sides: tuple[str, ...]
    score: dict[str, int | None]
    recorded_score: dict[str, int | None]
    winner: str | None
    deals: list[DealLine] = field(default_factory=list)


@dataclass(slots=True)
class DealFigures:
    """One dealing with its calls and the running score of every side after it."""

    line: DealLine
    bids: list[BidLine]
    score_after: dict[str, int]


def _rows(cur: duckdb.DuckDBPyConnection, sql: str, params: list[Any]) -> list[dict[str, Any]]:
    rel = cur.execute(sql, params)
    names = [d[0] for d in rel.description or []]
    return [dict(zip(names, row, strict=True)) for row in rel.fetchall()]


def _sides_of(ruleset: str | None, options: tuple[str, ...], stored: list[str]) -> tuple[str, ...]:
    """The ruleset's sides in its order (those stored, in their order, when the ruleset is unknown)."""
    try:
        sides = find_ruleset(ruleset, options).sides if ruleset else ()
    except RulesetError:
        sides = ()
    return tuple(s for s in sides if s in stored) or tuple(dict.fromkeys(stored))


def _names_trump(ruleset: str | None, options: tuple[str, ...]) -> bool:
    try:
        return bool(ruleset) and find_ruleset(str(ruleset), options).names_trump()
    except RulesetError:
        return False


def among_ids(ids: list[str]) -> str:
    """``game_id IN (?, …)``, a placeholder per id: DuckDB pushes a plain list through the views into
    the narrow tables, where ``IN (SELECT unnest(?))`` made it join every stored deal (10 times slower)."""
    return f"game_id IN ({', '.join('?' * len(ids))})"


def game_figures(cur: duckdb.DuckDBPyConnection, game_id: str) -> GameFigures | None:
    """A stored game's figures by side; ``None`` when it is not stored."""
    return games_figures(cur, [game_id]).get(game_id)


#: The columns of ``games`` and ``game_sides`` :func:`figures_from_rows` reads (``game_id`` first).
FIGURE_GAME_COLUMNS = (
    "game_id",
    "status",
    "ruleset",
    "options",
    "winner",
    "player_n",
    "player_e",
    "player_s",
    "player_w",
)
FIGURE_SIDE_COLUMNS = GAME_SIDE_FIELDS
#: The columns of ``deals`` and ``deal_sides`` a dealing's line is made of (``game_id`` first).
LINE_DEAL_COLUMNS = (
    "game_id",
    "deal",
    "number",
    "hand_size",
    "dealer",
    "trump_card",
    "trump_suit",
    "pass_out",
    "opening_leader",
)
LINE_SIDE_COLUMNS = ("game_id", "deal", *SIDE_INTS)  # the deal_sides view names its columns as the rows pack them


def games_figures(cur: duckdb.DuckDBPyConnection, game_ids: list[str]) -> dict[str, GameFigures]:
    """:func:`game_figures` of each of ``game_ids`` that is stored, read together (a query per table for them all)."""
    ids = list(dict.fromkeys(game_ids))
    if not ids:
        return {}
    among = among_ids(ids)
    sides = cur.execute(f"SELECT {', '.join(FIGURE_SIDE_COLUMNS)} FROM game_sides WHERE {among}", ids).fetchall()
    games = cur.execute(f"SELECT {', '.join(FIGURE_GAME_COLUMNS)} FROM games WHERE {among}", ids).fetchall()
    out = figures_from_rows(games, sides)
    if out:
        where = f" WHERE {among_ids(list(out))}"
        deal_sides = cur.execute(_SIDE_SQL + where, list(out)).fetchall()  # tuples: many rows
        deals = cur.execute(_DEAL_SQL + where + " ORDER BY game_id, deal", list(out)).fetchall()
        for gid, lines in deal_lines(out, deals, deal_sides).items():
            out[gid].deals = lines
    return out


def figures_from_rows(games: list[tuple[Any, ...]], sides: list[tuple[Any, ...]]) -> dict[str, GameFigures]:
    """Each game's figures, without its dealings, from its rows of ``games`` (:data:`FIGURE_GAME_COLUMNS`)
    and ``game_sides`` (:data:`FIGURE_SIDE_COLUMNS`), however they were read."""
    side_rows: dict[str, list[tuple[Any, ...]]] = {}
    for gid, *side in sides:
        side_rows.setdefault(gid, []).append(tuple(side))
    out: dict[str, GameFigures] = {}
    for gid, status, ruleset, options_text, winner, *players in games:
        options = tuple(o for o in (options_text or "").split(",") if o)
        rows = side_rows.get(gid, [])
        sides_here = _sides_of(ruleset, options, [r[0] for r in rows])
        by_side = {r[0]: r for r in rows}
        out[gid] = GameFigures(
            game_id=gid,
            status=status,
            ruleset=ruleset,
            options=options,
            players=dict(zip(SEATS, players, strict=True)),
            sides=sides_here,
            score={s: by_side[s][1] for s in sides_here},
            recorded_score={s: by_side[s][2] for s in sides_here},
            winner=winner,
        )
    return out


_DEAL_SQL = f"SELECT {', '.join(LINE_DEAL_COLUMNS)} FROM deals"
_SIDE_SQL = f"SELECT {', '.join(LINE_SIDE_COLUMNS)} FROM deal_sides"


def _deal_lines(
    cur: duckdb.DuckDBPyConnection, among: str, ids: list[str], deal: int | None, games: dict[str, GameFigures]
) -> dict[str, list[DealLine]]:
    """The dealings of these games (or only ``deal``) by game, each with its sides in its game's order."""
    if not ids:
        return {}
    where, params = (f" WHERE {among}", list(ids)) if deal is None else (f" WHERE {among} AND deal = ?", [*ids, deal])
    sides = cur.execute(_SIDE_SQL + where, params).fetchall()  # tuples: many rows
    deals = cur.execute(_DEAL_SQL + where + " ORDER BY game_id, deal", params).fetchall()
    return deal_lines(games, deals, sides)


def deal_lines(
    games: dict[str, GameFigures], deals: list[tuple[Any, ...]], sides: list[tuple[Any, ...]]
) -> dict[str, list[DealLine]]:
    """Each game's dealings from its rows of ``deals`` (:data:`LINE_DEAL_COLUMNS`, in order of ``deal``)
    and ``deal_sides`` (:data:`LINE_SIDE_COLUMNS`), however they were read; sides in the game's order."""
    per_deal: dict[tuple[str, int], dict[str, SideResult]] = {}
    for gid, deal_n, *side in sides:
        per_deal.setdefault((gid, deal_n), {})[side[0]] = SideResult(*side)
    named = {gid: _names_trump(g.ruleset, g.options) for gid, g in games.items()}
    out: dict[str, list[DealLine]] = {gid: [] for gid in games}
    for gid, n, number, hand_size, dealer, trump_card, trump_suit, pass_out, leader in deals:
        results = per_deal.get((gid, n), {})
        line_sides = [results[s] for s in games[gid].sides if s in results]
        named_here = named[gid] and trump_suit is not None
        out[gid].append(
            DealLine(n, number, hand_size, dealer, trump_card, trump_suit, named_here, pass_out, leader, line_sides)
        )
    return out


def deal_figures(cur: duckdb.DuckDBPyConnection, game: GameFigures, deal: int) -> DealFigures | None:
    """Dealing ``deal`` (1-based position) of ``game`` with its calls and the score after it; ``None`` if unstored."""
    lines = _deal_lines(cur, "game_id = ?", [game.game_id], deal, {game.game_id: game})[game.game_id]
    if not lines:
        return None
    bids = [
        BidLine(**r)
        for r in _rows(
            cur,
            "SELECT position, seat, player, kind, value, board_level, multiplier, side, rainbow"
            " FROM bids WHERE game_id = ? AND deal = ? ORDER BY position",
            [game.game_id, deal],
        )
    ]
    sums = cur.execute(
        "SELECT side, sum(points) FROM deal_sides WHERE game_id = ? AND deal <= ? GROUP BY side",
        [game.game_id, deal],
    ).fetchall()
    score = {side: int(total) for side, total in sums if total is not None}
    return DealFigures(lines[0], bids, {s: score[s] for s in game.sides if s in score})


@dataclass(slots=True)
class SheetLine:
    """One dealing of a score sheet as written: each seat's call and tricks, each side's points and total."""

    line: DealLine
    calls: dict[str, BidLine]
    #: Tricks each seat took (``None`` for a pass-out).
    won: dict[str, int] | None
    total: dict[str, int]


def sheet_lines(cur: duckdb.DuckDBPyConnection, game: GameFigures) -> list[SheetLine] | None:
    """The dealings of a stored score sheet (bids and tricks, no cards); ``None`` when the game is no sheet."""
    gid = game.game_id
    row = cur.execute("SELECT sheet FROM games WHERE game_id = ?", [gid]).fetchone()
    if row is None or not row[0] or not game.sides:
        return None
    calls: dict[int, dict[str, BidLine]] = {}
    for r in _rows(
        cur,
        "SELECT deal, position, seat, player, kind, value, board_level, multiplier, side, rainbow"
        " FROM bids WHERE game_id = ? ORDER BY deal, position",
        [gid],
    ):
        deal = r.pop("deal")
        calls.setdefault(deal, {})[r["seat"]] = BidLine(**r)
    won = {
        deal: dict(zip(SEATS, seats, strict=True))
        for deal, *seats in cur.execute(
            "SELECT deal, won_n, won_e, won_s, won_w FROM deals WHERE game_id = ?", [gid]
        ).fetchall()
    }
    total = dict.fromkeys(game.sides, 0)
    out = []
    for d in game.deals:
        for side in d.sides:
            total[side.side] += side.points or 0
        out.append(SheetLine(d, calls.get(d.deal, {}), None if d.pass_out else won.get(d.deal), dict(total)))
    return out


@dataclass(slots=True)
class DoubleDummy:
    """A dealing's row of ``dd_deals``, its sides' values (``dd_deal_sides``) and its plays' costs (``dd_plays``)."""

    #: False: the dealing breaks a rule of play, so it has no values (and no costs).
    analysed: bool
    #: Tricks each side (teams ``NS``, ``EW``; seats without partnerships) can make with perfect
    #: play from the opening lead, in the ruleset's order of sides.
    values: dict[str, int]
    #: Each play's cost to its own side (tricks lost against perfect play), by ``(trick, position)``.
    costs: dict[tuple[int, int], int]


def double_dummy(cur: duckdb.DuckDBPyConnection, game_id: str, deal: int) -> DoubleDummy | None:
    """The double-dummy figures of dealing ``deal`` (1-based); ``None`` when it has not been analysed."""
    found = cur.execute("SELECT analysed FROM dd_deals WHERE game_id = ? AND deal = ?", [game_id, deal]).fetchall()
    if not found:
        return None
    if not found[0][0]:
        return DoubleDummy(False, {}, {})
    plays = cur.execute(
        "SELECT trick, position, cost FROM dd_plays WHERE game_id = ? AND deal = ?", [game_id, deal]
    ).fetchall()
    costs = {(int(t), int(p)): int(c) for t, p, c in plays}
    return DoubleDummy(True, double_dummy_values(cur, game_id, deal).get(deal, {}), costs)


#: What double dummy means, in one line (the deal page says it above the values).
DD_MEANING = (
    "Double dummy: the tricks each side would take if everyone saw all four hands and every card"
    " were played perfectly from the opening lead."
)


def dd_parts(dd: DoubleDummy | None, seats: bool = False) -> list[tuple[str, str]]:
    """The double-dummy line of a deal as pieces of text, each with its role: ``label``, ``values``,
    ``note`` or ``missing`` (the whole line when there are no values: why, or how to get them).
    ``show`` styles each role in the terminal, the deal page in HTML: both say the same words.

    ``seats``: the game has no partnerships, so each value is a seat's against the other three.
    """
    if dd is None:
        return [("Double-dummy: not analysed (run backalley analyze)", "missing")]
    if not dd.analysed:
        return [("Double-dummy: no values (the deal breaks a rule of play)", "missing")]
    values = ", ".join(f"{side} {v}" for side, v in dd.values.items())
    note = " (each seat against the other three; " if seats else " ("
    return [
        ("Double-dummy: ", "label"),
        (values, "values"),
        (note + "−k after a card: tricks it cost its side vs perfect play)", "note"),
    ]


#: The order sides are shown in: the teams, then the seats (each ruleset's own order).
_SIDE_ORDER = {side: k for k, side in enumerate((*TEAMS, *SEATS))}


def double_dummy_values(
    cur: duckdb.DuckDBPyConnection, game_id: str, deal: int | None = None
) -> dict[int, dict[str, int]]:
    """Each analysed dealing of a game (by 1-based position; only ``deal`` if given) with its sides' values."""
    sql = "SELECT deal, side, dd FROM dd_deal_sides WHERE game_id = ?" + ("" if deal is None else " AND deal = ?")
    rows = cur.execute(sql, [game_id] if deal is None else [game_id, deal]).fetchall()
    out: dict[int, dict[str, int]] = {}
    for d, side, value in sorted(rows, key=lambda r: (r[0], _SIDE_ORDER.get(r[1], len(_SIDE_ORDER)), r[1])):
        out.setdefault(int(d), {})[str(side)] = int(value)
    return out


def contract_text(r: SideResult) -> str:
    """A side's contract in a few characters: ``4``, ``8×2``, ``board2×4``, ``pass``; ``✓``/``✗`` made or not."""
    if r.contract_kind == "none":
        text = "pass"
    elif r.contract_kind == "board":
        text = "board" + (str(r.board_level) if r.board_level and r.board_level > 1 else "")
    else:
        text = "—" if r.contract is None else str(r.contract)
    if r.contract_kind != "none" and r.multiplier is not None and r.multiplier != 1:
        text += f"×{r.multiplier}"
    return text + ("" if r.made is None else "✓" if r.made else "✗")


_SUIT = {"S": "♠", "H": "♥", "D": "♦", "C": "♣"}


def trump_words(line: DealLine) -> str:
    """The trump of a dealing in a few words: ``♥``, ``no trump``, ``♠ named by N``, ``♠ always``, ``none``."""
    if line.trump_suit is None:
        return "none" if line.pass_out and line.trump_card is None else "no trump"
    suit = _SUIT.get(line.trump_suit, line.trump_suit)
    if line.trump_card is not None:
        return suit
    return f"{suit} named by {line.opening_leader}" if line.trump_named else f"{suit} always"


def page_sides(game: GameFigures) -> dict[str, Any]:
    """What a page shows of a game by side: the sides, the scores and each dealing's line per side."""
    return {
        "sides": list(game.sides),
        "score": game.score,
        "recorded_score": game.recorded_score,
        "deals": [
            {
                "deal": d.deal,
                "trump": trump_words(d),
                "sides": [
                    {"side": r.side, "contract": contract_text(r), "tricks": r.tricks, "points": r.points}
                    for r in d.sides
                ],
            }
            for d in game.deals
        ],
    }


__all__ = [
    "DD_MEANING",
    "BidLine",
    "DealFigures",
    "DealLine",
    "DoubleDummy",
    "GameFigures",
    "SideResult",
    "among_ids",
    "contract_text",
    "dd_parts",
    "deal_figures",
    "double_dummy",
    "double_dummy_values",
    "game_figures",
    "games_figures",
    "page_sides",
    "trump_words",
]

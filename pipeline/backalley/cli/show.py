"""``backalley show``: a stored game or deal of any ruleset in the terminal (rich), data never read as markup.

The figures come by side from :mod:`backalley.store.outcomes` (two teams, or four
seats without partnerships; declarations and multipliers, bore levels,
rainbows, named trump); the deal as recorded (hands, calls, tricks, faults)
from :mod:`backalley.service.data`.  Every piece of record text goes into a
:class:`rich.text.Text` as plain text; styles are applied by the code.
"""

from __future__ import annotations

from typing import Any

import duckdb
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from backalley.cards import TEAMS
from backalley.service.data import DealView, card_color, card_text, violations
from backalley.service.data import deal as recorded_deal
from backalley.store.outcomes import (
    BidLine,
    DealFigures,
    DealLine,
    DoubleDummy,
    GameFigures,
    SheetLine,
    contract_text,
    dd_parts,
    deal_figures,
    double_dummy,
    double_dummy_values,
    game_figures,
    sheet_lines,
)

_CARD_STYLE = {"red": "bold red", "black": "bold", "joker": "bold magenta"}
_SUIT = {"S": "♠", "H": "♥", "D": "♦", "C": "♣"}
_TIMES = {2: "double", 3: "triple", 4: "quadruple"}


def show(cur: duckdb.DuckDBPyConnection, game_id: str, deal: int | None = None) -> RenderableType | None:
    """The game (or its dealing ``deal``, 1-based) as ``backalley show`` prints it; ``None`` if not stored."""
    game = game_figures(cur, game_id)
    if game is None:
        return None
    if deal is None:
        sheet = sheet_lines(cur, game)
        if sheet is not None:
            return sheet_view(game, sheet, violations(cur, game_id))
        return game_view(game, violations(cur, game_id), double_dummy_values(cur, game_id))
    view = recorded_deal(cur, game_id, deal)
    if view is None:
        return None
    return deal_view(view, game, deal_figures(cur, game, deal), double_dummy(cur, game_id, deal))


def _card(card: str, fault: bool = False) -> Text:
    style = _CARD_STYLE[card_color(card)] + (" reverse" if fault else "")
    return Text(card_text(card), style=style)


def _t(v: Any) -> Text:
    return Text("—" if v is None else str(v))


def _ruleset(game: GameFigures) -> str:
    name = game.ruleset or "unknown ruleset"
    return name + (f" ({', '.join(game.options)})" if game.options else "")


def _sides_text(values: dict[str, Any]) -> str:
    return ", ".join(f"{s} {'—' if v is None else v}" for s, v in values.items())


# --- the game ---------------------------------------------------------------------------------


def game_view(
    game: GameFigures, found: list[dict[str, Any]], dd: dict[int, dict[str, int]] | None = None
) -> RenderableType:
    """A game: ruleset, players, status, score by side, dealings by side and violations.

    ``dd``: the double-dummy values of the analysed dealings (a column only when there are some).
    """
    head = Text.assemble(("Game ", "bold"), game.game_id, f" ({game.status}) · ", _ruleset(game), "\n")
    head.append(" · ".join(f"{s}: {p if p is not None else '—'}" for s, p in game.players.items()))
    if not game.sides:
        head.append("\nNot replayed: the record does not fit the format.")
        return Group(head, _faults(found))
    head.append(f"\nFinal score (recomputed): {_sides_text(game.score)}")
    if any(v is not None for v in game.recorded_score.values()) and game.recorded_score != game.score:
        head.append(f" (recorded: {_sides_text(game.recorded_score)})")
    if game.winner is not None:
        head.append("; a tie" if game.winner == "tie" else f"; {game.winner} wins")
    return Group(head, _deals_table(game, dd or {}), _faults(found))


def sheet_view(game: GameFigures, lines: list[SheetLine], found: list[dict[str, Any]]) -> RenderableType:
    """A score sheet as the table keeps it: per deal each player's bid and tricks, each side's points and total."""
    head = Text.assemble(("Score sheet ", "bold"), game.game_id, f" ({game.status}) · ", _ruleset(game), "\n")
    head.append(" · ".join(f"{s}: {p if p is not None else '—'}" for s, p in game.players.items()))
    head.append("\nKept as bids and tricks, without cards: nothing about the play is known.")
    head.append(f"\nFinal score (recomputed): {_sides_text(game.score)}")
    if any(v is not None for v in game.recorded_score.values()) and game.recorded_score != game.score:
        head.append(f" (recorded: {_sides_text(game.recorded_score)})")
    table = Table("deal", "cards", "dealer")
    table.title = "Each player's bid/tricks taken (– a pass); each side's points and running total Σ"
    for seat in game.players:
        table.add_column(seat, justify="center")
    for side in game.sides:
        table.add_column(side, justify="right")
        table.add_column(f"Σ {side}", justify="right")
    for s in lines:
        d = s.line
        cells = [_sheet_cell(s, seat) for seat in game.players]
        points = {r.side: r.points for r in d.sides}
        sides = [c for side in game.sides for c in (_t(points.get(side)), _t(s.total.get(side)))]
        table.add_row(_t(d.number), _t(d.hand_size), _t(d.dealer), *cells, *sides)
    return Group(head, table, _faults(found))


def _sheet_cell(s: SheetLine, seat: str) -> Text:
    call = s.calls.get(seat)
    bid = "?" if call is None else "–" if call.kind == "pass" else _call_word(call)
    if s.won is None:
        return Text(bid)
    return Text(f"{bid}/{s.won.get(seat, '—')}")


def _call_word(b: BidLine) -> str:
    """A call as a player writes it: a number, ``board`` (with its level above 1), or a declaration."""
    if b.kind == "board":
        return "board" if (b.board_level or 1) == 1 else f"board{b.board_level}"
    if b.kind == "declaration" and (b.multiplier or 1) > 1:
        return f"{b.value} ×{b.multiplier}"
    return str(b.value)


def _deals_table(game: GameFigures, dd: dict[int, dict[str, int]]) -> Table:
    sides = "/".join(game.sides)
    deals = Table(
        "deal", "number", "cards", "dealer", "trump", f"contracts {sides}", f"tricks {sides}", f"points {sides}"
    )
    deals.title = "Deals"
    dd_sides = next(iter(dd.values()), {})
    if dd_sides:
        deals.add_column(f"dd {'/'.join(dd_sides)}")
    for d in game.deals:
        dd_cell = [Text("/".join(str(v) for v in dd[d.deal].values()) if d.deal in dd else "—")] if dd_sides else []
        deals.add_row(
            _t(d.deal),
            _t(d.number),
            _t(d.hand_size),
            _t(d.dealer),
            _trump_short(d),
            Text("pass-out" if d.pass_out else "/".join(contract_text(r) for r in d.sides)),
            Text("/".join(str(r.tricks) for r in d.sides)),
            Text("/".join(_t(r.points).plain for r in d.sides)),
            *dd_cell,
        )
    return deals


def _trump_short(d: DealLine) -> Text:
    if d.trump_card is not None:
        text = _card(d.trump_card)
        return text if d.trump_suit is not None else text.append(" no trump")
    if d.trump_suit is None:
        return Text("none" if d.pass_out else "no trump")
    suit = _SUIT.get(d.trump_suit, d.trump_suit)
    return Text(f"{suit} by {d.opening_leader}" if d.trump_named else f"{suit} always")


def _faults(found: list[dict[str, Any]]) -> Text:
    faults = Text()
    for v in found:
        where = ", ".join(
            p for p in (f"deal {v['deal']}" if v["deal"] else "", f"trick {v['trick']}" if v["trick"] else "") if p
        )
        faults.append(f"{v['code']}", style="bold red")
        faults.append(f" ({where}): {v['message']}\n" if where else f": {v['message']}\n")
    return faults


# --- one deal ---------------------------------------------------------------------------------


def deal_view(
    d: DealView, game: GameFigures, figures: DealFigures | None, dd: DoubleDummy | None = None
) -> RenderableType:
    """The deal viewer's content: trump, hands, calls with what they ask, tricks with faults, result by side.

    ``dd``: the double-dummy figures when the dealing has been analysed (value per team, cost per play).
    """
    head = Text.assemble(
        ("Game ", "bold"), d.game_id, f", deal {d.n} of {d.deal_count} (number ", _t(d.number), ") · ", _ruleset(game)
    )
    head.append("\nDealer ").append(d.dealer or "—").append(", ")
    if figures is None:
        head.append("not replayed (the record does not fit the format).")
    else:
        head.append_text(trump_text(figures.line))
    if d.joker_swap:
        head.append(f"; joker swap: {d.joker_swap['seat']} drew ")
        head.append_text(_card(d.joker_swap["drawn"]))
    if dd is not None or (figures is not None and not figures.line.pass_out):
        head.append("\n").append_text(dd_line(dd, seats=game.sides != TEAMS))
    unseen = not any(h["cards"] for h in d.hands)  # (a passed-out deal may leave its hands out)
    title = "Hands as dealt: not in the record" if unseen else "Hands as dealt"
    hands = Table(title=title, title_justify="left", show_header=False)
    for h in d.hands:
        hands.add_row(Text(h["seat"], style="bold"), _t(h["player"]), Text(" ").join(_card(c) for c in h["cards"]))
    return Group(head, hands, _bids_table(d, figures), _tricks_table(d, dd), _result(figures))


def trump_text(line: DealLine) -> Text:
    """How trump was fixed in a dealing, in words."""
    if line.trump_card is not None:
        text = Text("turned ").append_text(_card(line.trump_card))
        suit = line.trump_suit
        return text.append(f": trump {_SUIT.get(suit, suit)}" if suit is not None else ": no trump")
    if line.trump_suit is None:
        return Text("passed out: no trump" if line.pass_out else "no trump (no card turned)")
    suit = _SUIT.get(line.trump_suit, line.trump_suit)
    if line.trump_named:
        return Text(f"trump {suit} named by the declarer {line.opening_leader}")
    return Text(f"trump {suit} in every deal")


def _bids_table(d: DealView, figures: DealFigures | None) -> Table:
    stored = {b.position: b for b in figures.bids} if figures is not None else {}
    bids = Table("seat", "player", "side", "bid", "asks for", title="Bids", title_justify="left")
    for k, b in enumerate(d.bids, 1):
        bid = _t(b["bid"])
        for v in b["faults"]:
            bid.append(f"\n✗ {v['code']}", style="bold red")
            bid.append(f" {v['message']}")
        line = stored.get(k)
        bids.add_row(
            _t(b["seat"]),
            _t(b["player"]),
            _t(line.side if line else None),
            bid,
            Text(bid_meaning(line) if line else "—"),
        )
    return bids


def bid_meaning(b: BidLine) -> str:
    """What a stored call asks for: ``declares 8, ×2 (double)``, ``board level 2, ×4``, ``3 tricks``, ``pass``."""
    if b.kind == "declaration":
        m = b.multiplier or 1
        text = f"declares {b.value}" + (f", ×{m} ({_TIMES.get(m, 'multiple')})" if m > 1 else ", ×1")
    elif b.kind == "board":
        text = f"board level {b.board_level}, ×{b.multiplier}"
    elif b.kind == "number":
        text = f"{b.value} trick" + ("" if b.value == 1 else "s")
    else:
        text = "pass"
    return text + (", rainbow" if b.rainbow else "")


#: How ``show`` styles each role of :func:`backalley.store.outcomes.dd_parts`.
_DD_STYLES = {"label": "bold", "values": "", "note": "dim", "missing": "dim"}


def dd_line(dd: DoubleDummy | None, seats: bool = False) -> Text:
    """The double-dummy line of a deal: the sides' values, why there are none, or how to get them.

    ``seats``: the game has no partnerships, so each value is a seat's against the other three.
    """
    return Text.assemble(*((text, _DD_STYLES[role]) for text, role in dd_parts(dd, seats)))


def _play(seat: str, card: str, fault: bool, cost: int | None) -> Text:
    text = Text.assemble(f"{seat} ", _card(card, fault))
    return text.append(f"−{cost}", style="bold yellow") if cost else text


def _tricks_table(d: DealView, dd: DoubleDummy | None = None) -> Table:
    tricks = Table("trick", "leader", "cards in play order", "winner", title="Tricks", title_justify="left")
    costs = dd.costs if dd is not None else {}
    for t in d.tricks:
        cards = Text(" ").join(
            _play(p.seat, p.card, bool(p.faults), costs.get((t.number, k))) for k, p in enumerate(t.plays, 1)
        )
        for v in [v for p in t.plays for v in p.faults] + t.faults:
            cards.append("\n")
            cards.append(f"✗ {v['code']}", style="bold red")
            cards.append(f" {v['message']}")
        tricks.add_row(_t(t.number), _t(t.leader), cards, _t(t.winner))
    return tricks


def _result(figures: DealFigures | None) -> RenderableType:
    if figures is None:
        return Text("This deal was not replayed (the record does not fit the format).")
    line = figures.line
    table = Table("side", "contract", "tricks", "points", "Score after", title="Result", title_justify="left")
    for r in line.sides:
        table.add_row(
            Text(r.side),
            Text("pass-out" if line.pass_out else contract_text(r)),
            _t(r.tricks),
            _t(r.points),
            _t(figures.score_after.get(r.side)),
        )
    return Group(Text("Pass-out: no contract, no score."), table) if line.pass_out else table


__all__ = ["bid_meaning", "contract_text", "dd_line", "deal_view", "game_view", "show", "trump_text"]

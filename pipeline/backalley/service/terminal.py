"""``backalley show``: a game or a deal in the terminal (rich), record text never read as markup.

Every piece of record text goes into a :class:`rich.text.Text` as plain text;
styles are applied by the code, never parsed from the data.
"""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from backalley.service.data import DealView, card_color, card_text

_CARD_STYLE = {"red": "bold red", "black": "bold", "joker": "bold magenta"}


def _card(card: str, fault: bool = False) -> Text:
    style = _CARD_STYLE[card_color(card)] + (" reverse" if fault else "")
    return Text(card_text(card), style=style)


def _cards(cards: list[str]) -> Text:
    return Text(" ").join(_card(c) for c in cards)


def _t(v: Any) -> Text:
    return Text("—" if v is None else str(v))


def deal_view(d: DealView) -> RenderableType:
    """The deal viewer's content: hands, turned card and swap, bids, tricks with faults, result."""
    head = Text.assemble(
        ("Game ", "bold"), d.game_id, f", deal {d.n} of {d.deal_count} (number {d.number}), dealer {d.dealer}, turned "
    )
    head.append_text(_card(d.trump_card))
    if d.joker_swap:
        head.append(f"; joker swap: {d.joker_swap['seat']} drew ")
        head.append_text(_card(d.joker_swap["drawn"]))
    hands = Table(title="Hands as dealt", title_justify="left", show_header=False)
    for h in d.hands:
        hands.add_row(Text(h["seat"], style="bold"), _t(h["player"]), _cards(h["cards"]))
    bids = Table("seat", "player", "bid", title="Bids", title_justify="left")
    for b in d.bids:
        bid = _t(b["bid"])
        for v in b["faults"]:
            bid.append(f"\n✗ {v['code']}", style="bold red")
            bid.append(f" {v['message']}")
        bids.add_row(_t(b["seat"]), _t(b["player"]), bid)
    tricks = Table("trick", "leader", "cards in play order", "winner", title="Tricks", title_justify="left")
    for t in d.tricks:
        cards = Text(" ").join(Text.assemble(f"{p.seat} ", _card(p.card, bool(p.faults))) for p in t.plays)
        notes = [v for p in t.plays for v in p.faults] + t.faults
        for v in notes:
            cards.append("\n")
            cards.append(f"✗ {v['code']}", style="bold red")
            cards.append(f" {v['message']}")
        tricks.add_row(_t(t.number), _t(t.leader), cards, _t(t.winner))
    return Group(head, hands, bids, tricks, _result(d))


def _result(d: DealView) -> Text:
    r = d.result
    if r is None:
        return Text("This deal was not replayed (the record does not fit the format).")
    if r["pass_out"]:
        text = Text("Pass-out: no contract, no score.")
    else:
        text = Text(
            f"Tricks NS {r['tricks_ns']}, EW {r['tricks_ew']}. Points NS {r['points_ns']}, EW {r['points_ew']}."
        )
    if d.score:
        text.append(f" Score after this deal: NS {d.score['NS']}, EW {d.score['EW']}.")
    return text


def game_view(g: dict[str, Any]) -> RenderableType:
    """A game: players, status, score, deals and violations."""
    head = Text.assemble(("Game ", "bold"), str(g["game_id"]), f" ({g['status']}) ")
    head.append(" · ".join(f"{s}: {p if p is not None else '—'}" for s, p in g["players"].items()))
    head.append(f"\nFinal score (recomputed): NS {_t(g['score_ns'])}, EW {_t(g['score_ew'])}")
    deals = Table("deal", "number", "cards", "dealer", "trump", "tricks NS–EW", "points NS–EW", title="Deals")
    for d in g["deals"]:
        deals.add_row(
            _t(d["deal"]),
            _t(d["number"]),
            _t(d["hand_size"]),
            _t(d["dealer"]),
            _card(d["trump_card"]),
            Text(f"{d['tricks_ns']}–{d['tricks_ew']}"),
            Text(f"{d['points_ns']}–{d['points_ew']}"),
        )
    faults = Text()
    for v in g["violations"]:
        where = ", ".join(
            p for p in (f"deal {v['deal']}" if v["deal"] else "", f"trick {v['trick']}" if v["trick"] else "") if p
        )
        faults.append(f"{v['code']}", style="bold red")
        faults.append(f" ({where}): {v['message']}\n" if where else f": {v['message']}\n")
    return Group(head, deals, faults)

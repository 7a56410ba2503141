"""Legal game records for the store tests, played with random legal moves on the engine.

Independent of the simulator so that the store's tests only depend on the
engine and the record format.
"""

from __future__ import annotations

import json
import random
from typing import Any

from backalley.cards import SEATS
from backalley.engine import DealState
from backalley.rules import SCORED_DEALS

PLAYERS = ["Ada", "Bea", "Cy", "Dan", "Eve", "Fay"]


def play_game(game_id: str, rng: random.Random, deals: int = SCORED_DEALS) -> dict[str, Any]:
    """One record with ``deals`` scored deals (pass-outs redealt), every move legal."""
    seats = rng.sample(PLAYERS, 4)
    dealer = rng.randrange(4)
    out: list[dict[str, Any]] = []
    number = 1
    totals = [0, 0]
    while number <= deals:
        deck = list(range(54))
        rng.shuffle(deck)
        d = DealState.from_deck(number, dealer, deck)
        while d.bidding:
            bids = d.legal_bids()
            # Mostly numbers, sometimes pass or board: pass-outs happen but are rare.
            d.bid(rng.choice(bids) if rng.random() < 0.3 else rng.choice(bids[1:-1] or bids))
        while not d.finished:
            legal = d.legal_plays()
            cards = [c for c in range(54) if legal >> c & 1]
            d.play(rng.choice(cards))
        out.append(d.to_record())
        pts = d.points()
        totals[0] += pts[0]
        totals[1] += pts[1]
        dealer = (dealer + 1) & 3
        if not d.pass_out:
            number += 1
    return {
        "format_version": 1,
        "game_id": game_id,
        "ruleset": "standard",
        "players": dict(zip(SEATS, seats, strict=True)),
        "played_at": f"2026-0{rng.randrange(1, 10)}-1{rng.randrange(10)}T19:00:00+01:00",
        "event": rng.choice(["Club", "Open"]),
        "deals": out,
        "final_score": {"NS": totals[0], "EW": totals[1]},
    }


def game_lines(n: int, seed: int = 1, deals: int = SCORED_DEALS, prefix: str = "g") -> list[str]:
    """``n`` records as JSON lines."""
    rng = random.Random(seed)
    return [json.dumps(play_game(f"{prefix}{i:05d}", rng, deals), separators=(",", ":")) for i in range(n)]

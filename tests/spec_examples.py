"""Worked examples copied verbatim from the specification, shared by the tests."""

from __future__ import annotations

import copy
from typing import Any

#: The example deal of docs/record-format.md (deal 11, hand size 3, dealer N, trump 5H; the stock left out).
_RECORD_EXAMPLE_DEAL: dict[str, Any] = {
    "number": 11,
    "dealer": "N",
    "hands": {"N": ["2H", "KS", "9D"], "E": ["4C", "7S", "QD"], "S": ["AS", "3H", "8C"], "W": ["BJ", "AH", "KD"]},
    "trump_card": "5H",
    "bids": [
        {"seat": "E", "bid": "pass"},
        {"seat": "S", "bid": 1},
        {"seat": "W", "bid": "board"},
        {"seat": "N", "bid": 2},
    ],
    "tricks": [
        {"leader": "W", "cards": ["BJ", "2H", "4C", "3H"]},
        {"leader": "W", "cards": ["AH", "9D", "7S", "8C"]},
        {"leader": "W", "cards": ["KD", "KS", "QD", "AS"]},
    ],
    "result": {"tricks": {"NS": 0, "EW": 3}, "points": {"NS": -15, "EW": 30}},
}


def record_example_deal() -> dict[str, Any]:
    """A fresh copy of the example deal of docs/record-format.md (callers may change it)."""
    return copy.deepcopy(_RECORD_EXAMPLE_DEAL)

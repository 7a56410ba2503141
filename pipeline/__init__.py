"""Back Alley game-log analytics: rules engine, validator, DuckDB store and reports."""

from pipeline.cards import CardError, card_name, parse_card
from pipeline.engine import DealState, IllegalMoveError
from pipeline.replay import Replay, Violation, replay

__version__ = "0.1.0"

__all__ = [
    "CardError",
    "DealState",
    "IllegalMoveError",
    "Replay",
    "Violation",
    "__version__",
    "card_name",
    "parse_card",
    "replay",
]

"""Back Alley game-log analytics: rules engine, validator, DuckDB store and reports."""

from pathlib import Path as _Path

#: Modules that setup.py compiles with mypyc (the replay's hot path).
COMPILED_MODULES = ("cards", "rules", "replay")


def _check_compiled(here: _Path = _Path(__file__).parent) -> None:
    """Refuse a compiled module older than its source: it would silently run old code."""
    for name in COMPILED_MODULES:
        source = here / f"{name}.py"
        for ext in here.glob(f"{name}.*.so"):
            if source.exists() and ext.stat().st_mtime < source.stat().st_mtime:
                raise ImportError(
                    f"pipeline/{ext.name} was compiled before pipeline/{name}.py last changed; "
                    "rebuild it with `make install` (or delete pipeline/*.so to run pure Python)"
                )


_check_compiled()  # before anything imports a compiled module

from pipeline.cards import CardError, card_name, parse_card  # noqa: E402
from pipeline.engine import DealState, IllegalMoveError  # noqa: E402
from pipeline.replay import Replay, Violation, replay  # noqa: E402

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

"""Fault injection: a valid record altered the way a careless scorer or a broken exporter would
alter it (a swapped card, a wrong leader, a bad sum, a truncated line, ...), so that the validator
reports that fault's code (possibly among others that it causes).  The injectors, one per code,
live in record_faults.py, bid_faults.py and play_faults.py."""

from __future__ import annotations

import copy
import random
from collections.abc import Callable

from backalley.replay import CODES
from backalley.rules import STANDARD, Ruleset
from backalley.simulate.bid_faults import INJECTORS as BID_INJECTORS
from backalley.simulate.games import Record
from backalley.simulate.play_faults import INJECTORS as PLAY_INJECTORS
from backalley.simulate.record_faults import INJECTORS as RECORD_INJECTORS

#: Every code of docs/record-format.md that :func:`inject_fault` (or :func:`corrupt_json`) can put into one record.
FAULT_CODES: tuple[str, ...] = CODES  # every one of them can be injected


_INJECTORS: dict[str, Callable[[Record, random.Random, Ruleset], Record | None]] = {
    **RECORD_INJECTORS,
    **BID_INJECTORS,
    **PLAY_INJECTORS,
}


def fault_codes(rules: Ruleset = STANDARD) -> tuple[str, ...]:
    """The codes :func:`inject_fault` can put into a record of ``rules``: every code that applies to it."""
    if rules is STANDARD:
        return FAULT_CODES
    codes = (*FAULT_CODES, *rules.extra_codes)
    return tuple(c for c in codes if c not in rules.impossible_codes and (c in _INJECTORS or c == "JSON"))


def inject_fault(record: Record, code: str, rng: random.Random, rules: Ruleset = STANDARD) -> Record | None:
    """A deep copy of a valid ``record`` whose validation reports ``code``; ``None`` when it has no place for it.

    ``JSON`` has no place in a parsed record: use :func:`corrupt_json` on its line.
    """
    if code == "JSON":
        return None
    if code not in _INJECTORS or code not in fault_codes(rules):
        raise ValueError(f"{code!r} is not an injectable fault code for {rules.label()}")
    bad = _INJECTORS[code](copy.deepcopy(record), rng, rules)
    return bad


def corrupt_json(line: str, rng: random.Random) -> str:
    """The line of a record made into something that is not JSON."""
    kind = rng.randrange(3)
    if kind == 0 and '"final_score":{"NS":' in line:
        # A broken exporter writing NaN for a number.
        head, _, tail = line.partition('"final_score":{"NS":')
        rest = tail.lstrip("-0123456789")
        return head + '"final_score":{"NS":NaN' + rest
    if kind == 1:
        # A trailing comma after the last field.
        return line[:-1] + ",}"
    # A line cut short (disk full, interrupted copy).
    return line[: rng.randrange(1, max(2, len(line) - 1))]

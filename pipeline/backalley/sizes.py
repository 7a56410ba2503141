"""Sizes given on the command line (``96MB``, ``1GiB``, ``4096``): parsed and checked once."""

from __future__ import annotations

import re

#: A size as DuckDB reads it: a number and a unit (KB = 1000 bytes, KiB = 1024).
_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*(B|[KMGT]i?B)?", re.IGNORECASE)
_UNITS = {"": 1, "b": 1} | {
    f"{p}{i}b": (1024 if i else 1000) ** (k + 1) for k, p in enumerate("kmgt") for i in ("", "i")
}


def parse_size(text: str, *, unit_required: bool = False) -> int:
    """The bytes of ``text`` (``96MB``, ``1GiB``, ``4096``); raises ``ValueError`` naming the expected form."""
    m = _SIZE.fullmatch(text.strip())
    if m is None or (unit_required and m.group(2) is None):
        raise ValueError(f"{text!r}: expected a size such as 96MB or 1GB")
    return int(float(m.group(1)) * _UNITS[(m.group(2) or "").lower()])

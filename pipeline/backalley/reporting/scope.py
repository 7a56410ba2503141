"""What a report covers: an event, a ruleset and a period of play (``report --since/--until``)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass


class PeriodError(ValueError):
    """A date that is not one, or a period that ends before it starts."""


@dataclass(frozen=True, slots=True)
class Period:
    """Games played from ``since`` to ``until``, both days included (either open)."""

    since: dt.date | None = None
    until: dt.date | None = None

    def __bool__(self) -> bool:
        return self.since is not None or self.until is not None

    def words(self) -> str:
        """``played 2026-01-05 to 2026-01-31``, ``played from 2026-01-05``, ``played until …``; empty when open."""
        if self.since is not None and self.until is not None:
            return f"played {self.since:%Y-%m-%d} to {self.until:%Y-%m-%d}"
        if self.since is not None:
            return f"played from {self.since:%Y-%m-%d}"
        if self.until is not None:
            return f"played until {self.until:%Y-%m-%d}"
        return ""


def day(text: str | None, option: str) -> dt.date | None:
    """``text`` as a calendar day (``YYYY-MM-DD``); a :class:`PeriodError` naming ``option`` otherwise."""
    if text is None:
        return None
    try:
        return dt.date.fromisoformat(text.strip())
    except ValueError:
        raise PeriodError(f"{option} {text!r}: not a date; write it as YYYY-MM-DD, e.g. 2026-01-31") from None


def period(since: str | None, until: str | None) -> Period:
    """The period of ``--since`` and ``--until`` (each optional); an error when it ends before it starts."""
    p = Period(day(since, "--since"), day(until, "--until"))
    if p.since is not None and p.until is not None and p.until < p.since:
        raise PeriodError(f"--until {p.until:%Y-%m-%d} is before --since {p.since:%Y-%m-%d}: no day is in between")
    return p

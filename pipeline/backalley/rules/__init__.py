"""The rules side: every ruleset, a registry, and ``standard``'s names for old callers.

``find_ruleset(name, options)`` is the one way in (python-chess's
``find_variant``): the engine, the replay, the simulator and the store take
the ruleset from the record (or the command line) and ask it.  The
module-level functions below are ruleset ``standard``'s methods, kept for the
callers and tests that predate rulesets.
"""

from __future__ import annotations

from collections.abc import Sequence

from backalley.rules.bab_online import BabOnline
from backalley.rules.base import (
    BOARD,
    PASS,
    PLAYERS,
    Bid,
    Contract,
    Contracts,
    FastTables,
    Ruleset,
)
from backalley.rules.pereulok import Pereulok
from backalley.rules.standard import Standard


class RulesetError(ValueError):
    """An unknown ruleset or option, or an option the ruleset does not take."""


#: Every ruleset class by its record name.
RULESETS: dict[str, type[Ruleset]] = {cls.name: cls for cls in (Standard, Pereulok, BabOnline)}
_CACHE: dict[tuple[str, tuple[str, ...]], Ruleset] = {}


def canonical_options(name: str, options: Sequence[str]) -> tuple[str, ...]:
    """The options in the ruleset's canonical order; raises :class:`RulesetError` if any is bad."""
    cls = RULESETS.get(name)
    if cls is None:
        raise RulesetError(f"unknown ruleset {name!r}; known: {', '.join(RULESETS)}")
    seen = set(options)
    if len(seen) != len(options):
        raise RulesetError(f"an option is given twice: {', '.join(options)}")
    unknown = sorted(seen - set(cls.known_options))
    if unknown:
        takes = f"takes {', '.join(cls.known_options)}" if cls.known_options else "takes no option"
        raise RulesetError(f"ruleset {name} {takes}; not {', '.join(unknown)}")
    return tuple(o for o in cls.known_options if o in seen)


def find_ruleset(name: str = "standard", options: Sequence[str] = ()) -> Ruleset:
    """The ruleset object for ``name`` and ``options`` (built once, then shared)."""
    got = _CACHE.get((name, tuple(options)))  # the common case: asked again, in the same order
    if got is not None:
        return got
    key = (name, canonical_options(name, options))
    got = _CACHE.get(key)
    if got is None:
        got = _CACHE[key] = RULESETS[name](key[1])
    _CACHE[(name, tuple(options))] = got
    return got


def all_rulesets() -> list[Ruleset]:
    """Every registered ruleset with every subset of its options."""
    out: list[Ruleset] = []
    for name, cls in RULESETS.items():
        opts = cls.known_options
        for bits in range(1 << len(opts)):
            out.append(find_ruleset(name, tuple(o for i, o in enumerate(opts) if bits >> i & 1)))
    return list(dict.fromkeys(out))


def describe_rulesets() -> list[str]:
    """One line per ruleset, then one per option it takes (``backalley rulesets``)."""
    lines: list[str] = []
    for name, cls in RULESETS.items():
        lines.append(f"{name}: {cls.summary}")
        for option, text in zip(cls.known_options, cls.option_help, strict=True):
            lines.append(f"  {name} --options {option}: {text}")
    return lines


STANDARD = find_ruleset("standard")
#: The dialect of record format 1 (``standard`` without options), found by that property, not by name.
PLAIN = next(r for r in all_rulesets() if r.format_version == 1)
RULESET = STANDARD.name
SCORED_DEALS = STANDARD.scored_deals
#: Hand size of each standard deal number (index 0 unused): ``|k - 13| + 1``.
HAND_SIZE: tuple[int, ...] = (0, *(STANDARD.hand_size(k) for k in range(1, SCORED_DEALS + 1)))
hand_size = STANDARD.hand_size
stock_size = STANDARD.stock_size
trump_of = STANDARD.trump_of
legal_bids = STANDARD.legal_bids
bid_in_range = STANDARD.bid_in_range
is_pass_out = STANDARD.is_pass_out
legal_leads = STANDARD.legal_leads
score = STANDARD.score
made = STANDARD.made


def contracts(bids: tuple[tuple[int, Bid], ...]) -> Contracts:
    """``standard``'s contracts (they do not depend on the hand size)."""
    return STANDARD.contracts(bids, 0)


def legal_follows(hand: int, led: int, trump: int) -> int:
    """``standard``'s legal follows (the same for every follower)."""
    return STANDARD.legal_follows(hand, led, trump, 1)


def follow_fault(led: int, trump: int) -> str:
    return STANDARD.follow_fault(led, trump, 1)


def trick_winner(cards: list[int] | tuple[int, ...], trump: int) -> int:
    return STANDARD.trick_winner(cards, trump)


def has_trump(cards: list[int] | tuple[int, ...], trump: int) -> bool:
    return STANDARD.breaks_trump(cards, trump)


__all__ = [
    "BOARD",
    "HAND_SIZE",
    "PASS",
    "PLAIN",
    "PLAYERS",
    "RULESET",
    "RULESETS",
    "SCORED_DEALS",
    "STANDARD",
    "Bid",
    "Contract",
    "Contracts",
    "FastTables",
    "Ruleset",
    "RulesetError",
    "all_rulesets",
    "bid_in_range",
    "canonical_options",
    "contracts",
    "describe_rulesets",
    "find_ruleset",
    "follow_fault",
    "hand_size",
    "has_trump",
    "is_pass_out",
    "legal_bids",
    "legal_follows",
    "legal_leads",
    "made",
    "score",
    "stock_size",
    "trick_winner",
    "trump_of",
]

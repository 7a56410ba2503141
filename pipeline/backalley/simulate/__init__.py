"""Simulated games: bots of a few styles play complete, legal games; optional injected faults.

A pool of named players, each with a :class:`Style`, plays games of a ruleset's scored
deals through :class:`~backalley.engine.DealState` (so every bid and card is
legal by construction).  Pass-outs are recorded and redealt by the next dealer.
Everything is drawn from ``random.Random`` instances seeded from the given
seed, so the same seed gives the same bytes.

With a fault rate, a share of the games gets exactly one *injected* fault: the
record is altered the way a careless scorer or a broken exporter would alter it
(a swapped card, a wrong leader, a bad sum, a truncated line, ...), so that the
validator reports that fault's code (possibly among others that it causes).
Which game got which fault is written nowhere in the record.

One module per concept: bots.py (players, styles, bids and plays), games.py (whole
games), faults.py (fault injection; the injectors in record_faults.py, bid_faults.py
and play_faults.py, on deal_view.py), sheets.py (a game as its score sheet),
writer.py (streams of games, worker processes, the output file) and samples.py
(the committed data/sample, its README from sample_readme.py).
"""

from __future__ import annotations

from backalley.simulate.bots import STYLES, Player, Style, choose_bid, choose_play, estimate, player_pool
from backalley.simulate.deal_view import recorded_trump
from backalley.simulate.faults import FAULT_CODES, corrupt_json, fault_codes, inject_fault
from backalley.simulate.games import (
    FixedDeal,
    Record,
    bid_deal,
    dumps,
    final_score,
    make_record,
    play_deals,
    play_out,
    record_head,
)
from backalley.simulate.samples import (
    BAD_INPUTS,
    EXAMPLE_DEAL,
    SAMPLE_RULESETS,
    faulty_samples,
    sheet_samples,
    worked_example,
    write_ruleset_samples,
    write_samples,
)
from backalley.simulate.sheets import SHEET_FAULTS, as_sheet
from backalley.simulate.writer import default_workers, simulate_games, write_games

__all__ = [
    "BAD_INPUTS",
    "EXAMPLE_DEAL",
    "FAULT_CODES",
    "SAMPLE_RULESETS",
    "SHEET_FAULTS",
    "STYLES",
    "FixedDeal",
    "Player",
    "Record",
    "Style",
    "as_sheet",
    "bid_deal",
    "choose_bid",
    "choose_play",
    "corrupt_json",
    "default_workers",
    "dumps",
    "estimate",
    "fault_codes",
    "faulty_samples",
    "final_score",
    "inject_fault",
    "make_record",
    "play_deals",
    "play_out",
    "player_pool",
    "record_head",
    "recorded_trump",
    "sheet_samples",
    "simulate_games",
    "worked_example",
    "write_games",
    "write_ruleset_samples",
    "write_samples",
]

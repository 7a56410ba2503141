"""Streams of games: played in worker processes, faults injected into a share of them, written
as JSON Lines (or as score sheets, JSONL or CSV); the same bytes whatever the number of workers."""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import orjson

from backalley.records.sheets import is_csv, sheet_csv
from backalley.rules import STANDARD, Ruleset, find_ruleset
from backalley.simulate.bots import Player, player_pool
from backalley.simulate.faults import corrupt_json, fault_codes, inject_fault
from backalley.simulate.games import Record, dumps, id_tag, make_record
from backalley.simulate.sheets import SHEET_FAULTS, sheet_line
from backalley.workers import WorkerDied, guarded, pool_context, pool_errors

#: Games handed to the worker processes at a time (bounds what waits in memory).
GAMES_PER_BATCH = 512
#: Below this many games per worker, starting worker processes costs more than it saves.
GAMES_PER_WORKER = 50

#: The pool of players and the ruleset of a worker process (sent once, by :func:`_start_worker`).
_worker_pool: list[Player] = []
_worker_rules: Ruleset = STANDARD


def _start_worker(pool: list[Player], ruleset: str, options: tuple[str, ...]) -> None:
    """Each process finds the ruleset by name (a ruleset object need not pickle)."""
    global _worker_pool, _worker_rules
    _worker_pool = pool
    _worker_rules = find_ruleset(ruleset, options)


def _play(job: tuple[str, int, int]) -> Record:
    game_id, game_seed, index = job
    return make_record(game_id, random.Random(game_seed), _worker_pool, index, rules=_worker_rules)


def _records(games: int, seed: int, pool: list[Player], workers: int, rules: Ruleset) -> Iterator[Record]:
    """The games in order, played in ``workers`` processes; the same records whatever ``workers``."""
    seeds = random.Random(seed)
    jobs = [(f"sim-{id_tag(rules)}{seed}-{i:06d}", seeds.getrandbits(64), i) for i in range(games)]
    setup = (pool, rules.name, rules.options)
    if workers <= 1:
        _start_worker(*setup)
        yield from map(_play, jobs)
        return
    # ProcessPoolExecutor, not multiprocessing.Pool: the pool's worker-handler thread woke over and
    # over while a game waited unread in the result pipe (about 1 s of this process's CPU in 4,000
    # games on two cores); and a worker that dies is an error here, where the pool waited for ever.
    ctx = pool_context()
    with (
        pool_errors(WorkerDied, "played its games"),
        ProcessPoolExecutor(workers, mp_context=ctx, initializer=guarded(_start_worker, *setup)) as procs,
    ):
        for start in range(0, games, GAMES_PER_BATCH):
            yield from procs.map(_play, jobs[start : start + GAMES_PER_BATCH], chunksize=8)


def default_workers(games: int) -> int:
    """One process per CPU, but none beyond one per :data:`GAMES_PER_WORKER` games."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(cpus, games // GAMES_PER_WORKER))


def _game_lines(
    games: int,
    seed: int,
    players: int | Sequence[Player],
    faults: float,
    rules: Ruleset = STANDARD,
    workers: int = 1,
    sheet: bool = False,
) -> Iterator[tuple[str, str | None]]:
    """``(json line, injected code or None)`` for each game (``sheet``: each written as its score sheet).

    ``players``: the pool's size (:func:`player_pool`), or the pool itself (each game seats four of it at random).
    """
    pool = player_pool(players) if isinstance(players, int) else list(players)
    if len(pool) < 4:
        raise ValueError("a game needs at least 4 players in the pool")
    frng = random.Random(f"faults:{seed}")
    for rec in _records(games, seed, pool, workers, rules):
        code: str | None = None
        line: str | None = None
        if faults > 0 and frng.random() < faults:
            codes = [c for c in fault_codes(rules) if not sheet or c in SHEET_FAULTS]
            while codes and line is None:
                c = codes.pop(frng.randrange(len(codes)))
                if c == "JSON":
                    line = corrupt_json(dumps(rec), frng)
                else:
                    bad = inject_fault(rec, c, frng, rules)
                    if bad is not None:
                        line = dumps(bad)
                if line is not None:
                    code = c
        line = line if line is not None else dumps(rec)
        yield (sheet_line(line) if sheet else line), code


def simulate_games(
    games: int, seed: int, players: int | Sequence[Player] = 12, faults: float = 0.0, rules: Ruleset = STANDARD
) -> Iterator[str]:
    """``games`` game records as JSON lines (without newline); the same arguments give the same lines."""
    for line, _ in _game_lines(games, seed, players, faults, rules):
        yield line


def write_games(
    out: Path,
    *,
    games: int,
    seed: int,
    players: int | Sequence[Player] = 12,
    faults: float = 0.0,
    workers: int | None = None,
    progress: Callable[[int], None] | None = None,
    rules: Ruleset = STANDARD,
    sheet: bool = False,
) -> str:
    """Write the games of ``rules`` as JSON Lines to ``out``; returns a summary for the user.

    ``workers`` processes play the games (default: :func:`default_workers`); the
    bytes written are the same whatever their number.  ``progress(done)`` is
    called after each game.  ``sheet``: each game as its score sheet (docs/sheets.md),
    as CSV when ``out`` is named ``*.csv``.
    """
    injected = 0
    n = workers if workers is not None else default_workers(games)
    as_csv = sheet and is_csv(out.name)
    with out.open("w", encoding="utf-8", newline="\n") as fh:
        for done, (line, code) in enumerate(_game_lines(games, seed, players, faults, rules, n, sheet), 1):
            if as_csv:
                text = sheet_csv(orjson.loads(line))
                fh.write(text if done == 1 else text.partition("\n")[2])
            else:
                fh.write(line)
                fh.write("\n")
            injected += code is not None
            if progress is not None:
                progress(done)
    noun = "game" if games == 1 else "games"
    if faults > 0:
        return f"{games} {noun} ({injected} with an injected fault)"
    return f"{games} {noun}"

"""Double-dummy analysis of recorded deals: what each deal could make, and what each play cost.

A deal's **value** for a side is the number of tricks it wins with perfect
play by everyone who sees every hand (:mod:`backalley.analysis.solver`), from the
recorded opening lead.  Values are taken before every recorded card and
after the last, so each play's **cost** is the tricks its side lost by it
against perfect play from there (0 for a perfect play).  The sides are the
ruleset's (:class:`Sides`): with partnerships NS and EW, whose values add up to
the hand size; without, each seat against the other three.  The store keeps
every side's figures (``dd_deal_sides``; each play's value for its own side in
``dd_plays``), and the team columns of a partnership game.

:func:`analyse_record` works on one parsed record (no database);
:func:`analyse_store` fills the tables ``dd_deals``, ``dd_plays`` and ``dd_deal_sides``
(:mod:`backalley.analysis.cluster`: the same on a Dask cluster).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from backalley.analysis.solver import ALL_PRUNING, DealSolver, Pruning, SolverRules
from backalley.cards import CARD_NAMES, SEATS, TEAMS
from backalley.records.sources import SourceError, expand, parse, read_file
from backalley.replay import DealOutcome, Replay, replay
from backalley.rules import PLAIN, STANDARD, Ruleset, RulesetError, find_ruleset
from backalley.workers import guarded, pool_context, pool_errors

NS = 0b0101  # the seats of side NS as a bitmask


@dataclass(frozen=True, slots=True)
class Sides:
    """The sides a deal is solved for: the ruleset's side names, and each seat's side (an index)."""

    names: tuple[str, ...]
    side_of: tuple[int, ...]

    def masks(self) -> tuple[int, ...]:
        """Each side's seats as a bitmask."""
        return tuple(sum(1 << s for s, k in enumerate(self.side_of) if k == i) for i in range(len(self.names)))

    @property
    def paired(self) -> bool:
        """Two complementary sides (partnerships): their values add up to the hand size."""
        masks = self.masks()
        return len(masks) == 2 and masks[0] ^ masks[1] == 0b1111


#: The two partnerships N+S and E+W (what the store holds, whatever the game's ruleset).
PAIRS = Sides(TEAMS, (0, 1, 0, 1))


def sides_of(ruleset: Ruleset) -> Sides:
    """The ruleset's sides: teams with partnerships, every seat a side without."""
    return Sides(ruleset.sides, ruleset.side_of)


def record_ruleset(obj: dict[str, Any]) -> Ruleset:
    """A record's ruleset with its options (``ruleset`` and ``options``; none named: plain standard)."""
    try:
        return find_ruleset(str(obj.get("ruleset") or PLAIN.name), tuple(obj.get("options") or ()))
    except (RulesetError, TypeError):  # the replay has already refused such a record
        return STANDARD


def record_sides(obj: dict[str, Any]) -> Sides:
    """The sides of a record's ruleset."""
    return sides_of(record_ruleset(obj))


@dataclass(slots=True)
class PlayedDeal:
    """What the solver needs of one played deal."""

    #: The four hands at the start of the play (after any joker swap).
    hands: tuple[int, int, int, int]
    trump: int
    #: Seats that may lead trump while it is unbroken (bitmask): the ruleset's ``Contracts.lead_exempt``.
    lead_exempt: int
    leader: int
    #: Every card in play order.
    cards: list[int]
    #: The ruleset whose play rules the deal was played by.
    ruleset: Ruleset = STANDARD

    def rules(self) -> SolverRules:
        """The play rules the search plays this deal by: all the ruleset's."""
        return SolverRules(self.trump, self.lead_exempt, self.ruleset)


@dataclass(slots=True)
class DealValues:
    """The double-dummy figures of one played deal."""

    #: Tricks each side can make before the opening lead (in ``sides.names`` order).
    dd: tuple[int, ...]
    #: The first side's value (NS, or N without partnerships) before each card and after the last
    #: (``len(cards) + 1`` entries).
    values: list[int]
    #: Every card in play order, and the seat that played it.
    cards: list[int]
    seats: list[int]
    #: Tricks each card cost its own side against perfect play.
    costs: list[int]
    #: Search nodes visited (for the benchmark).
    nodes: int = 0
    sides: Sides = PAIRS
    #: Every side's values as ``values`` has the first's (in ``sides.names`` order); empty: ``values`` only.
    side_values: list[list[int]] = field(default_factory=list)

    def value_of(self, side: int) -> list[int]:
        """Side ``side``'s value before each card and after the last."""
        return self.side_values[side] if self.side_values else self.values

    def lost(self) -> list[int]:
        """Tricks each side lost by its own plays (the sum of its cards' costs)."""
        out = [0] * len(self.sides.names)
        for seat, cost in zip(self.seats, self.costs, strict=True):
            out[self.sides.side_of[seat]] += cost
        return out

    def costs_by_trick(self) -> list[list[int]]:
        return [self.costs[i : i + 4] for i in range(0, len(self.costs), 4)]


@dataclass(slots=True)
class DealAnalysis:
    """One dealing of a record: its values, or why it has none."""

    deal: int  # 1-based position among the record's dealings
    number: int
    pass_out: bool
    values: DealValues | None
    #: Why a non-pass-out deal was not analysed ("" when it was).
    skipped: str = ""
    #: Left for another run (outside ``--max-cards``, or already stored): not a fault of the deal.
    deferred: bool = False
    #: Why the search could not follow the deal's recorded play ("" when it could): a fault of the
    #: analysis, not of the deal (its rules and the replay's disagree).
    error: str = ""

    def as_dict(self) -> dict[str, Any]:
        v = self.values
        out: dict[str, Any] = {
            "number": self.number,
            "dd": None if v is None else dict(zip(v.sides.names, v.dd, strict=True)),
            "costs": None if v is None else v.costs_by_trick(),
        }
        if self.skipped:
            out["skipped"] = self.skipped
        if self.error:
            out["error"] = self.error
        return out


@dataclass(slots=True)
class GameAnalysis:
    game_id: str | None
    deals: list[DealAnalysis] = field(default_factory=list)
    #: Set when the record could not be read at all.
    error: str = ""

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"game_id": self.game_id, "deals": [d.as_dict() for d in self.deals]}
        if self.error:
            out["error"] = self.error
        return out


# --- one deal --------------------------------------------------------------------------------


def played_deal(outcome: DealOutcome, ruleset: Ruleset = STANDARD) -> PlayedDeal:
    """A replayed deal with every play legal: each hand is the cards its seat played."""
    hands = [0, 0, 0, 0]
    for t, leader in enumerate(outcome.leaders):
        for j in range(4):
            hands[(leader + j) & 3] |= 1 << outcome.cards[4 * t + j]
    leader = outcome.leaders[0] if outcome.leaders else 0
    return PlayedDeal(
        (hands[0], hands[1], hands[2], hands[3]),
        outcome.trump,
        outcome.contracts.lead_exempt,
        leader,
        list(outcome.cards),
        ruleset,
    )


def solve_deal(
    deal: PlayedDeal, pruning: Pruning = ALL_PRUNING, native: bool | None = None, sides: Sides = PAIRS
) -> DealValues:
    """The values before and after every card of the play, and each card's cost (``native``: see DealSolver).

    Two complementary sides (partnerships) are one search, the second side's value
    being the rest of the tricks; otherwise each side is searched on its own.
    """
    solver_rules = deal.rules()
    masks = sides.masks()
    n = deal.hands[deal.leader].bit_count()
    paired = sides.paired
    runs = [_side_values(deal, solver_rules, mask, pruning, native) for mask in (masks[:1] if paired else masks)]
    dd = (runs[0][0][0], n - runs[0][0][0]) if paired else tuple(values[0] for values, _ in runs)
    seats = _seats(deal, solver_rules)
    costs: list[int] = []
    for i, seat in enumerate(seats):
        values = runs[0 if paired else sides.side_of[seat]][0]
        own = not paired or bool(masks[0] >> seat & 1)
        costs.append(values[i] - values[i + 1] if own else values[i + 1] - values[i])
    nodes = sum(count for _, count in runs)
    every = [runs[0][0], [n - v for v in runs[0][0]]] if paired else [values for values, _ in runs]
    return DealValues(dd, runs[0][0], list(deal.cards), seats, costs, nodes, sides, every)


def _side_values(
    deal: PlayedDeal, solver_rules: SolverRules, side: int, pruning: Pruning, native: bool | None
) -> tuple[list[int], int]:
    """``side``'s value before every card and after the last, and the search nodes it took."""
    solver = DealSolver(deal.hands, deal.leader, solver_rules, side, pruning, native)
    values = [solver.value(guess=played_tricks(deal, solver_rules, side))]
    for card in deal.cards:
        seat = solver.to_play()
        solver.play(card)
        values.append(solver.value_from(values[-1], rising=not side >> seat & 1))
    return values, solver.nodes


def _seats(deal: PlayedDeal, solver_rules: SolverRules) -> list[int]:
    """The seat that played each card of the deal, in play order."""
    out: list[int] = []
    leader = deal.leader
    for start in range(0, len(deal.cards) - 3, 4):
        out += [(leader + j) & 3 for j in range(4)]
        leader = (leader + solver_rules.winner(deal.cards[start : start + 4])) & 3
    return out


def played_tricks(deal: PlayedDeal, solver_rules: SolverRules, side: int) -> int:
    """The tricks ``side`` took in the recorded play (the solver's first guess at its value)."""
    leader, won = deal.leader, 0
    for start in range(0, len(deal.cards) - 3, 4):
        winner = (leader + solver_rules.winner(deal.cards[start : start + 4])) & 3
        won += side >> winner & 1
        leader = winner
    return won


# --- one record ------------------------------------------------------------------------------


def _bad_deals(rep: Replay) -> set[int]:
    return rep.error_deals()


@dataclass(frozen=True, slots=True)
class Scope:
    """Which dealings to solve: those with at most ``max_cards`` a hand, and only ``deals`` if given."""

    max_cards: int = 13
    deals: frozenset[int] | None = None
    pruning: Pruning = field(default_factory=Pruning)


ALL_DEALS = Scope()


def analyse_replay(
    rep: Replay, numbers: list[int], scope: Scope = ALL_DEALS, sides: Sides = PAIRS, ruleset: Ruleset = STANDARD
) -> GameAnalysis:
    """Values of the dealings of a replayed record (``numbers``: each dealing's deal number) for ``sides``,
    played by the play rules of ``ruleset``."""
    bad = _bad_deals(rep)
    game = GameAnalysis(rep.game_id)
    for i, outcome in enumerate(rep.deals):
        k = i + 1
        number = numbers[i] if i < len(numbers) else 0
        n = len(outcome.cards) // 4
        if outcome.pass_out:
            game.deals.append(DealAnalysis(k, number, True, None))
        elif scope.deals is not None and k not in scope.deals:
            game.deals.append(DealAnalysis(k, number, False, None, "not asked for", deferred=True))
        elif k in bad or not outcome.leaders:
            game.deals.append(DealAnalysis(k, number, False, None, "the deal breaks a rule of play"))
        elif n > scope.max_cards:
            game.deals.append(DealAnalysis(k, number, False, None, f"{n} cards a hand (over --max-cards)", True))
        else:
            game.deals.append(_solved(k, number, played_deal(outcome, ruleset), scope, sides))
    return game


def _solved(k: int, number: int, deal: PlayedDeal, scope: Scope, sides: Sides) -> DealAnalysis:
    """One deal's analysis; a play the search cannot follow is this deal's error, never the game's."""
    try:
        values = solve_deal(deal, scope.pruning, sides=sides)
    except ValueError as exc:  # IllegalPlayError, or a deal outside the C search's bounds
        reason = f"the search cannot follow the recorded play: {exc}"
        return DealAnalysis(k, number, False, None, reason, error=reason)
    return DealAnalysis(k, number, False, values)


def analyse_record(obj: Any, scope: Scope = ALL_DEALS, pairs: bool = False) -> GameAnalysis:
    """Replay one parsed record and analyse each of its valid deals (never raises on bad content).

    The sides are the record's ruleset's (each seat alone without partnerships, as
    the store holds them), or N+S against E+W whatever the ruleset with ``pairs``.
    """
    rep = replay(obj)
    if rep.deals:
        numbers = [d.get("number", 0) if isinstance(d, dict) else 0 for d in obj.get("deals", [])]
        ruleset = record_ruleset(obj)
        return analyse_replay(rep, numbers, scope, PAIRS if pairs else sides_of(ruleset), ruleset)
    message = rep.violations[0].message if rep.violations else "no deals"
    return GameAnalysis(rep.game_id, [], message)  # (the report says "not analysed: …")


def analyse_files(paths: list[str], scope: Scope = ALL_DEALS) -> Iterator[tuple[str, GameAnalysis]]:
    """``(where, analysis)`` for every record of the files (``where``: file, with ``:line`` for JSON Lines).

    Raises :class:`SourceError` for a path that does not exist or cannot be read.
    """
    for f in expand(paths):
        for item in read_file(f):
            where = item.source if item.line is None else f"{item.source}:{item.line}"
            if item.read_error is not None:
                yield where, GameAnalysis(None, [], item.read_error)
                continue
            obj, error = parse(item.raw)
            if error is not None:
                yield where, GameAnalysis(None, [], error)
                continue
            yield where, analyse_record(obj, scope)


# --- the store -----------------------------------------------------------------------------------

#: Each game with stored deals (not pass-outs, at most ``?`` cards a hand) that have no row in
#: ``dd_deals`` yet, with those deals (a score sheet holds no cards: nothing to analyse).
PENDING_SQL = """
SELECT g.game_id, list(d.deal ORDER BY d.deal)
FROM games g JOIN deals d ON d.game_id = g.game_id
WHERE g.schema_ok AND NOT g.sheet AND NOT d.pass_out AND d.hand_size <= ?
  AND NOT EXISTS (SELECT 1 FROM dd_deals x WHERE x.game_id = d.game_id AND x.deal = d.deal)
GROUP BY g.game_id
ORDER BY g.game_id
"""
#: The raw records of some games (read a block at a time, :func:`job_batches`).
RAW_SQL = "SELECT game_id, raw FROM games WHERE game_id IN (SELECT unnest(?::VARCHAR[]))"

_INT, _BIG, _TEXT, _BOOL = pa.int32(), pa.int64(), pa.string(), pa.bool_()
#: The Arrow schemas of the rows, with the store's column types (DuckDB's INTEGER, BIGINT, BOOLEAN, VARCHAR):
#: the same tables go into the store and, as Delta tables, into a lake (``analyze --lake``).
DD_SCHEMAS = {
    "dd_deals": pa.schema(
        [
            ("game_id", _TEXT),
            ("deal", _INT),
            ("number", _INT),
            ("hand_size", _INT),
            ("analysed", _BOOL),
            ("dd_ns", _INT),
            ("dd_ew", _INT),
            ("cost_ns", _INT),
            ("cost_ew", _INT),
            ("nodes", _BIG),
            ("reason", _TEXT),
        ]
    ),
    "dd_plays": pa.schema(
        [
            ("game_id", _TEXT),
            ("deal", _INT),
            ("trick", _INT),
            ("position", _INT),
            ("seat", _TEXT),
            ("card", _TEXT),
            ("value_ns_before", _INT),
            ("value_ns_after", _INT),
            ("cost", _INT),
            ("value_before", _INT),
            ("value_after", _INT),
        ]
    ),
    "dd_deal_sides": pa.schema([("game_id", _TEXT), ("deal", _INT), ("side", _TEXT), ("dd", _INT), ("cost", _INT)]),
}


@dataclass(slots=True)
class AnalyzeSummary:
    games: int = 0
    deals: int = 0
    skipped: int = 0
    #: Deals whose recorded play the search could not follow (each stored with its reason).
    failed: int = 0
    #: CPU seconds of the batches run by :func:`solve_jobs` (in this process or on Dask's workers;
    #: not those a process pool's workers analyse game by game): the search and the rows.
    cpu_seconds: float = 0.0

    def __str__(self) -> str:
        text = f"{self.games} games, {self.deals} deals analysed, {self.skipped} deals skipped (rule violations)"
        if self.failed:
            text += f", {self.failed} deals the search could not follow (see dd_deals.reason)"
        return text

    def add(self, other: AnalyzeSummary) -> None:
        self.games += other.games
        self.deals += other.deals
        self.skipped += other.skipped
        self.failed += other.failed
        self.cpu_seconds += other.cpu_seconds


Rows = list[tuple[Any, ...]]


def _rows(game_id: str, game: GameAnalysis) -> tuple[Rows, Rows, Rows]:
    """The rows of ``dd_deals``, ``dd_plays`` and ``dd_deal_sides`` of one game's analysis."""
    deals: Rows = []
    plays: Rows = []
    sides: Rows = []
    for d in game.deals:
        if d.pass_out or d.deferred:
            continue
        v = d.values
        if v is None:
            deals.append((game_id, d.deal, d.number, None, False, None, None, None, None, None, d.skipped))
            continue
        n = len(v.cards) // 4
        spent = v.lost()
        ns = v.values if v.sides.paired else [None] * len(v.values)  # the team columns: partnerships only
        for i, (seat, cost) in enumerate(zip(v.seats, v.costs, strict=True)):
            own = v.value_of(v.sides.side_of[seat])
            card = CARD_NAMES[v.cards[i]]
            play = (game_id, d.deal, i // 4 + 1, i % 4 + 1, SEATS[seat], card, ns[i], ns[i + 1], cost)
            plays.append((*play, own[i], own[i + 1]))
        teams = (v.dd[0], v.dd[1], spent[0], spent[1]) if v.sides.paired else (None, None, None, None)
        deals.append((game_id, d.deal, d.number, n, True, *teams, v.nodes, None))
        sides += [(game_id, d.deal, *side) for side in zip(v.sides.names, v.dd, spent, strict=True)]
    return deals, plays, sides


#: One game to analyse: its id, its raw record, and which deals.
Job = tuple[str, str, "Scope"]


def _analyse_raw(job: Job) -> tuple[str, GameAnalysis]:
    game_id, raw, scope = job
    obj, error = parse(raw.encode("utf-8"))
    if error is not None:
        return game_id, GameAnalysis(game_id, [], error)
    return game_id, analyse_record(obj, scope)


@dataclass(slots=True)
class Solved:
    """A batch of games analysed: the rows of each dd table (:data:`DD_SCHEMAS`), and what they count."""

    tables: dict[str, pa.Table]
    summary: AnalyzeSummary
    #: The game ids, in order.
    game_ids: list[str]


def solved(results: list[tuple[str, GameAnalysis]]) -> Solved:
    """The rows and counts of some games' analyses."""
    rows: dict[str, Rows] = {name: [] for name in DD_SCHEMAS}
    summary = AnalyzeSummary()
    for game_id, game in results:
        deals, plays, sides = _rows(game_id, game)
        rows["dd_deals"] += deals
        rows["dd_plays"] += plays
        rows["dd_deal_sides"] += sides
        summary.games += 1
        summary.deals += sum(1 for d in game.deals if d.values is not None)
        summary.skipped += sum(1 for d in game.deals if d.skipped and not d.deferred and not d.error)
        summary.failed += sum(1 for d in game.deals if d.error)
    tables = {name: _table(schema, rows[name]) for name, schema in DD_SCHEMAS.items()}
    return Solved(tables, summary, [game_id for game_id, _ in results])


def solve_jobs(jobs: list[Job]) -> Solved:
    """Analyse a batch of games here (in this process or a Dask worker's): their rows."""
    cpu = time.thread_time()
    batch = solved([_analyse_raw(job) for job in jobs])
    batch.summary.cpu_seconds = time.thread_time() - cpu
    return batch


#: A game left to analyse: its id and the deals lacking values.
Pending = tuple[str, frozenset[int]]


def pending_games(store: Any, max_cards: int) -> list[Pending]:
    """The stored games with deals of at most ``max_cards`` cards a hand that have no values yet, by game id."""
    rows = store.con.execute(PENDING_SQL, [max_cards]).fetchall()
    return [(str(g), frozenset(deals)) for g, deals in rows]


#: Games whose raw records are read in one query: a query scans every stored game id, so one a
#: batch would cost the whole store's ids every 20 games; memory holds a block's text.
READ_BLOCK = 1000


def job_batches(store: Any, games: list[Pending], max_cards: int, batch: int) -> Iterator[list[Job]]:
    """The jobs of these games, ``batch`` at a time, in the order given: their raw records read from the store
    a block of whole batches at a time (about :data:`READ_BLOCK` games), as the batches are taken."""
    size = max(1, READ_BLOCK // batch) * batch
    for start in range(0, len(games), size):
        block = games[start : start + size]
        raw = dict(store.con.execute(RAW_SQL, [[g for g, _ in block]]).fetchall())
        jobs = [(g, str(raw[g]), Scope(max_cards, deals)) for g, deals in block]
        for k in range(0, len(jobs), batch):
            yield jobs[k : k + batch]


#: Called with the games done, the games to do and the deals solved so far.
Progress = Callable[[int, int, int], None]


def analyse_store(
    db: Path | str | None,
    *,
    workers: int = 1,
    max_cards: int = 13,
    batch: int = 20,
    progress: Progress | None = None,
) -> AnalyzeSummary:
    """Analyse every stored deal that has no values yet; each batch of games commits on its own.

    Interrupting loses at most the batch in progress; running again resumes.  Deals
    of more than ``max_cards`` a hand are left for a later run.
    """
    from backalley.store.database import Store

    summary = AnalyzeSummary()
    with Store.open(db) as store:
        pending = pending_games(store, max_cards)
        total = len(pending)
        if progress is not None:
            progress(0, total, 0)
        with ExitStack() as stack:
            pool = None
            if workers > 1 and total > 1:  # the same kind of pool as ingest: a worker that dies is an error
                ctx = pool_context()
                pool = stack.enter_context(
                    ProcessPoolExecutor(min(workers, total), mp_context=ctx, initializer=guarded())
                )
            for jobs in job_batches(store, pending, max_cards, batch):
                done = _pooled(pool, jobs) if pool else solve_jobs(jobs)
                store_batch(store, done)
                summary.add(done.summary)
                if progress is not None:
                    progress(summary.games, total, summary.deals)
    return summary


def _pooled(pool: ProcessPoolExecutor, jobs: list[Job]) -> Solved:
    """The jobs' analyses, in order, from the pool's workers; a worker that died is a ``StoreError``."""
    from backalley.store.database import StoreError

    with pool_errors(StoreError, "analysed its games; the batches committed before stay: run analyze again to go on"):
        return solved(list(pool.map(_analyse_raw, jobs)))


def store_batch(store: Any, batch: Solved) -> None:
    """Insert a batch's rows into the store, all or nothing."""
    with store.atomic():  # only deals without rows were solved: nothing to replace
        for name, table in batch.tables.items():
            store.insert_batch(name, table)


def _table(schema: pa.Schema, rows: Rows) -> pa.Table:
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in schema]
    return pa.table([pa.array(col, f.type) for col, f in zip(columns, schema, strict=True)], schema=schema)


__all__ = [
    "DD_SCHEMAS",
    "PAIRS",
    "AnalyzeSummary",
    "DealAnalysis",
    "DealValues",
    "GameAnalysis",
    "PlayedDeal",
    "Scope",
    "Sides",
    "Solved",
    "SourceError",
    "analyse_files",
    "analyse_record",
    "analyse_store",
    "job_batches",
    "pending_games",
    "played_deal",
    "played_tricks",
    "record_ruleset",
    "record_sides",
    "sides_of",
    "solve_deal",
    "solve_jobs",
    "solved",
    "store_batch",
]

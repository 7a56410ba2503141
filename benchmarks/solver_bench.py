"""Benchmark of the double-dummy solver: time and search nodes per deal, by hand size.

    python benchmarks/solver_bench.py [--sizes 1-13] [--deals 20] [--budget 60] [--costs] [--ablation] [--games G]
                                      [--no-partnerships] [--baseline PYTHON|DIR]
                                      [--profile] [--core SO]

Deals are dealt at random (seed ``--seed``) and bid by the simulator's bots,
which fixes the opening leader and any board claim, as in ruleset
``standard``.  For each hand size the script solves up to ``--deals`` deals on
one core, stopping early once ``--budget`` seconds are spent on that size (the
count actually solved is printed), and reports the median and 95th percentile
time per deal and the median node count.  ``--costs`` times the values before
and after every card of a bot's play too (what ``backalley analyze`` does per
deal).  ``--ablation`` repeats each size with one pruning off at a time and
prints the median nodes, to show what each pruning buys.  ``--games G`` times
G whole 25-deal games (13 cards a hand down to 1 and back) with costs.
``--no-partnerships`` solves each seat against the other three (four searches
a deal, as ``backalley analyze FILE`` does for such a ruleset).  Times
are wall clock and this process's CPU time (the machine may be shared: the CPU
time is the one-core figure).  ``--profile`` prints, per hand size, where the
trick boundaries of the value searches went (settled by the target alone, by the
transposition table, by either side's quick tricks, played out as the last
trick, or searched lead by lead), summed over the deals.  ``--baseline`` runs
this same script on another build first (``PYTHON``: another install's
interpreter; ``DIR``: a folder an install put the package in, ``pip install
--no-deps --target DIR``, which goes on ``PYTHONPATH``) and prints each of its rows beside this build's, with this
build's CPU time as a fraction of the baseline's: the same deals, since the deals
come from the seed.  ``--core`` searches with another build of the C search, a
shared object compiled from a variant of ``_ddcore.c`` (``gcc -O2 -shared -fPIC
-I<Python's include dir> _ddcore.c -o DIR/_ddcore<EXT_SUFFIX>``), on this
install's Python code: a change to the search measured without reinstalling
(the baseline run, if any, keeps its own).  Each row also gives the nodes and
the CPU time summed over its deals.  Not a test: nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import statistics
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import backalley
from backalley.analysis import solver as solver_module
from backalley.analysis.dd import PAIRS, PlayedDeal, Sides, sides_of, solve_deal
from backalley.analysis.solver import ALL_PRUNING, NATIVE, DealSolver, Pruning, SolverRules
from backalley.cards import NUM_CARDS
from backalley.engine import DealState
from backalley.rules import find_ruleset
from backalley.simulate import choose_bid, choose_play, player_pool


def bot_deal(rng: random.Random, n: int) -> DealState:
    """A deal of hand size ``n``, bid and played by the simulator's bots (pass-outs redealt)."""
    pool = player_pool(4)
    while True:
        deck = list(range(NUM_CARDS))
        rng.shuffle(deck)
        st = DealState.from_deck(14 - n, rng.randrange(4), deck)
        while st.bidding:
            st.bid(choose_bid(st, pool[st.to_act()].style, rng))
        if st.pass_out:
            continue
        played = 0
        start = list(st.hands)
        while not st.finished:
            card = choose_play(st, pool[st.to_act()].style, rng, played)
            st.play(card)
            played |= 1 << card
        st.hands = start  # the hands at the opening lead, for the solver
        return st


def as_played(st: DealState) -> PlayedDeal:
    assert st.contracts is not None
    hands = (st.hands[0], st.hands[1], st.hands[2], st.hands[3])
    cards = [c for _, trick in st.tricks for c in trick]
    return PlayedDeal(hands, st.trump, st.contracts.lead_exempt, st.tricks[0][0], cards)


def measure(deal: PlayedDeal, costs: bool, pruning: Pruning, sides: Sides = PAIRS) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (this process: the figure that a busy machine distorts least) and nodes."""
    t0, c0 = time.perf_counter(), time.process_time()
    if costs:
        nodes = solve_deal(deal, pruning, sides=sides).nodes
    else:
        nodes = 0
        for side in sides.masks()[: 1 if sides == PAIRS else 4]:
            solver = DealSolver(deal.hands, deal.leader, SolverRules(deal.trump, deal.lead_exempt), side, pruning)
            solver.value()
            nodes += solver.nodes
    return time.perf_counter() - t0, time.process_time() - c0, nodes


#: The C search's profile counts (``Core.profile``), in the order the profile line prints them.
PROFILE_KEYS = (
    "nodes",
    "boundaries_at_bound",
    "boundaries_by_tt",
    "boundaries_by_quick_tricks_side",
    "boundaries_by_quick_tricks_others",
    "boundaries_last_trick",
    "boundaries_searched",
)


def profile_size(n: int, args: argparse.Namespace) -> dict[str, int]:
    """The value searches' profile counts summed over the deals of hand size ``n`` (the C search only)."""
    rng = random.Random(args.seed * 100 + n)
    total = dict.fromkeys(PROFILE_KEYS, 0)
    for _ in range(args.deals):
        deal = as_played(bot_deal(rng, n))
        for side in args.sides.masks()[: 1 if args.sides == PAIRS else 4]:
            solver = DealSolver(deal.hands, deal.leader, SolverRules(deal.trump, deal.lead_exempt), side)
            solver.value()
            for key, count in solver.profile().items():
                total[key] = total.get(key, 0) + count
    return total


def print_profile(n: int, total: dict[str, int], as_json: bool) -> None:
    if as_json:
        print(json.dumps({"hand_size": n, "profile": total}), flush=True)
        return
    boundaries = sum(v for k, v in total.items() if k.startswith("boundaries")) or 1
    shares = "  ".join(
        f"{k.removeprefix('boundaries_')} {100 * total.get(k, 0) / boundaries:.0f}%" for k in PROFILE_KEYS[1:]
    )
    print(f"n={n:>2} profile  nodes {total['nodes']}  boundaries {boundaries}: {shares}", flush=True)


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def bench_size(n: int, args: argparse.Namespace, pruning: Pruning) -> dict[str, Any]:
    rng = random.Random(args.seed * 100 + n)
    times: list[float] = []
    cpu: list[float] = []
    nodes: list[int] = []
    spent = 0.0
    while len(times) < args.deals and spent < args.budget:
        seconds, cpu_seconds, count = measure(as_played(bot_deal(rng, n)), args.costs, pruning, args.sides)
        times.append(seconds)
        cpu.append(cpu_seconds)
        nodes.append(count)
        spent += seconds
    return {
        "hand_size": n,
        "deals": len(times),
        "median_ms": round(1000 * statistics.median(times), 1),
        "p95_ms": round(1000 * p95(times), 1),
        "max_ms": round(1000 * max(times), 1),
        "cpu_median_ms": round(1000 * statistics.median(cpu), 1),
        "cpu_p95_ms": round(1000 * p95(cpu), 1),
        "median_nodes": int(statistics.median(nodes)),
        "p95_nodes": int(p95([float(x) for x in nodes])),
        "total_nodes": sum(nodes),
        "cpu_total_ms": round(1000 * sum(cpu), 1),
        "us_per_node": round(1e6 * sum(cpu) / max(1, sum(nodes)), 2),
    }


def bench_games(args: argparse.Namespace) -> dict[str, Any]:
    """Whole games: the 25 deals of a ``standard`` schedule (13 cards down to 1 and back), with costs."""
    rng = random.Random(args.seed)
    walls: list[float] = []
    cpus: list[float] = []
    for _ in range(args.games):
        wall = cpu = 0.0
        for number in range(1, 26):
            deal = as_played(bot_deal(rng, abs(number - 13) + 1))
            seconds, cpu_seconds, _ = measure(deal, True, ALL_PRUNING, args.sides)
            wall += seconds
            cpu += cpu_seconds
        walls.append(wall)
        cpus.append(cpu)
    return {
        "games": len(walls),
        "median_s": round(statistics.median(walls), 2),
        "max_s": round(max(walls), 2),
        "cpu_median_s": round(statistics.median(cpus), 2),
        "cpu_max_s": round(max(cpus), 2),
    }


def sizes(text: str) -> list[int]:
    if "-" in text:
        lo, hi = text.split("-")
        return list(range(int(lo), int(hi) + 1))
    return [int(s) for s in text.split(",")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=sizes, default=list(range(1, 14)))
    parser.add_argument("--deals", type=int, default=20)
    parser.add_argument("--budget", type=float, default=60.0, help="seconds per hand size at most (roughly)")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--costs", action="store_true", help="also the value before and after every card")
    parser.add_argument("--ablation", action="store_true", help="each pruning off in turn (median nodes)")
    parser.add_argument("--json", action="store_true", help="one JSON object per size on stdout")
    parser.add_argument("--games", type=int, default=0, help="also time this many whole 25-deal games, with costs")
    parser.add_argument("--no-partnerships", action="store_true", help="each seat against the other three")
    parser.add_argument("--profile", action="store_true", help="where the value searches' trick boundaries went")
    parser.add_argument("--baseline", help="another build to run side by side: its python, or a package folder")
    parser.add_argument(
        "--core", help="search with this build of _ddcore.c (a shared object) instead of the installed one"
    )
    args = parser.parse_args()
    if args.baseline and args.profile:
        parser.error("--profile reads counts only this build's search keeps: leave out --baseline")
    if args.baseline:
        side_by_side(args)
        return
    if args.core:
        load_core(args.core)
    args.sides = sides_of(find_ruleset("standard", ("no_partnerships",))) if args.no_partnerships else PAIRS
    build = "C search" if NATIVE or args.core else "compiled (mypyc)" if backalley.compiled() else "pure Python"
    if args.core:
        build += f" from {args.core}"
    mode = "values before and after every card" if args.costs else "value before the opening lead"
    who = "each seat against three" if args.no_partnerships else "N+S against E+W"
    print(f"# solver: {build}; {mode}; {who}; seed {args.seed}", file=sys.stderr)
    variants = [("all", ALL_PRUNING)]
    if args.ablation:
        variants += [(f"no {p}", replace(ALL_PRUNING, **{p: False})) for p in ("tt", "equivalence", "quick_tricks")]
        variants += [("no ordering", replace(ALL_PRUNING, ordering=False))]
    if args.profile:
        for n in args.sizes:
            print_profile(n, profile_size(n, args), args.json)
        return
    for n in args.sizes:
        for name, pruning in variants:
            row = bench_size(n, args, pruning)
            row["pruning"] = name
            if args.json:
                print(json.dumps(row), flush=True)
            else:
                print(
                    f"n={n:>2} {name:<12} deals {row['deals']:>3}  median {row['median_ms']:>9.1f} ms  "
                    f"p95 {row['p95_ms']:>9.1f} ms  max {row['max_ms']:>9.1f} ms  "
                    f"cpu median {row['cpu_median_ms']:>9.1f} ms  p95 {row['cpu_p95_ms']:>9.1f} ms  "
                    f"nodes {row['median_nodes']:>9} (p95 {row['p95_nodes']})  {row['us_per_node']:>5.2f} us/node  "
                    f"total {row['total_nodes']} nodes {row['cpu_total_ms']:.0f} ms",
                    flush=True,
                )
    if args.games:
        row = bench_games(args)
        if args.json:
            print(json.dumps({"whole_game": row}), flush=True)
        else:
            print(
                f"whole game (25 deals, costs) x{row['games']}: median {row['median_s']} s  max {row['max_s']} s  "
                f"cpu median {row['cpu_median_s']} s  max {row['cpu_max_s']} s",
                flush=True,
            )


def load_core(path: str) -> None:
    """Search with the C search built at ``path`` (the module ``_ddcore`` of a variant build of ``_ddcore.c``)."""
    spec = importlib.util.spec_from_file_location("backalley.analysis._ddcore", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"--core: {path} is not a loadable module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    solver_module._DDCORE = module
    solver_module.NATIVE = True


def baseline_rows(args: argparse.Namespace) -> list[dict[str, Any]]:
    """This script's ``--json`` rows on the baseline build (same arguments, so the same deals)."""
    where = Path(args.baseline)
    argv = [a for a in sys.argv[1:] if a not in ("--baseline", args.baseline, "--json")]
    if args.core:  # the variant is this build's, not the baseline's
        argv = [a for a in argv if a not in ("--core", args.core)]
    env = dict(os.environ)
    python = sys.executable
    if where.is_dir():
        env["PYTHONPATH"] = os.pathsep.join([str(where), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    else:
        python = str(where)
    proc = subprocess.run([python, __file__, *argv, "--json"], capture_output=True, text=True, env=env, check=False)
    if proc.returncode:
        raise SystemExit(f"the baseline run failed: {proc.stderr.strip().splitlines()[-1:]}")
    print(proc.stderr.strip().replace("# solver:", "# baseline:"), file=sys.stderr)
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


def this_rows(args: argparse.Namespace) -> list[dict[str, Any]]:
    """This build's ``--json`` rows (a child process too: both builds run the same way)."""
    argv = [a for a in sys.argv[1:] if a not in ("--baseline", args.baseline, "--json")]
    proc = subprocess.run([sys.executable, __file__, *argv, "--json"], capture_output=True, text=True, check=True)
    print(proc.stderr.strip(), file=sys.stderr)
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


def ratio(new: float, old: float) -> str:
    return f"{new / old:.2f}" if old else "-"


def side_by_side(args: argparse.Namespace) -> None:
    """The baseline's rows and this build's, one line each, and this build's CPU as a fraction of the baseline's."""
    old, new = baseline_rows(args), this_rows(args)
    for a, b in zip(old, new, strict=True):
        if "whole_game" in a:
            ga, gb = a["whole_game"], b["whole_game"]
            row = {"whole_game": gb, "baseline": ga}
            text = (
                f"whole game (25 deals, costs) x{gb['games']}: cpu median {ga['cpu_median_s']} s -> "
                f"{gb['cpu_median_s']} s (x{ratio(gb['cpu_median_s'], ga['cpu_median_s'])}), "
                f"max {ga['cpu_max_s']} s -> {gb['cpu_max_s']} s"
            )
        else:
            row = {**b, "baseline": a}
            text = (
                f"n={b['hand_size']:>2} {b['pruning']:<12} deals {b['deals']:>3}  cpu median {a['cpu_median_ms']:>8.1f}"
                f" -> {b['cpu_median_ms']:>8.1f} ms (x{ratio(b['cpu_median_ms'], a['cpu_median_ms'])})  "
                f"p95 {a['cpu_p95_ms']:>8.1f} -> {b['cpu_p95_ms']:>8.1f} ms (x{ratio(b['cpu_p95_ms'], a['cpu_p95_ms'])})"
                f"  nodes {a['median_nodes']:>9} -> {b['median_nodes']:>9}"
                f" (p95 {a['p95_nodes']} -> {b['p95_nodes']})"
            )
            if "total_nodes" in a and "total_nodes" in b:  # a baseline older than these totals has none
                text += (
                    f"  total {a['total_nodes']} -> {b['total_nodes']} nodes, {a['cpu_total_ms']:.0f} -> "
                    f"{b['cpu_total_ms']:.0f} ms"
                )
        print(json.dumps(row) if args.json else text, flush=True)


if __name__ == "__main__":
    main()

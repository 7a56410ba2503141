"""Ingest against validation, side by side, with the writer's CPU apart from the workers'.

    python benchmarks/ingest_split.py GAMES.jsonl [--rounds 3] [--workers 2] [--baseline BIN ...]

For each build (this one's ``backalley``, then every ``--baseline`` one, e.g.
``/work/main/.venv/bin/backalley``), rounds of ``backalley ingest --no-ratings
--workers N`` into a fresh file and ``backalley validate --json --workers N`` on
the same file, interleaved (build A ingest, build A validate, build B ingest, ...),
so that every figure of a round saw the same load.  Per run:

* wall seconds and games/s;
* the CPU of the whole process tree: this script makes itself the children's
  subreaper (``PR_SET_CHILD_SUBREAPER``), so the forkserver and the workers, orphaned
  when the command ends, are reaped here and counted in ``RUSAGE_CHILDREN``;
* the writer's own CPU (the main process and its threads, DuckDB's included): the
  command runs under a two-line wrapper that writes ``getrusage(RUSAGE_SELF)`` at exit;
  the workers' share is the tree's less the writer's;
* peak PSS of the tree (sampled every 50 ms), and the database's size.

Results go to the terminal (a markdown table with each build's ingest ÷ validate
games/s ratio per round, and the ratios against the first baseline) and to ``--out``.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from run import run_timed  # benchmarks/ is this script's folder

ROOT = Path(__file__).resolve().parent.parent
PR_SET_CHILD_SUBREAPER = 36
#: Runs a build's ``backalley`` and writes this process's own CPU seconds at exit.
WRAP = (
    "import atexit, os, resource, sys\n"
    "def _cpu():\n"
    "    ru = resource.getrusage(resource.RUSAGE_SELF)\n"
    "    with open(os.environ['BACKALLEY_SELF_CPU'], 'w') as fh: fh.write(repr(ru.ru_utime + ru.ru_stime))\n"
    "atexit.register(_cpu)\n"
    "from backalley.cli.batch import main\n"
    "sys.argv = ['backalley', *sys.argv[1:]]\n"
    "sys.exit(main())\n"
)


def subreaper() -> None:
    """Make this process the subreaper of its descendants (Linux)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


def run(python: Path, args: list[str], memory: bool) -> dict[str, float]:
    """One command of a build: wall s, tree CPU s, its own CPU s, peak tree PSS MB."""
    with tempfile.NamedTemporaryFile(suffix=".cpu", delete=False) as fh:
        own_file = Path(fh.name)
    env = {**os.environ, "BACKALLEY_SELF_CPU": str(own_file)}
    wall, _, pss, tree = run_timed([str(python), "-c", WRAP, *args], False, sample=memory, env=env, reap=True)
    own = float(own_file.read_text())
    own_file.unlink()
    return {"wall": wall, "tree_cpu": tree, "own_cpu": own, "pss_mb": pss}


def measure(
    games_file: Path, builds: dict[str, Path], rounds: int, workers: int, work: Path, memory: bool = True
) -> dict[str, list[dict[str, Any]]]:
    """Interleaved rounds of every build's ingest and validate on ``games_file``: each run's figures, by build."""
    subreaper()
    games = sum(1 for line in games_file.open("rb") if line.strip())
    work.mkdir(parents=True, exist_ok=True)
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in builds}
    for r in range(rounds):
        for name, exe in builds.items():
            python = exe.parent / "python"
            db = work / f"split-{r}.duckdb"
            for p in (db, Path(f"{db}.wal")):
                p.unlink(missing_ok=True)
            w = str(workers)
            ing = run(python, ["ingest", "--no-ratings", "--workers", w, "--db", str(db), str(games_file)], memory)
            ing["file_mb"] = db.stat().st_size / 2**20
            val = run(python, ["validate", "--json", "--workers", w, str(games_file)], memory)
            db.unlink(missing_ok=True)
            runs[name].append({"ingest": ing, "validate": val, "load": os.getloadavg()[0]})
            print(f"round {r + 1} {name}: " + line(ing, val, games), flush=True)
    return runs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("games_file", type=Path)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--baseline", type=Path, action="append", default=[], help="another build's backalley")
    ap.add_argument("--no-memory", action="store_true", help="do not sample memory (it costs CPU)")
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "backalley-split")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "work" / "ingest_split.json")
    args = ap.parse_args()
    builds = {"this": Path(sys.executable).parent / "backalley", **{str(b): b for b in args.baseline}}
    runs = measure(args.games_file, builds, args.rounds, args.workers, args.work, not args.no_memory)
    games = sum(1 for line in args.games_file.open("rb") if line.strip())
    out = {"games": games, "workers": args.workers, "runs": runs}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2) + "\n")
    print(table(runs, games))
    print(f"-> {args.out}")


def line(ing: dict[str, float], val: dict[str, float], games: int) -> str:
    ms = 1e3 / games
    return (
        f"ingest {games / ing['wall']:.0f} g/s, validate {games / val['wall']:.0f} g/s, "
        f"ratio {val['wall'] / ing['wall']:.3f}; CPU ms a game: tree {ing['tree_cpu'] * ms:.3f} "
        f"(writer {ing['own_cpu'] * ms:.3f}, workers {(ing['tree_cpu'] - ing['own_cpu']) * ms:.3f}), "
        f"validate tree {val['tree_cpu'] * ms:.3f}; PSS {ing['pss_mb']:.0f} MB, file {ing['file_mb']:.1f} MB"
    )


def span(values: list[float], fmt: str) -> str:
    lo, hi = min(values), max(values)
    return format(lo, fmt) if format(lo, fmt) == format(hi, fmt) else f"{lo:{fmt}}–{hi:{fmt}}"


def table(runs: dict[str, list[dict[str, Any]]], games: int) -> str:
    ms = 1e3 / games
    rows = [
        "| build | ingest games/s | validate games/s | ingest ÷ validate | tree CPU ms a game | writer | workers"
        " | validate tree | peak PSS MB | file MB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, rs in runs.items():
        i = [r["ingest"] for r in rs]
        v = [r["validate"] for r in rs]
        cells = [
            span([games / x["wall"] for x in i], ".0f"),
            span([games / x["wall"] for x in v], ".0f"),
            span([b["wall"] / a["wall"] for a, b in zip(i, v, strict=True)], ".2f"),
            span([x["tree_cpu"] * ms for x in i], ".2f"),
            span([x["own_cpu"] * ms for x in i], ".2f"),
            span([(x["tree_cpu"] - x["own_cpu"]) * ms for x in i], ".2f"),
            span([x["tree_cpu"] * ms for x in v], ".2f"),
            span([x["pss_mb"] for x in i], ".0f"),
            span([x["file_mb"] for x in i], ".1f"),
        ]
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    names = list(runs)
    if len(names) > 1:
        base = runs[names[1]]
        for name in names[:1]:
            rs = runs[name]
            speed = [b["ingest"]["wall"] / a["ingest"]["wall"] for a, b in zip(rs, base, strict=True)]
            cpu = [a["ingest"]["tree_cpu"] / b["ingest"]["tree_cpu"] for a, b in zip(rs, base, strict=True)]
            own = [a["ingest"]["own_cpu"] / b["ingest"]["own_cpu"] for a, b in zip(rs, base, strict=True)]
            rows.append(
                f"\n{name} ÷ {names[1]}, round by round: ingest games/s × {span(speed, '.2f')}, tree CPU ×"
                f" {span(cpu, '.2f')}, writer CPU × {span(own, '.2f')} (median games/s ×"
                f" {statistics.median(speed):.2f})"
            )
    return "\n".join(rows)


if __name__ == "__main__":
    main()

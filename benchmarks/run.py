"""Benchmark: each stage of the pipeline as games/s and card plays/s, against the parse limit.

    python benchmarks/run.py [--games 10000] [--reps 3] [--readme]

Generates N complete games once with the simulator, then measures on that one
file, each stage in its own process (the median of ``--reps`` runs):

1. ``parse``: read the file and decode every line with the fastest JSON parser
   the project uses (msgspec), and nothing else: the limit for the stages below;
2. ``validate_1`` / ``validate_all``: ``backalley validate --json`` end to end,
   one worker pinned to one core / all CPUs;
3. ``ingest_1`` / ``ingest_all``: ``backalley ingest`` into a fresh DuckDB file;
4. ``report``: ``backalley report`` for the ingested database;
5. ``growth``: ``benchmarks/ingest_growth.py``: ``--growth-blocks`` blocks of ``--growth-games``
   games (default 10 of 10,000) ingested one after the other into one file, all CPUs: each
   block's games/s, CPU a game, peak PSS and file size, and the last block against the first;
5a. ``split``: ``benchmarks/ingest_split.py``: ``ingest --workers 2`` against ``validate --json
    --workers 2`` on the standard games, 2,000 pereulok and 2,000 bab-online games, two rounds, this
    build and ``--baseline`` interleaved: games/s, the ratio, the CPU a game of the tree, the writer and
    the workers, peak PSS, file size;
6. ``analyze``: the double-dummy solver per deal by hand size (``benchmarks/solver_bench.py``
   on deals of ``--solver-sizes`` cards, one core; median, 95th percentile, nodes; and whole games);
7. ``rulesets``: for every ruleset (and ``standard``/``pereulok`` with all four options), N
   games of it, then ``parse`` and ``validate --json --workers 1`` pinned to one core,
   interleaved (parse, validate, parse, validate, ...): the one-core ratio against the
   target of 0.4 (issue 16) and the card plays/s against 1 M (issue 12), side by side,
   and ``validate --workers <all CPUs>`` (not pinned): its speed-up over one core against
   the target of 1.8 on two cores (issue 16).  Beside it, the machine's own ceiling: as many
   one-core validations at once as there are CPUs, each pinned to its own (``pair``): the
   work of N one-core runs done in the time of the slowest, so ``N × one ÷ pair`` is what
   N independent processes get from N CPUs here, before any hand-off between them.
   ``--baseline PATH`` adds the ``validate`` of another install (e.g. main's
   ``.venv/bin/backalley``) to the same interleaved rounds.  Both wall and CPU seconds
   (user + system of the process tree) are kept: on a shared machine the CPU ratio is
   the steadier one.  The load average is recorded with the figures.

7. ``dask``: ``benchmarks/dask_stage.py``: the scale-out ingest into a Delta Lake with 1 and
   2 local Dask workers: games/s, and per partition the task's and the client's commit cost.
8. ``dask_analyze``: ``benchmarks/dask_analyze.py``: the store's double-dummy analysis of 400 of
   those games (deals of up to 9 cards) serial, with ``--workers 2``, and on 1 and 2 local Dask
   workers: games/s, and the CPU a game of the client and of the batches.
9. ``ledger``: ``benchmarks/ledger_time.py`` (the luck ledger's share of 10,000 analysed games:
   500,000 sides), one core; ``ratings``: ``benchmarks/ratings_time.py`` (ratings of 10,000
   games), one core; against the targets of 10 s and 30 s (issue 34).
10. ``strengths``: ``backalley simulate --workers 1`` of ``--strength-games`` games by four strong
   players and by four basic ones, interleaved, one core: the CPU ratio against the bound of 3
   (issue 34); and ``benchmarks/strengths.py``: the levels' margins head to head.

Peak memory is the largest resident memory of the stage's process tree, sampled
every 20 ms from /proc: summed RSS (pages shared between the processes counted
once per process) and summed PSS (each page counted once).  Results go to the terminal and to
``benchmarks/results.json`` (a run with ``--skip``: ``results-partial.json`` in ``--work``, or
``--out``); ``--readme`` also rewrites the table in README.md.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dask_analyze import markdown as dd_markdown
from dask_analyze import measure as dd_measure
from dask_stage import dask_stage
from dask_stage import markdown as dask_markdown

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
BACKALLEY = [str(BIN / "backalley")] if (BIN / "backalley").exists() else [sys.executable, "-m", "backalley"]
PARSE_ONLY = (
    "import sys, msgspec\n"
    "dec = msgspec.json.Decoder()\n"
    "with open(sys.argv[1], 'rb') as f:\n"
    "    for line in f:\n"
    "        dec.decode(line)\n"
)


def _pss_kb(pid: int) -> int:
    """Proportional set size of one process (shared pages divided among their users), in KiB."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def tree_mem_kb(root: int) -> tuple[int, int]:
    """Resident memory of a process and all its descendants, in KiB: the sum of RSS, and of PSS.

    Summed RSS counts every page shared between the processes (the interpreter,
    libraries, the forkserver's preloaded modules) once per process; summed PSS
    counts each page once, so it is the tree's real footprint.
    """
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid, ppid = int(entry), int(fields[1])
        children.setdefault(ppid, []).append(pid)
        rss[pid] = int(fields[21]) * (os.sysconf("SC_PAGE_SIZE") // 1024)
    total_rss = total_pss = 0
    todo = [root]
    while todo:
        pid = todo.pop()
        total_rss += rss.get(pid, 0)
        total_pss += _pss_kb(pid)
        todo += children.get(pid, [])
    return total_rss, total_pss


def run_stage(cmd: list[str], pin: bool, stdout: Any = subprocess.DEVNULL) -> tuple[float, float, float]:
    """Run one command; return (seconds, peak tree RSS in MB, peak tree PSS in MB)."""
    elapsed, peak, peak_pss, _ = run_timed(cmd, pin, stdout)
    return elapsed, peak, peak_pss


def cpu_children() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def reap_orphans() -> None:
    """Wait for every descendant left (a subreaper's orphans come to it: a forkserver and its workers)."""
    while True:
        try:
            os.wait()
        except ChildProcessError:
            return


def run_timed(
    cmd: list[str],
    pin: bool,
    stdout: Any = subprocess.DEVNULL,
    sample: bool = True,
    env: dict[str, str] | None = None,
    reap: bool = False,
) -> tuple[float, float, float, float]:
    """Run one command; return (seconds, peak tree RSS in MB, peak tree PSS in MB, CPU seconds of the tree).

    With ``sample=False`` memory is not sampled (both peaks are 0): reading every
    process's ``smaps_rollup`` each 20 ms takes CPU from an unpinned command on a
    two-core machine (10,000 pereulok games on all CPUs: 0.82 s sampled, 0.71 s not).
    ``reap=True`` waits for the orphans the command left before the CPU is read (this
    process must be their subreaper), so that a forkserver's workers are counted.
    """
    preexec: Callable[[], None] | None = (lambda: os.sched_setaffinity(0, {0})) if pin else None
    cpu0 = cpu_children()
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.PIPE, preexec_fn=preexec, cwd=ROOT, env=env)
    peak = peak_pss = 0
    done = threading.Event()

    def sample_memory() -> None:
        nonlocal peak, peak_pss
        while not done.is_set():
            rss, pss = tree_mem_kb(proc.pid)
            peak, peak_pss = max(peak, rss), max(peak_pss, pss)
            time.sleep(0.02)

    sampler = threading.Thread(target=sample_memory, daemon=True)
    if sample:
        sampler.start()
    _, err = proc.communicate()
    elapsed = time.perf_counter() - start
    done.set()
    if sample:
        sampler.join()
    if reap:
        reap_orphans()
    # The simulated games are all valid and complete: anything but 0 is a failure (an
    # uncaught error exits with 1 too, and must not pass as a fast run).
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{err.decode(errors='replace')[-2000:]}")
    return elapsed, peak / 1024, peak_pss / 1024, cpu_children() - cpu0


def run_pinned_together(cmd: list[str], cpus: int) -> tuple[float, float]:
    """Run ``cpus`` copies of ``cmd`` at once, each pinned to its own CPU; (seconds until the last ends,
    CPU seconds of all): the machine's ceiling for that many independent processes."""
    cpu0 = cpu_children()
    start = time.perf_counter()
    procs = [
        subprocess.Popen(
            cmd,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            preexec_fn=functools.partial(os.sched_setaffinity, 0, {k}),
            cwd=ROOT,
        )
        for k in sorted(os.sched_getaffinity(0))[:cpus]
    ]
    for proc in procs:
        _, err = proc.communicate()
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{err.decode(errors='replace')[-2000:]}")
    return time.perf_counter() - start, cpu_children() - cpu0


def count_plays(path: Path) -> tuple[int, int]:
    import msgspec

    dec = msgspec.json.Decoder()
    games = plays = 0
    with path.open("rb") as fh:
        for line in fh:
            rec = dec.decode(line)
            games += 1
            plays += sum(4 * len(d["tricks"]) for d in rec["deals"])
    return games, plays


def machine() -> dict[str, Any]:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": model or platform.processor(),
        "cpus": os.cpu_count(),
        "memory_gb": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "python": platform.python_version(),
        "system": f"{platform.system()} {platform.release()}",
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--games", type=int, default=10_000, help="complete games to generate (default 10000)")
    ap.add_argument("--reps", type=int, default=3, help="repetitions per stage; the median counts (default 3)")
    ap.add_argument("--work", type=Path, default=ROOT / "benchmarks" / "work", help="scratch folder")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--readme", action="store_true", help="rewrite the benchmark table in README.md")
    ap.add_argument("--skip", default="", help="comma-separated stages to skip")
    ap.add_argument(
        "--out",
        type=Path,
        help="where the results go (default: benchmarks/results.json for a whole run; with --skip,"
        " results-partial.json in the scratch folder, so that a partial run leaves the whole one's figures)",
    )
    ap.add_argument("--solver-sizes", default="1-13", help="hand sizes for the analyze stage (default 1-13)")
    ap.add_argument(
        "--rulesets",
        default=",".join(RULESET_STAGES),
        help="comma-separated rulesets for the rulesets stage, NAME or NAME+OPTION+... (default: all five)",
    )
    ap.add_argument("--baseline", type=Path, help="another install's backalley command, validated side by side")
    ap.add_argument("--growth-blocks", type=int, default=10, help="blocks of the growth stage (default 10)")
    ap.add_argument("--growth-games", type=int, help="games a block of the growth stage (default: --games)")
    ap.add_argument("--strength-games", type=int, default=500, help="games of the strengths stage (default 500)")
    ap.add_argument(
        "--margin-games", type=int, default=2000, help="games a pairing of the strengths stage (default 2000)"
    )
    args = ap.parse_args()

    work: Path = args.work
    work.mkdir(parents=True, exist_ok=True)
    skip = {s for s in args.skip.split(",") if s}
    # The standard games of the stages below are the rulesets stage's standard games.
    games_file = ruleset_file(work, "standard", args.games, args.seed)
    games, plays = count_plays(games_file) if not skip >= MAIN_STAGES else (0, 0)
    cpus = len(os.sched_getaffinity(0))
    db = work / "bench.duckdb"
    reports = work / "reports"

    def fresh_db() -> None:
        for p in (db, Path(str(db) + ".wal")):
            p.unlink(missing_ok=True)
        shutil.rmtree(Path(str(db) + ".tmp"), ignore_errors=True)

    stages: dict[str, tuple[list[str], bool, Callable[[], None] | None]] = {
        "parse": ([sys.executable, "-c", PARSE_ONLY, str(games_file)], True, None),
        "validate_1": ([*BACKALLEY, "validate", "--json", "--workers", "1", str(games_file)], True, None),
        "validate_all": ([*BACKALLEY, "validate", "--json", "--workers", str(cpus), str(games_file)], False, None),
        # --no-ratings: the ingest itself (the ratings' refit after it is the ``ratings`` stage).
        "ingest_1": (
            [*BACKALLEY, "ingest", "--no-ratings", "--workers", "1", "--db", str(db), str(games_file)],
            True,
            fresh_db,
        ),
        "ingest_all": (
            [*BACKALLEY, "ingest", "--no-ratings", "--workers", str(cpus), "--db", str(db), str(games_file)],
            False,
            fresh_db,
        ),
        "report": ([*BACKALLEY, "report", "--db", str(db), "--out", str(reports)], False, None),
    }
    results: dict[str, dict[str, float]] = {}
    for name, (cmd, pin, before) in stages.items():
        if name in skip:
            continue
        times, peaks, pss_peaks = [], [], []
        for _ in range(args.reps):
            if before:
                before()
            if name == "report":
                shutil.rmtree(reports, ignore_errors=True)
            elapsed, peak, peak_pss = run_stage(cmd, pin)
            times.append(elapsed)
            peaks.append(peak)
            pss_peaks.append(peak_pss)
        t = statistics.median(times)
        results[name] = {
            "seconds": round(t, 3),
            "games_per_s": round(games / t, 1),
            "plays_per_s": round(plays / t, 1),
            "peak_rss_mb": round(max(peaks), 1),
            "peak_pss_mb": round(max(pss_peaks), 1),
        }
        print(
            f"{name:<13} {results[name]['games_per_s']:>10,.0f} games/s {results[name]['plays_per_s']:>14,.0f} plays/s  peak RSS {results[name]['peak_rss_mb']:>7.1f} MB, PSS {results[name]['peak_pss_mb']:>7.1f} MB",
            flush=True,
        )

    grown = {} if "growth" in skip else growth_stage(args, work, cpus)
    split = {} if "split" in skip else split_stage(args, work)
    analyze = [] if "analyze" in skip else solver_stage(args.solver_sizes, args.baseline)
    # The scale-out ingest (docs/scale-out.md): 1 and 2 local Dask workers into a Delta Lake.
    dask = [] if "dask" in skip else dask_stage(games_file, [1, 2], DASK_PARTITION_BYTES)
    # The store's analysis (analyze --cluster): serial, a pool of 2 and 1 and 2 local Dask workers.
    dask_dd = (
        [] if "dask_analyze" in skip else dd_measure(games_file, DD_GAMES, DD_MAX_CARDS, [1, 2], DD_BATCH, args.reps)
    )
    per_ruleset = {} if "rulesets" in skip else rulesets_stage(args, work)
    timed_scripts = {k: script_stage(k) for k in ("ledger", "ratings") if k not in skip}
    strengths = {} if "strengths" in skip else strengths_stage(args, work)
    parse_rate = results.get("parse", {}).get("games_per_s")
    ratio = {k: round(v["games_per_s"] / parse_rate, 3) for k, v in results.items() if parse_rate and k != "parse"}
    out = {
        "games": games,
        "plays": plays,
        "reps": args.reps,
        "stages": results,
        "ratio_to_parse": ratio,
        "growth": grown,
        "split": split,
        "analyze": analyze,
        "rulesets": per_ruleset,
        "dask": dask,
        "dask_analyze": dask_dd,
        "scripts": timed_scripts,
        "strengths": strengths,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "machine": machine(),
    }
    dest = args.out or (work / "results-partial.json" if skip else ROOT / "benchmarks" / "results.json")
    dest.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    table = markdown_table(out) if results else ""
    if table:
        print()
        print(table)
    if per_ruleset:
        print()
        print(rulesets_table(per_ruleset, out["load_average"]))
    if dask:
        print()
        print(dask_markdown(dask))
    if dask_dd:
        print()
        print(dd_markdown(dask_dd))
    print(f"\nresults: {dest}", flush=True)
    if args.readme and not table:
        print("README.md not updated: the stages of its table were skipped", flush=True)
    elif args.readme:
        readme = ROOT / "README.md"
        text = readme.read_text(encoding="utf-8")
        start, end = "<!-- bench:start -->", "<!-- bench:end -->"
        if start in text and end in text:
            head, rest = text.split(start, 1)
            _, tail = rest.split(end, 1)
            readme.write_text(f"{head}{start}\n{table}\n{end}{tail}", encoding="utf-8")
            print("README.md updated")


#: Byte range of one Dask task in the ``dask`` stage (about 350 games).
DASK_PARTITION_BYTES = 8 * 1024 * 1024
#: The ``dask_analyze`` stage: games, their deals of at most this many cards a hand, games a task.
DD_GAMES = 400
DD_MAX_CARDS = 9
DD_BATCH = 20
#: The stages on the one file of standard games (the others: ``analyze``, ``rulesets``).
MAIN_STAGES = {"parse", "validate_1", "validate_all", "ingest_1", "ingest_all", "report"}
#: The rulesets stage: every ruleset, and the two that take options with all four of them.
RULESET_STAGES = (
    "standard",
    "standard+no_jokers+short_deck+spades_trump+no_partnerships",
    "pereulok",
    "pereulok+no_jokers+short_deck+spades_trump+no_partnerships",
    "bab-online",
)
#: Issue 16: validate --json on one core at this share of the parse limit, for every ruleset.
RATIO_TARGET = 0.4
#: Issue 12: every ruleset but standard validates at this many card plays/s on one core.
PLAYS_TARGET = 1_000_000
#: Issue 16: validate --json on all CPUs (two) at this multiple of the one-core speed (wall time).
ALL_CPUS_TARGET = 1.8


def ruleset_file(work: Path, spec: str, games: int, seed: int) -> Path:
    name, *options = spec.split("+")
    path = work / f"games-{spec}-{games}-{seed}.jsonl"
    if not path.exists():
        print(f"simulating {games} games of {spec} -> {path} ...", flush=True)
        cmd = [*BACKALLEY, "simulate", "--games", str(games), "--seed", str(seed), "--ruleset", name]
        cmd += ["--options", ",".join(options)] if options else []
        subprocess.run([*cmd, "--out", str(path)], check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    return path


def rulesets_stage(args: argparse.Namespace, work: Path) -> dict[str, dict[str, Any]]:
    """Parse and one-core validate of each ruleset's games, interleaved, median of ``--reps`` rounds."""
    out: dict[str, dict[str, Any]] = {}
    for spec in (s for s in args.rulesets.split(",") if s):
        path = ruleset_file(work, spec, args.games, args.seed)
        games, plays = count_plays(path)
        one = work / f"one-{spec}.jsonl"  # start-up: the whole command on one record
        with path.open("rb") as fh:
            one.write_bytes(fh.readline())
        cpus = len(os.sched_getaffinity(0))
        cmds = {
            "startup": [*BACKALLEY, "validate", "--json", "--workers", "1", str(one)],
            "parse": [sys.executable, "-c", PARSE_ONLY, str(path)],
            "validate": [*BACKALLEY, "validate", "--json", "--workers", "1", str(path)],
            "validate_all": [*BACKALLEY, "validate", "--json", "--workers", str(cpus), str(path)],
        }
        if args.baseline:
            cmds["baseline"] = [str(args.baseline), "validate", "--json", "--workers", "1", str(path)]
        wall: dict[str, list[float]] = {k: [] for k in cmds}
        cpu: dict[str, list[float]] = {k: [] for k in cmds}
        wall["pair"], cpu["pair"] = [], []
        for _ in range(args.reps):
            for k, cmd in cmds.items():
                elapsed, _peak, _pss, used = run_timed(cmd, k != "validate_all", sample=False)  # (no memory shown)
                wall[k].append(elapsed)
                cpu[k].append(used)
            if cpus > 1:
                elapsed, used = run_pinned_together(cmds["validate"], cpus)
                wall["pair"].append(elapsed)
                cpu["pair"].append(used)
        w = {k: statistics.median(v) for k, v in wall.items() if v}
        c = {k: statistics.median(v) for k, v in cpu.items() if v}
        row: dict[str, Any] = {"games": games, "plays": plays, "wall_s": w, "cpu_s": c}
        row["startup_share"] = round(w["startup"] / w["validate"], 3)
        row["startup_cpu_share"] = round(c["startup"] / c["validate"], 3)
        row["cpus"] = cpus
        row["all_cpus_speedup"] = round(w["validate"] / w["validate_all"], 2)
        # What as many independent one-core runs as CPUs get here: the ceiling of the speed-up.
        row["machine_ceiling"] = round(cpus * w["validate"] / w["pair"], 2) if "pair" in w else 1.0
        for k in cmds:
            if k not in ("parse", "startup", "validate_all"):
                row[f"{k}_ratio"] = round(w["parse"] / w[k], 3)
                row[f"{k}_cpu_ratio"] = round(c["parse"] / c[k], 3)
                row[f"{k}_plays_per_s"] = round(plays / w[k])
                row[f"{k}_cpu_plays_per_s"] = round(plays / c[k])
        out[spec] = row
        print(rulesets_line(spec, row), flush=True)
    return out


def rulesets_line(spec: str, row: dict[str, Any]) -> str:
    line = (
        f"{spec[:40]:<40} ratio {row['validate_ratio']:.2f} (CPU {row['validate_cpu_ratio']:.2f}; target "
        f"{RATIO_TARGET})  {row['validate_plays_per_s'] / 1e6:5.2f} M plays/s (CPU "
        f"{row['validate_cpu_plays_per_s'] / 1e6:.2f}; target {PLAYS_TARGET / 1e6:g})"
        f"  start-up {row['startup_share']:.0%} (CPU {row['startup_cpu_share']:.0%})"
        f"  {row['cpus']} CPUs {row['all_cpus_speedup']:.2f}x (target {ALL_CPUS_TARGET}x;"
        f" {row['cpus']} one-core runs at once: {row.get('machine_ceiling', float('nan')):.2f}x)"
    )
    if "baseline_ratio" in row:
        line += (
            f"  | baseline ratio {row['baseline_ratio']:.2f} (CPU {row['baseline_cpu_ratio']:.2f}) "
            f"{row['baseline_plays_per_s'] / 1e6:5.2f} M plays/s"
        )
    return line


def rulesets_table(rows: dict[str, dict[str, Any]], load: list[float]) -> str:
    base = any("baseline_ratio" in r for r in rows.values())
    head = (
        f"| ruleset | games | plays/game | × parse limit (target {RATIO_TARGET}) | CPU × parse "
        f"| M plays/s (target {PLAYS_TARGET / 1e6:g}) | CPU M plays/s | start-up share (CPU) "
        f"| all CPUs ÷ one (target {ALL_CPUS_TARGET}) | the machine: N one-core runs at once |"
    )
    head += " baseline × parse | baseline CPU × parse | baseline M plays/s |" if base else ""
    lines = [
        f"validate --json, one core, interleaved with the parse, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}:",
        "",
        head,
        "|---|" + "---:|" * (head.count("|") - 2),
    ]
    for spec, r in rows.items():
        cells = [
            spec,
            f"{r['games']:,}",
            f"{r['plays'] / r['games']:.0f}",
            f"{r['validate_ratio']:.2f}",
            f"{r['validate_cpu_ratio']:.2f}",
            f"{r['validate_plays_per_s'] / 1e6:.2f}",
            f"{r['validate_cpu_plays_per_s'] / 1e6:.2f}",
            f"{r['startup_share']:.0%} ({r['startup_cpu_share']:.0%})",
            f"{r['all_cpus_speedup']:.2f} ({r['cpus']} CPUs)",
            f"{r['machine_ceiling']:.2f}" if "machine_ceiling" in r else "—",
        ]
        if base:
            cells += [
                f"{r['baseline_ratio']:.2f}",
                f"{r['baseline_cpu_ratio']:.2f}",
                f"{r['baseline_plays_per_s'] / 1e6:.2f}",
            ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


#: Issue 34: the luck ledger of 10,000 analysed games and the ratings of 10,000 games (one core), in seconds.
SCRIPT_TARGETS = {"ledger": 10.0, "ratings": 30.0}
#: Issue 34: `simulate` with strong players within this multiple of the time with basic ones.
STRENGTH_BOUND = 3.0


def script_stage(name: str) -> dict[str, Any]:
    """``benchmarks/<name>_time.py`` at its defaults (10,000 games) pinned to one core: its lines and CPU seconds."""
    cmd = [sys.executable, str(ROOT / "benchmarks" / f"{name}_time.py")]
    cpu0 = cpu_children()
    proc = subprocess.run(
        cmd, capture_output=True, text=True, cwd=ROOT, preexec_fn=lambda: os.sched_setaffinity(0, {0})
    )
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    row = {
        "lines": proc.stdout.splitlines(),
        "cpu_s": round(cpu_children() - cpu0, 2),
        "target_s": SCRIPT_TARGETS[name],
    }
    for line in row["lines"]:
        print(f"{name}: {line} (target {SCRIPT_TARGETS[name]:g} s)", flush=True)
    return row


def strengths_stage(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """``simulate`` by four strong and four basic players, interleaved, one core; then the margins."""
    games = str(args.strength_games)
    lists = {"basic": "Ann,Bea,Cal,Dan", "strong": "Ann:strong,Bea:strong,Cal:strong,Dan:strong"}
    cpu: dict[str, list[float]] = {k: [] for k in lists}
    for _ in range(args.reps):
        for level, players in lists.items():
            out = work / f"strength-{level}.jsonl"
            cmd = [*BACKALLEY, "simulate", "-n", games, "--seed", str(args.seed), "-w", "1", "--players", players]
            cpu[level].append(run_timed([*cmd, "-o", str(out)], True, sample=False)[3])
    best = {k: statistics.median(v) for k, v in cpu.items()}
    ratio = round(best["strong"] / best["basic"], 2)
    print(
        f"strengths: simulate of {games} games, CPU basic {best['basic']:.2f} s, strong {best['strong']:.2f} s:"
        f" {ratio:.2f}x (bound {STRENGTH_BOUND:g})",
        flush=True,
    )
    cmd = [sys.executable, str(ROOT / "benchmarks" / "strengths.py"), "--games", str(args.margin_games), "--json"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=ROOT)
    margins = json.loads(proc.stdout)["margins"]
    for k, m in margins.items():
        print(
            f"strengths: {k}: {m['mean']:+.2f} ± {m['half_width']:.2f} points a deal ({m['games']} games)", flush=True
        )
    return {"games": args.strength_games, "cpu_s": best, "ratio": ratio, "bound": STRENGTH_BOUND, "margins": margins}


def growth_stage(args: argparse.Namespace, work: Path, cpus: int) -> dict[str, Any]:
    """The growth stage (issue 13): blocks ingested into one file, each block's games/s (ingest_growth.py)."""
    from ingest_growth import growth  # benchmarks/ is this script's folder

    print(f"growth: {args.growth_blocks} blocks of {args.growth_games or args.games} games into one file", flush=True)
    return growth(work, args.growth_blocks, args.growth_games or args.games, cpus, args.seed)


#: The split stage (issue 36): its rulesets, games of each (standard: --games), rounds.
SPLIT_RULESETS = {"standard": 0, "pereulok": 2000, "bab-online": 2000}
SPLIT_ROUNDS = 2


def split_stage(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """``ingest --workers 2`` against ``validate --json --workers 2`` per ruleset, this build and ``--baseline``
    interleaved, the writer's CPU apart (benchmarks/ingest_split.py); prints each ruleset's table."""
    from ingest_split import measure, table  # benchmarks/ is this script's folder

    builds = {"this": BIN / "backalley", **({str(args.baseline): args.baseline} if args.baseline else {})}
    out: dict[str, Any] = {}
    for spec, n in SPLIT_RULESETS.items():
        games_file = ruleset_file(work, spec, n or args.games, args.seed)
        games = sum(1 for line in games_file.open("rb") if line.strip())
        runs = measure(games_file, builds, SPLIT_ROUNDS, 2, work / "split")
        print(f"\nsplit, {games:,} {spec} games:\n{table(runs, games)}", flush=True)
        out[spec] = {"games": games, "runs": runs}
    return out


def solver_stage(sizes: str, baseline: Path | None = None) -> list[dict[str, Any]]:
    """The analyze stage: ``solver_bench.py --json``, one row per hand size, then 3 whole games with costs.

    With ``baseline`` (another install's ``backalley`` command), the same deals on that install's
    interpreter too: each row holds the baseline's figures under ``baseline``.
    """
    cmd = [sys.executable, str(ROOT / "benchmarks" / "solver_bench.py"), "--sizes", sizes]
    if baseline is not None:
        cmd += ["--baseline", str(baseline.parent / "python")]
    proc = subprocess.run(
        [*cmd, "--deals", "20", "--budget", "30", "--games", "3", "--json"], capture_output=True, text=True, check=True
    )
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    for r in rows:
        if "whole_game" in r:
            g = r["whole_game"]
            if "baseline" in r:
                print(f"analyze whole game, baseline: CPU median {r['baseline']['cpu_median_s']} s", flush=True)
            print(
                f"analyze whole game (25 deals, costs) x{g['games']}: median {g['median_s']} s, "
                f"CPU median {g['cpu_median_s']} s",
                flush=True,
            )
            continue
        base = r.get("baseline")
        if base:
            print(
                f"analyze n={r['hand_size']:<3} baseline CPU median {base['cpu_median_ms']:>9.1f} ms  "
                f"p95 {base['cpu_p95_ms']:>9.1f} ms  nodes {base['median_nodes']:>9}",
                flush=True,
            )
        print(
            f"analyze n={r['hand_size']:<3} {r['deals']:>3} deals  median {r['median_ms']:>9.1f} ms  "
            f"p95 {r['p95_ms']:>9.1f} ms  CPU median {r['cpu_median_ms']:>9.1f} ms  p95 {r['cpu_p95_ms']:>9.1f} ms  "
            f"nodes {r['median_nodes']:>9}",
            flush=True,
        )
    return rows


def markdown_table(out: dict[str, Any]) -> str:
    m = out["machine"]
    lines = [
        f"{out['games']:,} complete games ({out['plays']:,} card plays), median of {out['reps']} runs, "
        f"on {m['cpus']} × {m['cpu']}, {m['memory_gb']} GB, Python {m['python']}:",
        "",
        "| stage | games/s | card plays/s | × parse limit | peak RSS (sum) | peak PSS (sum) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, s in out["stages"].items():
        ratio = out["ratio_to_parse"].get(name)
        lines.append(
            f"| {name} | {s['games_per_s']:,.0f} | {s['plays_per_s']:,.0f} | {'' if ratio is None else f'{ratio:.2f}'} | {s['peak_rss_mb']:.0f} MB | {s['peak_pss_mb']:.0f} MB |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()

"""Benchmark: ingest speed as the database grows, block after block into one file.

    python benchmarks/ingest_growth.py [--blocks 10] [--block-games 10000] [--workers N] [--backalley CMD]

Takes the benchmark's simulated games (``benchmarks/work/games-standard-N-SEED.jsonl``,
made with ``backalley simulate`` when missing) and writes ``--blocks`` copies of
them with distinct game ids (``b<k>-`` before each id), then runs ``backalley
ingest --workers N`` on each block in turn into **one** fresh database file,
each in its own process. Per block: games/s (wall), CPU seconds of the whole
process tree (the writer, the forkserver and the workers, read from /proc: on
a shared machine the steadier figure), peak PSS and the file size after it.
The last block's games/s against the first's is the growth ratio (issue 13:
within 15 %). ``make bench`` runs it as the ``growth`` stage of
``benchmarks/run.py``; ``--blocks 3 --block-games 2000`` is a quick check.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
BACKALLEY = [str(BIN / "backalley")] if (BIN / "backalley").exists() else [sys.executable, "-m", "backalley"]
TICK = os.sysconf("SC_CLK_TCK")
PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024


def _tree(root: int) -> list[int]:
    """The process and all its descendants."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as fh:
                    ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += children.get(pid, [])
    return out


def _cpu_ticks(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime + stime
    except (OSError, ValueError, IndexError):
        return 0


def _pss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def measured(cmd: list[str], env: dict[str, str] | None = None) -> dict[str, float]:
    """Run ``cmd``; its wall seconds, the CPU seconds of its process tree and the tree's peak PSS (MB)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT, env=env)
    ticks: dict[int, int] = {}
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            pids = _tree(proc.pid)
            for pid in pids:
                ticks[pid] = max(ticks.get(pid, 0), _cpu_ticks(pid))
            peak = max(peak, sum(_pss_kb(p) for p in pids))
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, err = proc.communicate()
    wall = time.perf_counter() - start
    done.set()
    sampler.join()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{err.decode(errors='replace')[-2000:]}")
    return {"seconds": wall, "cpu_s": sum(ticks.values()) / TICK, "peak_pss_mb": peak / 1024}


def source_games(work: Path, games: int, seed: int) -> Path:
    path = work / f"games-standard-{games}-{seed}.jsonl"
    if not path.exists():
        print(f"simulating {games} games -> {path} ...", flush=True)
        cmd = [*BACKALLEY, "simulate", "--games", str(games), "--seed", str(seed), "--out", str(path)]
        subprocess.run(cmd, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    return path


def block_files(work: Path, source: Path, blocks: int) -> list[Path]:
    """``blocks`` copies of ``source``, each game's id prefixed with its block (distinct games, same sizes)."""
    data = source.read_bytes()
    assert data.count(b'"game_id":"') == data.count(b"\n"), "one game_id per line expected"
    out = []
    for k in range(blocks):
        path = work / f"growth-{source.stem}-b{k}.jsonl"
        if not path.exists():
            path.write_bytes(data.replace(b'"game_id":"', f'"game_id":"b{k}-'.encode()))
        out.append(path)
    return out


def growth(
    work: Path, blocks: int, block_games: int, workers: int, seed: int = 7, backalley: list[str] | None = None
) -> dict[str, Any]:
    """Ingest the blocks one after the other into one fresh file; every block's figures and the ratio."""
    work.mkdir(parents=True, exist_ok=True)
    files = block_files(work, source_games(work, block_games, seed), blocks)
    db = work / "growth.duckdb"
    for p in (db, Path(f"{db}.wal")):
        p.unlink(missing_ok=True)
    rows = []
    for k, f in enumerate(files, 1):
        # This build's ingest without the ratings' refit (a whole-history fit: the ``ratings`` stage);
        # a baseline build given by ``backalley`` may predate the option.
        ratings = [] if backalley else ["--no-ratings"]
        m = measured(
            [*(backalley or BACKALLEY), "ingest", *ratings, "--workers", str(workers), "--db", str(db), str(f)]
        )
        row = {
            "block": k,
            "stored_before": (k - 1) * block_games,
            "games_per_s": round(block_games / m["seconds"], 1),
            "cpu_us_per_game": round(m["cpu_s"] / block_games * 1e6, 1),
            "peak_pss_mb": round(m["peak_pss_mb"], 1),
            "file_mb": round(db.stat().st_size / 1e6, 1),
            "seconds": round(m["seconds"], 2),
        }
        rows.append(row)
        print(
            f"block {k:>2} ({row['stored_before']:>7,} stored before): {row['games_per_s']:>8,.0f} games/s, "
            f"{row['cpu_us_per_game']:>7,.0f} µs CPU a game, peak PSS {row['peak_pss_mb']:>6.1f} MB, "
            f"file {row['file_mb']:>7.1f} MB",
            flush=True,
        )
    first, last = rows[0], rows[-1]
    out = {
        "blocks": rows,
        "block_games": block_games,
        "workers": workers,
        "last_first_ratio": round(last["games_per_s"] / first["games_per_s"], 3),
        "last_first_cpu_ratio": round(last["cpu_us_per_game"] / first["cpu_us_per_game"], 3),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    print(
        f"last/first: {out['last_first_ratio']:.2f} games/s (CPU a game: {out['last_first_cpu_ratio']:.2f});"
        " target: within 15 %",
        flush=True,
    )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--blocks", type=int, default=10, help="blocks ingested one after the other (default 10)")
    ap.add_argument("--block-games", type=int, default=10_000, help="games a block (default 10000)")
    ap.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)), help="default: all CPUs")
    ap.add_argument("--work", type=Path, default=ROOT / "benchmarks" / "work", help="scratch folder")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--backalley", help="the backalley command to measure (default: this environment's)")
    ap.add_argument("--json", type=Path, help="also write the figures to this file")
    args = ap.parse_args()
    cmd = args.backalley.split() if args.backalley else None
    out = growth(args.work, args.blocks, args.block_games, args.workers, args.seed, cmd)
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

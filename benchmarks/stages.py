"""Per-stage profile of ``validate --json`` on one core: where a game's microseconds go.

    python benchmarks/stages.py FILE.jsonl [FILE.jsonl ...]

For each file, times on every record in turn (best of ``--reps`` passes):
``parse`` (orjson, the limit), ``decode`` (the fast decoder), ``replay`` (the
replay of the decoded records), ``report`` (the report line, serialised), and
``check`` (the whole ``check_for_validate`` of one record), in CPU µs per game and
card plays/s of the replay.  Prints whether the replay is compiled (mypyc/C).
"""

from __future__ import annotations

import argparse
import importlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from backalley.records.models import fast_decode_any
from backalley.records.sources import Item
from backalley.validate import check_for_validate, tune_gc

replay_mod = importlib.import_module("backalley.replay")
validate_mod = importlib.import_module("backalley.validate")


def each(fn: Callable[[Any], Any], xs: list[Any]) -> Callable[[], None]:
    def run() -> None:
        for x in xs:
            fn(x)

    return run


def timed(fn: Callable[[], None]) -> float:
    """CPU seconds of this thread (the machine may be shared: waiting for a core is not counted)."""
    t = time.thread_time()
    fn()
    return time.thread_time() - t


def profile(path: Path, reps: int) -> dict[str, float]:
    lines = [line for line in path.read_bytes().splitlines() if line.strip()]
    decoded = [fast_decode_any(line) for line in lines]
    assert all(d is not None for d in decoded), "the profile needs records the fast decoder accepts"
    replayed = [replay_mod.replay_checked(d) for d in decoded]  # type: ignore[arg-type]
    plays = sum(len(o.cards) for r in replayed for o in r.deals)
    items = [Item("x", i, line) for i, line in enumerate(lines, 1)]
    n = len(lines)
    write = (
        (lambda r: validate_mod.report_bytes(r, "x", 1))
        if hasattr(validate_mod, "report_bytes")
        else (lambda r: orjson.dumps(r.report("x", 1)))
    )
    stages = {
        "parse": each(orjson.loads, lines),
        "decode": each(fast_decode_any, lines),
        "replay": each(replay_mod.replay_checked, decoded),
        "report": each(write, replayed),
        "check": each(lambda it: check_for_validate(it, True), items),
    }
    # Interleaved: every stage once per round, the best round counts (the machine is shared).
    best = {k: min(timed(fn) for _ in range(1)) for k, fn in stages.items()}
    for _ in range(reps - 1):
        best = {k: min(best[k], timed(fn)) for k, fn in stages.items()}
    out = {k: v / n * 1e6 for k, v in best.items()}
    out["plays_per_game"] = plays / n
    out["replay_mplays_s"] = plays / (out["replay"] * n / 1e6) / 1e6
    out["ratio"] = out["parse"] / out["check"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    tune_gc()
    print(f"replay module: {replay_mod.__file__}")
    print(
        f"{'file':<40} {'parse':>7} {'decode':>7} {'replay':>7} {'report':>7} {'check':>7}  µs/game; plays/game, M plays/s, parse/check"
    )
    for f in args.files:
        r = profile(f, args.reps)
        print(
            f"{f.name[:40]:<40} {r['parse']:7.0f} {r['decode']:7.0f} {r['replay']:7.0f} {r['report']:7.0f} "
            f"{r['check']:7.0f}  {r['plays_per_game']:.0f}, {r['replay_mplays_s']:.2f}, {r['ratio']:.2f}",
            flush=True,
        )


if __name__ == "__main__":
    main()

"""Start-up of ``backalley validate``: the CPU of the whole command on one record, builds side by side.

    python benchmarks/startup.py [--runs 30] [--tree NAME=PATH ...] [RECORD.json]

Runs ``backalley validate --json --workers 1 RECORD`` (one simulated game when no
record is given) ``--runs`` times for each build, interleaved (build 1, build 2, ...,
build 1, ...), and prints the CPU seconds (user + system) of each build's runs:
minimum, first quartile and median.  The machine may be shared: CPU, not wall time,
and the low quantiles are the steadier figures.

The build under test is this interpreter's ``backalley``.  ``--tree NAME=PATH`` adds
the same command with ``PYTHONPATH=PATH`` (another checkout's ``pipeline`` folder, whose
``backalley`` package is then imported first), e.g. ``--tree before=/tmp/old/pipeline``.
For comparison the last line is the floor: Python importing msgspec and nothing else,
what the parse limit's own process pays before it reads a byte.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

BIN = Path(sys.executable).parent
BACKALLEY = [str(BIN / "backalley")] if (BIN / "backalley").exists() else [sys.executable, "-m", "backalley"]


def cpu_of(cmd: list[str], env: dict[str, str]) -> float:
    """CPU seconds (user + system) of one run of ``cmd``; a failed run stops the benchmark."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited with {done.returncode}:\n{done.stderr.decode(errors='replace')}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def one_record(folder: Path) -> Path:
    """A file holding one valid simulated game."""
    from backalley.simulate import write_games

    path = folder / "one.jsonl"
    write_games(path, games=1, seed=1)
    return path


def builds(trees: list[str]) -> dict[str, dict[str, str]]:
    """Each build's environment: this one's, then one per ``NAME=PATH``."""
    out = {"this build": dict(os.environ)}
    for tree in trees:
        name, sep, path = tree.partition("=")
        if not sep or not name or not Path(path).is_dir():
            raise SystemExit(f"--tree takes NAME=PATH with PATH a folder, not {tree!r}")
        out[name] = dict(os.environ, PYTHONPATH=path)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("record", nargs="?", type=Path, help="the record to validate (default: one simulated game)")
    ap.add_argument("--runs", type=int, default=30, help="runs of each build (default 30)")
    ap.add_argument("--tree", action="append", default=[], metavar="NAME=PATH", help="another build's pipeline folder")
    args = ap.parse_args()
    if args.runs < 1:
        raise SystemExit("--runs must be at least 1")
    envs = builds(args.tree)
    with tempfile.TemporaryDirectory() as tmp:
        record = args.record or one_record(Path(tmp))
        commands = {name: [*BACKALLEY, "validate", "--json", "--workers", "1", str(record)] for name in envs}
        floor = [sys.executable, "-c", "import sys, msgspec"]
        cpu: dict[str, list[float]] = {name: [] for name in [*envs, "python + msgspec"]}
        for _ in range(args.runs):
            for name, env in envs.items():
                cpu[name].append(cpu_of(commands[name], env))
            cpu["python + msgspec"].append(cpu_of(floor, dict(os.environ)))
    print(f"validate --json --workers 1 on one record, CPU of the process, {args.runs} runs each, interleaved:")
    for name, xs in cpu.items():
        xs.sort()
        q1 = xs[len(xs) // 4]
        print(
            f"  {name:<20} min {xs[0] * 1e3:4.0f} ms  25% {q1 * 1e3:4.0f} ms  median {statistics.median(xs) * 1e3:4.0f} ms"
        )


if __name__ == "__main__":
    main()

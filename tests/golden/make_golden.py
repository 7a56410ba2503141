"""Regenerate the golden validation reports (run only with a trusted replay: main's code).

    python tests/golden/make_golden.py                  # new inputs and their reports
    python tests/golden/make_golden.py --reports-only   # the committed inputs' reports only

Writes ``tests/golden/generated.jsonl.gz`` (inputs: simulated games of every
ruleset and option set, with injected faults, plus deterministic mutations of
them) and ``tests/golden/reports.jsonl.gz``: the ``validate --json`` report of
every committed sample (``data/sample/**``) and of the generated inputs, as
they were when this was run.  ``tests/test_golden_reports.py`` checks that
today's code writes exactly these bytes.
"""

from __future__ import annotations

import gzip
import itertools
import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
OPTIONS = ("no_jokers", "short_deck", "spades_trump", "no_partnerships")
GAMES = 3


def combos() -> list[tuple[str, tuple[str, ...]]]:
    out: list[tuple[str, tuple[str, ...]]] = [("bab-online", ())]
    for name in ("standard", "pereulok"):
        for r in range(len(OPTIONS) + 1):
            out += [(name, opts) for opts in itertools.combinations(OPTIONS, r)]
    return out


def simulate(name: str, opts: tuple[str, ...], seed: int, out: Path) -> list[bytes]:
    cmd = [sys.executable, "-m", "backalley", "simulate", "--games", str(GAMES), "--seed", str(seed)]
    cmd += ["--faults", "0.7", "--workers", "1", "--ruleset", name, "--out", str(out)]
    if opts:
        cmd += ["--options", ",".join(opts)]
    subprocess.run(cmd, check=True, cwd=ROOT, capture_output=True)
    return [line for line in out.read_bytes().splitlines() if line.strip()]


def mutate(rec: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """One to three random edits of a game: swapped cards, wrong leaders, bids, results, scores."""
    rec = json.loads(json.dumps(rec))
    deals = rec.get("deals")
    if not isinstance(deals, list) or not deals:
        return rec
    for _ in range(rng.randint(1, 3)):
        d = rng.choice(deals)
        if not isinstance(d, dict) or not all(k in d for k in ("tricks", "bids", "hands")):
            continue
        kind = rng.randrange(7)
        if kind == 0 and len(d["tricks"]) > 1:
            a, b = rng.sample(range(len(d["tricks"])), 2)
            i, j = rng.randrange(4), rng.randrange(4)
            ta, tb = d["tricks"][a]["cards"], d["tricks"][b]["cards"]
            ta[i], tb[j] = tb[j], ta[i]
        elif kind == 1 and d["tricks"]:
            t = rng.choice(d["tricks"])
            t["leader"] = rng.choice("NESW")
        elif kind == 2:
            rng.choice(d["bids"])["bid"] = rng.choice([0, 1, 2, 5, 14, "pass"])
        elif kind == 3 and d.get("result"):
            side = rng.choice(sorted(d["result"]["points"]))
            d["result"]["points"][side] += 10
        elif kind == 4 and rec.get("final_score"):
            side = rng.choice(sorted(rec["final_score"]))
            rec["final_score"][side] -= 1
        elif kind == 5:
            seat = rng.choice("NESW")
            h = d["hands"][seat]
            if h:
                h[rng.randrange(len(h))] = rng.choice(["AS", "2C", "BJ", "LJ", "TD", "3H"])
        elif kind == 6 and d["tricks"]:
            t = rng.choice(d["tricks"])
            k = rng.randrange(1, 4)
            t["cards"][0], t["cards"][k] = t["cards"][k], t["cards"][0]
    return rec


def generated_inputs(tmp: Path) -> list[bytes]:
    rng = random.Random(16)
    lines: list[bytes] = []
    for seed, (name, opts) in enumerate(combos(), start=100):
        games = simulate(name, opts, seed, tmp / "g.jsonl")
        lines += games
        for raw in games:
            for _ in range(3):
                try:  # an injected fault may have made the game something else than a game
                    lines.append(json.dumps(mutate(json.loads(raw), rng), separators=(",", ":")).encode())
                except (ValueError, KeyError, TypeError, IndexError, AttributeError):
                    continue
        # A truncated game (incomplete) and a game whose deals stop after one.
        rec = json.loads(next(g for g in games if b'"deals"' in g))
        rec["deals"] = rec["deals"][:3]
        rec.pop("final_score", None)
        lines.append(json.dumps(rec).encode())
    return lines


def validate(path: Path, cwd: Path = ROOT) -> bytes:
    cmd = [sys.executable, "-m", "backalley", "validate", "--json", "--workers", "1", str(path)]
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True)
    if proc.returncode not in (0, 1):
        raise SystemExit(proc.stderr.decode())
    return proc.stdout


def sample_files() -> list[Path]:
    return sorted(p.relative_to(ROOT) for p in (ROOT / "data" / "sample").rglob("*") if p.is_file())


def main() -> None:
    tmp = HERE / "tmp"
    tmp.mkdir(exist_ok=True)
    gen = HERE / "generated.jsonl.gz"
    if "--reports-only" in sys.argv[1:]:  # (when the format or the samples change, not the simulator)
        lines = gzip.decompress(gen.read_bytes()).splitlines()
    else:
        lines = generated_inputs(tmp)
        gen.write_bytes(gzip.compress(b"\n".join(lines) + b"\n", compresslevel=9, mtime=0))
    plain = tmp / "generated.jsonl"
    plain.write_bytes(b"\n".join(lines) + b"\n")
    reports: list[bytes] = []
    for path in sample_files():
        reports.append(validate(path))
    reports.append(validate(Path(plain.name), cwd=tmp))
    (HERE / "reports.jsonl.gz").write_bytes(gzip.compress(b"".join(reports), compresslevel=9, mtime=0))
    for p in tmp.iterdir():
        p.unlink()
    tmp.rmdir()
    count = sum(r.count(b"\n") for r in reports)
    print(f"{len(lines)} generated records; {count} report lines")


if __name__ == "__main__":
    main()

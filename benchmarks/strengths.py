"""The simulator's bot strengths (backalley.simulate.strength): margins head to head, and the time they cost.

    python benchmarks/strengths.py [--games 2000] [--time-games 200] [--ruleset standard] [--json]

``margins``: for each pairing (strong against basic, basic against random, strong against random),
``--games`` games in which one level's partnership plays the other's (which sits NS alternates
game by game; a basic player's style rotates cautious, bold, erratic; then strong against basic
players of each style alone): the mean points a deal of the first over the second, with a 95% interval (1.96 standard errors, over games).  In a ruleset
without partnerships the first level holds N and S, the second E and W, and the margin is that of
N and S together over E and W.

``time``: ``--time-games`` games of four basic players, then of four strong ones, interleaved
(best of 3), in CPU seconds of this process: the strong ÷ basic ratio, against the bound of 3.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import time
from typing import Any

from backalley.rules import Ruleset, find_ruleset
from backalley.simulate.bots import STYLES, Player, Style
from backalley.simulate.games import play_deals

PAIRINGS = (("strong", "basic"), ("basic", "random"), ("strong", "random"))
#: `simulate` with strong players stays within this multiple of the time with basic ones (issue 34).
TIME_BOUND = 3.0


def _pair(level: str, k: int, tag: str, style: Style | None = None) -> list[Player]:
    return [Player(f"{tag}{i}", style or STYLES[(k + i) % len(STYLES)], level) for i in range(2)]


def _margin_per_deal(deals: list[dict[str, Any]], rules: Ruleset, first: tuple[int, ...]) -> float:
    """The points of the seats ``first`` (their sides) over the others', a deal (pass-outs excluded)."""
    mine = {rules.sides[rules.side_of[s]] for s in first}
    played = [d for d in deals if d.get("tricks")]
    diff = sum(sum(v if side in mine else -v for side, v in d["result"]["points"].items()) for d in played)
    return diff / max(1, len(played))


def margin(a: str, b: str, games: int, seed: int, rules: Ruleset, style: Style | None = None) -> dict[str, float]:
    """``a``'s partnership over ``b``'s (``style``: every player's, else they rotate): mean points a
    deal and the half-width of its 95% interval."""
    rng = random.Random(seed)
    per_game = []
    for k in range(games):
        (a1, a2), (b1, b2) = _pair(a, k, "a", style), _pair(b, k, "b", style)
        seated, first = ([a1, b1, a2, b2], (0, 2)) if k % 2 == 0 else ([b1, a1, b2, a2], (1, 3))
        if len(rules.sides) != 2:  # each seat its own side: a holds N and S, b E and W
            seated, first = [a1, b1, a2, b2], (0, 2)
        per_game.append(_margin_per_deal(play_deals(rng, seated, rng.randrange(4), rules=rules), rules, first))
    half = 1.96 * statistics.stdev(per_game) / math.sqrt(games) if games > 1 else float("inf")
    return {"mean": round(statistics.fmean(per_game), 2), "half_width": round(half, 2), "games": games}


def cpu_time(level: str, games: int, seed: int, rules: Ruleset) -> float:
    rng = random.Random(seed)
    seated = [Player(f"p{i}", STYLES[i % len(STYLES)], level) for i in range(4)]
    t = time.process_time()
    for _ in range(games):
        play_deals(rng, seated, rng.randrange(4), rules=rules)
    return time.process_time() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--games", type=int, default=2000)
    ap.add_argument("--time-games", type=int, default=200)
    ap.add_argument("--ruleset", default="standard", help="NAME or NAME+OPTION+...")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--skip-margins", action="store_true")
    ap.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = ap.parse_args()
    name, *options = args.ruleset.split("+")
    rules = find_ruleset(name, tuple(options))
    out: dict[str, Any] = {"ruleset": args.ruleset, "margins": {}}
    if not args.skip_margins:
        for a, b in PAIRINGS:
            m = out["margins"][f"{a}-{b}"] = margin(a, b, args.games, args.seed, rules)
            if not args.json:
                print(
                    f"{args.ruleset} {a} over {b}: {m['mean']:+.2f} ± {m['half_width']:.2f} points a deal", flush=True
                )
        for style in STYLES:  # strong against basic players of one style
            m = margin("strong", "basic", args.games, args.seed, rules, style)
            out["margins"][f"strong-basic/{style.name}"] = m
            if not args.json:
                print(
                    f"{args.ruleset} strong over basic {style.name}: {m['mean']:+.2f} ± {m['half_width']:.2f}",
                    flush=True,
                )
    times: dict[str, list[float]] = {"basic": [], "strong": []}
    for _ in range(3):
        for level in times:
            times[level].append(cpu_time(level, args.time_games, args.seed, rules))
    best = {k: min(v) for k, v in times.items()}
    out["time"] = {"games": args.time_games, "cpu_s": best, "ratio": round(best["strong"] / best["basic"], 2)}
    if args.json:
        print(json.dumps(out))
    else:
        print(
            f"{args.ruleset} time of {args.time_games} games: basic {best['basic']:.2f} s, strong {best['strong']:.2f} s"
            f" CPU: strong ÷ basic {out['time']['ratio']:.2f} (bound {TIME_BOUND:g})"
        )


if __name__ == "__main__":
    main()

"""``benchmarks/solver_bench.py``: its rows, and ``--core`` (another build of the C search) on the same deals.

No timing is asserted: only that the script runs, that its totals add up and that the
installed C search loaded through ``--core`` searches exactly as the installed one does.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from backalley.analysis.solver import _DDCORE, NATIVE

BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "solver_bench.py"


def rows(*args: str) -> tuple[list[dict[str, object]], str]:
    """The script's JSON rows, and what it printed on stderr (the build it searched with)."""
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--sizes", "4,6", "--deals", "3", "--json", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()], proc.stderr


@pytest.mark.skipif(not NATIVE, reason="the C search is not built (pure-Python install)")
def test_a_core_loaded_from_its_file_searches_as_the_installed_one() -> None:
    (installed, _), (loaded, said) = rows(), rows("--core", str(_DDCORE.__file__))
    assert f"C search from {_DDCORE.__file__}" in said
    assert [r["hand_size"] for r in installed] == [4, 6]
    for a, b in zip(installed, loaded, strict=True):
        assert a["deals"] == b["deals"] == 3
        assert (a["total_nodes"], a["median_nodes"]) == (b["total_nodes"], b["median_nodes"])
        assert int(a["total_nodes"]) >= int(a["median_nodes"]) > 0  # type: ignore[call-overload]


def test_a_core_that_is_not_a_module_is_refused(tmp_path: Path) -> None:
    bogus = tmp_path / "_ddcore.txt"
    bogus.write_text("not a shared object")
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--sizes", "3", "--deals", "1", "--core", str(bogus)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode != 0

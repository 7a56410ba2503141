"""Install the package as users do: a built wheel, non-editable, in a fresh venv.

The editable install of the Makefile hides packaging bugs (the file-time guard
of 0.1.0 broke every `pip install .` and no test saw it).  Here the project is
copied to a temporary folder, a wheel is built from the copy (compiled with
mypyc, pure Python with BACKALLEY_PURE_PYTHON=1, and with a C compiler that
fails, which must fall back to pure Python with one warning), installed into a
new venv with its dependencies, and the installed command is run on the
committed samples: --version, validate, ingest, query and report.

Slow (a mypyc build and three venvs, a few minutes on two cores), but it is
the only test of what users get, so it runs in `make test` and CI.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "sample"
SKIP = {".venv", ".git", "build", "dist", "reports", "benchmarks", "__pycache__", ".mypy_cache", ".ruff_cache"}

pytestmark = pytest.mark.slow


def _copy_project(dest: Path) -> Path:
    def ignore(folder: str, names: list[str]) -> set[str]:
        skipped = {n for n in names if n in SKIP or n.endswith((".so", ".egg-info", ".duckdb", ".wal"))}
        if Path(folder).name == "backalley":
            skipped |= {n for n in names if n == "_build.py"}
        if Path(folder) == ROOT / "data":
            skipped |= {n for n in names if n != "sample"}
        return skipped

    shutil.copytree(ROOT, dest, ignore=ignore)
    return dest


def _run(
    cmd: list[str], env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd, check=False, timeout=900)
    assert done.returncode == 0, (
        f"{' '.join(cmd)} exited {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return done


def _build_wheel(tmp: Path, extra_env: dict[str, str]) -> tuple[Path, str]:
    project = _copy_project(tmp / "src")
    env = {**os.environ, **extra_env}
    done = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-v", "-w", str(tmp / "wheels"), str(project)], env)
    (wheel,) = (tmp / "wheels").glob("backalley-*.whl")
    return wheel, done.stdout + done.stderr


def _venv_with(wheel: Path, tmp: Path) -> Path:
    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", str(venv)])
    _run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", str(wheel)])
    return venv / "bin"


def _top_level_modules(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as zf:
        return {name.split("/")[0].split(".")[0] for name in zf.namelist() if ".dist-info" not in name.split("/")[0]}


def _use_installed(bin_dir: Path, tmp: Path, compiled: bool) -> None:
    work = tmp / "work"  # run outside the source tree so nothing imports from it
    work.mkdir()
    backalley = str(bin_dir / "backalley")
    version = _run([backalley, "--version"], cwd=work).stdout
    assert "record formats:" in version and "rulesets:" in version and "standard" in version
    assert ("compiled (mypyc)" in version) is compiled, version
    assert ("solver search: C" in version) is compiled, version  # the C search is built with the mypyc modules
    assert _run([str(bin_dir / "python"), "-m", "backalley", "--version"], cwd=work).stdout == version
    no_pipeline = subprocess.run([str(bin_dir / "python"), "-c", "import pipeline"], capture_output=True, cwd=work)
    assert no_pipeline.returncode != 0
    _run([backalley, "validate", "--quiet", str(SAMPLE / "valid-games.jsonl")], cwd=work)
    reports = _run([backalley, "validate", "--json", "-w", "2", str(SAMPLE / "valid-games.jsonl")], cwd=work)
    games = (SAMPLE / "valid-games.jsonl").read_text(encoding="utf-8").count("\n")
    assert reports.stdout.count('"valid":true') == games  # the entry point's own validate --json, in workers
    db = work / "store.duckdb"
    ingest = subprocess.run(
        [backalley, "ingest", "--db", str(db), str(SAMPLE)], capture_output=True, text=True, cwd=work, check=False
    )
    assert ingest.returncode == 1, ingest.stderr  # the samples include invalid and unreadable records
    count = _run([backalley, "query", "--db", str(db), "--format", "csv", "SELECT count(*) AS n FROM games"], cwd=work)
    assert int(count.stdout.split()[-1]) > 0
    _run([backalley, "report", "--db", str(db), "--out", str(work / "reports")], cwd=work)
    assert (work / "reports" / "index.html").is_file()


def test_compiled_wheel_installs_and_runs(tmp_path: Path) -> None:
    wheel, _ = _build_wheel(tmp_path, {})
    assert _top_level_modules(wheel) <= {"backalley", "backalley__mypyc"}, _top_level_modules(wheel)
    with zipfile.ZipFile(wheel) as zf:  # the C trick loop is built beside the mypyc modules
        assert [n for n in zf.namelist() if n.startswith("backalley/_fastplay") and n.endswith(".so")]
    _use_installed(_venv_with(wheel, tmp_path), tmp_path, compiled=True)


def test_pure_python_wheel_installs_and_runs(tmp_path: Path) -> None:
    wheel, _ = _build_wheel(tmp_path, {"BACKALLEY_PURE_PYTHON": "1"})
    assert _top_level_modules(wheel) == {"backalley"}
    with zipfile.ZipFile(wheel) as zf:
        assert not [n for n in zf.namelist() if n.endswith(".so")]
    _use_installed(_venv_with(wheel, tmp_path), tmp_path, compiled=False)


def test_failed_c_build_falls_back_to_pure_python_with_one_warning(tmp_path: Path) -> None:
    wheel, log = _build_wheel(tmp_path, {"CC": "false", "LDSHARED": "false"})
    warnings = [line for line in log.splitlines() if "WARNING: backalley: the C build failed" in line]
    assert len(warnings) == 1, log[-3000:]
    with zipfile.ZipFile(wheel) as zf:
        assert not [n for n in zf.namelist() if n.endswith(".so")]
    bin_dir = _venv_with(wheel, tmp_path)
    version = _run([str(bin_dir / "backalley"), "--version"], cwd=tmp_path).stdout
    assert "replay: pure Python" in version and "solver search: pure Python" in version

"""Start-up of ``backalley validate``: the command imports only what a valid record needs (issue 16).

The record models (``backalley.records.models``: pydantic models, built at import, for
the records that fail the fast decoder) and rich (the console, the progress
bar) are each a large share of a command's start-up; a run of valid records
on a pipe needs neither, nor pydantic itself (typer 0.29 imports it to convert
every option: the dependency is pinned below it).  No timing here: the benchmark (``benchmarks/run.py``, the
``rulesets`` stage) measures the start-up share.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from backalley.simulate import write_games
from backalley.validate import default_workers

SLOW = ("rich.console", "rich.progress", "backalley.records.models", "pydantic")


def loaded_after(code: str, slow: tuple[str, ...] = SLOW) -> set[str]:
    """The ``slow`` modules in ``sys.modules`` after running ``code`` in a fresh interpreter."""
    probe = f"{code}\nimport sys\nsys.stderr.write('LOADED ' + ' '.join(m for m in {slow!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(done.stderr.rsplit("LOADED", 1)[1].split())


def test_importing_the_cli_loads_neither_the_models_nor_rich_console() -> None:
    assert loaded_after("import backalley.cli.app") == set()


def test_validating_valid_records_loads_neither(tmp_path: Path) -> None:
    games = tmp_path / "games.jsonl"
    write_games(games, games=2, seed=5)
    code = (
        "import sys\nfrom backalley.cli.app import app\n"
        f"try:\n    app(['validate', '--json', {str(games)!r}])\nexcept SystemExit as e:\n    assert e.code == 0, e.code"
    )
    assert loaded_after(code) == set()


def test_validating_in_one_process_loads_no_multiprocessing(tmp_path: Path) -> None:
    """``multiprocessing`` (with pickle and sockets, about 18 ms) is imported only when worker processes start."""
    games = tmp_path / "games.jsonl"
    write_games(games, games=3, seed=6)
    run = "from backalley.cli.app import app\ntry:\n    app(['validate', '--json', {args}])\nexcept SystemExit as e:\n    assert e.code == 0, e.code"
    one = run.format(args=f"'--workers', '1', {str(games)!r}")
    assert loaded_after(one, ("multiprocessing",)) == set()
    if default_workers() >= 2:  # (the probe sees it when workers do start)
        two = run.format(args=f"'--workers', '2', {str(games)!r}")
        assert loaded_after(two, ("multiprocessing",)) == {"multiprocessing"}


def test_a_failing_record_still_gets_the_pydantic_messages(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"format_version": 1, "game_id": "g 1"}', encoding="utf-8")
    code = (
        "from backalley.cli.app import app\n"
        f"try:\n    app(['validate', '--json', {str(bad)!r}])\nexcept SystemExit as e:\n    assert e.code == 1, e.code"
    )
    assert "backalley.records.models" in loaded_after(code)


@pytest.mark.parametrize("workers", ["1", "2"])
def test_validating_freezes_what_is_left_at_exit(tmp_path: Path, workers: str) -> None:
    """The last collection at exit skips what the process keeps (``freeze_at_exit``): it is frozen by then.

    The probe's handler is registered before the command runs, so it runs after the
    command's (``atexit`` runs handlers last in, first out).
    """
    games = tmp_path / "games.jsonl"
    write_games(games, games=3, seed=6)
    code = (
        "import atexit, gc, sys\n"
        "atexit.register(lambda: sys.stderr.write(f'FROZEN {gc.get_freeze_count()}'))\n"
        "from backalley.cli.app import app\n"
        f"app(['validate', '--json', '--workers', {workers!r}, {str(games)!r}], standalone_mode=False)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert int(done.stderr.rsplit("FROZEN ", 1)[1]) > 1000


def test_freezing_at_exit_is_registered_once() -> None:
    code = (
        "import atexit\n"
        "from backalley.validate import freeze_at_exit\n"
        "before = atexit._ncallbacks()\n"
        "freeze_at_exit()\n"
        "freeze_at_exit()\n"
        "print(atexit._ncallbacks() - before)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "1"


def test_the_command_sets_its_allocator_and_blas_threads_before_numpy_and_pyarrow_load(tmp_path: Path) -> None:
    """``backalley`` sets ``OPENBLAS_NUM_THREADS=1`` and pyarrow's system memory pool in its own environment
    before anything imports numpy or pyarrow (the entry point's module imports neither), keeping a value the
    environment gives."""
    import os

    assert loaded_after("import backalley.cli.batch", ("numpy", "pyarrow")) == set()
    code = (
        "import sys\nfrom backalley.cli.batch import main\nsys.argv = ['backalley', 'rulesets']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "import os, pyarrow\nsys.stderr.write('POOL ' + pyarrow.default_memory_pool().backend_name + ' '"
        " + os.environ['OPENBLAS_NUM_THREADS'])\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "ARROW_DEFAULT_MEMORY_POOL")}
    for given, expected in (({}, "system 1"), ({"ARROW_DEFAULT_MEMORY_POOL": "mimalloc"}, "mimalloc 1")):
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, env={**env, **given}
        )
        assert done.stderr.rsplit("POOL ", 1)[1].strip() == expected


def test_the_row_builder_loads_neither_the_models_nor_pydantic() -> None:
    """The forkserver of an ingest imports the row builder for its workers: records that fit the schema are
    built from the msgspec Structs, so neither it nor the writer loads the pydantic models (a record that
    fails the fast decoder loads them when it is checked)."""
    assert loaded_after("import backalley.store.rows") == set()
    assert loaded_after("import backalley.store.ingest, backalley.store.tables") == set()

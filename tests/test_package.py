"""Package-level behaviour: the guard against compiled modules built from other sources."""

from __future__ import annotations

import importlib.machinery
import os
from pathlib import Path

import pytest

from backalley import C_EXTENSIONS, COMPILED_MODULES, _check_compiled, _source_hash

SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]


def _package(tmp_path: Path) -> Path:
    for name in COMPILED_MODULES:
        (tmp_path / f"{name}.py").parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f"{name}.py").write_text(f"# {name}\n")
    for name in C_EXTENSIONS:
        (tmp_path / f"{name}.c").write_text(f"/* {name} */\n")
    return tmp_path


def test_extension_built_from_other_sources_is_refused_with_a_clear_message(tmp_path: Path) -> None:
    here = _package(tmp_path)
    (here / f"replay{SUFFIX}").write_bytes(b"")
    built = _source_hash(here)
    (here / "replay.py").write_text("# edited after compiling\n")
    with pytest.raises(ImportError, match="make install"):
        _check_compiled(here, built)


def test_extension_without_a_build_hash_is_refused(tmp_path: Path) -> None:
    here = _package(tmp_path)
    (here / f"cards{SUFFIX}").write_bytes(b"")
    with pytest.raises(ImportError, match="compiled from other sources"):
        _check_compiled(here, None)


def test_file_times_do_not_matter_only_the_source_hash(tmp_path: Path) -> None:
    """pip may write the .so before the .py (the bug of the file-time guard)."""
    here = _package(tmp_path)
    ext = here / f"rules/base{SUFFIX}"
    ext.write_bytes(b"")
    os.utime(ext, (1_000_000, 1_000_000))  # the extension looks much older than its source
    _check_compiled(here, _source_hash(here))


def test_compiled_module_in_the_rules_package_is_guarded(tmp_path: Path) -> None:
    here = _package(tmp_path)
    (here / f"rules/standard{SUFFIX}").write_bytes(b"")
    built = _source_hash(here)
    (here / "rules/standard.py").write_text("# edited after compiling\n")
    with pytest.raises(ImportError, match="compiled from other sources"):
        _check_compiled(here, built)


def test_pure_python_is_always_accepted(tmp_path: Path) -> None:
    _check_compiled(_package(tmp_path), None)


def test_c_extension_built_from_an_older_c_source_is_refused(tmp_path: Path) -> None:
    """The solver's and the replay's C sources are hashed with the mypyc sources."""
    here = _package(tmp_path)
    (here / f"analysis/_ddcore{SUFFIX}").write_bytes(b"")
    built = _source_hash(here)
    _check_compiled(here, built)
    (here / "analysis/_ddcore.c").write_text("/* edited after compiling */\n")
    with pytest.raises(ImportError, match="compiled from other sources"):
        _check_compiled(here, built)


def test_setup_embeds_the_hash_the_package_checks_at_import() -> None:
    """setup.py (which cannot import the package) computes the same hash over the same files."""
    import ast

    setup_py = Path(__file__).resolve().parent.parent / "setup.py"
    tree = ast.parse(setup_py.read_text(encoding="utf-8"))
    tree.body = [  # everything but the final setup(...) call
        node
        for node in tree.body
        if not (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Call)
            and getattr(node.value.func, "id", "") == "setup"
        )
    ]
    namespace: dict[str, object] = {"__file__": str(setup_py), "__name__": "setup_under_test"}
    exec(compile(tree, str(setup_py), "exec"), namespace)
    source_hash = namespace["source_hash"]
    assert callable(source_hash)
    assert source_hash() == _source_hash(setup_py.parent / "pipeline" / "backalley")


def test_every_registered_ruleset_module_is_compiled() -> None:
    """A ruleset's module must be in COMPILED_MODULES (an interpreted class cannot subclass a compiled one):
    the one step of adding a ruleset that nothing derives is checked here instead."""
    from backalley.rules import RULESETS

    for name, cls in RULESETS.items():
        module = cls.__module__.removeprefix("backalley.").replace(".", "/")
        assert module in COMPILED_MODULES, f"ruleset {name!r}: add {module!r} to COMPILED_MODULES"

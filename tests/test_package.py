"""Package-level behaviour: the guard against stale compiled modules."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pipeline import _check_compiled


def test_stale_compiled_module_is_refused_with_a_clear_message(tmp_path: Path) -> None:
    source = tmp_path / "replay.py"
    ext = tmp_path / "replay.cpython-311-x86_64-linux-gnu.so"
    ext.write_bytes(b"")
    source.write_text("# edited after compiling\n")
    os.utime(ext, (1_000_000, 1_000_000))
    with pytest.raises(ImportError, match="make install"):
        _check_compiled(tmp_path)


def test_fresh_compiled_module_and_pure_python_are_accepted(tmp_path: Path) -> None:
    (tmp_path / "rules.py").write_text("# source\n")
    _check_compiled(tmp_path)  # no extension at all: pure Python
    ext = tmp_path / "rules.cpython-311-x86_64-linux-gnu.so"
    ext.write_bytes(b"")
    os.utime(tmp_path / "rules.py", (1_000_000, 1_000_000))
    _check_compiled(tmp_path)  # extension newer than its source

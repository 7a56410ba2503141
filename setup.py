"""Build hook: compile the replay's hot modules with mypyc (see docs/development.md and docs/performance.md).

``backalley/cards.py``, ``rules/*.py`` and ``replay.py`` (under ``pipeline/``)
are plain, fully typed Python; mypyc (part of mypy) compiles them to C
extensions, which run the replay about 1.7 times faster.

* ``BACKALLEY_PURE_PYTHON=1`` installs without compiling (no C compiler
  needed; the same code runs interpreted, with the same results).
* A C build that fails (no compiler, no Python headers) falls back to the pure
  Python modules with one warning line instead of failing the install.
* The build writes ``_build.py`` (compiled with the rest) holding a hash of the
  compiled sources; ``backalley/__init__.py`` compares it with the sources at
  import, so an editable checkout whose sources changed after the build is
  refused instead of silently running old code.  A hash, not file times: an
  installer may write the files in any order.

Everything else about the package is in ``pyproject.toml``.
"""

from __future__ import annotations

import ast
import os
import sys
import zlib
from pathlib import Path
from typing import Any

from setuptools import setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).parent
PACKAGE = HERE / "pipeline" / "backalley"


def package_tuple(name: str) -> tuple[str, ...]:
    """A tuple of names assigned in ``backalley/__init__.py`` (read, not imported: the build has no deps)."""
    for node in ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            return tuple(ast.literal_eval(node.value))
    raise LookupError(f"backalley/__init__.py assigns no {name}")


#: The modules mypyc compiles and the plain C extensions: the package's own lists, so they cannot drift.
COMPILED = package_tuple("COMPILED_MODULES")
C_EXTENSIONS = package_tuple("C_EXTENSIONS")


def source_hash() -> str:
    """The hash ``backalley._source_hash`` computes at import, over the same files: CRC-32 and length."""
    crc = size = 0
    for path in [PACKAGE / f"{name}.py" for name in COMPILED] + [PACKAGE / f"{name}.c" for name in C_EXTENSIONS]:
        text = path.read_bytes()
        crc, size = zlib.crc32(text, crc), size + len(text)
    return f"crc32:{crc:08x}:{size}"


class OptionalBuildExt(build_ext):  # type: ignore[misc]
    """Build the extensions, or none of them: a failed C build installs pure Python."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # a missing compiler or header is any of several errors
            for ext in self.extensions:
                Path(self.get_ext_fullpath(ext.name)).unlink(missing_ok=True)
            message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            print(
                f"WARNING: backalley: the C build failed ({message}); "
                "installing the pure-Python modules instead (same results, slower).",
                file=sys.stderr,
            )


def extensions() -> list[Any]:
    if os.environ.get("BACKALLEY_PURE_PYTHON") == "1":
        return []
    from mypyc.build import mypycify

    stamp = PACKAGE / "_build.py"
    stamp.write_text(
        '"""Written by setup.py when it compiles; do not edit (see backalley/__init__.py)."""\n\n'
        f'SOURCE_HASH = "{source_hash()}"\n',
        encoding="utf-8",
    )
    paths = [str((PACKAGE / f"{name}.py").relative_to(HERE)) for name in (*COMPILED, "_build")]
    return [*mypycify(paths, opt_level="3", group_name="backalley"), solver_extension()]


# --- the double-dummy search in C ------------------------------------------------------------------
# ``backalley/_ddcore.c``: a plain C extension (no dependency beyond the Python headers).  It is
# built with the mypyc modules, so BACKALLEY_PURE_PYTHON=1 and a failed C build both leave it out;
# ``backalley.solver`` then searches in Python, with the same values.


def solver_extension() -> Any:
    from setuptools import Extension

    return Extension("backalley._ddcore", ["pipeline/backalley/_ddcore.c"], extra_compile_args=["-O2"])


# --- backalley._fastplay: the replay's trick loop in C (pipeline/backalley/_fastplay.c) ---------
# Optional like the mypyc modules: skipped with BACKALLEY_PURE_PYTHON=1, and a failed C build
# installs pure Python (the replay then runs every trick in Python, with the same reports).


def fastplay_extensions() -> list[Any]:
    if os.environ.get("BACKALLEY_PURE_PYTHON") == "1":
        return []
    from setuptools import Extension

    return [Extension("backalley._fastplay", ["pipeline/backalley/_fastplay.c"], extra_compile_args=["-O2"])]


setup(ext_modules=extensions() + fastplay_extensions(), cmdclass={"build_ext": OptionalBuildExt})

"""Back Alley game-log analytics: rules engine, validator, DuckDB store and reports."""

import importlib.machinery as _machinery
import zlib as _zlib
from pathlib import Path as _Path

#: Modules that setup.py compiles with mypyc (the hot paths of the replay, the solver and the row builder).
COMPILED_MODULES = (
    "cards",
    "rules/__init__",
    "rules/base",
    "rules/standard",
    "rules/pereulok",
    "rules/bab_online",
    "replay",
    "analysis/solver",
    "store/rows",
)
#: The plain C extensions (``backalley/analysis/_ddcore.c``, ``backalley/_fastplay.c``), built with them.
C_EXTENSIONS = ("analysis/_ddcore", "_fastplay")


def _hashed_sources(here: _Path) -> list[_Path]:
    """Every source file a compiled build is made from, in the order setup.py hashes them."""
    return [here / f"{name}.py" for name in COMPILED_MODULES] + [here / f"{name}.c" for name in C_EXTENSIONS]


def _source_hash(here: _Path) -> str:
    """The hash setup.py embeds in ``_build`` when it compiles (same files, same order): their CRC-32 and
    length in bytes.  It catches a build older than its sources, not an attacker; hashlib would load
    OpenSSL, about 5 ms of every command's start-up."""
    crc = size = 0
    for path in _hashed_sources(here):
        text = path.read_bytes()
        crc, size = _zlib.crc32(text, crc), size + len(text)
    return f"crc32:{crc:08x}:{size}"


def _compiled_files(here: _Path) -> list[_Path]:
    return [
        here / f"{name}{suffix}"
        for name in (*COMPILED_MODULES, *C_EXTENSIONS)
        for suffix in _machinery.EXTENSION_SUFFIXES
        if (here / f"{name}{suffix}").exists()
    ]


def _check_compiled(here: _Path, built_hash: str | None) -> None:
    """Refuse compiled modules built from other sources: they would silently run old code.

    ``built_hash`` is the hash compiled into ``_build`` (``None`` if there is
    none).  Pure Python (no extension next to the sources) is always accepted.
    """
    compiled = _compiled_files(here)
    if not compiled or not all(path.exists() for path in _hashed_sources(here)):
        return
    if built_hash != _source_hash(here):
        raise ImportError(
            f"{compiled[0].name} in {here} was compiled from other sources than the .py files beside it; "
            "rebuild with `make install` (or `pip install -e .`), or delete the compiled modules to run pure Python"
        )


def _built_hash() -> str | None:
    try:
        from backalley import _build  # type: ignore[attr-defined,import-not-found,unused-ignore]
    except ImportError:
        return None
    value = getattr(_build, "SOURCE_HASH", None)
    return value if isinstance(value, str) else None


def compiled() -> bool:
    """True when the replay runs as a compiled (mypyc) extension."""
    return bool(_compiled_files(_Path(__file__).parent))


_check_compiled(_Path(__file__).parent, _built_hash())  # before anything imports a compiled module

from backalley.cards import CardError, card_name, parse_card  # noqa: E402
from backalley.engine import DealState, IllegalMoveError  # noqa: E402
from backalley.replay import Replay, Violation, replay  # noqa: E402

__version__ = "0.2.0"

__all__ = [
    "CardError",
    "DealState",
    "IllegalMoveError",
    "Replay",
    "Violation",
    "__version__",
    "card_name",
    "compiled",
    "parse_card",
    "replay",
]

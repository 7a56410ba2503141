"""Imports flow one way: a lower layer never imports a higher one (docs/development.md, "The source layout")."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "pipeline" / "backalley"

#: Each top-level module or package of backalley and its layer; a module may import its own layer and below.
LAYERS: dict[str, int] = {
    "cards": 0,
    "rules": 1,
    "engine": 2,
    "records": 2,
    "replay": 3,
    "_fastplay": 3,
    "validate": 4,
    "workers": 4,
    "sizes": 4,
    "display": 4,
    "simulate": 5,
    "store": 5,
    "analysis": 6,
    "reporting": 6,
    "service": 7,
    "recorder": 7,
    "cli": 8,
    "__main__": 9,
}
#: At most this many modules at the top of the package (the rest live in a package per layer).
MAX_TOP_MODULES = 10


def room(module: str) -> str | None:
    """The top-level room of a dotted ``backalley.…`` name (``None`` for the package root itself)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "backalley" else None


def imports(path: Path) -> set[str]:
    """Every ``backalley…`` module ``path`` imports, at the top or inside a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "backalley":
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names if node.module == "backalley")
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.split(".")[0] == "backalley")
    return found


def violations() -> list[str]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        own = rel.parts[0].removesuffix(".py")
        if own == "__init__" or own.startswith("_build"):
            continue
        for module in sorted(imports(path)):
            other = room(module)
            if other is None or other == own or other.startswith("_build") or other == "__version__":
                continue
            if other not in LAYERS or own not in LAYERS:
                out.append(f"{rel}: {module} (a room with no layer: add it to LAYERS)")
            elif LAYERS[other] > LAYERS[own]:
                out.append(f"{rel} (layer {LAYERS[own]}) imports {module} (layer {LAYERS[other]})")
    return out


def test_imports_flow_one_way() -> None:
    assert violations() == []


def test_every_room_has_a_layer() -> None:
    modules = {p.stem for p in PACKAGE.glob("*.py")} | {p.stem for p in PACKAGE.glob("*.c")}
    rooms = modules | {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    assert rooms - {"__init__", "_build"} <= set(LAYERS)


def test_few_modules_at_the_top_of_the_package() -> None:
    top = sorted(p.name for p in PACKAGE.glob("*.py") if p.name != "_build.py")
    assert len(top) <= MAX_TOP_MODULES, top


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    """Not vacuous: an import of the store from the rules is caught, at the top or inside a function."""
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from backalley.store.database import Store\n", encoding="utf-8")
    assert imports(source) == {"backalley.store.database"}
    assert LAYERS[room("backalley.store.database") or ""] > LAYERS["rules"]

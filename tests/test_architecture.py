"""The package's architecture, enforced: layers whose imports point one way, no import circle,
and no private module or name of one package used by another (docs/design.md, "Layers").

Every import in memdb's source is read with ast (top-level, inside functions and under
TYPE_CHECKING alike): a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

import memdb
from memdb.core._layers import LAYERS, layer_of

ROOT = Path(memdb.__file__).resolve().parent


def _modules() -> dict[str, Path]:
    out = {}
    for path in ROOT.rglob("*.py"):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


MODULES = _modules()


def _imports(name: str, path: Path) -> list[tuple[str, str | None]]:
    """(module, imported name or None) for each memdb import in ``path``."""
    is_package = path.name == "__init__.py"
    found: list[tuple[str, str | None]] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(a.name, None) for a in node.names if a.name.startswith("memdb")]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[:len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if not module.startswith("memdb"):
                continue
            for alias in node.names:
                full = f"{module}.{alias.name}"
                found.append((full, None) if full in MODULES else (module, alias.name))
    return found


def _owner(module: str) -> str:
    while module not in MODULES and "." in module:
        module = module.rsplit(".", 1)[0]
    return module


GRAPH = {name: {_owner(m) for m, _ in _imports(name, path)} - {name}
         for name, path in MODULES.items()}


def test_every_module_has_a_layer():
    assert [m for m in MODULES if layer_of(m) is None] == []


def test_imports_point_down_the_layers():
    upward = [f"{m} ({LAYERS[layer_of(m)]}) imports {d} ({LAYERS[layer_of(d)]})"
              for m, deps in sorted(GRAPH.items()) for d in sorted(deps)
              if d != "memdb" and layer_of(d) > layer_of(m)]
    assert upward == []


def test_no_import_circle():
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in GRAPH[v]:
            if w == "memdb" or w not in GRAPH:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in GRAPH:
        if v not in index:
            visit(v)
    assert circles == []


def _package(name: str) -> str:
    return name if MODULES[name].name == "__init__.py" else name.rsplit(".", 1)[0]


def test_private_modules_and_names_stay_in_their_package():
    leaks = []
    for name, path in sorted(MODULES.items()):
        here = _package(name)
        for module, attr in _imports(name, path):
            parts = module.split(".")
            for i, part in enumerate(parts):
                if part.startswith("_") and not part.startswith("__"):
                    owner = ".".join(parts[:i])
                    if not (here == owner or here.startswith(owner + ".")):
                        leaks.append(f"{name} imports the private module {module}")
                    break
            if attr and attr.startswith("_") and not attr.startswith("__") and module != name:
                leaks.append(f"{name} imports the private name {module}.{attr}")
    assert leaks == []


def test_the_checks_catch_what_they_claim(tmp_path):
    """The readers above see lazy and TYPE_CHECKING imports (a test that cannot fail is no
    test): a module importing upward inside a function is found."""
    sample = tmp_path / "x.py"
    sample.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                      "    from .store import MemoryStore\n"
                      "def f():\n    from .cli import cli\n    from .lifecycle import _hidden\n")
    found = _imports("memdb.x", sample)
    assert ("memdb.store", "MemoryStore") in found and ("memdb.cli", "cli") in found
    assert ("memdb.lifecycle", "_hidden") in found

"""memdb/families/aio.pyi, the static face of the async store for type checkers, is generated from
the
synchronous classes (memdb.families._aio_stub) and must match what memdb.families.aio builds at run
time."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from memdb.families import aio
from memdb.families._aio_stub import _async_name, _classes, render

STUB = Path(aio.__file__).with_suffix(".pyi")


def test_the_stub_is_current():
    assert STUB.read_text() == render(), \
        ("memdb/families/aio.pyi is stale: "
         "python -m memdb.families._aio_stub > memdb/families/aio.pyi")


def _stub_classes() -> dict[str, dict[str, ast.AST]]:
    tree = ast.parse(STUB.read_text())
    return {node.name: {item.name if not isinstance(item, ast.AnnAssign) else item.target.id:
                        item for item in node.body
                        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef,
                                             ast.AnnAssign))}
            for node in tree.body if isinstance(node, ast.ClassDef)}


def test_every_runtime_operation_is_in_the_stub_with_its_kind():
    stub = _stub_classes()
    faces = _classes()
    assert "AsyncMemoryStore" in stub and "AsyncSessions" in stub and "AsyncMemoryTool" in stub
    for cls in faces.values():
        runtime = aio.AsyncMemoryStore if _async_name(cls) == "AsyncMemoryStore" \
            else aio.async_class(cls)
        members = stub[_async_name(cls)]
        for name in dir(runtime):
            if name.startswith("_") or name in getattr(cls, "_hidden_names", ()):
                continue
            assert name in members, (runtime.__name__, name)
            value = inspect.getattr_static(runtime, name)
            if inspect.iscoroutinefunction(value):
                assert isinstance(members[name], ast.AsyncFunctionDef), (runtime.__name__, name)
                sync_params = list(inspect.signature(getattr(cls, name)).parameters)
                stub_args = members[name].args
                stub_params = [a.arg for a in (*stub_args.posonlyargs, *stub_args.args,
                                               *stub_args.kwonlyargs)]
                stub_params += [a.arg for a in (stub_args.vararg, stub_args.kwarg) if a]
                assert sorted(stub_params) == sorted(sync_params), (runtime.__name__, name)
        assert "search" not in members or isinstance(members["search"], ast.AsyncFunctionDef)

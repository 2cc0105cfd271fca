"""docs/operations.md, generated from the declarations (``python -m memdb.core.ops.docs`` writes
it; a test checks it is current)."""

from __future__ import annotations

from ._operation import Operation
from .catalog import OPERATIONS
from .families import FAMILY_OPERATIONS
from .files import FILE_OPERATIONS
from .jobs import JOB_OPERATIONS
from .remember import REMEMBER_OPERATIONS
from .search_options import SEARCH_OPTIONS

__all__ = ["render"]

_HEAD = """# Operations

The operations every door offers, generated from their one declaration
(`memdb/core/ops/catalog.py`, `memdb/core/ops/families.py`): the CLI, the HTTP API, the MCP server
and
the memory tool take the same parameters, with the same ranges and defaults, and give the same
errors. Do not edit this page by hand: `python -m memdb.core.ops.docs > docs/operations.md` writes
it.

Scope, when the caller names no subject: **tenant** reads the whole tenant (a store or key
confined to one subject reads only that subject); **subject** writes or reads the subject
`default`; **memory** is the memory the id or URI names, within the caller's tenant and
subject. A blank query finds nothing (an empty result, not an error), at every door.
"""

_DOORS = (("cli", "CLI"), ("http", "HTTP"), ("mcp", "MCP tool"), ("tool", "memory tool"))


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _operation(op: Operation) -> str:
    doors = ", ".join(f"{label} `{op.door(key)}`" for key, label in _DOORS if op.door(key))
    lines = [f"## {op.name}", "", op.summary, "",
             f"Doors: {doors}. Scope: **{op.scope}**. Result: {op.result}. Errors: "
             + ", ".join(f"`{e}`" for e in op.errors) + ".", "",
             "| parameter | type | range | default | help |", "| --- | --- | --- | --- | --- |"]
    for p in op.params:
        default = "required" if p.required else ("" if p.default is None else f"`{p.default}`")
        lines.append(f"| `{p.name}` | {p.type} | {_cell(p.range_text())} | {default} | "
                     f"{_cell(p.help)} |")
    return "\n".join(lines)


def _search_options() -> str:
    lines = ["## Search options", "",
             "Per-query options of `search` (Python `SearchOptions`, HTTP `options`, CLI flags "
             "of `memdb search`); the defaults are `memdb.retrieval.search.DEFAULT_OPTIONS`. "
             "`memdb.check_search_options` refuses the same values from psql.", "",
             "| option | CLI | type | range | default | help |",
             "| --- | --- | --- | --- | --- | --- |"]
    for p in SEARCH_OPTIONS:
        default = "" if p.default is None else f"`{p.default}`"
        lines.append(f"| `{p.name}` | `{p.cli_flags()[0]}` | {p.type} | "
                     f"{_cell(p.range_text())} | {default} | {_cell(p.help)} |")
    return "\n".join(lines)


def render() -> str:
    """The page's Markdown."""
    every = OPERATIONS + REMEMBER_OPERATIONS + FAMILY_OPERATIONS + JOB_OPERATIONS + FILE_OPERATIONS
    return (_HEAD + "\n" + "\n\n".join(_operation(op) for op in every) + "\n\n"
            + _search_options() + "\n")

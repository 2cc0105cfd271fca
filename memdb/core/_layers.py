"""The layers of the package, lowest first, as its folders show them; enforced by
``tests/test_architecture.py`` (a module imports only from its own layer and those below; no
import circle; no private module or name of another package).

- ``memdb/core/``: errors, models, validation, SQL loading, connections and the embedded
  server, migrations, embeddings, filters, the LLM client, the declared operations (``ops``).
- ``memdb/write/``: what a write goes through: inputs, the gate, classification, extraction,
  remember, document ingestion.
- ``memdb/retrieval/``: search options, planning, decomposition, recall, answering.
- ``memdb/families/``: the store and its families, the memory tool, the async store, the admin.
- the doors, each its own folder at the top: ``cli`` (and its shell daemon, ``shell``),
  ``http``, ``mcp``, ``ui``, ``integrations``, ``report``, ``evaluation``
  (and the ``demo`` and ``_doors`` modules).
- the package ``memdb`` itself, which re-exports the public names.
"""

from __future__ import annotations

__all__ = ["DOORS", "FOLDERS", "LAYERS", "layer_of"]

LAYERS = ("core", "write", "retrieval", "families", "doors", "package")
FOLDERS = LAYERS[:4]
DOORS = ("cli", "shell", "http", "mcp", "ui", "integrations", "report", "evaluation", "demo",
         "_doors")


def layer_of(module: str) -> int | None:
    """The layer number of ``memdb.x`` or ``memdb.x.y``: its folder's, or the doors' for a
    door; None for a top-level module or folder that is neither (each must be declared)."""
    if module == "memdb":
        return LAYERS.index("package")
    parts = module.split(".")
    if parts[0] != "memdb" or len(parts) < 2:
        return None
    if parts[1] in FOLDERS:
        return LAYERS.index(parts[1])
    return LAYERS.index("doors") if parts[1] in DOORS else None

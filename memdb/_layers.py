"""The layers of the package, lowest first: each module's layer, declared here and enforced by
``tests/test_architecture.py`` (a module imports only from its own layer and those below;
no import circle; no private module or name of another package).

- core: errors, models, validation, SQL loading, connections and the embedded server,
  migrations, embeddings, filters, the LLM client, the declared operations (``memdb.ops``).
- write: what a write goes through: inputs, the gate, classification, extraction, remember,
  document ingestion (``memdb.ingest``).
- retrieval: search options, planning, decomposition, recall, answering (``memdb.ask``).
- families: the store and its families (sessions, documents, graph, review, traces,
  maintenance, subjects, meta, ...), the memory tool, the async store, the admin.
- doors: what callers use from outside: the CLI (and its shell daemon, ``memdb.shell``),
  HTTP, MCP, the UI, the integrations, the report, the evaluations, the demo. (The memory
  tool is a verb of the store, ``store.tool()``: a family.)
- package: ``memdb`` itself, which re-exports the public names.
"""

from __future__ import annotations

__all__ = ["LAYERS", "MODULES", "layer_of"]

LAYERS = ("core", "write", "retrieval", "families", "doors", "package")

MODULES: dict[str, tuple[str, ...]] = {
    "core": ("errors", "models", "_validate", "_sql", "_bridge", "_redact", "redact",
             "embedded", "_embedded_auth", "_servers", "connection", "_async_pg", "_novector",
             "_autoschema", "migrations", "embeddings", "_query_cache", "filters", "uris",
             "_tables", "lifecycle_models", "llm", "family", "replica", "tokens", "ops",
             "_layers", "_corrections", "_json"),
    "write": ("inputs", "_importance", "classify", "gate", "_extract", "remember",
              "_grounding", "ingest", "perceive"),
    "retrieval": ("search", "planner", "_llm_planner", "decompose", "recall", "profile",
                  "ask"),
    "families": ("store", "aio", "_aio_stub", "admin", "keys", "session", "documents",
                 "graph", "_graph_extract", "review", "traces", "maintenance", "lifecycle",
                 "sediment", "summarize", "subjects", "meta", "task_end", "agent",
                 "agent_loop", "context", "tool", "jobs", "files"),
    "doors": ("cli", "shell", "http", "mcp", "ui", "integrations", "_doors", "report",
              "evaluation", "demo"),
}
_LAYER_OF = {name: LAYERS.index(layer) for layer, names in MODULES.items() for name in names}


def layer_of(module: str) -> int | None:
    """The layer number of ``memdb.x`` or ``memdb.x.y`` (its top-level module's), None when
    undeclared; the package ``memdb`` itself is the top."""
    if module == "memdb":
        return LAYERS.index("package")
    parts = module.split(".")
    if parts[0] != "memdb" or len(parts) < 2:
        return None
    return _LAYER_OF.get(parts[1])

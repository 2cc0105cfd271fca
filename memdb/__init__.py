"""memdb: Postgres-native, SQL-first long-term memory for AI agents.

The public names are imported on first use (PEP 562), so that ``import memdb.x`` stays cheap
for what needs no store: the ``memdb`` command first tries its shell daemon
(:mod:`memdb.shell`) before loading anything else.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .core.embeddings import Embedder, LocalEmbedder, OpenAIEmbedder
    from .core.errors import (
        Conflict,
        DatabaseError,
        DatabaseUnavailable,
        DimensionMismatch,
        EmbeddingError,
        Forbidden,
        InvalidInput,
        MemdbError,
        MissingDependency,
        NotFound,
        NotMigrated,
        Rejected,
        ReplicaLagging,
        ReplicaUnavailable,
        UnsupportedServer,
    )
    from .core.filters import Filter
    from .core.models import (
        AddResult,
        Category,
        HistoryEntry,
        Kind,
        Memory,
        Scope,
        SearchHit,
        SourceType,
    )
    from .families.admin import MemoryAdmin
    from .families.aio import AsyncMemoryStore
    from .families.store import MemoryInput, MemoryStore
    from .retrieval.planner import Planner, QueryPlan, TypedQuery
    from .retrieval.recall import RecallResults, RecallStatus
    from .write.gate import DEFAULT_POLICY, Decision, TTLDefaults, WritePolicy

__version__ = "0.1.0"

__all__ = [
    "MemoryStore", "AsyncMemoryStore", "MemoryAdmin", "MemoryInput", "Filter",
    "QueryPlan", "TypedQuery", "Planner", "RecallResults", "RecallStatus",
    "WritePolicy", "TTLDefaults", "Decision", "DEFAULT_POLICY",
    "Memory", "AddResult", "SearchHit", "HistoryEntry",
    "Kind", "Category", "Scope", "SourceType",
    "Embedder", "LocalEmbedder", "OpenAIEmbedder",
    "MemdbError", "InvalidInput", "DimensionMismatch", "NotFound", "Forbidden", "Conflict",
    "Rejected", "MissingDependency", "DatabaseError", "DatabaseUnavailable", "UnsupportedServer",
    "NotMigrated", "EmbeddingError", "ReplicaUnavailable", "ReplicaLagging",
]

_HOME = {  # public name -> the module that defines it
    **dict.fromkeys(("MemoryStore", "MemoryInput"), "families.store"),
    "AsyncMemoryStore": "families.aio", "MemoryAdmin": "families.admin", "Filter": "core.filters",
    **dict.fromkeys(("QueryPlan", "TypedQuery", "Planner"), "retrieval.planner"),
    **dict.fromkeys(("RecallResults", "RecallStatus"), "retrieval.recall"),
    **dict.fromkeys(("WritePolicy", "TTLDefaults", "Decision", "DEFAULT_POLICY"), "write.gate"),
    **dict.fromkeys(("Memory", "AddResult", "SearchHit", "HistoryEntry", "Kind", "Category",
                     "Scope", "SourceType"), "core.models"),
    **dict.fromkeys(("Embedder", "LocalEmbedder", "OpenAIEmbedder"), "core.embeddings"),
}


def __getattr__(name: str) -> Any:
    if name in __all__:
        value = getattr(import_module(f".{_HOME.get(name, 'core.errors')}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'memdb' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

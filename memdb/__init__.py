"""memdb: Postgres-native, SQL-first long-term memory for AI agents.

The public names are imported on first use (PEP 562), so that ``import memdb.x`` stays cheap
for what needs no store: the ``memdb`` command first tries its shell daemon
(:mod:`memdb.shell`) before loading anything else.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .admin import MemoryAdmin
    from .aio import AsyncMemoryStore
    from .embeddings import Embedder, LocalEmbedder, OpenAIEmbedder
    from .errors import (
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
    from .filters import Filter
    from .gate import DEFAULT_POLICY, Decision, TTLDefaults, WritePolicy
    from .models import (
        AddResult,
        Category,
        HistoryEntry,
        Kind,
        Memory,
        Scope,
        SearchHit,
        SourceType,
    )
    from .planner import Planner, QueryPlan, TypedQuery
    from .recall import RecallResults, RecallStatus
    from .store import MemoryInput, MemoryStore

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
    **dict.fromkeys(("MemoryStore", "MemoryInput"), "store"),
    "AsyncMemoryStore": "aio", "MemoryAdmin": "admin", "Filter": "filters",
    **dict.fromkeys(("QueryPlan", "TypedQuery", "Planner"), "planner"),
    **dict.fromkeys(("RecallResults", "RecallStatus"), "recall"),
    **dict.fromkeys(("WritePolicy", "TTLDefaults", "Decision", "DEFAULT_POLICY"), "gate"),
    **dict.fromkeys(("Memory", "AddResult", "SearchHit", "HistoryEntry", "Kind", "Category",
                     "Scope", "SourceType"), "models"),
    **dict.fromkeys(("Embedder", "LocalEmbedder", "OpenAIEmbedder"), "embeddings"),
}


def __getattr__(name: str) -> Any:
    if name in __all__:
        value = getattr(import_module(f".{_HOME.get(name, 'errors')}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'memdb' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

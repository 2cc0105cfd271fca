"""memdb: Postgres-native, SQL-first long-term memory for AI agents."""

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
from .models import AddResult, Category, HistoryEntry, Kind, Memory, Scope, SearchHit, SourceType
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

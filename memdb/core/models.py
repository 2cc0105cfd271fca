"""Typed values that cross the public API: enums for the vocabulary, frozen dataclasses for rows."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

__all__ = [
    "STATUSES",
    "Kind",
    "Category",
    "Scope",
    "SourceType",
    "Memory",
    "AddResult",
    "SearchHit",
    "HistoryEntry",
]

STATUSES = ("active", "hypothesis")  # memories.status: a fact, or a low-confidence inference


class Kind(enum.StrEnum):
    """How long and in what form a memory lives."""

    WORKING = "working"
    EPISODIC = "episodic"
    SEMANTIC = "semantic"
    PROCEDURAL = "procedural"
    # made from an image (later audio, video) by store.perceive: its content is the text found
    # in it; memdb.percepts describes the file
    PERCEPTUAL = "perceptual"


class Category(enum.StrEnum):
    """The directory a memory is filed under."""

    PREFERENCES = "preferences"
    ENTITIES = "entities"
    EVENTS = "events"
    PATTERNS = "patterns"
    TOOLS = "tools"
    SKILLS = "skills"
    SYSTEM = "system"
    GENERAL = "general"


class Scope(enum.StrEnum):
    """Who may recall a memory: everyone in the tenant, a project, a user, or one session."""

    GLOBAL = "global"
    PROJECT = "project"
    USER = "user"
    SESSION = "session"


class SourceType(enum.StrEnum):
    """Where a memory came from (provenance)."""

    USER_STATEMENT = "user_statement"
    TOOL_OBSERVATION = "tool_observation"
    MODEL_INFERENCE = "model_inference"
    DOCUMENT = "document"
    SYSTEM = "system"


@dataclass(frozen=True, slots=True)
class Memory:
    """One stored memory row (without its vector and tsvector)."""

    id: UUID
    tenant: str
    subject: str
    agent: str | None
    scope: Scope
    project_id: str | None
    session_id: str | None
    kind: Kind
    category: Category
    uri: str
    content: str
    search_context: str | None
    norm_key: str | None
    importance: float
    confidence: float
    source_type: SourceType
    source_id: str | None
    created_by: str | None
    metadata: dict[str, Any]
    tags: tuple[str, ...]
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None
    access_count: int
    last_accessed_at: datetime | None
    version: int
    valid_from: datetime
    valid_to: datetime | None
    superseded_by: UUID | None
    has_embedding: bool
    # 'active', or 'hypothesis': a model inference kept with low confidence and a short TTL
    # until a trusted source confirms it
    status: str = "active"
    # the classification rules' version when the category was classified at write
    # (memdb.write.classify); None when the category was given explicitly
    tag_version: int | None = None
    # what a perceptual memory was made from: 'image' (later 'audio', 'video'); None for text
    modality: str | None = None

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Memory:
        values = {name: row[name] for name in cls.__slots__  # type: ignore[attr-defined]
                  if name in row}
        values["scope"] = Scope(row["scope"])
        values["kind"] = Kind(row["kind"])
        values["category"] = Category(row["category"])
        values["source_type"] = SourceType(row["source_type"])
        values["tags"] = tuple(row["tags"] or ())
        if values["kind"] is Kind.PERCEPTUAL:
            modality = (row.get("metadata") or {}).get("modality")
            values["modality"] = modality if isinstance(modality, str) else None
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (enums as strings, times as ISO 8601)."""
        out: dict[str, Any] = {}
        for name in self.__slots__:  # type: ignore[attr-defined]
            value = getattr(self, name)
            if isinstance(value, enum.Enum):
                value = value.value
            elif isinstance(value, datetime):
                value = value.isoformat()
            elif isinstance(value, UUID):
                value = str(value)
            elif isinstance(value, tuple):
                value = list(value)
            out[name] = value
        return out


OUTCOMES = ("created", "hypothesis", "superseded", "duplicate", "merged", "rejected")


@dataclass(frozen=True, slots=True)
class AddResult:
    """What writing one memory did.

    ``id``: the memory now holding it (None when rejected, or not yet written in a dry run).
    ``created``: a new row was made. ``outcome``: created | hypothesis (a new row with status
    'hypothesis') | superseded (a new row; ``superseded_id`` is the version it replaced) |
    duplicate (identical content: that row was bumped) | merged (a near duplicate:
    ``merged_into`` was bumped; ``similarity`` is the cosine) | rejected (by the write gate).
    ``reasons``: the gate's and the store's reasons. ``dry_run``: nothing was written.
    ``deferred``: its embedding was deferred (the provider failed and the store is configured
    with ``on_embedding_error="defer"``: the row waits for ``store.maintenance.reembed()``).
    """

    id: UUID | None
    created: bool
    outcome: str = "created"
    reasons: tuple[str, ...] = ()
    superseded_id: UUID | None = None
    merged_into: UUID | None = None
    similarity: float | None = None
    dry_run: bool = False
    deferred: bool = False

    @property
    def rejected(self) -> bool:
        return self.outcome == "rejected"

    def to_dict(self) -> dict[str, Any]:
        return {"id": None if self.id is None else str(self.id), "created": self.created,
                "outcome": self.outcome, "reasons": list(self.reasons),
                "superseded_id": None if self.superseded_id is None else str(self.superseded_id),
                "merged_into": None if self.merged_into is None else str(self.merged_into),
                "similarity": self.similarity, "dry_run": self.dry_run,
                "deferred": self.deferred}


@dataclass(frozen=True, slots=True)
class SearchHit:
    """A memory found by a search, with the score that ranked it and how it was computed."""

    memory: Memory
    score: float
    rank: int
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"rank": self.rank, "score": self.score, "details": self.details,
                "memory": self.memory.to_dict()}


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One change to a memory, as recorded by the history trigger."""

    id: int
    memory_id: UUID
    op: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    actor: str | None
    reason: str | None
    at: datetime

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "memory_id": str(self.memory_id), "op": self.op,
                "before": self.before, "after": self.after, "actor": self.actor,
                "reason": self.reason, "at": self.at.isoformat()}

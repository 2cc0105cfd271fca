"""``MemoryInput``: one memory to write, as the caller gives it, and its validation.

Shared by the write gate (:mod:`memdb.write.gate`, which reads and adjusts inputs) and the store
(:mod:`memdb.families.store`, which writes them), so neither depends on the other.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from ..core import validate as v
from ..core.errors import InvalidInput
from ..core.models import STATUSES, Category, Kind, Scope, SourceType
from .classify import category_fields
from .importance import score_importance

__all__ = ["MemoryInput", "STATUSES", "as_input", "TSVECTOR_LIMIT", "keyword_index_may_overflow"]


# PostgreSQL keeps at most 1 MB of distinct lexemes in one tsvector (a memory's keyword index)
TSVECTOR_LIMIT = 1_048_575
# lexeme bytes per byte of (NFKC-normalized) text, at most: a CJK character (3 bytes) gives
# its unigram and the bigram it starts (9 bytes); other words give at most their own bytes
_LEXEME_BYTES_PER_BYTE = 3


def keyword_index_may_overflow(content: str, search_context: str | None) -> bool:
    """Whether ``content`` and ``search_context`` might make a keyword index over
    :data:`TSVECTOR_LIMIT` (false: they surely fit; true: ask the database,
    ``memdb.keyword_index_fits``). Only texts of several hundred kB come near it."""
    chars = len(content) + 1 + len(search_context or "")
    if chars * 18 * 4 * _LEXEME_BYTES_PER_BYTE < TSVECTOR_LIMIT:
        return False  # NFKC makes at most 18 characters of one, of at most 4 bytes each
    text = unicodedata.normalize("NFKC", f"{content} {search_context or ''}")
    return len(text.encode("utf-8", "surrogatepass")) * _LEXEME_BYTES_PER_BYTE >= TSVECTOR_LIMIT


@dataclass
class MemoryInput:
    """One memory to add. Only ``content`` is required; see :meth:`MemoryStore.add`."""

    content: str
    subject: str | None = None  # None: the store's subject (subject isolation), else "default"
    kind: Kind | str = Kind.SEMANTIC
    # None: classified from the content at construction (memdb.write.classify: explicit metadata
    # type, then zh/en keyword rules with system first, then general)
    category: Category | str | None = None
    scope: Scope | str = Scope.USER
    agent: str | None = None
    project_id: str | None = None
    session_id: str | None = None
    # None (unset): scored from the text when written
    # (:func:`memdb.write.importance.score_importance`,
    # 0.5 for a plain statement); an explicit value is kept as given
    importance: float | None = None
    confidence: float = 1.0
    source_type: SourceType | str = SourceType.USER_STATEMENT
    source_id: str | None = None
    created_by: str | None = None
    metadata: dict[str, Any] | None = None
    tags: Sequence[str] | None = None
    ttl: float | timedelta | None = None
    expires_at: datetime | str | None = None
    created_at: datetime | str | None = None
    norm_key: str | None = None
    search_context: str | None = None
    uri: str | None = None
    embedding: Any = field(default=None, repr=False)
    # an explicit "this is a rule" flag for the write gate (rules need a cue word otherwise);
    # not stored
    rule: bool = False
    # 'active', or 'hypothesis' (what the gate makes of a model inference)
    status: str = "active"
    # the classification rules' version when the category was classified (None: explicit)
    tag_version: int | None = None

    def __post_init__(self) -> None:
        # classify before the write gate sees the item: a rule classified into `system` is
        # gated as a rule. A content that is no string or over the size limit is refused
        # first: classifying 10 MB took seconds only to be refused afterwards.
        if not isinstance(self.content, str) or len(self.content) > v.MAX_CONTENT_CHARS:
            v.content(self.content)
        if self.search_context is not None and (
                not isinstance(self.search_context, str)
                or len(self.search_context) > v.MAX_CONTENT_CHARS):
            v.optional_text(self.search_context, "search_context")
        if self.category is None:
            fields = category_fields(self.content, self.metadata, None)
            self.category = Category(fields["category"])
            self.tag_version = fields["tag_version"]

    def to_item(self) -> dict[str, Any]:
        """Validated JSON for memdb.add_memories (the embedding travels separately)."""
        scope = v.choice(self.scope, Scope, "scope")
        project_id = v.optional_name(self.project_id, "project_id")
        session_id = v.optional_name(self.session_id, "session_id")
        if scope is Scope.PROJECT and project_id is None:
            raise InvalidInput("scope 'project' needs a project_id")
        if scope is Scope.SESSION and session_id is None:
            raise InvalidInput("scope 'session' needs a session_id")
        item: dict[str, Any] = {
            "content": v.content(self.content),
            "subject": None if self.subject is None else v.name(self.subject, "subject"),
            "kind": v.choice(self.kind, Kind, "kind").value,
            "category": v.choice(self.category, Category, "category").value,
            "tag_version": self.tag_version,
            "scope": scope.value,
            "agent": v.optional_name(self.agent, "agent"),
            "project_id": project_id,
            "session_id": session_id,
            "importance": v.unit(self.resolved_importance(), "importance"),
            "confidence": v.unit(self.confidence, "confidence"),
            "source_type": v.choice(self.source_type, SourceType, "source_type").value,
            "source_id": v.optional_text(self.source_id, "source_id", 1024),
            "created_by": v.optional_name(self.created_by, "created_by"),
            "metadata": v.metadata(self.metadata),
            "tags": v.tags(self.tags),
            "norm_key": v.optional_text(self.norm_key, "norm_key", 1024),
            "search_context": v.optional_text(self.search_context, "search_context"),
            "uri": v.optional_text(self.uri, "uri", 2048),
            "status": _status(self.status),
        }
        if not isinstance(self.rule, bool):
            raise InvalidInput("rule must be True or False")
        ttl = v.ttl(self.ttl)
        expires_at = v.timestamp(self.expires_at, "expires_at")
        if ttl is not None and expires_at is not None:
            raise InvalidInput("give ttl or expires_at, not both")
        if ttl is not None:
            item["ttl_seconds"] = ttl.total_seconds()
        if expires_at is not None:
            item["expires_at"] = expires_at.isoformat()
        created_at = v.timestamp(self.created_at, "created_at")
        if created_at is not None:
            item["created_at"] = created_at.isoformat()
        return {k: val for k, val in item.items() if val is not None}

    def resolved_importance(self) -> Any:
        """The importance to store: the explicit one, else the heuristic score of the content
        (explicit "remember"/记住, rules, corrections and named entities score higher)."""
        if self.importance is not None or not isinstance(self.content, str):
            return self.importance
        return score_importance(self.content, rule=self.rule is True)

    def embedding_text(self) -> str:
        """What the embedder sees: the searchable context (if any) and the content."""
        return f"{self.search_context}\n{self.content}" if self.search_context else self.content


def as_input(item: MemoryInput | dict[str, Any] | str) -> MemoryInput:
    if isinstance(item, MemoryInput):
        return item
    if isinstance(item, str):
        return MemoryInput(content=item)
    if isinstance(item, dict):
        try:
            return MemoryInput(**item)
        except TypeError as exc:
            raise InvalidInput(f"bad memory fields: {exc}") from None
    raise InvalidInput(f"a memory must be a MemoryInput, dict or str, got {type(item).__name__}")




def _status(value: object) -> str:
    if value not in STATUSES:
        raise InvalidInput(f"unknown status {value!r} (expected one of: {', '.join(STATUSES)})")
    return str(value)

"""Typed results of the lifecycle calls (:mod:`memdb.families.lifecycle`): frozen, JSON-ready."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import date, datetime
from typing import Any
from uuid import UUID

__all__ = ["HypothesisChange", "Consolidated", "SessionSummary", "SedimentResult",
           "ReviewItem", "SubjectErasure"]


def _jsonable(value: Any) -> Any:
    if isinstance(value, (UUID, datetime, date)):
        return str(value) if isinstance(value, UUID) else value.isoformat()
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


class _Json:
    def to_dict(self) -> dict[str, Any]:
        return _jsonable(asdict(self))  # type: ignore[call-overload]


@dataclass(frozen=True)
class HypothesisChange(_Json):
    """One hypothesis touched by confidence decay: 'decay' (lowered) or 'forget' (deleted)."""

    id: UUID
    old_confidence: float
    new_confidence: float
    action: str


@dataclass(frozen=True)
class Consolidated(_Json):
    """A working memory moved to episodic (importance * 1.1, capped at 1)."""

    id: UUID
    old_importance: float
    new_importance: float


@dataclass(frozen=True)
class SessionSummary(_Json):
    """A session summary and how it was made. ``path``: "llm" or "extractive";
    ``fallback_reason``: why the LLM path was not taken (None when it was). ``memory_id`` is
    None on a dry run or when the session had nothing to summarize."""

    session_id: str
    subject: str | None
    content: str
    path: str
    fallback_reason: str | None
    source_ids: tuple[UUID, ...]
    memory_id: UUID | None = None
    created: bool = False


@dataclass(frozen=True)
class SedimentResult(_Json):
    """One subject's sedimentation run. ``skipped``: this day's run over the same summaries
    already happened (nothing written). ``memories``/``proposed``: what was written (or, on a
    dry run, would be): dicts with class, content, source_ids and, when written, id."""

    subject: str
    source_hash: str
    summaries: int
    skipped: bool
    dry_run: bool
    memories: tuple[dict[str, Any], ...] = field(default=())
    proposed: tuple[dict[str, Any], ...] = field(default=())


@dataclass(frozen=True)
class ReviewItem(_Json):
    """An entry of the review queue (a proposed rule or system entry)."""

    id: UUID
    subject: str
    kind: str
    category: str
    content: str
    reason: str | None
    source_ids: tuple[UUID, ...]
    status: str
    memory_id: UUID | None
    decided_by: str | None
    decided_at: datetime | None
    created_at: datetime

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> ReviewItem:
        return cls(**{**row, "source_ids": tuple(row["source_ids"] or ())})


@dataclass(frozen=True)
class SubjectErasure(_Json):
    """What forget_subject deleted (or, on a dry run, would delete), per table, and where
    the export went (None when not asked)."""

    subject: str
    counts: dict[str, int]
    dry_run: bool
    exported_to: str | None = None

"""Response bodies of the HTTP door (pydantic), for the OpenAPI document and to keep the shape
of the answers stable. They mirror the ``to_dict()`` of memdb's results; fields a newer memdb
adds pass through (``extra="allow"``)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ["ErrorOut", "MemoryOut", "AddOut", "MemoryPage", "HistoryOut", "HitOut", "SearchOut",
           "WhoAmI", "Health", "ERROR_RESPONSES"]


class _Out(BaseModel):
    model_config = ConfigDict(extra="allow")


class ErrorDetail(_Out):
    type: str
    message: str
    reasons: list[str] | None = None


class ErrorOut(BaseModel):
    """Every error: ``{"error": {"type", "message"}}`` (``reasons`` for a write-gate refusal)."""

    error: ErrorDetail


class MemoryOut(_Out):
    id: str
    tenant: str
    subject: str
    agent: str | None = None
    scope: str
    project_id: str | None = None
    session_id: str | None = None
    kind: str
    category: str
    uri: str
    content: str
    importance: float
    confidence: float
    source_type: str
    source_id: str | None = None
    metadata: dict[str, Any]
    tags: list[str]
    created_at: str
    updated_at: str
    expires_at: str | None = None
    version: int
    status: str
    # 'image' for a perceptual memory (made from an image by POST /v1/files), else null
    modality: str | None = None


class AddOut(_Out):
    id: str | None
    created: bool
    outcome: str
    reasons: list[str]
    superseded_id: str | None = None
    merged_into: str | None = None
    similarity: float | None = None
    dry_run: bool
    deferred: bool


class MemoryPage(_Out):
    memories: list[MemoryOut]
    limit: int
    offset: int


class HistoryEntryOut(_Out):
    id: int
    memory_id: str
    op: str
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None
    actor: str | None = None
    reason: str | None = None
    at: str


class HistoryOut(_Out):
    history: list[HistoryEntryOut]


class HitOut(_Out):
    rank: int
    score: float
    details: dict[str, Any]
    memory: MemoryOut


class SearchOut(_Out):
    hits: list[HitOut]
    explain: dict[str, Any] | None = None


class WhoAmI(_Out):
    key_id: str
    name: str
    tenant: str | None
    subject: str | None
    admin: bool


class Health(_Out):
    ok: bool


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorOut, "description": text} for status, text in (
        (400, "InvalidInput: a value memdb refused, malformed JSON, a cap exceeded"),
        (401, "Unauthorized: no key, an unknown or revoked key"),
        (403, "Forbidden: outside what this key may touch"),
        (404, "NotFound: nothing with that id for this key"),
        (409, "Conflict: a stale version, a duplicate"),
        (413, "PayloadTooLarge: the body is over the server's limit"),
        (422, "InvalidInput (the body does not fit the schema) or Rejected (the write gate)"),
        (429, "TooManyRequests: the key's rate; see Retry-After"),
        (503, "DatabaseUnavailable, NotMigrated or EmbeddingError"),
    )
}

"""Request bodies of the HTTP door (pydantic): they make the OpenAPI document and refuse unknown
fields (422). Values are checked again by memdb itself (InvalidInput: 400)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..ops import Param
from ..ops import catalog as ops

__all__ = [
    "MemoryIn", "AddMany", "MemoryPatch", "SearchIn", "RecallIn", "RememberIn", "ContextIn",
    "MessageIn", "StateIn", "TextDocument", "IngestIn", "RemoveDocuments", "DocumentSearchIn",
    "AskIn", "MaintenanceIn", "GraphLinkIn", "GraphSearchIn", "ReviewDecision", "TracesPurgeIn",
    "TracesEraseIn", "ForgetSubjectIn", "MetaIn",
]

Name = Field(default=None, max_length=256)


def declared(param: Param) -> Any:
    """The pydantic field of a declared parameter (memdb.ops): its default, and its range,
    length and help in the OpenAPI document, so it says what the other doors say. The range is
    checked by memdb itself (InvalidInput: 400, as at every door), not by pydantic (422)."""
    schema = {key: value for key, value in param.schema().items()
              if key in ("minimum", "maximum", "maxLength", "minLength", "enum")}
    return Field(default=... if param.required else param.default,
                 description=param.describe(), json_schema_extra=schema or None)


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MemoryIn(_Body):
    """One memory to add (the fields of memdb.MemoryInput that a caller may set)."""

    content: str = Field(max_length=65_536)
    subject: str | None = Name
    kind: str | None = None
    category: str | None = None
    scope: str | None = None
    agent: str | None = Name
    project_id: str | None = Name
    session_id: str | None = Name
    importance: float | None = None
    confidence: float | None = None
    source_type: str | None = None
    source_id: str | None = Field(default=None, max_length=1024)
    metadata: dict[str, Any] | None = None
    tags: list[str] | None = None
    ttl: float | None = Field(default=None, description="seconds")
    expires_at: str | None = None
    norm_key: str | None = Field(default=None, max_length=1024)
    search_context: str | None = None
    rule: bool | None = None

    def fields(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


class AddOne(MemoryIn):
    reason: str | None = Field(default=None, max_length=1000)
    dry_run: bool = False


class AddMany(_Body):
    items: list[MemoryIn] = Field(min_length=1, max_length=1000)
    reason: str | None = Field(default=None, max_length=1000)
    dry_run: bool = False


class MemoryPatch(_Body):
    """Changes to one memory (only the fields given change)."""

    content: str | None = Field(default=None, max_length=65_536)
    kind: str | None = None
    category: str | None = None
    importance: float | None = None
    confidence: float | None = None
    metadata: dict[str, Any] | None = None
    tags: list[str] | None = None
    ttl: float | None = None
    expires_at: str | None = None
    agent: str | None = Name
    source_type: str | None = None
    source_id: str | None = Field(default=None, max_length=1024)
    norm_key: str | None = Field(default=None, max_length=1024)
    search_context: str | None = None
    reason: str | None = Field(default=None, max_length=1000)


class SearchIn(_Body):
    query: str = declared(ops.SEARCH.param("query"))
    k: int = declared(ops.SEARCH.param("k"))
    subject: str | None = declared(ops.SEARCH.param("subject"))
    filter: dict[str, Any] | None = None
    routes: list[str] | None = None
    weights: dict[str, float] | None = None
    mmr: float | bool | None = None
    options: dict[str, Any] | None = Field(
        default=None, description="any search options by name (neighbors, temporal, rrf_k, "
        "prf, decay_weight...: memdb.SearchOptions), laid over the server's defaults; "
        "routes, weights and mmr above override them")
    explain: bool = False


class RecallIn(_Body):
    query: str = declared(ops.RECALL.param("query"))
    k: int = declared(ops.RECALL.param("k"))
    subject: str | None = declared(ops.RECALL.param("subject"))
    filter: dict[str, Any] | None = None
    plan: dict[str, Any] | str | None = None
    with_general: bool | None = None
    explain: bool = Field(default=False, description="include the plan, timings and trace id")


class RememberIn(_Body):
    messages: list[dict[str, Any]] | str
    session_id: str | None = Name
    turn_id: str | None = Name
    subject: str | None = Name
    dry_run: bool = False


class ContextIn(_Body):
    query: str = Field(max_length=65_536)
    session: str | None = Name
    budget_tokens: int = Field(default=2000, ge=1, le=200_000)
    subject: str | None = Name
    k: int = Field(default=10, ge=1)
    include_profile: bool = False
    agent: str | None = Name


class MessageIn(_Body):
    role: Literal["system", "user", "assistant", "tool"]
    content: str = Field(max_length=65_536)
    subject: str | None = Name


class StateIn(_Body):
    state: dict[str, Any]
    expected_version: int = Field(ge=0)
    subject: str | None = Name


class TextDocument(_Body):
    id: str = Field(min_length=1, max_length=4096, description="the document's URI/id")
    text: str
    title: str | None = None
    format: Literal["markdown", "text"] = "markdown"
    metadata: dict[str, Any] | None = None


class IngestIn(_Body):
    documents: list[TextDocument] = Field(min_length=1, max_length=100)
    subject: str | None = Name
    category: str = "general"
    tags: list[str] | None = None
    importance: float = 0.5
    chunk_tokens: int = Field(default=256, ge=16, le=4096)
    dry_run: bool = False
    force: bool = False


class RemoveDocuments(_Body):
    uris: list[str] = Field(min_length=1, max_length=1000)
    reason: str | None = Field(default=None, max_length=1000)


class DocumentSearchIn(_Body):
    query: str = Field(max_length=65_536)
    k: int = Field(default=10, ge=1)
    parents: bool = False


class AskIn(_Body):
    question: str = Field(max_length=65_536)
    k: int = Field(default=5, ge=1)
    include_memories: bool = False
    answer: bool = Field(default=True, description="false: the passages only, no LLM call")


class MaintenanceIn(_Body):
    tenant: str | None = Field(default=None, max_length=256,
                               description="only this tenant (default: every tenant)")
    dry_run: bool = False
    options: dict[str, Any] = Field(default_factory=dict)


class GraphLinkIn(_Body):
    memory_ids: list[str] | None = Field(default=None, max_length=10_000, description=(
        "the memories to (re-)link, in order (default: every current memory of the subject)"))
    subject: str | None = Name
    timeout: float | None = Field(default=None, gt=0, le=120,
                                  description="seconds one extraction waits for the LLM")
    limit: int = Field(default=1000, ge=1, le=10_000,
                       description="at most this many memories when memory_ids is not given")


class GraphSearchIn(_Body):
    query: str = Field(max_length=65_536)
    k: int = Field(default=10, ge=1)
    filter: dict[str, Any] | None = None
    hops: int = Field(default=2, ge=0, le=4)
    entities: list[str] | None = Field(default=None, max_length=100)
    routes: list[str] | None = None
    weights: dict[str, float] | None = None
    explain: bool = False


class ReviewDecision(_Body):
    decided_by: str | None = Name


class TracesPurgeIn(_Body):
    older_than_days: float | None = Field(default=None, ge=0, description=(
        "default: the retention period ($MEMDB_TRACE_RETENTION_DAYS, 30)"))


class TracesEraseIn(_Body):
    subject: str = Field(min_length=1, max_length=256)


class ForgetSubjectIn(_Body):
    confirm: str = Field(max_length=256, description="the subject's name again, exactly")
    dry_run: bool = False


class MetaIn(_Body):
    """One item of an agent's meta memory (subject, category and kind follow from the agent
    and the aspect)."""

    content: str = Field(max_length=65_536)
    aspect: str = Field(default="persona", max_length=32,
                        description="persona, abilities, limits or lessons")
    agent: str = Field(default="default", min_length=1, max_length=256)
    reason: str | None = Field(default=None, max_length=1000)
    importance: float | None = None
    confidence: float | None = None
    metadata: dict[str, Any] | None = None
    tags: list[str] | None = None
    ttl: float | None = Field(default=None, description="seconds")
    source_id: str | None = Field(default=None, max_length=1024)

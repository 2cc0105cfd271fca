"""Request bodies of the HTTP door (pydantic): they make the OpenAPI document and refuse unknown
fields (422). The declared operations' (memdb.core.ops) fields are generated from their declarations
(memdb.http._generate) beside the fields a route offers beyond them; values are checked by the
declarations and by memdb itself (InvalidInput: 400)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ..core.ops import catalog as ops
from ..core.ops import families as fam
from ..core.ops import remember as remember_ops
from ._generate import Body, arguments, declared, request_model

__all__ = [
    "MemoryIn", "AddOne", "AddMany", "MemoryPatch", "DeleteQuery", "SummaryQuery", "SearchIn",
    "RecallIn", "RememberIn", "ContextIn",
    "MessageIn", "StateIn", "StateQuery", "TextDocument", "IngestIn", "RemoveDocuments",
    "DocumentSearchIn",
    "AskIn", "MaintenanceIn", "GraphLinkIn", "GraphSearchIn", "ReviewDecision", "TracesPurgeIn",
    "TracesEraseIn", "ForgetSubjectIn", "MetaIn", "SessionListQuery", "SessionQuery",
    "GraphNeighborsQuery", "ReviewListQuery", "TracesListQuery", "MetaQuery",
    "DocumentsListQuery", "TracesStatsQuery", "ProfileQuery", "MetaFields",
]

Name = Field(default=None, max_length=256)
_Body = Body


class _MemoryFields(_Body):
    """One memory to add: the fields of memdb.MemoryInput a caller may set beyond the declared
    ones (memdb.core.ops: add; ``source_type`` takes every provenance, the declared ``source``
    two)."""

    scope: str | None = None
    agent: str | None = Name
    project_id: str | None = Name
    confidence: float | None = None
    source_type: str | None = None
    source_id: str | None = Field(default=None, max_length=1024)
    metadata: dict[str, Any] | None = None
    ttl: float | None = Field(default=None, description="seconds")
    expires_at: str | None = None
    norm_key: str | None = Field(default=None, max_length=1024)
    search_context: str | None = None
    rule: bool | None = None

    def fields(self) -> dict[str, Any]:
        """Every field given: the declared ones checked by their declaration."""
        extra = self.model_dump(exclude_none=True, include=set(_MemoryFields.model_fields))
        return {**extra, **arguments(ops.ADD, self, skip=ADD_SKIPS)}


ADD_SKIPS = ("source", "reason")  # source_type above; reason is the request's, not an item's
MemoryIn = request_model(ops.ADD, "MemoryIn", base=_MemoryFields, skip=ADD_SKIPS)


class _AddOne(MemoryIn):  # type: ignore[misc, valid-type]
    dry_run: bool = False


AddOne = request_model(ops.ADD, "AddOne", base=_AddOne,
                       skip=tuple(p.name for p in ops.ADD.params if p.name != "reason"))


class AddMany(_Body):
    items: list[MemoryIn] = Field(min_length=1, max_length=1000)  # type: ignore[valid-type]
    reason: str | None = declared(ops.ADD.param("reason"))
    dry_run: bool = False


class PatchFields(_Body):
    """Changes to one memory beyond the declared ones (memdb.core.ops: update); only the fields
    given change."""

    kind: str | None = None
    confidence: float | None = None
    metadata: dict[str, Any] | None = None
    ttl: float | None = None
    expires_at: str | None = None
    agent: str | None = Name
    source_type: str | None = None
    source_id: str | None = Field(default=None, max_length=1024)
    norm_key: str | None = Field(default=None, max_length=1024)
    search_context: str | None = None


UPDATE_SKIPS = ("id", "source")  # the memory is the path's; source_type above
MemoryPatch = request_model(ops.UPDATE, "MemoryPatch", base=PatchFields, skip=UPDATE_SKIPS)
DeleteQuery = request_model(ops.DELETE, "DeleteQuery", skip=("id",))


class _SearchFields(_Body):
    filter: dict[str, Any] | None = None
    routes: list[str] | None = None
    weights: dict[str, float] | None = None
    mmr: float | bool | None = None
    options: dict[str, Any] | None = Field(
        default=None, description="any search options by name (neighbors, temporal, rrf_k, "
        "prf, decay_weight...: memdb.SearchOptions), laid over the server's defaults; "
        "routes, weights and mmr above override them")
    explain: bool = False


SearchIn = request_model(ops.SEARCH, "SearchIn", base=_SearchFields)


class _RecallFields(_Body):
    filter: dict[str, Any] | None = None
    plan: dict[str, Any] | str | None = None
    with_general: bool | None = None
    explain: bool = Field(default=False, description="include the plan, timings and trace id")


RecallIn = request_model(ops.RECALL, "RecallIn", base=_RecallFields)


class _RememberFields(_Body):
    messages: list[dict[str, Any]] | str


# the turn is "messages" here (a string or a list of {role, content}), not the text argument
RememberIn = request_model(remember_ops.REMEMBER, "RememberIn", base=_RememberFields,
                           skip=("text",))


class _ContextFields(_Body):
    include_profile: bool = False
    agent: str | None = Name


ContextIn = request_model(ops.CONTEXT, "ContextIn", base=_ContextFields)


# The families' operations (memdb.core.ops.families): the path carries the session, the subject,
# the review entry, the trace; the rest is the model's.
SessionListQuery = request_model(fam.SESSION_LIST, "SessionListQuery")
SessionQuery = request_model(fam.SESSION_GET, "SessionQuery", skip=("session_id",))
MessageIn = request_model(fam.SESSION_APPEND, "MessageIn", skip=("session_id",))
GraphNeighborsQuery = request_model(fam.GRAPH_NEIGHBORS, "GraphNeighborsQuery")
ReviewListQuery = request_model(fam.REVIEW_LIST, "ReviewListQuery")
ReviewDecision = request_model(fam.REVIEW_APPROVE, "ReviewDecision", skip=("id",))
TracesListQuery = request_model(fam.TRACES_LIST, "TracesListQuery")
TracesPurgeIn = request_model(fam.TRACES_PURGE, "TracesPurgeIn")
TracesEraseIn = request_model(fam.TRACES_ERASE, "TracesEraseIn")
MetaQuery = request_model(fam.META_READ, "MetaQuery")


StateIn = request_model(fam.SESSION_STATE, "StateIn", skip=("session_id",))
StateQuery = request_model(fam.SESSION_STATE, "StateQuery",
                           skip=("session_id", "state", "expected_version"))


class TextDocument(_Body):
    id: str = Field(min_length=1, max_length=4096, description="the document's URI/id")
    text: str
    title: str | None = None
    format: Literal["markdown", "text"] = "markdown"
    metadata: dict[str, Any] | None = None


class _IngestFields(_Body):
    documents: list[TextDocument] = Field(min_length=1, max_length=100)
    importance: float = 0.5
    chunk_tokens: int = Field(default=256, ge=16, le=4096)
    dry_run: bool = False
    force: bool = False
    # true: ingest in this request; false: enqueue a documents.ingest job and answer 202 with
    # it; default: the job when the texts exceed memdb.families.jobs.builtin.QUEUE_INGEST_CHARS
    wait: bool | None = None


# Each item of documents is one document (its id, text, title, format); the rest is declared.
INGEST_SKIPS = ("document_id", "text", "title", "format")
IngestIn = request_model(ops.ADD_DOCUMENT, "IngestIn", base=_IngestFields, skip=INGEST_SKIPS)


DocumentsListQuery = request_model(fam.DOCUMENTS_LIST, "DocumentsListQuery")
RemoveDocuments = request_model(fam.DOCUMENTS_REMOVE, "RemoveDocuments")
DocumentSearchIn = request_model(fam.DOCUMENTS_SEARCH, "DocumentSearchIn")


class _AskFields(_Body):
    answer: bool = Field(default=True, description="false: the passages only, no LLM call")


AskIn = request_model(ops.ASK, "AskIn", base=_AskFields)


class _SummaryFields(_Body):
    subject: str | None = Name
    max_chars: int = Field(default=400, ge=1, le=100_000)


SummaryQuery = request_model(ops.SUMMARY, "SummaryQuery", base=_SummaryFields)


class MaintenanceIn(_Body):
    tenant: str | None = Field(default=None, max_length=256,
                               description="only this tenant (default: every tenant)")
    dry_run: bool = False
    options: dict[str, Any] = Field(default_factory=dict)


GraphLinkIn = request_model(fam.GRAPH_LINK, "GraphLinkIn")


class _GraphSearchFields(_Body):
    """The route's own fields beside the declared ones: a filter (memdb.core.filters; the declared
    subject is folded into it), per-route weights, and the SQL and timings."""

    filter: dict[str, Any] | None = None
    weights: dict[str, float] | None = None
    explain: bool = False


GraphSearchIn = request_model(fam.GRAPH_SEARCH, "GraphSearchIn", base=_GraphSearchFields)
TracesStatsQuery = request_model(fam.TRACES_STATS, "TracesStatsQuery")
ProfileQuery = request_model(fam.PROFILE, "ProfileQuery")


class _ForgetFields(_Body):
    confirm: str = Field(max_length=256, description="the subject's name again, exactly")


ForgetSubjectIn = request_model(fam.SUBJECT_FORGET, "ForgetSubjectIn", base=_ForgetFields,
                                skip=("subject",))


class MetaFields(_Body):
    """The fields of an item of meta memory beyond the declared ones (as in memdb.MemoryInput;
    subject, category and kind follow from the agent and the aspect)."""

    confidence: float | None = None
    metadata: dict[str, Any] | None = None
    tags: list[str] | None = None
    ttl: float | None = Field(default=None, description="seconds")


MetaIn = request_model(fam.META_ADD, "MetaIn", base=MetaFields)

"""The FastAPI app: routes under /v1 for the core verbs and each family, on the stores of
:class:`~memdb.http._state.DoorState`. Every route but /v1/health needs an API key; a tenant
key reaches only the tenant routes (its own tenant, its subject if it has one), an admin key
only /v1/admin."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Query, Request, Response, Security
from fastapi.responses import JSONResponse
from fastapi.security import HTTPBearer

from .._doors import UNAUTHORIZED
from ..core.errors import Forbidden, InvalidInput, TooLarge
from ..core.jsonable import jsonable
from ..core.masking import redact
from ..core.ops import catalog as ops
from ..core.ops import families as fam
from ..core.ops import remember as remember_ops
from ..families.jobs import builtin as builtin_jobs
from ..families.keys import Binding
from ..retrieval.search import SearchOptions
from ..write.ingest import TextSource
from . import _docs, _errors
from ._generate import arguments
from ._limits import BodyLimit
from ._models import (
    INGEST_SKIPS,
    UPDATE_SKIPS,
    AddMany,
    AddOne,
    AskIn,
    ContextIn,
    DeleteQuery,
    DocumentSearchIn,
    DocumentsListQuery,
    ForgetSubjectIn,
    GraphLinkIn,
    GraphNeighborsQuery,
    GraphSearchIn,
    IngestIn,
    MaintenanceIn,
    MemoryPatch,
    MessageIn,
    MetaFields,
    MetaIn,
    MetaQuery,
    PatchFields,
    ProfileQuery,
    RecallIn,
    RememberIn,
    RemoveDocuments,
    ReviewDecision,
    ReviewListQuery,
    SearchIn,
    SessionListQuery,
    SessionQuery,
    StateIn,
    StateQuery,
    SummaryQuery,
    TracesEraseIn,
    TracesListQuery,
    TracesPurgeIn,
    TracesStatsQuery,
)
from ._responses import (
    ERROR_RESPONSES,
    AddOut,
    Health,
    HistoryOut,
    MemoryOut,
    MemoryPage,
    SearchOut,
    WhoAmI,
)
from ._settings import ServerSettings
from ._state import DoorState
from .files import PREFIX as FILES_PREFIX
from .files import router as files_router
from .jobs import router as jobs_router

__all__ = ["create_app"]

LOGGER = logging.getLogger("memdb.http")
_UNAUTHORIZED = {"WWW-Authenticate": "Bearer"}


def _presented_key(request: Request) -> str | None:
    auth = request.headers.get("authorization")
    if auth:
        scheme, _, value = auth.partition(" ")
        return value.strip() if scheme.lower() == "bearer" else None
    return request.headers.get("x-api-key")


_BEARER = HTTPBearer(auto_error=False, scheme_name="apiKey",
                     description="An API key from `memdb keys create` (mdb_...); "
                                 "`X-API-Key: mdb_...` works too.")


async def principal(request: Request,
                    _declared: Annotated[Any, Security(_BEARER)] = None) -> Binding:
    """The live key of this request (401 without one), within its rate (429). The bearer
    scheme is declared for the OpenAPI document; the key is read by _presented_key."""
    door: DoorState = request.app.state.door
    client = request.client.host if request.client else "-"
    if door.failures.peek(client) > 0:  # this address failed too often: not even a lookup
        raise HTTPException(429, "too many failed authentications from this address",
                            headers={"Retry-After": door.failures.retry_after(
                                door.failures.peek(client))})
    binding = await door.authenticate(_presented_key(request))
    if binding is None:
        door.failures.take(client)
        raise HTTPException(401, UNAUTHORIZED,
                            headers=_UNAUTHORIZED)
    wait = door.limiter.take(binding.key_id)
    if wait > 0:
        raise HTTPException(429, f"rate limit of key {binding.key_id} reached",
                            headers={"Retry-After": door.limiter.retry_after(wait)})
    request.state.key_id = binding.key_id
    return binding


Principal = Annotated[Binding, Depends(principal)]


async def tenant_store(request: Request, key: Principal) -> AsyncIterator[Any]:
    if key.is_admin or key.tenant is None:
        raise Forbidden("an admin key reaches only /v1/admin: use a tenant's key")
    async with request.app.state.door.store(key.tenant, key.subject) as store:
        yield store


Store = Annotated[Any, Depends(tenant_store)]


def _k(request: Request, k: int) -> int:
    cap = request.app.state.door.settings.max_k
    if k > cap:
        raise InvalidInput(f"k is {k}; the limit of this server is {cap}")
    return k


def _page(request: Request, limit: int) -> int:
    cap = request.app.state.door.settings.max_page
    if limit > cap:
        raise InvalidInput(f"limit is {limit}; the limit of this server is {cap}")
    return limit


def _ref(ref: str) -> str:
    """A memory id or mem:// URI from the path (a client or proxy may fold the '//')."""
    if ref.startswith("mem:/") and not ref.startswith("mem://"):
        ref = "mem://" + ref[len("mem:/"):]
    return ref


# A declared parameter of search or recall and the filter condition it sets.
_CONDITIONS = {"subject": "subject", "category": "category", "categories": "category",
               "kinds": "kind", "tags_all": "tags", "uri_prefix": "uri_prefix"}


def _with_conditions(flt: dict[str, Any] | None, args: dict[str, Any]) -> dict[str, Any] | None:
    """The filter with the declared conditions (subject, categories...) folded in (a field and
    the filter setting one condition differently: 400)."""
    out = dict(flt or {})
    for name, condition in _CONDITIONS.items():
        if args.get(name) is None:
            continue
        if out.get(condition) not in (None, args[name]):
            raise InvalidInput(f"{name} and filter.{condition} disagree")
        out[condition] = args[name]
    return out or flt


def _hits(results: Any, explain: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"hits": [jsonable(h) for h in results]}
    if explain and getattr(results, "explain", None) is not None:
        out["explain"] = jsonable(results.explain)
    return out


# -- memories -------------------------------------------------------------------------------
_ALL_BUT_REASON = tuple(p.name for p in ops.ADD.params if p.name != "reason")
memories = APIRouter(prefix="/v1", tags=["memories"], responses=ERROR_RESPONSES)


@memories.post("/memories", status_code=201, response_model=AddOut)
async def add_memory(body: AddOne, store: Store) -> Any:
    """Add one memory (write gate, dedup, supersede); the result says what happened."""
    fields = body.fields()
    reason = arguments(ops.ADD, body, skip=_ALL_BUT_REASON).get("reason")
    content = fields.pop("content")
    return jsonable(await store.add(content, reason=reason, dry_run=body.dry_run, **fields))


@memories.post("/memories/batch", status_code=201, response_model=list[AddOut])
async def add_memories(body: AddMany, store: Store) -> Any:
    """Add many memories in one batch (one result per item, in order)."""
    items = [item.fields() for item in body.items]
    return jsonable(await store.add_many(items, reason=body.reason, dry_run=body.dry_run))


@memories.get("/memories", response_model=MemoryPage)
async def list_memories(
    request: Request, store: Store,
    subject: str | None = None, category: str | None = None, kind: str | None = None,
    scope: str | None = None, agent: str | None = None, project_id: str | None = None,
    session_id: str | None = None, uri_prefix: str | None = None,
    tags: Annotated[list[str] | None, Query()] = None,
    limit: Annotated[int, Query(ge=1)] = 100, offset: Annotated[int, Query(ge=0)] = 0,
) -> Any:
    """Current memories matching the filters, newest first, a page at a time."""
    conditions = {"subject": subject, "category": category, "kind": kind, "scope": scope,
                  "agent": agent, "project_id": project_id, "session_id": session_id,
                  "uri_prefix": uri_prefix, "tags": tags}
    found = await store.list({k: v for k, v in conditions.items() if v is not None},
                             limit=_page(request, limit), offset=offset)
    return {"memories": jsonable(found), "limit": limit, "offset": offset}


@memories.get("/memories/{ref:path}", response_model=MemoryOut)
async def get_memory(ref: str, store: Store) -> Any:
    """One memory by id or mem:// URI."""
    return jsonable(await store.get(arguments(ops.GET, memory=_ref(ref))["memory"]))


@memories.patch("/memories/{ref:path}", response_model=MemoryOut)
async def update_memory(ref: str, body: MemoryPatch, store: Store) -> Any:
    """Change fields of a memory (a new version; history row)."""
    changes = {**body.model_dump(exclude_unset=True, include=set(PatchFields.model_fields)),
               **arguments(ops.UPDATE, body, skip=UPDATE_SKIPS)}
    reason = changes.pop("reason", None)
    return jsonable(await store.update(_ref(ref), reason=reason, **changes))


@memories.delete("/memories/{ref:path}", status_code=204)
async def delete_memory(ref: str, store: Store,
                        query: Annotated[DeleteQuery, Query()]) -> Response:  # type: ignore[valid-type]
    """Delete a memory (its history keeps the row)."""
    await store.delete(_ref(ref), **arguments(ops.DELETE, query, skip=("id",)))
    return Response(status_code=204)


@memories.get("/history/{ref:path}", response_model=HistoryOut)
async def memory_history(ref: str, store: Store) -> Any:
    """Every version of a memory, oldest first."""
    args = arguments(fam.HISTORY, memory=_ref(ref))
    return {"history": jsonable(await store.history(args["memory"]))}


# -- retrieval ------------------------------------------------------------------------------
retrieval = APIRouter(prefix="/v1", tags=["retrieval"], responses=ERROR_RESPONSES)


@retrieval.post("/search", response_model=SearchOut)
async def search(body: SearchIn, request: Request, store: Store) -> Any:
    """Hybrid search (vector, BM25, exact; RRF); ``explain`` adds the SQL and timings."""
    args = arguments(ops.SEARCH, body)
    results = await store.search(args["query"], _k(request, args["k"]),
                                 _with_conditions(body.filter, args),
                                 options=SearchOptions.of(body.options), routes=body.routes,
                                 weights=body.weights, mmr=body.mmr, explain=body.explain)
    return _hits(results, body.explain)


@retrieval.post("/recall")
async def recall(body: RecallIn, request: Request, store: Store) -> Any:
    """Planned recall (categories and routes chosen from the query), with its status."""
    args = arguments(ops.RECALL, body)
    results = await store.recall(args["query"], _k(request, args["k"]),
                                 _with_conditions(body.filter, args), plan=body.plan,
                                 with_general=body.with_general)
    out = jsonable(results)
    if not body.explain:
        out = {key: out[key] for key in ("status", "reasons", "fallback", "hits")}
    return out


@retrieval.post("/remember", responses={202: {"description": "wait false: the turn is "
                                                "kept and its job enqueued (job_id)"}})
async def remember(body: RememberIn, store: Store) -> Any:
    """Extract memories from a conversation turn and write them (through the write gate).
    With ``wait`` false: 202 at once, the turn kept as said and a job doing the extraction
    (its ``job_id``: ``GET /v1/jobs/{job_id}``)."""
    args = arguments(remember_ops.REMEMBER, body, skip=("text",), defaults=True)
    result = await store.remember(body.messages, **args)
    if not args["wait"]:
        return JSONResponse(jsonable(result), status_code=202)
    return jsonable(result)


@retrieval.post("/context")
async def context(body: ContextIn, request: Request, store: Store) -> Any:
    """The context block for a prompt under a token budget (rules, memories, session)."""
    args = arguments(ops.CONTEXT, body)
    built = await store.context(args["query"], args.get("session"), args["budget_tokens"],
                                subject=args.get("subject"), k=_k(request, args["k"]),
                                include_profile=body.include_profile, agent=body.agent)
    return jsonable(built)


@retrieval.get("/profile")
async def profile(request: Request, store: Store,
                  query: Annotated[ProfileQuery, Query()]) -> Any:  # type: ignore[valid-type]
    """What is known about a subject, by section (default: the key's subject, else
    'default')."""
    args = arguments(fam.PROFILE, query, defaults=True)
    return jsonable(await store.profile(args.get("subject"),
                                        limit=_page(request, args["limit"])))


# -- sessions -------------------------------------------------------------------------------
sessions = APIRouter(prefix="/v1/sessions", tags=["sessions"], responses=ERROR_RESPONSES)


@sessions.get("")
async def list_sessions(request: Request, store: Store,
                        query: Annotated[SessionListQuery, Query()]) -> Any:  # type: ignore[valid-type]
    """Sessions, most recently updated first."""
    args = arguments(fam.SESSION_LIST, query)
    return {"sessions": jsonable(await store.sessions.list(
        subject=args.get("subject"), limit=_page(request, args.get("limit", 100))))}


@sessions.post("/{session_id}/messages", status_code=201)
async def append_message(session_id: str, body: MessageIn, store: Store) -> Any:  # type: ignore[valid-type]
    """Append a turn to the session's buffer (older turns fold into its summary)."""
    args = arguments(fam.SESSION_APPEND, body, session_id=session_id)
    return jsonable(await store.sessions.append(args["session_id"], args["role"],
                                                args["content"], subject=args.get("subject")))


@sessions.get("/{session_id}")
async def get_session(session_id: str, store: Store,
                      query: Annotated[SessionQuery, Query()]) -> Any:  # type: ignore[valid-type]
    """The session's window of recent turns, its summary and state."""
    args = arguments(fam.SESSION_GET, query, session_id=session_id)
    return jsonable(await store.sessions.get(args["session_id"], subject=args.get("subject")))


@sessions.delete("/{session_id}", status_code=204)
async def delete_session(session_id: str, store: Store,
                         query: Annotated[SessionQuery, Query()]) -> Response:  # type: ignore[valid-type]
    """Delete the session: its turns, summary and working state."""
    args = arguments(fam.SESSION_DELETE, query, session_id=session_id)
    await store.sessions.delete(args["session_id"], subject=args.get("subject"))
    return Response(status_code=204)


@sessions.get("/{session_id}/state")
async def get_state(session_id: str, store: Store,
                    query: Annotated[StateQuery, Query()]) -> Any:  # type: ignore[valid-type]
    """The working state with its version."""
    args = arguments(fam.SESSION_STATE, query, skip=("state", "expected_version"),
                     session_id=session_id)
    return _state(await store.sessions.get_state(args["session_id"],
                                                 subject=args.get("subject")))


@sessions.put("/{session_id}/state")
async def set_state(session_id: str, body: StateIn, store: Store) -> Any:  # type: ignore[valid-type]
    """Replace the working state if ``expected_version`` is current (else 409); both
    ``state`` and ``expected_version`` are needed here (a read is the GET)."""
    args = arguments(fam.SESSION_STATE, body, session_id=session_id)
    if args.get("state") is None or args.get("expected_version") is None:
        raise InvalidInput("give state and expected_version (0 for a new state)")
    return _state(await store.sessions.set_state(args["session_id"], args["state"],
                                                 expected_version=args["expected_version"],
                                                 subject=args.get("subject")))


def _state(state: Any) -> dict[str, Any]:
    """The working state with its version (what the next write passes as expected_version)."""
    return {**jsonable(state.to_json()), "version": state.version}


# -- documents ------------------------------------------------------------------------------
documents = APIRouter(prefix="/v1/documents", tags=["documents"], responses=ERROR_RESPONSES)


@documents.post("", status_code=201)
async def ingest(body: IngestIn, request: Request, store: Store) -> Any:
    """Ingest texts as documents (chunked, embedded, searchable). Only text: the server never
    reads a path from a request. One request writes at most the server's
    ``max_ingest_chunks`` chunks: more is refused with 413 before anything is embedded.
    ``wait`` false (or unset, with texts over 16,000 characters): a ``documents.ingest`` job
    is enqueued instead and the answer is 202 with its id (GET /v1/jobs/{job_id})."""
    docs = [{"id": d.id, "text": d.text, "title": d.title, "format": d.format,
             "metadata": d.metadata} for d in body.documents]
    if not body.dry_run and builtin_jobs.queue_ingest(body.wait, docs):
        payload = builtin_jobs.ingest_job(
            docs, store.subject, **arguments(ops.ADD_DOCUMENT, body, skip=INGEST_SKIPS),
            importance=body.importance, chunk_tokens=body.chunk_tokens, force=body.force)
        job = await store.jobs.enqueue("documents.ingest", payload)
        return JSONResponse(jsonable({"job_id": job.id, "state": job.state,
                                      "kind": job.kind, "status": f"/v1/jobs/{job.id}"}),
                            status_code=202)
    sources = [TextSource(**d) for d in docs]
    limit = request.app.state.door.settings.max_ingest_chunks
    try:
        report = await store.documents.ingest(
            sources, **arguments(ops.ADD_DOCUMENT, body, skip=INGEST_SKIPS),
            importance=body.importance, chunk_tokens=body.chunk_tokens, dry_run=body.dry_run,
            force=body.force, max_chunks=limit)
    except TooLarge as exc:
        raise TooLarge(f"{exc}. {INGEST_ADVICE}") from None
    return jsonable(report)


INGEST_ADVICE = ("Send fewer or smaller documents per request, ingest big documents with the "
                 "CLI (memdb documents ingest), or raise the server's limit (memdb serve "
                 "--max-ingest-chunks)")


@documents.get("")
async def list_documents(request: Request, store: Store,
                         query: Annotated[DocumentsListQuery, Query()]) -> Any:  # type: ignore[valid-type]
    """The ingested documents by URI (``limit`` at most the server's page size)."""
    args = arguments(fam.DOCUMENTS_LIST, query, defaults=True)
    args["limit"] = _page(request, args["limit"])
    return {"documents": jsonable(await store.documents.list(**args))}


@documents.post("/remove")
async def remove_documents(body: RemoveDocuments, store: Store) -> Any:  # type: ignore[valid-type]
    """Remove documents (and their chunk memories) by URI."""
    args = arguments(fam.DOCUMENTS_REMOVE, body)
    return {"removed": await store.documents.remove(args["uris"], reason=args.get("reason"))}


@documents.post("/search")
async def search_documents(body: DocumentSearchIn, request: Request, store: Store) -> Any:  # type: ignore[valid-type]
    """Search the document chunks; every hit cites its document."""
    args = arguments(fam.DOCUMENTS_SEARCH, body, defaults=True)
    conditions = {"subject": args["subject"]} if args.get("subject") else {}
    found = await store.documents.search(args["query"], _k(request, args["k"]),
                                         parents=args["parents"], **conditions)
    return {"hits": jsonable(found)}


@documents.post("/ask")
async def ask(body: AskIn, request: Request, store: Store) -> Any:
    """Answer from the documents with citations (``answer: false``: the passages only)."""
    args = arguments(ops.ASK, body)
    return jsonable(await store.documents.ask(args.pop("question"), _k(request, args.pop("k")),
                                              answer=body.answer, **args))


# -- graph, review, traces, subjects, meta ---------------------------------------------------
graph = APIRouter(prefix="/v1/graph", tags=["graph"], responses=ERROR_RESPONSES)


@graph.post("/link")
async def link_graph(body: GraphLinkIn, store: Store) -> Any:  # type: ignore[valid-type]
    """Extract entities and relations from memories (the server's LLM, else the heuristic)
    and link them into the graph."""
    args = arguments(fam.GRAPH_LINK, body, defaults=True)
    if args.pop("heuristic"):
        args["llm"] = None
    return jsonable(await store.graph.link(args.pop("memory_ids", None), **args))


@graph.get("/neighbors")
async def graph_neighbors(request: Request, store: Store,
                          query: Annotated[GraphNeighborsQuery, Query()]) -> Any:  # type: ignore[valid-type]
    """An entity's neighbourhood: the matching entities and the relations within ``hops``."""
    args = arguments(fam.GRAPH_NEIGHBORS, query, defaults=True)
    return jsonable(await store.graph.neighbors(args["entity"], hops=args["hops"],
                                                limit=_page(request, args["limit"])))


@graph.post("/search", response_model=SearchOut)
async def graph_search(body: GraphSearchIn, request: Request, store: Store) -> Any:  # type: ignore[valid-type]
    """Hybrid search with the graph route (entities named in the query, walked ``hops``);
    ``subject`` and ``filter.subject`` must agree."""
    args = arguments(fam.GRAPH_SEARCH, body, defaults=True)
    results = await store.graph.search(args["query"], _k(request, args["k"]),
                                       _with_conditions(body.filter, args), hops=args["hops"],
                                       entities=args.get("entities"),
                                       routes=args.get("routes"), weights=body.weights,
                                       explain=body.explain)
    return _hits(results, body.explain)


review = APIRouter(prefix="/v1/review", tags=["review"], responses=ERROR_RESPONSES)


@review.get("")
async def list_review(request: Request, store: Store,
                      query: Annotated[ReviewListQuery, Query()]) -> Any:  # type: ignore[valid-type]
    """Review-queue entries (proposed rules), oldest first."""
    args = arguments(fam.REVIEW_LIST, query, defaults=True)
    status = None if args["status"] == "all" else args["status"]
    found = await store.review.list(status, subject=args.get("subject"),
                                    limit=_page(request, args["limit"]))
    return {"items": jsonable(found)}


@review.post("/{review_id}/approve")
async def approve_review(review_id: str, body: ReviewDecision, store: Store) -> Any:  # type: ignore[valid-type]
    """Approve a pending entry: its memory is created."""
    args = arguments(fam.REVIEW_APPROVE, body, id=review_id)
    memory_id = await store.review.approve(args["id"], decided_by=args.get("decided_by"))
    return {"id": review_id, "status": "approved", "memory_id": str(memory_id)}


@review.post("/{review_id}/reject")
async def reject_review(review_id: str, body: ReviewDecision, store: Store) -> Any:  # type: ignore[valid-type]
    """Reject a pending entry (the same text is not proposed again)."""
    args = arguments(fam.REVIEW_REJECT, body, id=review_id)
    await store.review.reject(args["id"], decided_by=args.get("decided_by"))
    return {"id": review_id, "status": "rejected"}


traces = APIRouter(prefix="/v1/traces", tags=["traces"], responses=ERROR_RESPONSES)


@traces.get("")
async def list_traces(request: Request, store: Store,
                      query: Annotated[TracesListQuery, Query()]) -> Any:  # type: ignore[valid-type]
    """The newest recall traces (summaries), newest first."""
    limit = arguments(fam.TRACES_LIST, query, defaults=True)["limit"]
    return {"traces": jsonable(await store.traces.list(_page(request, limit)))}


@traces.get("/stats")
async def trace_stats(store: Store,
                      query: Annotated[TracesStatsQuery, Query()]) -> Any:  # type: ignore[valid-type]
    """Empty-result, fallback and degraded rates, latency and intents of the kept traces."""
    hours = arguments(fam.TRACES_STATS, query).get("since_hours")
    since = None if hours is None else timedelta(hours=hours)
    return jsonable(await store.traces.stats(since))


@traces.post("/purge")
async def purge_traces(body: TracesPurgeIn, store: Store) -> Any:  # type: ignore[valid-type]
    """Delete traces older than ``older_than_days`` (default: the retention period)."""
    args = arguments(fam.TRACES_PURGE, body)
    return {"purged": await store.traces.purge(args.get("older_than_days"))}


@traces.post("/erase")
async def erase_traces(body: TracesEraseIn, store: Store) -> Any:  # type: ignore[valid-type]
    """Delete every trace that searched or returned the subject's memories."""
    subject = arguments(fam.TRACES_ERASE, body)["subject"]
    _own_subject(store, subject)
    return {"erased": await store.traces.erase(subject)}


@traces.get("/{trace_id}")
async def get_trace(trace_id: str, store: Store) -> Any:
    """One trace with its plan, candidates and chosen ids."""
    return jsonable(await store.traces.get(arguments(fam.TRACE_GET, id=trace_id)["id"]))


subjects = APIRouter(prefix="/v1/subjects", tags=["subjects"], responses=ERROR_RESPONSES)


def _own_subject(store: Any, subject: str) -> None:
    """A subject key names only its own subject (row-level security would show it nothing
    else anyway: this says so instead of answering with nothing)."""
    confined = store.subject
    if confined and subject != confined:
        raise Forbidden(f"this key is confined to subject {confined!r}")


@subjects.get("/summary")
async def subject_summary(store: Store,
                          query: Annotated[SummaryQuery, Query()]) -> Any:  # type: ignore[valid-type]
    """Counts of current memories by kind and category and the most important ones."""
    return jsonable(await store.subjects.summary(subject=query.subject,
                                                 max_chars=query.max_chars,
                                                 **arguments(ops.SUMMARY, query)))


@subjects.get("/{subject}/export")
async def export_subject(subject: str, store: Store) -> Any:
    """Everything memdb holds about the subject, as JSON (the file ``store.subjects.export``
    writes, returned instead of written: the server keeps no copy)."""
    import asyncio
    import json
    import os
    import tempfile

    subject = arguments(fam.SUBJECT_EXPORT, subject=subject)["subject"]
    _own_subject(store, subject)
    with tempfile.TemporaryDirectory(prefix="memdb-export-") as folder:
        path = os.path.join(folder, "export.json")
        counts = await store.subjects.export(subject, path)

        def read() -> Any:
            with open(path, encoding="utf-8") as f:
                return json.load(f)

        data = await asyncio.to_thread(read)
    return {"subject": subject, "counts": counts, "export": data}


@subjects.post("/{subject}/forget")
async def forget_subject(subject: str, body: ForgetSubjectIn, store: Store) -> Any:  # type: ignore[valid-type]
    """Erase everything about the subject in one transaction; ``confirm`` must repeat the
    subject's name exactly."""
    args = arguments(fam.SUBJECT_FORGET, body, subject=subject, defaults=True)
    if body.confirm != subject:
        raise InvalidInput("forgetting a subject needs confirm set to the subject's name "
                           "exactly")
    _own_subject(store, subject)
    return jsonable(await store.subjects.forget(subject, dry_run=args["dry_run"]))


meta = APIRouter(prefix="/v1/meta", tags=["meta"], responses=ERROR_RESPONSES)


@meta.post("", status_code=201, response_model=AddOut)
async def add_meta(body: MetaIn, store: Store) -> Any:  # type: ignore[valid-type]
    """Add to an agent's meta memory (persona, abilities, limits, lessons)."""
    fields = {**body.model_dump(exclude_none=True, include=set(MetaFields.model_fields)),
              **arguments(fam.META_ADD, body, defaults=True)}
    content, aspect, agent = fields.pop("content"), fields.pop("aspect"), fields.pop("agent")
    return jsonable(await store.meta.add(content, aspect=aspect, agent=agent, **fields))


@meta.get("")
async def read_meta(request: Request, store: Store,
                    query: Annotated[MetaQuery, Query()]) -> Any:  # type: ignore[valid-type]
    """An agent's meta memory as one document (persona, abilities, limits, lessons)."""
    args = arguments(fam.META_READ, query, defaults=True)
    return jsonable(await store.meta.read(args["agent"], limit=_page(request, args["limit"])))


FAMILY_ROUTERS = (graph, review, traces, subjects, meta,
                  jobs_router(tenant_store, ERROR_RESPONSES),
                  files_router(tenant_store, ERROR_RESPONSES))


# -- admin and service ----------------------------------------------------------------------
service = APIRouter(prefix="/v1", tags=["service"], responses=ERROR_RESPONSES)


@service.get("/health", response_model=Health)
async def health(request: Request) -> Any:
    """Liveness (no key needed): the door is up and has its database."""
    return {"ok": request.app.state.door.db is not None}


@service.get("/whoami", response_model=WhoAmI)
async def whoami(key: Principal) -> Any:
    """What the presented key selects (never the key)."""
    return {"key_id": key.key_id, "name": key.name, "tenant": key.tenant,
            "subject": key.subject, "admin": key.is_admin}


@service.post("/admin/maintenance")
async def maintenance(body: MaintenanceIn, request: Request, key: Principal) -> Any:
    """One maintenance pass over every tenant (or ``tenant``), as the admin login. Admin keys
    only."""
    if not key.is_admin:
        raise Forbidden("maintenance over tenants needs an admin key")
    clash = {"tenant", "dry_run"} & set(body.options)
    if clash:
        raise InvalidInput(f"give {', '.join(sorted(clash))} beside options, not inside them")
    import asyncio

    admin = await request.app.state.door.admin()
    return jsonable(await asyncio.to_thread(admin.maintain, dry_run=body.dry_run,
                                            tenant=body.tenant, **body.options))


class _RedactLog(logging.Filter):
    """Masks key-like text (memdb.families.keys' ``mdb_...``, bearer tokens, DSN passwords) in the
    server's log lines: a client may put a key where it does not belong, such as a URL path,
    which uvicorn's access log prints. The record keeps its shape: the format string and each
    argument are masked one by one (uvicorn's access formatter unpacks ``args`` as a 5-tuple)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(_redact_arg(a) for a in record.args)
        elif isinstance(record.args, dict):
            record.args = {k: _redact_arg(a) for k, a in record.args.items()}
        return True


def _redact_arg(value: object) -> object:
    """A log argument with key-like text masked; numbers and None stay as they are (a ``%d``
    still formats them), anything else whose text needs masking becomes that masked text."""
    if value is None or isinstance(value, (int, float)):
        return value
    text = value if isinstance(value, str) else str(value)
    clean = redact(text)
    return value if clean == text else clean


def _redact_logs() -> None:
    for name in ("uvicorn.access", "uvicorn.error", "uvicorn", "memdb.http"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, _RedactLog) for f in logger.filters):
            logger.addFilter(_RedactLog())


def create_app(settings: ServerSettings) -> FastAPI:
    _redact_logs()
    door = DoorState(settings)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await door.start()
        try:
            if mcp_app is not None:
                async with _mcp_lifespan(mcp_app):
                    yield
            else:
                yield
        finally:
            await door.stop()

    if settings.mcp and settings.embedder is None:  # one embedder for both doors
        from ..core.embeddings import embedder_from_env

        settings = dataclasses.replace(settings, embedder=embedder_from_env())
        door.embedder = settings.embedder
    mcp_app = _mcp(settings) if settings.mcp else None
    app = FastAPI(title="memdb", version=_version(), lifespan=lifespan,
                  docs_url=None, redoc_url=None,  # served offline below
                  description="Long-term memory for AI agents over HTTP. Authenticate with "
                              "`Authorization: Bearer mdb_...` (an API key from "
                              "`memdb keys create`).")
    _docs.install(app)
    app.state.door = door
    for router in (memories, retrieval, sessions, documents, *FAMILY_ROUTERS, service):
        app.include_router(router)
    _errors.install(app)
    if settings.ui:  # the memory browser's pages under /ui (HTML errors there)
        from ..ui import install as install_ui

        install_ui(app)
    if settings.cors_origins:
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(CORSMiddleware, allow_origins=list(settings.cors_origins),
                           allow_methods=["GET", "POST", "PATCH", "PUT", "DELETE"],
                           allow_headers=["Authorization", "X-API-Key", "Content-Type"])
    app.add_middleware(BodyLimit, limit=settings.max_body_bytes,
                       prefixes={FILES_PREFIX: settings.max_file_bytes})
    if mcp_app is not None:  # the MCP app routes /mcp itself: handed the request as it is
        from starlette.routing import Route

        app.router.routes.append(Route("/mcp", endpoint=mcp_app))
    return app


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("memdb")
    except Exception:
        return "0"


def _mcp(settings: ServerSettings) -> Any:
    """The MCP streamable-HTTP ASGI app of memdb.mcp (memdb[mcp]), checking the same API
    keys; served at /mcp."""
    try:
        from ..mcp import streamable_http_app
    except ImportError as exc:
        from ..core.errors import MissingDependency

        raise MissingDependency(f"--mcp needs the MCP SDK: pip install 'memdb[mcp]' ({exc})"
                                ) from None
    return streamable_http_app(dsn=settings.dsn, embedder=settings.embedder,
                               pool_size=settings.pool_size, path="/mcp", host=settings.host,
                               max_ingest_chunks=settings.max_ingest_chunks)


@contextlib.asynccontextmanager
async def _mcp_lifespan(mcp_app: Any) -> AsyncIterator[None]:
    lifespan = getattr(getattr(mcp_app, "router", None), "lifespan_context", None)
    if lifespan is None:
        yield
        return
    async with lifespan(mcp_app):
        yield

"""The job kinds memdb handles itself (registered on :data:`memdb.families.jobs.handlers` when
:mod:`memdb.jobs` is imported), each calling an existing operation of the job's tenant's store
(``ctx.store``) with the job's payload as its options:

========================== ==================================== ===========================
kind                       runs                                 payload (all optional but *)
========================== ==================================== ===========================
memories.purge_expired     store.maintenance.purge_expired()
memories.decay_hypotheses  store.maintenance.decay_hypotheses() half_life_days, floor, limit
memories.sediment          store.maintenance.sediment()         subject, days, min_sessions
embeddings.reembed         store.maintenance.reembed()          batch_size, limit
traces.purge               store.traces.purge()                 older_than_days
graph.link                 store.graph.link()                   memory_ids, subject, heuristic
sessions.summarize         store.sessions.summarize()           session_id*, subject, heuristic
sessions.consolidate       store.sessions.consolidate()         session_id*, threshold, subject
documents.ingest           store.documents.ingest()             documents*, options
========================== ==================================== ===========================

Each is idempotent, so a retry after a worker died mid-job applies its effect once: these
operations write in their own transactions (not the job's), and each is safe to run again:
expiry, decay, trace purging and consolidation only act on what is still due; sedimentation
records its runs; re-embedding touches only rows without a vector; linking upserts entities
and relations; ingestion skips unchanged documents; a summary is stored by content (the same
text is not stored twice). A payload that cannot work (unknown option, bad value) makes the
job dead at once (:class:`~memdb.families.jobs.PermanentFailure`) with the reason as its last error.
``heuristic: true`` runs without the model (graph linking, summaries).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ...core.errors import InvalidInput
from ._models import PermanentFailure
from ._registry import Registry, handlers

__all__ = ["KINDS", "register", "QUEUE_INGEST_CHARS", "ingest_job", "queue_ingest"]

# The doors (POST /v1/documents, the MCP tool add_document) ingest through the queue, and
# answer with the job at once, when the documents' texts hold more characters than this
# (about 16 chunks: a second or two of embedding on a laptop core), unless told otherwise.
QUEUE_INGEST_CHARS = 16_000


def _plain(value: Any) -> Any:
    """A JSON-ready copy (dataclasses as dicts, ids and dates as strings)."""
    def default(obj: Any) -> Any:
        if hasattr(obj, "to_dict"):
            return obj.to_dict()
        if hasattr(obj, "__dataclass_fields__"):
            return {k: getattr(obj, k) for k in obj.__dataclass_fields__}
        return str(obj)
    return json.loads(json.dumps(value, default=default))


def _options(payload: dict[str, Any], allowed: tuple[str, ...],
             required: tuple[str, ...] = ()) -> dict[str, Any]:
    unknown = sorted(set(payload) - set(allowed) - set(required))
    if unknown:
        raise PermanentFailure(f"unknown payload keys {unknown}; allowed: "
                               f"{sorted(allowed + required)}")
    missing = [k for k in required if k not in payload]
    if missing:
        raise PermanentFailure(f"the payload needs {missing}")
    return dict(payload)


def _llm(options: dict[str, Any]) -> dict[str, Any]:
    """``heuristic: true`` in a payload: llm=None (no model)."""
    return {"llm": None} if options.pop("heuristic", False) else {}


def purge_expired(ctx: Any) -> dict[str, Any]:
    _options(ctx.job.payload, ())
    return {"purged": ctx.store.maintenance.purge_expired()}


def decay_hypotheses(ctx: Any) -> dict[str, Any]:
    opts = _options(ctx.job.payload, ("half_life_days", "floor", "min_step", "limit"))
    changes = ctx.store.maintenance.decay_hypotheses(**opts)
    return {"changed": len(changes),
            "forgotten": sum(1 for c in changes if c.action == "forget")}


def sediment(ctx: Any) -> dict[str, Any]:
    opts = _options(ctx.job.payload, ("subject", "days", "min_sessions"))
    runs = ctx.store.maintenance.sediment(**opts)
    return {"subjects": len(runs), "skipped": sum(1 for r in runs if r.skipped),
            "memories": sum(len(r.memories) for r in runs),
            "proposed": sum(len(r.proposed) for r in runs)}


def reembed(ctx: Any) -> dict[str, Any]:
    opts = _options(ctx.job.payload, ("batch_size", "limit"))
    return {"embedded": ctx.store.maintenance.reembed(**opts)}


def purge_traces(ctx: Any) -> dict[str, Any]:
    opts = _options(ctx.job.payload, ("older_than_days",))
    return {"purged": ctx.store.traces.purge(**opts)}


def link_graph(ctx: Any) -> dict[str, Any]:
    opts = _options(ctx.job.payload, ("memory_ids", "subject", "heuristic", "limit"))
    result = ctx.store.graph.link(**_llm(opts), **opts)
    return _plain({k: getattr(result, k) for k in ("linked", "skipped", "paths", "fallbacks",
                                                   "mentions", "relations")})


def summarize_session(ctx: Any) -> dict[str, Any]:
    opts = _options(ctx.job.payload, ("subject", "heuristic", "max_sentences"),
                    ("session_id",))
    summary = ctx.store.sessions.summarize(opts.pop("session_id"), **_llm(opts), **opts)
    return _plain({k: getattr(summary, k, None)
                   for k in ("session_id", "path", "fallback_reason", "memory_id", "created")})


def consolidate_session(ctx: Any) -> dict[str, Any]:
    opts = _options(ctx.job.payload, ("threshold", "subject"), ("session_id",))
    moved = ctx.store.sessions.consolidate(opts.pop("session_id"), **opts)
    return {"consolidated": len(moved)}


INGEST_OPTIONS = ("subject", "scope", "project_id", "session_id", "category", "tags",
                  "importance", "chunk_tokens", "overlap", "parent_tokens", "force",
                  "max_chunks")


def ingest_documents(ctx: Any) -> dict[str, Any]:
    """``documents``: a list of {id, text, title?, format?, metadata?} (texts only, never
    paths: a worker reads no file a payload names); ``options``: documents.ingest's."""
    payload = _options(ctx.job.payload, ("options",), ("documents",))
    docs, opts = payload["documents"], payload.get("options") or {}
    if not isinstance(docs, list) or not all(isinstance(d, dict) and "text" in d
                                             for d in docs):
        raise PermanentFailure("documents must be a list of objects with id and text")
    bad = sorted(set(opts) - set(INGEST_OPTIONS))
    if bad:
        raise PermanentFailure(f"unknown ingest options {bad}")
    report = ctx.store.documents.ingest(docs, **opts)
    return _plain(report.to_dict() if hasattr(report, "to_dict") else report)


def queue_ingest(wait: bool | None, documents: list[dict[str, Any]]) -> bool:
    """Whether a door ingests ``documents`` through the queue: ``wait`` False, or None (the
    default) with more than :data:`QUEUE_INGEST_CHARS` characters of text."""
    if wait is not None:
        return not wait
    return sum(len(d.get("text") or "") for d in documents) > QUEUE_INGEST_CHARS


def ingest_job(documents: list[dict[str, Any]], store_subject: str | None,
               **options: Any) -> dict[str, Any]:
    """The payload of a ``documents.ingest`` job for a door: the documents (texts) and the
    ingest options set. ``store_subject``: the subject the caller is confined to (an API key
    bound to a subject), which the job keeps: the worker's store is not confined, so a subject
    other than the caller's is refused here (:class:`~memdb.core.errors.Forbidden`)."""
    from ...core.errors import Forbidden

    opts = {k: v for k, v in options.items() if v is not None}
    bad = sorted(set(opts) - set(INGEST_OPTIONS))
    if bad:
        raise InvalidInput(f"unknown ingest options {bad}")
    if store_subject is not None:
        if opts.get("subject", store_subject) != store_subject:
            raise Forbidden(f"this key is confined to subject {store_subject!r}")
        opts["subject"] = store_subject
    docs = [{k: v for k, v in d.items() if v is not None} for d in documents]
    return {"documents": docs, "options": opts}


KINDS: dict[str, Callable[[Any], Any]] = {
    "memories.purge_expired": purge_expired,
    "memories.decay_hypotheses": decay_hypotheses,
    "memories.sediment": sediment,
    "embeddings.reembed": reembed,
    "traces.purge": purge_traces,
    "graph.link": link_graph,
    "sessions.summarize": summarize_session,
    "sessions.consolidate": consolidate_session,
    "documents.ingest": ingest_documents,
}


def _permanent(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A payload the operation refuses (InvalidInput, TypeError of an unknown option) can never
    succeed: the job is dead at once rather than retried."""
    def run(ctx: Any) -> Any:
        try:
            return fn(ctx)
        except (InvalidInput, TypeError) as exc:
            raise PermanentFailure(f"{type(exc).__name__}: {exc}") from exc
    run.__name__ = run.__qualname__ = fn.__name__
    run.__doc__ = fn.__doc__
    return run


def register(registry: Registry = handlers) -> None:
    """Register the built-in kinds on ``registry`` (done for
    :data:`memdb.families.jobs.handlers`)."""
    for kind, fn in KINDS.items():
        if registry.get(kind) is None:
            registry.register(kind, _permanent(fn))


register()

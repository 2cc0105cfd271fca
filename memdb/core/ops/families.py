"""The families' operations reached through more than one door (sessions, memory history,
documents, the graph, the review queue, traces, subjects, profiles, an agent's meta memory),
declared once like those of
:mod:`memdb.core.ops.catalog`: their CLI commands' arguments and options, their HTTP request models
and the docs' reference tables are generated from them. A limit a family also checks itself is
declared with the family's bound, so every door refuses the same values."""

from __future__ import annotations

from ._operation import Operation
from ._param import REQUIRED, Param
from .catalog import (
    IMPORTANCE,
    MAX_CONTENT_CHARS,
    MAX_K,
    MAX_NAME_CHARS,
    MAX_QUERY_CHARS,
    MEMORY,
    REASON,
)

__all__ = ["FAMILY_OPERATIONS", "ROLES", "SESSION_LIST", "SESSION_GET", "SESSION_DELETE",
           "SESSION_APPEND", "SESSION_STATE", "HISTORY", "GRAPH_NEIGHBORS", "REVIEW_LIST",
           "REVIEW_APPROVE",
           "REVIEW_REJECT", "TRACES_LIST", "TRACE_GET", "TRACES_PURGE", "TRACES_ERASE",
           "SUBJECT_EXPORT", "SUBJECT_FORGET", "META_READ", "DOCUMENTS_LIST",
           "DOCUMENTS_REMOVE", "DOCUMENTS_SEARCH", "GRAPH_LINK", "GRAPH_SEARCH", "TRACES_STATS",
           "PROFILE", "META_ADD", "ASPECTS", "GRAPH_ROUTES"]

ROLES = ("system", "user", "assistant", "tool")  # memdb.families.session.ROLES
ASPECTS = ("persona", "limits", "abilities", "lessons")  # memdb.families.meta.ASPECTS
GRAPH_ROUTES = ("vector", "bm25", "exact", "graph")
MAX_HOURS = 1000 * 365 * 24  # memdb.core.validate.MAX_HOURS
_READ = ("InvalidInput", "Forbidden", "DatabaseUnavailable")
_ONE = ("InvalidInput", "NotFound", "Forbidden", "DatabaseUnavailable")


def _limit(default: int, maximum: int, help: str = "At most this many.") -> Param:
    return Param("limit", "int", help, default, minimum=1, maximum=maximum)


_SESSION_ID = Param("session_id", "str", "The session's id.", REQUIRED, min_length=1,
                    max_length=MAX_NAME_CHARS, argument=True)
_SESSION_SUBJECT = Param("subject", "str", "Whose session (default: the caller's subject, "
                         "else 'default').", min_length=1, max_length=MAX_NAME_CHARS)
_SUBJECT_NAMED = Param("subject", "str", "The subject: a user's or an agent's id.", REQUIRED,
                       min_length=1, max_length=MAX_NAME_CHARS, argument=True)

SESSION_LIST = Operation(
    "session_list", "Sessions, most recently updated first: id, subject, buffered turns, "
    "state version.",
    (Param("subject", "str", "Only this subject's sessions.", min_length=1,
           max_length=MAX_NAME_CHARS), _limit(100, 100_000)),
    scope="tenant", result="sessions: session_id, subject, buffered, state_version, updated_at",
    errors=_READ, doors=(("cli", "session list"), ("http", "GET /v1/sessions")))

SESSION_GET = Operation(
    "session_get", "A session: its running summary, the turns in its window and its working "
    "state.", (_SESSION_ID, _SESSION_SUBJECT),
    scope="subject", result="session_id, subject, summary, messages, state", errors=_ONE,
    doors=(("cli", "session show"), ("http", "GET /v1/sessions/{session_id}")))

SESSION_DELETE = Operation(
    "session_delete", "Delete a session: its turns, summary and working state.",
    (_SESSION_ID, _SESSION_SUBJECT),
    scope="subject", result="deleted", errors=_READ,
    doors=(("cli", "session delete"), ("http", "DELETE /v1/sessions/{session_id}")))

SESSION_APPEND = Operation(
    "session_append", "Append a turn to a session's buffer; turns that scroll out of its "
    "window are folded into its running summary.",
    (_SESSION_ID, Param("role", "str", "Who spoke.", REQUIRED, choices=ROLES, argument=True),
     Param("content", "str", "What was said.", REQUIRED, max_length=MAX_CONTENT_CHARS,
           argument=True),
     _SESSION_SUBJECT),
    scope="subject", result="id, tokens, folded, summary_path", errors=_READ,
    doors=(("cli", "session append"), ("http", "POST /v1/sessions/{session_id}/messages")))

SESSION_STATE = Operation(
    "session_state", "A session's working state (goal, constraints, steps_done, plan, budget, "
    "notes) with its version; with state and expected_version, the state is replaced if "
    "that version is current (optimistic concurrency: a stale one is a Conflict).",
    (_SESSION_ID, _SESSION_SUBJECT,
     Param("state", "object", "Replace the state with this object (keys: goal, constraints, "
           "steps_done, plan, budget, notes); needs expected_version.", flags=("--set",),
           metavar="JSON"),
     Param("expected_version", "int", "The version you read (0 for a new state).",
           minimum=0)),
    scope="subject", result="goal, constraints, steps_done, plan, budget, notes, version",
    errors=("InvalidInput", "Conflict", "Forbidden", "DatabaseUnavailable"),
    doors=(("cli", "session state"), ("http", "PUT /v1/sessions/{session_id}/state")))

HISTORY = Operation(
    "history", "Every recorded version of a memory, oldest first (the history survives the "
    "memory's deletion).", (MEMORY,),
    scope="memory", result="history: versions with their change, actor and reason",
    errors=_ONE, doors=(("cli", "history"), ("http", "GET /v1/history/{ref}")))

GRAPH_NEIGHBORS = Operation(
    "graph_neighbors", "An entity's neighbourhood in the entity graph: the entities matching "
    "the name and the relations within some hops.",
    (Param("entity", "str", "The entity's name (or an alias).", REQUIRED, min_length=1,
           max_length=200, argument=True),
     Param("hops", "int", "Relations up to this many hops away.", 1, minimum=1, maximum=4),
     _limit(100, 10_000, "At most this many relations.")),
    scope="tenant", result="entities, relations", errors=_READ,
    doors=(("cli", "graph neighbors"), ("http", "GET /v1/graph/neighbors")))

REVIEW_LIST = Operation(
    "review_list", "Review-queue entries (rules proposed by sedimentation), oldest first.",
    (Param("status", "str", "Which entries.", "pending",
           choices=("pending", "approved", "rejected", "all")),
     Param("subject", "str", "Only this subject's entries.", min_length=1,
           max_length=MAX_NAME_CHARS), _limit(100, 1_000_000)),
    scope="tenant", result="items: id, status, subject, reason, content", errors=_READ,
    doors=(("cli", "review list"), ("http", "GET /v1/review")))

_REVIEW_ID = Param("id", "uuid", "The review entry's id.", REQUIRED, argument=True,
                   metavar="ID")
_DECIDED_BY = Param("decided_by", "str", "Who decided (default: the database user).",
                    max_length=MAX_NAME_CHARS, flags=("--by",))

REVIEW_APPROVE = Operation(
    "review_approve", "Approve a pending review entry: its memory is created (category "
    "system for rules).", (_REVIEW_ID, _DECIDED_BY),
    scope="tenant", result="id, status, memory_id", errors=_ONE,
    doors=(("cli", "review approve"), ("http", "POST /v1/review/{review_id}/approve")))

REVIEW_REJECT = Operation(
    "review_reject", "Reject a pending review entry (no memory; the same text is not proposed "
    "again).", (_REVIEW_ID, _DECIDED_BY),
    scope="tenant", result="id, status", errors=_ONE,
    doors=(("cli", "review reject"), ("http", "POST /v1/review/{review_id}/reject")))

TRACES_LIST = Operation(
    "traces_list", "The newest retrieval traces (summaries), newest first.",
    (_limit(20, 10_000, "How many to list."),),
    scope="tenant", result="traces: id, created_at, status, intent, results, latency_ms, query",
    errors=_READ, doors=(("cli", "traces list"), ("http", "GET /v1/traces")))

TRACE_GET = Operation(
    "trace_get", "One retrieval trace: the redacted query, its plan, the candidates with "
    "their per-route ranks, the chosen ids and the latency.",
    (Param("id", "uuid", "The trace's id.", REQUIRED, argument=True, metavar="ID"),),
    scope="tenant", result="trace", errors=_ONE,
    doors=(("cli", "traces show"), ("http", "GET /v1/traces/{trace_id}")))

TRACES_PURGE = Operation(
    "traces_purge", "Delete the traces older than the retention period.",
    (Param("older_than_days", "float", "Keep this many days (default: the retention period, "
           "$MEMDB_TRACE_RETENTION_DAYS, else 30).", minimum=0, flags=("--days",)),),
    scope="tenant", result="purged", errors=_READ,
    doors=(("cli", "traces purge"), ("http", "POST /v1/traces/purge")))

TRACES_ERASE = Operation(
    "traces_erase", "Delete every trace that searched or returned a subject's memories.",
    (_SUBJECT_NAMED,),
    scope="subject", result="erased", errors=_READ,
    doors=(("cli", "traces erase"), ("http", "POST /v1/traces/erase")))

SUBJECT_EXPORT = Operation(
    "subject_export", "Everything memdb holds about a subject (memories, history, usage, "
    "review entries, sessions, documents), as JSON.", (_SUBJECT_NAMED,),
    scope="subject", result="counts and the export", errors=_READ,
    doors=(("cli", "subject export"), ("http", "GET /v1/subjects/{subject}/export")))

SUBJECT_FORGET = Operation(
    "subject_forget", "Erase everything about a subject in this tenant, in one transaction: "
    "memories, their history, usage, review entries, sediment runs, sessions, its BM25 terms. "
    "Irreversible: each door asks for a confirmation.",
    (_SUBJECT_NAMED, Param("dry_run", "bool", "Count what would be deleted; delete nothing.",
                           False)),
    scope="subject", result="counts", errors=_READ,
    doors=(("cli", "subject forget"), ("http", "POST /v1/subjects/{subject}/forget")))

META_READ = Operation(
    "meta_read", "An agent's meta memory as one document by aspect (persona, abilities, "
    "limits, lessons), each item with its memory id.",
    (Param("agent", "str", "The agent's name.", "default", min_length=1,
           max_length=MAX_NAME_CHARS),
     _limit(20, 1_000, "The most items per aspect.")),
    scope="subject", result="persona, abilities, limits, lessons, memory_ids, counts",
    errors=_READ, doors=(("cli", "meta show"), ("http", "GET /v1/meta")))

_QUERY = Param("query", "str", "What to look for: a question, keywords or a phrase.",
               REQUIRED, max_length=MAX_QUERY_CHARS, argument=True)
_K = Param("k", "int", "How many hits, best first.", 10, minimum=1, maximum=MAX_K,
           flags=("-k", "--k"))

DOCUMENTS_LIST = Operation(
    "documents_list", "The ingested documents by URI: title, format, version, chunks.",
    (Param("subject", "str", "Only this subject's documents.", min_length=1,
           max_length=MAX_NAME_CHARS),
     Param("prefix", "str", "Only URIs starting with this (e.g. file:///srv/docs/).",
           max_length=4096),
     _limit(100, 100_000), Param("offset", "int", "Skip this many first.", 0, minimum=0)),
    scope="tenant", result="documents: uri, title, format, version, chunk_count",
    errors=_READ, doors=(("cli", "documents list"), ("http", "GET /v1/documents")))

DOCUMENTS_REMOVE = Operation(
    "documents_remove", "Remove documents by URI with their chunk memories (text another "
    "document shares stays, owned by it).",
    (Param("uris", "str_list", "The documents' URIs.", REQUIRED, max_items=1000,
           item_max_length=4096, argument=True),
     REASON),
    scope="tenant", result="removed", errors=_READ,
    doors=(("cli", "documents remove"), ("http", "POST /v1/documents/remove")))

DOCUMENTS_SEARCH = Operation(
    "documents_search", "Search the document chunks; every hit cites its document, heading "
    "path and offsets.",
    (_QUERY, _K,
     Param("parents", "bool", "Return each hit's parent section, once per parent.", False),
     Param("subject", "str", "Only this subject's documents.", min_length=1,
           max_length=MAX_NAME_CHARS)),
    scope="tenant", result="hits: the hit and its citation (uri, heading path, offsets)",
    errors=_READ, doors=(("cli", "documents search"), ("http", "POST /v1/documents/search")))

GRAPH_LINK = Operation(
    "graph_link", "Extract entities and relations from memories (the configured LLM, else a "
    "heuristic for Chinese and English) and link them into the entity graph.",
    (Param("memory_ids", "str_list", "The memories to (re-)link, in order (default: every "
           "current memory of the subject, oldest first, at most limit).", max_items=10_000,
           item_max_length=64, argument=True),
     Param("subject", "str", "Link this subject's memories (default: the caller's subject, "
           "else every subject).", min_length=1, max_length=MAX_NAME_CHARS),
     Param("heuristic", "bool", "Use the heuristic extractor even when an LLM is configured.",
           False),
     Param("timeout", "float", "Seconds one extraction waits for the LLM (default "
           "$MEMDB_LLM_TIMEOUT_GRAPH, else 30).", minimum=0, maximum=120,
           exclusive_minimum=True),
     _limit(1000, 100_000, "At most this many memories when no ids are given.")),
    scope="tenant", result="linked, skipped, paths, mentions, relations, fallbacks, ms",
    errors=_READ, doors=(("cli", "graph link"), ("http", "POST /v1/graph/link")))

GRAPH_SEARCH = Operation(
    "graph_search", "Hybrid search with the graph route: memories mentioning the entities "
    "reached from those the query names, fused with vector, BM25 and exact match.",
    (_QUERY, _K,
     Param("hops", "int", "Relations walked from the query's entities.", 2, minimum=0,
           maximum=4),
     Param("entities", "str_list", "Also start the walk from these entities.", max_items=100,
           item_max_length=200, flags=("--entity",)),
     Param("routes", "str_list", "Only these routes (default all four).",
           choices=GRAPH_ROUTES, max_items=len(GRAPH_ROUTES), flags=("--route",)),
     Param("subject", "str", "Only this subject's memories.", min_length=1,
           max_length=MAX_NAME_CHARS)),
    scope="tenant", result="hits with both lists' ranks in their details",
    errors=_READ, doors=(("cli", "graph search"), ("http", "POST /v1/graph/search")))

TRACES_STATS = Operation(
    "traces_stats", "Health of planned retrieval from the kept traces: empty-result, fallback "
    "and degraded rates, p50/p95 latency, intent distribution.",
    (Param("since_hours", "float", "Only the traces of the last this many hours (default: "
           "all kept traces).", minimum=0, maximum=MAX_HOURS, exclusive_minimum=True,
           flags=("--hours",), metavar="HOURS"),),
    scope="tenant", result="searches, empty_rate, fallback_rate, degraded_rate, p50_ms, "
    "p95_ms, intents", errors=_READ,
    doors=(("cli", "traces stats"), ("http", "GET /v1/traces/stats")))

PROFILE = Operation(
    "profile", "A subject's profile as one document: communication style, stable facts, "
    "preferences, expertise, habits and lessons, each item with the ids of the memories it "
    "came from.",
    (Param("subject", "str", "Whose profile (default: the caller's subject, else "
           "'default').", min_length=1, max_length=MAX_NAME_CHARS, argument=True),
     _limit(20, 1_000, "The most items per section.")),
    scope="subject", result="sections with their items and memory_ids", errors=_READ,
    doors=(("cli", "profile"), ("http", "GET /v1/profile")))

META_ADD = Operation(
    "meta_add", "Add to an agent's meta memory (persona, abilities, limits, lessons) through "
    "the write gate; subject, category and kind follow from the agent and the aspect.",
    (Param("content", "str", "What it says about the agent.", REQUIRED, min_length=1,
           max_length=MAX_CONTENT_CHARS, argument=True, metavar="TEXT"),
     Param("aspect", "str", "What the text says about the agent.", "persona",
           choices=ASPECTS),
     Param("agent", "str", "The agent's name.", "default", min_length=1,
           max_length=MAX_NAME_CHARS),
     IMPORTANCE,
     Param("source_id", "str", "Where it came from (default: meta:ASPECT).",
           max_length=1024),
     REASON),
    scope="subject", result="id, outcome", errors=("InvalidInput", "Rejected", "Forbidden",
                                                    "DatabaseUnavailable"),
    doors=(("cli", "meta add"), ("http", "POST /v1/meta")))

FAMILY_OPERATIONS: tuple[Operation, ...] = (
    SESSION_LIST, SESSION_GET, SESSION_APPEND, SESSION_DELETE, SESSION_STATE, HISTORY,
    GRAPH_NEIGHBORS,
    REVIEW_LIST, REVIEW_APPROVE, REVIEW_REJECT, TRACES_LIST, TRACE_GET, TRACES_PURGE,
    TRACES_ERASE, SUBJECT_EXPORT, SUBJECT_FORGET, META_READ, DOCUMENTS_LIST,
    DOCUMENTS_REMOVE, DOCUMENTS_SEARCH, GRAPH_LINK, GRAPH_SEARCH, TRACES_STATS, PROFILE,
    META_ADD)

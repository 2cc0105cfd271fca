"""The operations agents reach through the doors, each declared once.

Each :class:`~memdb.core.ops.Operation` below is the one source of its parameters' types, ranges,
defaults and help: the MCP tools' input schemas, the memory tool's JSON Schema (OpenAI,
Anthropic...), the HTTP search and recall models' shared fields, and docs/operations.md are
generated from it, and :meth:`~memdb.core.ops.Operation.check` validates the MCP and tool doors'
values. A limit is written here once; the store takes the same constants.
"""

from __future__ import annotations

from ..models import Category, Kind
from ._operation import Operation
from ._param import REQUIRED, Param

__all__ = ["MAX_K", "MAX_QUERY_CHARS", "MAX_CONTENT_CHARS", "MAX_REASON_CHARS", "MAX_TAGS",
           "MAX_DOCUMENT_CHARS", "MAX_ASK_K", "OPERATIONS", "ADD", "SEARCH", "RECALL", "GET",
           "UPDATE", "DELETE", "CONTEXT", "ADD_DOCUMENT", "ASK", "SUMMARY", "FORGET_LOW",
           "CONSOLIDATE", "operation"]

MAX_K = 1000  # hits one search or recall may return, at every door
MAX_ASK_K = 50  # passages one answer may cite
MAX_QUERY_CHARS = 65_536  # a query's length (the same as a memory's content)
MAX_CONTENT_CHARS = 65_536  # a memory's content (also a CHECK constraint in SQL)
MAX_REASON_CHARS = 1_000  # a history row's reason
MAX_NAME_CHARS = 256  # tenant, subject, agent, session ids
MAX_TAGS = 10
MAX_TAG_CHARS = 64
MAX_BUDGET_TOKENS = 32_000  # one context block (the MCP tool's bound)
MAX_DOCUMENT_CHARS = 200_000  # one document sent in a call (MCP add_document)

_CATEGORIES = tuple(c.value for c in Category)
_KINDS = ("semantic", "episodic", "procedural", "working")  # what add writes
_ALL_KINDS = _KINDS + ("perceptual",)  # perceptual memories are made by perceive
assert set(_ALL_KINDS) == {k.value for k in Kind}
_READ = ("InvalidInput", "Forbidden", "DatabaseUnavailable")
_ONE = ("InvalidInput", "NotFound", "Forbidden", "DatabaseUnavailable")
_WRITE = ("InvalidInput", "Rejected", "Forbidden", "DatabaseUnavailable")

# -- parameters shared by several operations ------------------------------------------------
QUERY = Param("query", "str", "What to look for: a question, keywords or a phrase. A blank "
              "query finds nothing (an empty result, not an error).", REQUIRED,
              max_length=MAX_QUERY_CHARS, argument=True)
K = Param("k", "int", "How many results to return, best first.", 10, minimum=1,
          maximum=MAX_K, flags=("-k", "--k"))
SUBJECT = Param("subject", "str", "Whose memories: a user's or an agent's id. Without it a "
                "read covers the whole tenant (only the caller's own subject when its store or "
                "key is confined to one) and a write goes to 'default'.",
                min_length=1, max_length=MAX_NAME_CHARS)
CATEGORY = Param("category", "str", "The memory's category.", choices=_CATEGORIES)
ONLY_CATEGORY = Param("category", "str", "Only memories of this category.",
                      choices=_CATEGORIES)
TAGS = Param("tags", "str_list", "Short labels.", max_items=MAX_TAGS,
             item_max_length=MAX_TAG_CHARS, flags=("--tag",))
REASON = Param("reason", "str", "Why (recorded in the memory's history).",
               max_length=MAX_REASON_CHARS)
MEMORY = Param("memory", "str", "The memory's id (UUID) or its mem:// URI.", REQUIRED,
               min_length=1, max_length=2048, argument=True)
MEMORY_ID = Param("id", "uuid", "The memory's id, from a search or summary result.", REQUIRED,
                  argument=True)
CONTENT = Param("content", "str", "The memory: one self-contained statement.", REQUIRED,
                min_length=1, max_length=MAX_CONTENT_CHARS, argument=True)
IMPORTANCE = Param("importance", "float", "How much it matters, 0-1 (a new memory without "
                   "it is scored from its text).", minimum=0, maximum=1)
KIND = Param("kind", "str", "semantic (facts, preferences), episodic (events), procedural "
             "(rules), working (this session only, needs session_id).", "semantic",
             choices=_KINDS)
SOURCE = Param("source", "str", "Who asserted it: user_statement (the user said it) or "
               "model_inference (the model concluded it: kept as a hypothesis).",
               "user_statement", choices=("user_statement", "model_inference"))
SESSION_ID = Param("session_id", "str", "The session a working memory belongs to.",
                   min_length=1, max_length=MAX_NAME_CHARS)
DRY_RUN = Param("dry_run", "bool", "Only preview: change nothing.", False)

ADD = Operation(
    "add", "Remember one thing for future conversations: through the write gate, "
    "deduplicated, superseding an older version of the same fact. Store only what will matter "
    "in future conversations; never store secrets.",
    (CONTENT, SUBJECT, CATEGORY, KIND, IMPORTANCE, TAGS, SOURCE, SESSION_ID, REASON),
    scope="subject",
    result="outcome (created, duplicate, superseded, merged, hypothesis, rejected), id",
    errors=_WRITE,
    doors=(("cli", "add"), ("http", "POST /v1/memories"), ("mcp", "remember"),
           ("tool", "add")))

SEARCH = Operation(
    "search", "Hybrid search of the memories (meaning and keywords: vector, BM25 and exact "
    "routes fused by RRF in one SQL call), best first; each result has the memory's id, "
    "content, category, kind, importance and score.",
    (QUERY, K, SUBJECT, ONLY_CATEGORY),
    scope="tenant", result="results: id, content, category, kind, importance, score",
    errors=_READ,
    doors=(("cli", "search"), ("http", "POST /v1/search"), ("mcp", "search"),
           ("tool", "search")))

RECALL = Operation(
    "recall", "Planned recall for a question about the user or the work: the query is routed "
    "to the memory categories it concerns (preferences, events, skills...); status is ok, "
    "no_relevant_memory or degraded.",
    (QUERY, K, SUBJECT,
     Param("categories", "str_list", "Only memories of these categories.",
           choices=_CATEGORIES, max_items=len(_CATEGORIES), flags=("--category",)),
     Param("kinds", "str_list", "Only memories of these kinds.", choices=_ALL_KINDS,
           max_items=len(_ALL_KINDS), flags=("--kind",)),
     Param("tags_all", "str_list", "Only memories carrying all of these tags.",
           max_items=MAX_TAGS, item_max_length=MAX_TAG_CHARS, flags=("--tag",)),
     Param("uri_prefix", "str", "Only memories whose mem:// URI starts with this, e.g. "
           "mem://alice/preferences/.", max_length=2048, pattern="^mem://")),
    scope="tenant", result="status, results: id, uri, content, category, kind, score",
    errors=_READ,
    doors=(("cli", "recall"), ("http", "POST /v1/recall"), ("mcp", "recall")))

GET = Operation(
    "get", "One memory by its id (UUID) or its mem:// URI, with all its fields (content, "
    "category, kind, importance, tags, provenance, version, dates).", (MEMORY,),
    scope="memory", result="memory", errors=_ONE,
    doors=(("cli", "get"), ("http", "GET /v1/memories/{ref}"), ("mcp", "get")))

UPDATE = Operation(
    "update", "Change one memory: a new version (the old one stays in its history).",
    (MEMORY_ID, Param("content", "str", CONTENT.help, min_length=1,
                      max_length=MAX_CONTENT_CHARS),
     CATEGORY, IMPORTANCE, TAGS, Param("source", "str", SOURCE.help, choices=SOURCE.choices),
     REASON),
    scope="memory", result="id, version", errors=_ONE,
    doors=(("cli", "update"), ("http", "PATCH /v1/memories/{ref}"), ("mcp", "update"),
           ("tool", "update")))

DELETE = Operation(
    "delete", "Forget one memory (it stays in its history until its subject is erased).",
    (MEMORY_ID, REASON),
    scope="memory", result="id, removed", errors=_ONE,
    doors=(("cli", "delete"), ("http", "DELETE /v1/memories/{ref}"), ("mcp", "forget"),
           ("tool", "remove")))

# The MCP forget tool also erases a whole subject (memdb.families.subjects: forget_subject): its own
# two parameters, beside the delete operation's.
ERASE_SUBJECT = Param("erase_subject", "bool", "Erase everything memdb holds about the subject "
                      "(memories, history, documents): irreversible; needs confirm.", False)
CONFIRM = Param("confirm", "str", "erase_subject: the subject's name again, exactly, to confirm "
                "the erasure.", max_length=MAX_NAME_CHARS)

CONTEXT = Operation(
    "context", "The context for answering a query within a token budget: the subject's rules, "
    "the most relevant memories and (with session) the session's recent turns, as chat "
    "messages ready to give a model, with the ids used.",
    (QUERY, Param("budget_tokens", "int", "The most tokens the messages may cost.", 2000,
                  minimum=50, maximum=MAX_BUDGET_TOKENS, flags=("--budget",)),
     K, SUBJECT, Param("session", "str", "The conversation's session id, to include its "
                       "recent turns and summary.", max_length=MAX_NAME_CHARS)),
    scope="subject", result="messages, memory_ids, tokens", errors=_READ,
    doors=(("cli", "context"), ("http", "POST /v1/context"), ("mcp", "context")))

ADD_DOCUMENT = Operation(
    "add_document", "Ingest a text (Markdown or plain) as a document: chunked, embedded and "
    "searchable with ask; a document of the same id is replaced.",
    (Param("document_id", "str", "The document's id (a name or URL, unique in this tenant).",
           REQUIRED, min_length=1, max_length=512),
     Param("text", "str", "The document's text.", REQUIRED, min_length=1,
           max_length=MAX_DOCUMENT_CHARS),
     Param("title", "str", "Its title.", max_length=512),
     Param("format", "str", "markdown or text.", "markdown", choices=("markdown", "text")),
     CATEGORY, TAGS, SUBJECT),
    scope="subject", result="document_id, chunks, outcome", errors=_WRITE + ("TooLarge",),
    doors=(("cli", "documents ingest"), ("http", "POST /v1/documents"),
           ("mcp", "add_document")))

ASK = Operation(
    "ask", "Answer a question from the ingested documents (and optionally the memories), "
    "citing the passages used as [n]; without a language model configured, the best passages.",
    (Param("question", "str", "The question.", REQUIRED, min_length=1,
           max_length=MAX_QUERY_CHARS, argument=True),
     Param("k", "int", "How many passages to consider.", 5, minimum=1, maximum=MAX_ASK_K,
           flags=("-k", "--k")),
     Param("include_memories", "bool", "Also search the memories (default: documents only).",
           False),
     SUBJECT),
    scope="tenant", result="answer, citations", errors=_READ,
    doors=(("cli", "documents ask"), ("http", "POST /v1/documents/ask"),
           ("mcp", "ask")))

SUMMARY = Operation(
    "summary", "Counts by kind and category and the most important memories of the subject.",
    (Param("k", "int", "How many memories to list.", 5, minimum=1, maximum=MAX_K,
           flags=("-k", "--k")),),
    scope="subject", result="counts, top memories", errors=_READ,
    doors=(("cli", "subject summary"), ("http", "GET /v1/subjects/summary"), ("tool", "summary")))

FORGET_LOW = Operation(
    "forget_low", "Drop the subject's memories whose importance is below a threshold.",
    (Param("threshold", "float", "Importance below this is forgotten.", 0.1, minimum=0,
           maximum=0.5), DRY_RUN),
    scope="subject", result="forgotten (or would_forget), ids", errors=_READ,
    doors=(("tool", "forget"),))

CONSOLIDATE = Operation(
    "consolidate", "Keep a session's important working memories long-term.",
    (Param("session_id", "str", SESSION_ID.help, REQUIRED, min_length=1,
           max_length=MAX_NAME_CHARS, argument=True),
     Param("threshold", "float", "Importance at least this is kept.", 0.6, minimum=0,
           maximum=1), DRY_RUN),
    scope="subject", result="consolidated, ids", errors=_READ,
    doors=(("cli", "session consolidate"), ("tool", "consolidate")))

OPERATIONS: tuple[Operation, ...] = (ADD, SEARCH, RECALL, GET, UPDATE, DELETE, CONTEXT,
                                     ADD_DOCUMENT, ASK, SUMMARY, FORGET_LOW, CONSOLIDATE)
_BY_NAME = {op.name: op for op in OPERATIONS}


def operation(name: str) -> Operation:
    """The declared operation ``name`` (KeyError if none)."""
    return _BY_NAME[name]

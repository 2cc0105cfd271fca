"""The data and the steps of ``memdb demo``: a dozen memories, a few searches, and timings.

:func:`run` does the work and returns a plain, JSON-ready report; printing it is the CLI's
job. Every memory goes through the default write gate (each has a source id; the rules carry
a rule cue such as "always" or 必须). Running it twice against the same database writes
nothing new the second time: the SQL write path deduplicates identical content in the same
scope.

>>> from memdb import MemoryStore
>>> report = run(MemoryStore())          # embedded server in $MEMDB_HOME or the user data dir
>>> report["new"] + report["already_stored"] == len(MEMORIES)
True
"""

from __future__ import annotations

import time
from typing import Any

from .core.models import SearchHit
from .families.store import MemoryStore

__all__ = ["MEMORIES", "SEARCHES", "run", "summarize_hit"]

# Three people (and the agent itself), four kinds, seven categories, every row with provenance.
MEMORIES: list[dict[str, Any]] = [
    {"content": "Alice prefers green tea over coffee, and never takes sugar.",
     "subject": "alice", "kind": "semantic", "category": "preferences",
     "source_type": "user_statement", "source_id": "chat-0302#4", "importance": 0.7},
    {"content": "张伟喜欢喝乌龙茶，下午三点以后不喝咖啡。",
     "subject": "zhangwei", "kind": "semantic", "category": "preferences",
     "source_type": "user_statement", "source_id": "chat-0305#2", "importance": 0.7},
    {"content": "Alice is a data scientist at a climate start-up in Berlin; her manager is Priya.",
     "subject": "alice", "kind": "semantic", "category": "entities",
     "source_type": "user_statement", "source_id": "chat-0302#9", "tags": ["work"]},
    {"content": "张伟是上海一家金融科技公司的后端工程师，主要用 Go 和 PostgreSQL。",
     "subject": "zhangwei", "kind": "semantic", "category": "entities",
     "source_type": "user_statement", "source_id": "chat-0305#7", "tags": ["work"]},
    {"content": "On 14 March Alice presented her churn model to the board; it was approved.",
     "subject": "alice", "kind": "episodic", "category": "events",
     "source_type": "user_statement", "source_id": "chat-0315#1"},
    {"content": "4月2日张伟把订单服务迁移到了 PostgreSQL 17，停机不到五分钟。",
     "subject": "zhangwei", "kind": "episodic", "category": "events",
     "source_type": "tool_observation", "source_id": "deploy-log-0402"},
    {"content": "Before running the test suite, always activate the venv; "
                "then run `python -m pytest -q`.",
     "subject": "assistant", "kind": "procedural", "category": "skills",
     "source_type": "document", "source_id": "README.md#tests"},
    {"content": "部署服务之前必须先运行 `memdb migrate`，确认迁移版本号后再重启服务。",
     "subject": "assistant", "kind": "procedural", "category": "skills",
     "scope": "project", "project_id": "orders",
     "source_type": "document", "source_id": "runbook.md#deploy"},
    {"content": "The search_docs tool takes a query and top_k up to 20; it times out after 10 s.",
     "subject": "assistant", "kind": "semantic", "category": "tools",
     "source_type": "tool_observation", "source_id": "tool-call-8812"},
    {"content": "回答时总是使用用户的语言：对张伟用中文，对 Alice 用英文。",
     "subject": "assistant", "kind": "semantic", "category": "system",
     "scope": "global", "source_type": "system", "source_id": "system-prompt-v3",
     "importance": 0.9},
    {"content": "Alice is drafting a blog post about vector search, due on Friday.",
     "subject": "alice", "kind": "working", "category": "general",
     "scope": "session", "session_id": "s-42",
     "source_type": "model_inference", "source_id": "s-42#turn-6", "confidence": 0.8},
    {"content": "张伟正在排查一个慢查询：订单列表接口的 p99 延迟超过 800 毫秒。",
     "subject": "zhangwei", "kind": "working", "category": "general",
     "scope": "session", "session_id": "s-7",
     "source_type": "model_inference", "source_id": "s-7#turn-3", "confidence": 0.8},
]

# Each search: a query, how many hits, and the filter conditions (MemoryStore.search keywords).
SEARCHES: list[dict[str, Any]] = [
    {"query": "张伟喜欢喝什么？", "k": 3, "filter": {}},
    {"query": "Does Alice like coffee?", "k": 3, "filter": {"subject": "alice"}},
    {"query": "怎么部署服务？", "k": 2, "filter": {"kind": "procedural"}},
    {"query": "Who works with PostgreSQL?", "k": 3, "filter": {"category": ["entities", "events"]}},
]


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 1)


def run(store: MemoryStore, *, opened_ms: float = 0.0) -> dict[str, Any]:
    """Migrate, write :data:`MEMORIES`, link them into the entity graph (the heuristic
    extractor, no LLM), run :data:`SEARCHES`; return what happened.

    ``opened_ms`` is the time the caller spent opening ``store`` (starting the embedded
    server), added to the migration time in the report.
    """
    start = time.perf_counter()
    revision = store.migrate()
    migrated_ms = _ms(start)

    start = time.perf_counter()
    store.embedder.embed_queries(["warm-up"])  # load the model once, timed on its own
    embedder_ms = _ms(start)

    start = time.perf_counter()
    results = store.add_many([dict(m) for m in MEMORIES], reason="memdb demo")
    writes_ms = _ms(start)
    new = sum(r.created for r in results)
    rejected = [r.reasons for r in results if r.rejected]
    if rejected:  # the demo data is written to pass the default gate
        raise AssertionError(f"the write gate refused demo memories: {rejected}")

    start = time.perf_counter()  # the entity graph of the demo's memories (no LLM)
    linked = store.graph.link([r.id for r in results if r.id is not None], llm=None)
    graph_ms = _ms(start)

    searches = []
    start = time.perf_counter()
    for spec in SEARCHES:
        hits = store.search(spec["query"], k=spec["k"], **spec["filter"])
        searches.append({"query": spec["query"], "k": spec["k"], "filter": spec["filter"],
                         "hits": [summarize_hit(h) for h in hits]})
    searches_ms = _ms(start)

    return {
        "revision": revision,
        "tenant": store.tenant,
        "memories": len(results),
        "new": new,
        "already_stored": len(results) - new,
        "graph": {"linked": linked.linked, "mentions": linked.mentions,
                  "relations": linked.relations},
        "searches": searches,
        "timings_ms": {
            "start_and_migrate": round(opened_ms + migrated_ms, 1),
            "embedder_load": embedder_ms,
            "writes": writes_ms,
            "graph_link": graph_ms,
            "searches": searches_ms,
        },
    }


def summarize_hit(hit: SearchHit) -> dict[str, Any]:
    """The parts of a hit the demo shows: rank, score, kind, category, subject, provenance,
    and the rank each retrieval route gave it (``{"vector": 1, "bm25": 3}``)."""
    m = hit.memory
    routes = {r: hit.details[f"{r}_rank"] for r in ("vector", "bm25", "exact")
              if hit.details.get(f"{r}_rank") is not None}
    return {"rank": hit.rank, "score": round(hit.score, 6), "id": str(m.id),
            "kind": m.kind.value, "category": m.category.value, "subject": m.subject,
            "source_type": m.source_type.value, "source_id": m.source_id, "routes": routes,
            "content": m.content}

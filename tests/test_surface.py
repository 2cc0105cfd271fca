"""The store's public surface: the core verbs and the family attributes; the old flat names
(``add_message``, ``ingest``, ``maintain``...) are gone, not kept as aliases."""

from __future__ import annotations

import functools
import inspect
import typing
import warnings

from memdb import AsyncMemoryStore, MemoryStore
from memdb.core.family import Family
from memdb.families.documents import Documents
from memdb.families.graph import Graph
from memdb.families.maintenance import Maintenance
from memdb.families.meta import MetaMemory
from memdb.families.review import Review
from memdb.families.session import Sessions
from memdb.families.subjects import Subjects
from memdb.families.traces import Traces

# The core: what an agent calls every turn, and the store's own settings. A name added to the
# store by accident fails test_store_public_names; put it in a family instead (or here, if it
# is truly core).
CORE = {
    "open", "close", "migrate", "add", "add_many", "decide", "get", "list", "count", "update",
    "delete", "history", "search", "search_by_vector", "recall", "plan",
    "decompose",  # plan's sibling: the sub-queries option decompose would search (no search)
    "mark_used",
    "remember", "context", "profile", "tool", "dispatch", "task_end",
    "add_file", "perceive",  # a file of any format; an image or a recording (docs/files.md)
    "embedder", "llm", "planner", "recall_timeout_ms", "trace_recall", "space_id", "tenant",
    "subject", "actor", "gate", "on_embedding_error", "db",
    "replica", "consistency",  # read replicas (docs/scaling.md): the router, a consistency block
    "core",  # what families and code built on the store use of it (memdb.core.family.StoreCore)
}
FAMILIES = {"sessions": Sessions, "documents": Documents, "graph": Graph, "review": Review,
            "traces": Traces, "maintenance": Maintenance, "subjects": Subjects,
            "meta": MetaMemory}


def public(obj: object) -> set[str]:
    return {n for n in dir(obj) if not n.startswith("_")}


# MemoryStore's names before the families (0.1) that moved into one: none is left on the store
# (no deprecated aliases), each lives on its family under its new name
MOVED = {
    "add_message": ("sessions", "append"), "recent_messages": ("sessions", "recent"),
    "get_session": ("sessions", "get"), "list_sessions": ("sessions", "list"),
    "delete_session": ("sessions", "delete"), "get_state": ("sessions", "get_state"),
    "set_state": ("sessions", "set_state"), "update_state": ("sessions", "update_state"),
    "summarize_session": ("sessions", "summarize"), "consolidate": ("sessions", "consolidate"),
    "ingest": ("documents", "ingest"), "remove_document": ("documents", "remove"),
    "search_documents": ("documents", "search"), "citations": ("documents", "citations"),
    "ask": ("documents", "ask"), "retrieve": ("documents", "retrieve"),
    "link_entities": ("graph", "link"), "graph_neighbors": ("graph", "neighbors"),
    "graph_search": ("graph", "search"), "review_list": ("review", "list"),
    "review_approve": ("review", "approve"), "review_reject": ("review", "reject"),
    "trace": ("traces", "get"), "trace_stats": ("traces", "stats"),
    "purge_traces": ("traces", "purge"), "erase_traces": ("traces", "erase"),
    "maintain": ("maintenance", "run"), "purge_expired": ("maintenance", "purge_expired"),
    "reembed": ("maintenance", "reembed"),
    "pending_embeddings": ("maintenance", "pending_embeddings"),
    "forget_by_age": ("maintenance", "forget_by_age"),
    "forget_by_capacity": ("maintenance", "forget_by_capacity"),
    "forget_by_importance": ("maintenance", "forget_by_importance"),
    "decay_hypotheses": ("maintenance", "decay_hypotheses"),
    "sediment": ("maintenance", "sediment"), "reclassify": ("maintenance", "reclassify"),
    "export_subject": ("subjects", "export"), "forget_subject": ("subjects", "forget"),
    "memory_summary": ("subjects", "summary"),
    "token_counter": ("sessions", "token_counter"), "session_window": ("sessions", "window"),
    "trace_retention_days": ("traces", "retention_days"),
}


def test_old_names_are_gone_and_their_new_homes_exist(store: MemoryStore) -> None:
    assert len(MOVED) == 42  # and build_context, now store.context: the 43 old names
    for old, (family, new) in MOVED.items():
        assert not hasattr(MemoryStore, old), f"MemoryStore.{old} is a deprecated alias"
        assert not hasattr(store, old) and not hasattr(AsyncMemoryStore, old), old
        assert hasattr(getattr(store, family), new), f"store.{family}.{new} is missing"
    assert not hasattr(MemoryStore, "build_context") and callable(store.context)
    assert not callable(store.documents)  # the old store.documents() listing: .list()


def family_attributes() -> dict[str, type]:
    """Every store attribute typed as returning a Family (the seven below, and any family a
    later change adds)."""
    out = {}
    for name in public(MemoryStore):
        raw = inspect.getattr_static(MemoryStore, name)
        fn = raw.func if isinstance(raw, functools.cached_property) else \
            raw.fget if isinstance(raw, property) else None
        returns = typing.get_type_hints(fn).get("return") if fn is not None else None
        if isinstance(returns, type) and issubclass(returns, Family):
            out[name] = returns
    return out


def test_store_public_names(store: MemoryStore) -> None:
    families = family_attributes()
    assert families.items() >= FAMILIES.items()
    assert public(MemoryStore) | public(store) == CORE | set(families)
    assert public(store) == CORE | set(families)
    # the shape a newcomer sees (44 before read replicas added two and query decomposition
    # one; files two verbs, add_file and perceive, and the jobs and percepts families two)
    assert len(CORE) + len(families) <= 51


def test_families_are_composed_cached_and_typed(store: MemoryStore) -> None:
    assert not any(issubclass(MemoryStore, cls) for cls in FAMILIES.values())
    for name, cls in FAMILIES.items():
        family = getattr(store, name)
        assert type(family) is cls and isinstance(family, Family)
        assert family._store is store and getattr(store, name) is family  # one per store
        raw = inspect.getattr_static(MemoryStore, name)
        assert isinstance(raw, functools.cached_property)
        assert typing.get_type_hints(raw.func)["return"] is cls
    for old, (family, new) in MOVED.items():  # the families carry only the new names
        if new != old:
            assert old not in public(FAMILIES[family])


def test_the_library_uses_only_the_new_names(store: MemoryStore) -> None:
    """The main paths, with any DeprecationWarning an error: nothing in memdb calls an alias
    (pyproject's filterwarnings also fails a warning that memdb code triggers anywhere)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        tool = store.tool(subject="bob")
        for args in ({"action": "add", "content": "Bob is allergic to peanuts"},
                     {"action": "summary"}, {"action": "forget", "dry_run": True},
                     {"action": "consolidate", "session_id": "s2", "dry_run": True}):
            out = tool.run({"name": tool.name, "arguments": args})
            assert out["ok"], out
        store.sessions.append("s2", "user", "deploy failed: no backup", subject="bob", llm=None)
        store.task_end("s2", outcome="failure", summary="部署失败：没有先备份数据库",
                       subject="bob", task="部署服务", fix="备份数据库", llm=None)
        store.context("what is bob allergic to?", "s2", subject="bob", include_profile=True)
        store.maintenance.run(dry_run=True)


def test_no_family_is_callable(store: MemoryStore) -> None:
    """``store.traces(...)``, the last deprecated listing, is gone: no family is callable."""
    for name in FAMILIES:
        assert not callable(getattr(store, name)), name

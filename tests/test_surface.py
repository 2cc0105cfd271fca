"""The store's public surface: the core verbs, the family attributes, and the old flat names kept
for one release as deprecated aliases (memdb._deprecated)."""

from __future__ import annotations

import functools
import inspect
import typing
import warnings
from typing import Any

import pytest

from memdb import MemoryStore
from memdb._deprecated import ALIASES, CALLABLE, PROPERTIES
from memdb.documents import Documents
from memdb.family import Family
from memdb.graph import Graph
from memdb.maintenance import Maintenance
from memdb.meta import MetaMemory
from memdb.review import Review
from memdb.session import Sessions, SessionWindow
from memdb.subjects import Subjects
from memdb.traces import Traces

# The core: what an agent calls every turn, and the store's own settings. A name added to the
# store by accident fails test_store_public_names; put it in a family instead (or here, if it
# is truly core).
CORE = {
    "open", "close", "migrate", "add", "add_many", "decide", "get", "list", "count", "update",
    "delete", "history", "search", "search_by_vector", "recall", "plan",
    "decompose",  # plan's sibling: the sub-queries option decompose would search (no search)
    "mark_used",
    "remember", "context", "profile", "tool", "dispatch", "task_end",
    "embedder", "llm", "planner", "recall_timeout_ms", "trace_recall", "space_id", "tenant",
    "subject", "actor", "gate", "on_embedding_error", "db",
    "replica", "consistency",  # read replicas (docs/scaling.md): the router, a consistency block
}
FAMILIES = {"sessions": Sessions, "documents": Documents, "graph": Graph, "review": Review,
            "traces": Traces, "maintenance": Maintenance, "subjects": Subjects,
            "meta": MetaMemory}


def public(obj: object) -> set[str]:
    return {n for n in dir(obj) if not n.startswith("_")}


# MemoryStore's public names before the families (0.1): none may be lost without an alias
BEFORE = {
    "add", "add_many", "add_message", "ask", "build_context", "citations", "close", "consolidate",
    "count", "decay_hypotheses", "decide", "delete", "delete_session", "dispatch", "documents",
    "embedder", "erase_traces", "export_subject", "forget_by_age", "forget_by_capacity",
    "forget_by_importance", "forget_subject", "get", "get_session", "get_state",
    "graph_neighbors", "graph_search", "history", "ingest", "link_entities", "list",
    "list_sessions", "llm", "maintain", "mark_used", "memory_summary", "migrate",
    "pending_embeddings", "plan", "planner", "profile", "purge_expired", "purge_traces",
    "recall", "recall_timeout_ms", "recent_messages", "reclassify", "reembed", "remember",
    "remove_document", "retrieve", "review_approve", "review_list", "review_reject", "search",
    "search_by_vector", "search_documents", "sediment", "session_window", "set_state",
    "space_id", "summarize_session", "task_end", "token_counter", "tool", "trace",
    "trace_recall", "trace_retention_days", "trace_stats", "traces", "update", "update_state",
}


def test_no_old_name_is_lost() -> None:
    assert len(BEFORE) == 72
    kept = CORE | set(ALIASES) | set(PROPERTIES) | set(CALLABLE)
    assert BEFORE - kept == set()
    assert BEFORE <= public(MemoryStore)


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
    assert public(MemoryStore) | public(store) == \
        CORE | set(families) | set(ALIASES) | set(PROPERTIES)
    assert public(store) == CORE | set(families)  # dir(store): the aliases work, unlisted
    # the shape a newcomer sees, without the aliases (44 before read replicas added two and
    # query decomposition one)
    assert len(CORE) + len(families) <= 47


def test_families_are_composed_cached_and_typed(store: MemoryStore) -> None:
    assert not any(issubclass(MemoryStore, cls) for cls in FAMILIES.values())
    for name, cls in FAMILIES.items():
        family = getattr(store, name)
        assert type(family) is cls and isinstance(family, Family)
        assert family._store is store and getattr(store, name) is family  # one per store
        raw = inspect.getattr_static(MemoryStore, name)
        assert isinstance(raw, functools.cached_property)
        assert typing.get_type_hints(raw.func)["return"] is cls
    for old, (family, new) in ALIASES.items():  # the families carry only the new names
        if family is not None and new != old:
            assert old not in public(FAMILIES[family])


@pytest.mark.parametrize("old", sorted(ALIASES))
def test_every_alias_has_its_target_and_signature(old: str) -> None:
    family, new = ALIASES[old]
    owner = MemoryStore if family is None else FAMILIES[family]
    target = inspect.getattr_static(owner, new)
    assert inspect.isfunction(target), f"{old}: {owner.__name__}.{new} is missing"
    alias = inspect.getattr_static(MemoryStore, old)
    assert alias.__name__ == old and alias.__wrapped__ is target
    assert inspect.signature(alias) == inspect.signature(target)
    assert "Deprecated" in alias.__doc__ and (target.__doc__ or "") in alias.__doc__


class _Recorder:
    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: (name, args, kwargs)


class _Stub:
    """Stands in for a store: every family (and the store itself) records the call."""

    def __init__(self) -> None:
        for name in FAMILIES:
            setattr(self, name, _Recorder())

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: (name, args, kwargs)


@pytest.mark.parametrize("old", sorted(ALIASES))
def test_every_alias_warns_and_forwards(old: str) -> None:
    family, new = ALIASES[old]
    where = f"store.{new}" if family is None else f"store.{family}.{new}"
    with pytest.warns(DeprecationWarning,
                      match=rf"^MemoryStore\.{old} is deprecated; use {where}$") as caught:
        out = getattr(MemoryStore, old)(_Stub(), "a", 2, key="v")
    assert out == (new, ("a", 2), {"key": "v"})
    assert caught[0].filename == __file__  # attributed to the caller (stacklevel)


def test_moved_attributes_forward_get_and_set(store: MemoryStore) -> None:
    for old, (family, new) in PROPERTIES.items():
        with pytest.warns(DeprecationWarning, match=f"use store.{family}.{new}"):
            assert getattr(store, old) == getattr(getattr(store, family), new)
    window = SessionWindow(max_messages=3)
    with pytest.warns(DeprecationWarning):
        store.session_window = window
    with pytest.warns(DeprecationWarning):
        store.trace_retention_days = 7
    with pytest.warns(DeprecationWarning):
        store.token_counter = len
    assert store.sessions.window is window and store.traces.retention_days == 7
    assert store.sessions.token_counter is len


def test_aliases_give_the_new_names_results(store: MemoryStore) -> None:
    store.add("Alice 喜欢绿茶", subject="alice", category="preferences")
    with pytest.warns(DeprecationWarning, match="use store.sessions.append"):
        old = store.add_message("s1", "user", "我们用 PostgreSQL 18。", llm=None)
    new = store.sessions.append("s1", "user", "We use PostgreSQL 18.", llm=None)
    assert (old.id + 1, old.folded) == (new.id, new.folded)
    with pytest.warns(DeprecationWarning, match="use store.sessions.get$"):
        assert store.get_session("s1") == store.sessions.get("s1")
    with pytest.warns(DeprecationWarning, match="use store.sessions.list"):
        assert store.list_sessions() == store.sessions.list()
    with pytest.warns(DeprecationWarning, match="use store.subjects.summary"):
        assert store.memory_summary(subject="alice") == store.subjects.summary(subject="alice")
    with pytest.warns(DeprecationWarning, match="use store.maintenance.pending_embeddings"):
        assert store.pending_embeddings() == store.maintenance.pending_embeddings() == 0
    with pytest.warns(DeprecationWarning, match="use store.review.list"):
        assert store.review_list() == store.review.list() == []
    with pytest.warns(DeprecationWarning, match="use store.context"):
        old_ctx = store.build_context("Alice 喝什么？", "s1", 500, subject="alice")
    assert old_ctx.messages == store.context("Alice 喝什么？", "s1", 500,
                                             subject="alice").messages
    store.recall("what does alice drink?", subject="alice")
    for name in CALLABLE:  # the two families that took an old listing method's name
        with pytest.warns(DeprecationWarning, match=f"use store.{name}.list"):
            assert getattr(store, name)() == getattr(store, name).list()
    assert len(store.traces.list()) == 1  # the recall's


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

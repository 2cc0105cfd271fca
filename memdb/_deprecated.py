"""The store's old names, kept for one release as deprecated aliases of the family methods.

One table (:data:`ALIASES`: old name -> (family, new name)) makes every alias: each warns
``DeprecationWarning("MemoryStore.add_message is deprecated; use store.sessions.append")`` and
forwards to ``store.sessions.append``, whose signature and docstring it carries
(:func:`functools.wraps`). :data:`PROPERTIES` does the same for attributes that moved (get and
set forward); :data:`CALLABLE` names the two families whose attribute took an old method's
name (``store.documents(...)`` and ``store.traces(...)`` still list, with a warning).
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any

__all__ = ["ALIASES", "PROPERTIES", "CALLABLE", "install", "call_alias"]

# old MemoryStore name -> (family attribute, or None for the store itself; new name)
ALIASES: dict[str, tuple[str | None, str]] = {
    # store.sessions
    "add_message": ("sessions", "append"),
    "recent_messages": ("sessions", "recent"),
    "get_session": ("sessions", "get"),
    "list_sessions": ("sessions", "list"),
    "delete_session": ("sessions", "delete"),
    "get_state": ("sessions", "get_state"),
    "set_state": ("sessions", "set_state"),
    "update_state": ("sessions", "update_state"),
    "summarize_session": ("sessions", "summarize"),
    "consolidate": ("sessions", "consolidate"),
    # store.documents (the old ``documents()`` listing: see CALLABLE)
    "ingest": ("documents", "ingest"),
    "remove_document": ("documents", "remove"),
    "search_documents": ("documents", "search"),
    "citations": ("documents", "citations"),
    "ask": ("documents", "ask"),
    "retrieve": ("documents", "retrieve"),
    # store.graph
    "link_entities": ("graph", "link"),
    "graph_neighbors": ("graph", "neighbors"),
    "graph_search": ("graph", "search"),
    # store.review
    "review_list": ("review", "list"),
    "review_approve": ("review", "approve"),
    "review_reject": ("review", "reject"),
    # store.traces (the old ``traces()`` listing: see CALLABLE)
    "trace": ("traces", "get"),
    "trace_stats": ("traces", "stats"),
    "purge_traces": ("traces", "purge"),
    "erase_traces": ("traces", "erase"),
    # store.maintenance
    "maintain": ("maintenance", "run"),
    "purge_expired": ("maintenance", "purge_expired"),
    "reembed": ("maintenance", "reembed"),
    "pending_embeddings": ("maintenance", "pending_embeddings"),
    "forget_by_age": ("maintenance", "forget_by_age"),
    "forget_by_capacity": ("maintenance", "forget_by_capacity"),
    "forget_by_importance": ("maintenance", "forget_by_importance"),
    "decay_hypotheses": ("maintenance", "decay_hypotheses"),
    "sediment": ("maintenance", "sediment"),
    "reclassify": ("maintenance", "reclassify"),
    # store.subjects
    "export_subject": ("subjects", "export"),
    "forget_subject": ("subjects", "forget"),
    "memory_summary": ("subjects", "summary"),
    # renamed on the store itself
    "build_context": (None, "context"),
}

# old MemoryStore attribute -> (family attribute, new attribute name)
PROPERTIES: dict[str, tuple[str, str]] = {
    "token_counter": ("sessions", "token_counter"),
    "session_window": ("sessions", "window"),
    "trace_retention_days": ("traces", "retention_days"),
}

# a family attribute that replaced an old listing method -> the family's new method
CALLABLE: dict[str, str] = {"documents": "list", "traces": "list"}


def _new_name(family: str | None, new: str) -> str:
    return f"store.{new}" if family is None else f"store.{family}.{new}"


def _warn(old: str, family: str | None, new: str) -> None:
    warnings.warn(f"MemoryStore.{old} is deprecated; use {_new_name(family, new)}",
                  DeprecationWarning, stacklevel=3)


def _method(old: str, family: str | None, new: str, target: Callable[..., Any]
            ) -> Callable[..., Any]:
    @functools.wraps(target)
    def alias(self: Any, *args: Any, **kwargs: Any) -> Any:
        _warn(old, family, new)
        owner = self if family is None else getattr(self, family)
        return getattr(owner, new)(*args, **kwargs)

    alias.__name__ = old
    alias.__qualname__ = f"MemoryStore.{old}"
    alias.__doc__ = (f"Deprecated (one release): use ``{_new_name(family, new)}``.\n\n"
                     + (target.__doc__ or ""))
    alias.__deprecated__ = _new_name(family, new)  # type: ignore[attr-defined]
    return alias


def _property(old: str, family: str, new: str) -> property:
    def get(self: Any) -> Any:
        _warn(old, family, new)
        return getattr(getattr(self, family), new)

    def set_(self: Any, value: Any) -> None:
        _warn(old, family, new)
        setattr(getattr(self, family), new, value)

    return property(get, set_, doc=f"Deprecated (one release): use "
                                   f"``{_new_name(family, new)}``.")


def call_alias(family: str, new: str) -> Callable[..., Any]:
    """A family's ``__call__`` that keeps the old ``store.<family>(...)`` listing working."""

    def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:
        warnings.warn(f"MemoryStore.{family}() is deprecated; use store.{family}.{new}",
                      DeprecationWarning, stacklevel=2)
        return getattr(self, new)(*args, **kwargs)

    return __call__


def install(cls: type, families: dict[str, type]) -> None:
    """Add the deprecated aliases of :data:`ALIASES` and :data:`PROPERTIES` to ``cls``
    (the store), each wrapping its target in ``families`` (attribute -> family class)."""
    for old, (family, new) in ALIASES.items():
        if old in cls.__dict__:
            raise TypeError(f"{cls.__name__}.{old} exists: it cannot also be an alias")
        owner = cls if family is None else families[family]
        setattr(cls, old, _method(old, family, new, getattr(owner, new)))
    for old, (family, new) in PROPERTIES.items():
        if old in cls.__dict__:
            raise TypeError(f"{cls.__name__}.{old} exists: it cannot also be an alias")
        setattr(cls, old, _property(old, family, new))

"""The base of the store's families: small objects reached from a store (``store.sessions``,
``store.documents``, ...) instead of dozens of methods in the store's own namespace.

A family holds the store it belongs to (``self._store``) and reaches the database, the embedder
and the LLM only through it, so the same family class serves the sync :class:`MemoryStore` and,
wrapped method by method, the :class:`AsyncMemoryStore` (see :mod:`memdb.aio`).
"""

from __future__ import annotations

from typing import Any

__all__ = ["Family"]


class Family:
    """A group of related operations bound to one store."""

    def __init__(self, store: Any) -> None:
        self._store = store

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of {self._store!r}>"

"""The base of the store's families, and the one typed interface they use of the store.

A family is a small object reached from a store (``store.sessions``, ``store.documents``, ...)
instead of dozens of methods in the store's own namespace. It holds the store it belongs to
(``self._store``: its public verbs) and reaches the database, the embedder and the LLM through
the store's :class:`StoreCore` (``self._core``, ``store.core``), so the same family class serves
the sync :class:`MemoryStore` and, wrapped method by method, the :class:`AsyncMemoryStore` (see
:mod:`memdb.families.aio`). Code outside the families that works on a store's connections (recall,
ingestion, the context builder...) takes the same interface.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, Protocol

__all__ = ["Family", "StoreCore"]


class StoreCore(Protocol):
    """What the store lends the code built on it: its scope, transactions confined to that
    scope by row-level security, the write context of history rows, its embedder and LLM."""

    tenant: str
    subject: str | None
    actor: str | None

    @property
    def db(self) -> Any:
        """The store's :class:`~memdb.core.connection.Database` (its pool, its admin DSN)."""

    @property
    def embedder(self) -> Any:
        """The store's :class:`~memdb.core.embeddings.Embedder`."""

    @property
    def llm(self) -> Any:
        """The store's :class:`~memdb.core.llm.ChatLLM`, or None."""

    def transaction(self, *, pipelined: bool = False) -> AbstractContextManager[Any]:
        """A transaction on the primary confined to the store's tenant (and subject)."""

    def read(self, *, pipelined: bool = False,
             snapshot: bool = False) -> AbstractContextManager[Any]:
        """A read-only transaction confined the same way (on the read replica if any);
        ``snapshot``: REPEATABLE READ, one snapshot for all its statements."""

    def begin(self, conn: Any, reason: str | None) -> None:
        """Set the actor and reason that history rows written in ``conn`` record."""

    def space_id(self) -> int:
        """The id of the store's embedding space."""

    def check_keyword_index(self, texts: list[tuple[str, str | None]]) -> None:
        """InvalidInput for a (content, search_context) over PostgreSQL's tsvector limit."""

    def embed_to_store(self, texts: list[str]) -> Any:
        """Vectors for texts to store (None when deferred by the embedding-error policy)."""


class Family:
    """A group of related operations bound to one store."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self._core: StoreCore = store.core

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of {self._store!r}>"

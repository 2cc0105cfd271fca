"""LangGraph's ``index_config["embed"]`` as a memdb :class:`memdb.core.embeddings.Embedder`.

LangGraph lets a store's index name its embedding function three ways: a LangChain
``Embeddings``, a function from texts to vectors (sync or async), or a ``"provider:model"``
string (``langchain.embeddings.init_embeddings``); :func:`ensure_embeddings` from LangGraph
turns each into an ``Embeddings``. memdb keeps vectors of different models apart in embedding
spaces named by model, with fixed dimensions: the space of an ``embed`` is named after it
(:func:`model_name`) and holds ``index["dims"]`` dimensions, so reopening a store with the
same function and other dims raises :class:`memdb.core.errors.DimensionMismatch`, and so does an
``embed`` that returns vectors of another width than ``dims``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from ..core.errors import DimensionMismatch, InvalidInput

__all__ = ["LangGraphEmbedder", "model_name"]


def model_name(embed: Any) -> str:
    """The embedding space of ``embed``: ``langgraph:`` + the provider string, or the class
    (or function) and, when it has one, its ``model``/``model_name`` attribute."""
    if isinstance(embed, str):
        return f"langgraph:{embed}"
    kind = embed if callable(embed) and not hasattr(embed, "embed_documents") else type(embed)
    name = f"langgraph:{getattr(kind, '__module__', '?')}.{getattr(kind, '__qualname__', '?')}"
    for attr in ("model", "model_name"):
        value = getattr(embed, attr, None)
        if isinstance(value, str) and value:
            return f"{name}:{value}"
    return name


class LangGraphEmbedder:
    """A memdb Embedder calling LangGraph's embedding function: ``embed_documents`` for what is
    stored, ``embed_query`` for queries (an async-only function runs on its own event loop in
    a worker thread)."""

    def __init__(self, embed: Any, dims: Any) -> None:
        from langgraph.store.base.embed import ensure_embeddings

        if isinstance(dims, bool) or not isinstance(dims, int) or not 1 <= dims <= 2000:
            raise InvalidInput(f"index['dims'] must be an integer from 1 to 2000 (pgvector's "
                               f"HNSW limit), got {dims!r}")
        try:
            self.embeddings = ensure_embeddings(embed)
        except ValueError as exc:  # e.g. a provider string without langchain installed
            raise InvalidInput(f"index['embed']: {exc}") from exc
        self.embed, self.dims, self.model = embed, dims, model_name(embed)

    def __repr__(self) -> str:
        return f"LangGraphEmbedder(model={self.model!r}, dims={self.dims})"

    def _run(self, sync: str, async_: str, arg: Any) -> Any:
        try:
            return getattr(self.embeddings, sync)(arg)
        except ValueError:
            if getattr(self.embeddings, "afunc", None) is None or \
                    getattr(self.embeddings, "func", None) is not None:
                raise
        with ThreadPoolExecutor(1) as pool:  # an async-only function: its own loop, no caller's
            return pool.submit(asyncio.run, getattr(self.embeddings, async_)(arg)).result()

    def _checked(self, vectors: Any) -> np.ndarray:
        matrix = np.asarray(vectors, dtype=np.float32)
        if matrix.ndim == 2 and matrix.shape[1] != self.dims:
            raise DimensionMismatch(
                f"index['embed'] ({self.model}) returned {matrix.shape[1]}-dimensional vectors, "
                f"but index['dims'] is {self.dims}")
        return matrix

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._checked(self._run("embed_documents", "aembed_documents", list(texts)))

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._checked([self._run("embed_query", "aembed_query", t) for t in texts])

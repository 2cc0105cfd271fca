"""A bounded, thread-safe LRU cache of query embeddings (the same question asked again costs
no model call).

Keys are (namespace, model, dims, text as embedded): the namespace tells providers apart
(``"local"``, or an OpenAI-compatible endpoint's base URL), the text is the one the model
reads (after the embedder's prefix and truncation). Values are read-only float32 rows, so a
caller cannot corrupt them; embedders hand out fresh matrices built from them.

``MEMDB_QUERY_CACHE`` sets the size of the process-wide cache the embedders share by default
(1024 queries, about 1.5 MB at 384 dimensions); 0 disables it.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence

import numpy as np

from .errors import InvalidInput

__all__ = ["QueryCache", "shared_query_cache", "resolve_query_cache"]

DEFAULT_SIZE = 1024


class QueryCache:
    """At most ``size`` query vectors, least recently used evicted first; 0 keeps nothing."""

    def __init__(self, size: int = DEFAULT_SIZE) -> None:
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise InvalidInput("query cache size must be a whole number >= 0")
        self.size = size
        self.hits = self.misses = 0
        self._rows: OrderedDict[Hashable, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()  # bookkeeping only; never held while embedding

    def __len__(self) -> int:
        return len(self._rows)

    def clear(self) -> None:
        with self._lock:
            self._rows.clear()
            self.hits = self.misses = 0

    def get(self, key: Hashable) -> np.ndarray | None:
        with self._lock:
            row = self._rows.get(key)
            if row is None:
                self.misses += 1
                return None
            self._rows.move_to_end(key)
            self.hits += 1
            return row

    def peek(self, key: Hashable) -> np.ndarray | None:
        """A copy of the row under ``key`` (a hit, and most recently used) or None (not
        counted as a miss: the caller embeds through :meth:`embed`, which counts it)."""
        with self._lock:
            row = self._rows.get(key)
            if row is None:
                return None
            self._rows.move_to_end(key)
            self.hits += 1
        return np.array(row)

    def put(self, key: Hashable, row: np.ndarray) -> None:
        if not self.size:
            return
        row = np.array(row, dtype=np.float32)  # a private copy
        row.flags.writeable = False
        with self._lock:
            self._rows[key] = row
            self._rows.move_to_end(key)
            while len(self._rows) > self.size:
                self._rows.popitem(last=False)

    def embed(self, prefix: tuple, texts: Sequence[str],
              compute: Callable[[list[str]], np.ndarray], dims: int) -> np.ndarray:
        """Vectors for ``texts`` (already in the form the model reads), rows found under
        ``prefix + (text,)`` taken from the cache and the rest computed in one call of
        ``compute`` (each distinct missing text once; it returns checked vectors: finite,
        non-zero, the right shape) and remembered. A new matrix, the caller's to change."""
        out = np.empty((len(texts), dims), dtype=np.float32)
        if not self.size:
            if texts:
                out[:] = compute(list(texts))
            return out
        missing: dict[str, list[int]] = {}
        for n, text in enumerate(texts):
            row = self.get((*prefix, text))
            if row is None:
                missing.setdefault(text, []).append(n)
            else:
                out[n] = row
        if missing:
            computed = compute(list(missing))
            for (text, rows), row in zip(missing.items(), computed, strict=True):
                out[rows] = row
                self.put((*prefix, text), row)
        return out


_shared: QueryCache | None = None
_shared_lock = threading.Lock()


def shared_query_cache() -> QueryCache:
    """The process-wide cache (size from ``MEMDB_QUERY_CACHE``, default 1024)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            raw = os.environ.get("MEMDB_QUERY_CACHE", str(DEFAULT_SIZE)).strip()
            try:
                size = int(raw)
            except ValueError:
                raise InvalidInput(
                    f"MEMDB_QUERY_CACHE must be a whole number >= 0, got {raw!r}") from None
            _shared = QueryCache(size)
        return _shared


def resolve_query_cache(value: QueryCache | int | None) -> QueryCache:
    """An embedder's ``query_cache`` argument as a cache: None is the shared one, a number a
    private cache of that size (0: none), a QueryCache itself."""
    if value is None:
        return shared_query_cache()
    if isinstance(value, QueryCache):
        return value
    return QueryCache(value)

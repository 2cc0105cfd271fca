"""An embedder for tests that need a model of their own: 8 dimensions, every text the same
vector, under a model name no other test registers."""

from __future__ import annotations

import numpy as np


class FixedEmbedder:
    model = "test-fixed-8"
    dims = 8

    def __init__(self, model: str | None = None) -> None:
        if model is not None:
            self.model = model

    def embed_passages(self, texts):
        return np.ones((len(texts), self.dims), dtype=np.float32)

    embed_queries = embed_passages

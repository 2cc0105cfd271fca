"""memdb's LangGraph store against the contract LangGraph's own stores keep: atomic puts under
concurrency (threads and tasks), shared async batches, search order without a query,
batch-level namespaces, ``index_config``, similarity scores, key order, comparison filters on
missing fields and namespaces that outlive their items."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

pytest.importorskip("langgraph.store.base")

from langgraph.store.base import InvalidNamespaceError, PutOp  # noqa: E402
from langgraph.store.memory import InMemoryStore  # noqa: E402

from memdb import MemoryStore  # noqa: E402
from memdb.integrations.langgraph import AsyncMemdbStore, MemdbStore  # noqa: E402


def _current(dsn: str, embedder: Any, root: str) -> list[Any]:
    with MemoryStore(dsn, embedder=embedder, gate=None) as mem:
        return mem.list(uri_prefix=root, limit=1000)


@pytest.mark.parametrize("equal", [True, False], ids=["equal-values", "different-values"])
def test_concurrent_puts_of_one_key_from_threads(fresh_db: str, embedder: Any,
                                                 equal: bool) -> None:
    """16 threads put one key at once: no error, one current row, the last writer's value."""
    store = MemdbStore(fresh_db, embedder=embedder, pool_size=8)
    store.put(("race",), "seed", {"text": "warm the pool"})
    barrier = threading.Barrier(16)
    errors: list[BaseException] = []

    def put(n: int) -> None:
        barrier.wait()
        try:
            store.put(("race",), "key", {"text": "同一个值 same" if equal else f"writer {n} 写"})
        except BaseException as exc:  # noqa: BLE001 (collected and asserted)
            errors.append(exc)

    threads = [threading.Thread(target=put, args=(n,)) for n in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert errors == []
        rows = [m for m in _current(fresh_db, embedder, store._root + "race/")
                if m.uri.endswith("=key")]
        assert len(rows) == 1
        item = store.get(("race",), "key")
        assert item.value == rows[0].metadata
        # the last writer wins: one more put after the race is what every reader sees
        store.put(("race",), "key", {"text": "final 最后"})
        assert store.get(("race",), "key").value == {"text": "final 最后"}
        assert [i.key for i in store.search(("race",))].count("key") == 1
    finally:
        store.close()


def test_concurrent_puts_of_one_key_from_tasks(fresh_db: str, embedder: Any) -> None:
    async def main() -> tuple[list[Any], Any, list[Any]]:
        async with AsyncMemdbStore(fresh_db, embedder=embedder) as store:
            outcomes = await asyncio.gather(
                *(store.aput(("race",), "key", {"n": n, "text": f"task {n} 任务"})
                  for n in range(32)), return_exceptions=True)
            item = await store.aget(("race",), "key")
            hits = await store.asearch(("race",))
            return outcomes, item, hits

    outcomes, item, hits = asyncio.run(main())
    assert [o for o in outcomes if o is not None] == []
    assert item.value == {"n": 31, "text": "task 31 任务"}  # the last put of the batch wins
    assert [h.key for h in hits] == ["key"]
    rows = _current(fresh_db, embedder, "mem://langgraph/general/ns/race/")
    assert len(rows) == 1


def test_many_concurrent_async_calls_share_batches(fresh_db: str, embedder: Any) -> None:
    """5,000 concurrent aget/aput calls on a one-connection pool that waits at most 3 s for a
    connection: they share batches instead of each queueing for the connection."""

    async def main() -> tuple[float, list[Any]]:
        store = AsyncMemdbStore(fresh_db, embedder=embedder, pool_size=1)
        store._mem.db._timeout = 3.0  # a short wait for a pooled connection: fail fast
        async with store:
            await store.aput(("load",), "k0", {"text": "seed"})
            started = time.perf_counter()
            calls = [store.aput(("load",), f"k{n % 50}", {"n": n}) if n % 2 else
                     store.aget(("load",), f"k{n % 50}") for n in range(5000)]
            results = await asyncio.gather(*calls, return_exceptions=True)
            return time.perf_counter() - started, results

    seconds, results = asyncio.run(main())
    errors = [r for r in results if isinstance(r, BaseException)]
    assert errors == [], errors[:3]
    assert seconds < 60


def test_search_without_a_query_is_most_recently_updated_first(fresh_db: str,
                                                                 embedder: Any) -> None:
    with MemdbStore(fresh_db, embedder=embedder) as store:
        for key in ("a", "b", "c"):
            store.put(("docs",), key, {"text": f"doc {key}"})
        store.put(("docs",), "a", {"text": "doc a, updated 更新"})
        assert [i.key for i in store.search(("docs",))] == ["a", "c", "b"]
        assert [i.key for i in store.search(("docs",), limit=1, offset=1)] == ["c"]
        assert [i.key for i in store.search(("docs",), filter={"text": "doc b"})] == ["b"]


def test_batch_put_under_langgraph_root_is_stored_put_refuses_it(fresh_db: str,
                                                                  embedder: Any) -> None:
    oracle = InMemoryStore()
    with MemdbStore(fresh_db, embedder=embedder) as store:
        for s in (store, oracle):
            s.batch([PutOp(("langgraph", "x"), "k", {"v": "系统"})])
            assert s.get(("langgraph", "x"), "k").value == {"v": "系统"}
            with pytest.raises(InvalidNamespaceError):
                s.put(("langgraph", "y"), "k", {"v": 1})
            with pytest.raises(InvalidNamespaceError):
                s.put((), "k", {"v": 1})
        assert store.list_namespaces() == oracle.list_namespaces() == [("langgraph", "x")]


def test_index_config(fresh_db: str, embedder: Any) -> None:
    with MemdbStore(fresh_db, embedder=embedder) as store:
        assert store.index_config["dims"] == embedder.dims
        assert store.index_config["fields"] == ["$"]
        (vector,) = store.index_config["embed"](["green tea 绿茶"])
        assert len(vector) == embedder.dims and all(isinstance(x, float) for x in vector)
    with MemdbStore(fresh_db, embedder=embedder, index={"fields": ["text"]}) as store:
        assert store.index_config["fields"] == ["text"]


def test_vector_ranking_reports_cosine_similarity(fresh_db: str, embedder: Any) -> None:
    """With ranking="vector" an item's score is the cosine similarity of its vector and the
    query's, as in LangGraph's stores (two equal texts tie); the default reports memdb's
    fused score, which is not a similarity."""
    import numpy as np

    from memdb.core.embeddings import embed_checked

    def cosine(query: str, passage: str) -> float:
        q = np.asarray(embed_checked(embedder, [query], query=True)[0], dtype=float)
        p = np.asarray(embed_checked(embedder, [passage])[0], dtype=float)
        return float(q @ p / np.linalg.norm(q) / np.linalg.norm(p))

    query = "Alice prefers green tea"
    with MemdbStore(fresh_db, embedder=embedder, ranking="vector",
                    index={"fields": ["text"]}) as store:
        store.put(("kb",), "one", {"text": "Alice prefers green tea"})
        store.put(("kb",), "two", {"text": "Alice prefers green tea"})
        store.put(("kb",), "far", {"text": "汽车需要换轮胎"})
        hits = store.search(("kb",), query=query)
        assert {h.key for h in hits[:2]} == {"one", "two"} and hits[2].key == "far"
        assert hits[0].score == pytest.approx(hits[1].score, abs=0.02)
        for hit in hits:  # the indexed field's own text, embedded apart (as LangGraph does)
            assert hit.score == pytest.approx(cosine(query, hit.value["text"]), abs=1e-3)
        assert hits[2].score < hits[1].score
    with MemdbStore(fresh_db, embedder=embedder, tenant="hybrid") as store:
        store.put(("kb",), "one", {"text": "Alice prefers green tea"})
        (hit,) = store.search(("kb",), query=query)
        assert hit.score != pytest.approx(cosine(query, "text: Alice prefers green tea\n[kb/one]"),
                                          abs=1e-3)
    with pytest.raises(ValueError, match="ranking"):
        MemdbStore(fresh_db, embedder=embedder, ranking="fused")


def test_values_keep_their_key_order(fresh_db: str, embedder: Any) -> None:
    value = {"zeta": 1, "a": {"yy": [{"b": 1, "aa": 2}], "x": None}, "中文键": "值", "mm": 2}
    with MemdbStore(fresh_db, embedder=embedder) as store:
        store.put(("o",), "k", value)
        for got in (store.get(("o",), "k").value, store.search(("o",))[0].value,
                    store.search(("o",), query="值")[0].value):
            assert got == value and list(got) == list(value)
            assert list(got["a"]) == ["yy", "x"] and list(got["a"]["yy"][0]) == ["b", "aa"]
        store.put(("o",), "k", {"b": 1, "a": 2})
        assert list(store.get(("o",), "k").value) == ["b", "a"]
        with pytest.raises(ValueError, match="reserved"):
            store.put(("o",), "bad", {"langgraph:order": []})


def test_comparison_on_a_missing_field_raises_like_in_memory_store(fresh_db: str,
                                                                    embedder: Any) -> None:
    oracle = InMemoryStore()
    with MemdbStore(fresh_db, embedder=embedder) as store:
        for s in (store, oracle):
            s.put(("f",), "has", {"n": 5, "text": "有字段"})
            s.put(("f",), "lacks", {"text": "没有字段"})
            with pytest.raises(TypeError):
                s.search(("f",), filter={"n": {"$gte": 1}})
            with pytest.raises(TypeError):  # whichever page is asked for
                s.search(("f",), filter={"n": {"$gte": 1}}, limit=1)
            with pytest.raises(TypeError):
                s.search(("f",), query="字段", filter={"n": {"$lt": 9}})
            # an equality first that the item fails: the comparison is never made
            assert [i.key for i in s.search(("f",), filter={"text": "有字段",
                                                             "n": {"$gte": 1}})] == ["has"]


def test_a_namespace_outlives_its_last_item(fresh_db: str, embedder: Any) -> None:
    oracle = InMemoryStore()
    with MemdbStore(fresh_db, embedder=embedder) as store:
        for s in (store, oracle):
            s.put(("users", "alice"), "k", {"v": 1})
            s.put(("users", "bob"), "k", {"v": 2})
            s.delete(("users", "alice"), "k")
        assert store.list_namespaces() == oracle.list_namespaces() == [
            ("users", "alice"), ("users", "bob")]
        assert store.search(("users", "alice")) == []

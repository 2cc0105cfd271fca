"""LangGraph's index config honoured by memdb's LangGraph store: ``index["embed"]`` (a
function, an async function or a LangChain ``Embeddings``) embeds the items, in an embedding
space of its own checked against ``index["dims"]``; with index ``fields`` (or a put's
``index=[...]``) each extracted text gets its own vector (``memdb.item_vectors``) and a
vector-ranked search scores an item by its best field, as LangGraph's stores do."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest

pytest.importorskip("langgraph.store.base")

from langchain_core.embeddings import Embeddings  # noqa: E402

from memdb.core.errors import DimensionMismatch, InvalidInput  # noqa: E402
from memdb.integrations.langgraph import AsyncMemdbStore, MemdbStore  # noqa: E402

DIMS = 24


def letters(text: str, dims: int = DIMS) -> list[float]:
    """A deterministic embedding of a text by its characters (CJK included), never zero."""
    vec = [0.0] * dims
    vec[0] = 0.01
    for ch in text:
        vec[ord(ch) % dims] += 1.0
        vec[(ord(ch) * 7 + 3) % dims] += 0.5
    return vec


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / math.sqrt(sum(x * x for x in a)) / math.sqrt(sum(y * y for y in b))


class Letters(Embeddings):
    def __init__(self) -> None:
        self.calls = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        return [letters(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        self.calls += 1
        return letters(text)


def _count(store: MemdbStore) -> int:
    with store.memory_store.core.transaction() as conn:
        return conn.execute("SELECT count(*) AS n FROM memdb.item_vectors").fetchone()["n"]


def test_each_field_has_its_vector_and_an_item_scores_by_its_best(fresh_db: str) -> None:
    embed = Letters()
    index = {"embed": embed, "dims": DIMS, "fields": ["title", "tags[*]"]}
    with MemdbStore(fresh_db, tenant="fields", index=index, ranking="vector") as store:
        assert store.index_config["embed"] is embed and store.index_config["dims"] == DIMS
        store.put(("kb",), "tea", {"title": "green tea", "tags": ["绿茶", "drink"],
                                   "body": "unindexed volcano"})
        store.put(("kb",), "car", {"title": "汽车", "tags": ["tyres"], "body": "green tea"})
        assert _count(store) == 5  # one row per extracted text: 3 + 2, body never
        # the query equals one field's text: that item scores 1.0 (the whole-item text would not)
        for query, key in [("green tea", "tea"), ("绿茶", "tea"), ("汽车", "car"),
                           ("tyres", "car")]:
            hits = store.search(("kb",), query=query)
            assert hits[0].key == key and hits[0].score == pytest.approx(1.0, abs=1e-4), query
        # every score is the best field's cosine similarity
        hits = {h.key: h.score for h in store.search(("kb",), query="drink tea")}
        q = letters("drink tea")
        assert hits["tea"] == pytest.approx(
            max(cosine(q, letters(t)) for t in ["green tea", "绿茶", "drink"]), abs=1e-4)
        assert hits["car"] == pytest.approx(
            max(cosine(q, letters(t)) for t in ["汽车", "tyres"]), abs=1e-4)
        # a put's own index=[...] replaces the item's field vectors; index=False drops them
        store.put(("kb",), "car", {"title": "汽车", "body": "volcano"}, index=["body"])
        assert _count(store) == 4
        top = store.search(("kb",), query="volcano")[0]
        assert top.key == "car" and top.score == pytest.approx(1.0, abs=1e-4)
        store.put(("kb",), "tea", {"title": "green tea"}, index=False)
        store.delete(("kb",), "car")
        assert _count(store) == 0
        assert embed.calls > 0


def test_the_store_keeps_its_normal_search_and_one_vector_per_memory(fresh_db: str) -> None:
    """memdb's own search of the same rows is unchanged: one memory per item, its content the
    indexed fields, its embedding from index["embed"]."""
    index = {"embed": Letters(), "dims": DIMS, "fields": ["title"]}
    with MemdbStore(fresh_db, tenant="normal", index=index) as store:
        store.put(("kb",), "k", {"title": "Alice 喜欢 green tea", "n": 1})
        (memory,) = store.memory_store.list()
        assert memory.content == "Alice 喜欢 green tea\n[kb/k]" and memory.has_embedding
        hits = store.memory_store.search("Alice green tea", filter={"uri_prefix": store._root})
        assert hits[0].memory.id == memory.id
        assert store.memory_store.embedder.model.startswith("langgraph:")


def test_embed_functions_and_their_dims_are_checked(fresh_db: str) -> None:
    def fn(texts: list[str]) -> list[list[float]]:
        return [letters(t) for t in texts]

    async def afn(texts: list[str]) -> list[list[float]]:
        return [letters(t) for t in texts]

    for tenant, embed in [("fn", fn), ("afn", afn)]:
        with MemdbStore(fresh_db, tenant=tenant, ranking="vector",
                        index={"embed": embed, "dims": DIMS}) as store:
            store.put(("kb",), "a", {"text": "数据库 database"})
            assert store.search(("kb",), query="数据库 database")[0].key == "a"
    # the function's vectors have another width than index["dims"]
    with MemdbStore(fresh_db, tenant="wide",
                    index={"embed": lambda t: [letters(x, 8) for x in t], "dims": 8}) as store:
        pass
    with MemdbStore(fresh_db, tenant="narrow",
                    index={"embed": lambda t: [letters(x, 8) for x in t], "dims": 6}) as store:
        with pytest.raises(DimensionMismatch, match="8-dimensional"):
            store.put(("kb",), "a", {"text": "x"})
    # the same function's space was registered with DIMS dimensions: other dims are refused
    with MemdbStore(fresh_db, tenant="fn2", index={"embed": fn, "dims": DIMS + 1}) as store:
        with pytest.raises(DimensionMismatch):
            store.put(("kb",), "a", {"text": "x"})
    # dims without embed must match memdb's own embedder
    with pytest.raises(DimensionMismatch, match="dims"):
        MemdbStore(fresh_db, index={"dims": 7})
    with pytest.raises(InvalidInput, match="dims"):
        MemdbStore(fresh_db, index={"embed": fn})


def test_async_store_scores_by_best_field(fresh_db: str) -> None:
    index = {"embed": Letters(), "dims": DIMS, "fields": ["a", "b"]}

    async def main() -> list[Any]:
        async with AsyncMemdbStore(fresh_db, tenant="async", index=index,
                                   ranking="vector") as store:
            await store.aput(("kb",), "one", {"a": "xxx", "b": "名字"})
            await store.aput(("kb",), "two", {"a": "名字", "b": "yyy"})
            return await store.asearch(("kb",), query="名字")

    hits = asyncio.run(main())
    assert {h.key for h in hits} == {"one", "two"}
    assert [h.score for h in hits] == pytest.approx([1.0, 1.0], abs=1e-4)

"""memdb as LangGraph's store: MemdbStore and AsyncMemdbStore against BaseStore's contract.

LangGraph ships no store conformance suite (langgraph-checkpoint-conformance covers
checkpointers only), so these are the expectations written down in
``langgraph.store.base``'s docstrings: put/get/delete, search with filters, paging and a
query, list_namespaces with prefix/suffix/wildcards/max_depth, TTL, batch order. Every test
runs on both stores (``lg`` fixture): the async one driven on an event loop in a thread.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import pytest

pytest.importorskip("langgraph.store.base")

from langgraph.store.base import (  # noqa: E402
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    PutOp,
    SearchItem,
    SearchOp,
)

from memdb import MemoryStore  # noqa: E402
from memdb.core.errors import InvalidInput  # noqa: E402
from memdb.integrations.langgraph import AsyncMemdbStore, MemdbStore  # noqa: E402
from tests.drivers import run  # noqa: E402

_METHODS = ("put", "get", "delete", "search", "list_namespaces", "batch")


class OnLoop:
    """An AsyncMemdbStore whose a-methods run on the test event loop (tests stay sync)."""

    def __init__(self, store: AsyncMemdbStore) -> None:
        self.store = store
        run(store.__aenter__())

    def __getattr__(self, name: str) -> Any:
        if name in _METHODS:
            method = getattr(self.store, "abatch" if name == "batch" else "a" + name)
            return lambda *a, **k: run(method(*a, **k))
        return getattr(self.store, name)

    def close(self) -> None:
        run(self.store.aclose())


def make(kind: str, dsn: str, embedder: Any, **kwargs: Any) -> Any:
    if kind == "sync":
        return MemdbStore(dsn, embedder=embedder, **kwargs)
    return OnLoop(AsyncMemdbStore(dsn, embedder=embedder, **kwargs))


@pytest.fixture(params=["sync", "async"])
def lg(request: pytest.FixtureRequest, fresh_db: str, embedder: Any) -> Any:
    store = make(request.param, fresh_db, embedder, tenant="acme")
    yield store
    store.close()


def _memories(dsn: str, embedder: Any, tenant: str = "acme") -> MemoryStore:
    return MemoryStore(dsn, tenant=tenant, embedder=embedder, gate=None)


VALUE = {"text": "Alice prefers green tea", "n": 3, "score": 0.1, "ok": True, "none": None,
         "nested": {"a": [1, 2.5, "三"], "b": {"c": "深"}}, "zh": "爱丽丝喜欢喝绿茶"}


def test_put_get_round_trip(lg: Any) -> None:
    before = datetime.now(UTC)
    lg.put(("users", "alice"), "drink", VALUE)
    item = lg.get(("users", "alice"), "drink")
    assert isinstance(item, Item)
    assert item.value == VALUE and item.key == "drink" and item.namespace == ("users", "alice")
    assert before <= item.created_at == item.updated_at <= datetime.now(UTC)
    assert lg.get(("users", "alice"), "nothing") is None
    assert lg.get(("users", "bob"), "drink") is None
    assert lg.get(("users",), "drink") is None


def test_keys_and_labels_are_data_not_paths(lg: Any) -> None:
    """Slashes, '=', '%', '~', spaces and Chinese in keys and labels name one item each."""
    odd = ["a/b", "a", "b", "=x", "%2F", "~", "a b", "钥匙", "a%2Fb"]
    for i, key in enumerate(odd):
        lg.put(("ns", "一 / 二"), key, {"i": i})
    for i, key in enumerate(odd):
        assert lg.get(("ns", "一 / 二"), key).value == {"i": i}
    assert {it.key for it in lg.search(("ns",), limit=50)} == set(odd)
    assert lg.list_namespaces() == [("ns", "一 / 二")]


def test_put_again_updates_in_place(fresh_db: str, embedder: Any) -> None:
    lg = MemdbStore(fresh_db, tenant="acme", embedder=embedder, actor="graph-7")
    lg.put(("users", "alice"), "drink", {"text": "green tea"})
    first = lg.get(("users", "alice"), "drink")
    time.sleep(0.01)
    lg.put(("users", "alice"), "drink", {"text": "black coffee", "since": 2024})
    second = lg.get(("users", "alice"), "drink")
    assert second.value == {"text": "black coffee", "since": 2024}
    assert second.created_at == first.created_at and second.updated_at > first.updated_at
    hits = lg.search(("users",), query="coffee")
    assert [h.key for h in hits] == ["drink"]
    with _memories(fresh_db, embedder) as mem:
        (row,) = mem.list(subject="langgraph", limit=10)
        assert row.metadata == second.value and "black coffee" in row.content
        assert [h.op for h in mem.history(row.id)] == ["insert", "update"]
        assert row.created_by == "graph-7"
        assert {h.actor for h in mem.history(row.id)} == {"graph-7"}
    lg.close()


def test_equal_values_under_different_keys_and_namespaces_stay_apart(lg: Any) -> None:
    """memdb bumps identical content; items with equal values are still separate items."""
    value = {"food": "pizza"}
    lg.put(("users", "alice"), "fav", value)
    lg.put(("users", "alice"), "fav2", value)
    lg.put(("users", "bob"), "fav", value)
    assert {(i.namespace, i.key) for i in lg.search(("users",))} == {
        (("users", "alice"), "fav"), (("users", "alice"), "fav2"), (("users", "bob"), "fav")}
    lg.delete(("users", "alice"), "fav")
    assert lg.get(("users", "alice"), "fav") is None
    assert lg.get(("users", "alice"), "fav2").value == value
    assert lg.get(("users", "bob"), "fav").value == value


def test_delete(lg: Any) -> None:
    lg.put(("docs",), "a", {"x": 1})
    lg.delete(("docs",), "a")
    assert lg.get(("docs",), "a") is None
    lg.delete(("docs",), "a")  # deleting nothing is not an error
    lg.put(("docs",), "a", {"x": 2})  # and the key can be used again
    assert lg.get(("docs",), "a").value == {"x": 2}
    lg.batch([PutOp(("docs",), "a", None)])
    assert lg.search(("docs",)) == []


def test_search_by_namespace_prefix_with_paging(lg: Any) -> None:
    for i in range(7):
        lg.put(("users", "alice", "notes"), f"n{i}", {"i": i})
    lg.put(("users",), "top", {"i": -1})
    lg.put(("users2",), "other", {"i": 99})
    lg.put(("usersx", "alice"), "other", {"i": 98})
    everything = lg.search(("users",), limit=100)
    assert sorted(it.value["i"] for it in everything) == [-1, 0, 1, 2, 3, 4, 5, 6]
    assert all(isinstance(it, SearchItem) and it.score is None for it in everything)
    pages = [lg.search(("users", "alice"), limit=3, offset=o) for o in (0, 3, 6)]
    assert [len(p) for p in pages] == [3, 3, 1]
    keys = [it.key for p in pages for it in p]
    assert sorted(keys) == [f"n{i}" for i in range(7)]
    assert lg.search((), limit=100).__len__() == 10
    assert lg.search(("users", "bob")) == []
    assert lg.search(("users",), limit=0) == []


def test_filters(lg: Any) -> None:
    rows = [("a", {"type": "report", "score": 5, "tags": ["x", "y"], "meta": {"lang": "zh"}}),
            ("b", {"type": "report", "score": 3, "tags": ["x"], "meta": {"lang": "en"}}),
            ("c", {"type": "memo", "score": 4.5, "tags": ["x", "y"]}),
            ("d", {"type": "memo", "score": "2"})]  # a numeric string compares, as float()
    for key, value in rows:
        lg.put(("docs",), key, value)

    def keys(flt: dict[str, Any], **kw: Any) -> list[str]:
        return sorted(it.key for it in lg.search(("docs",), filter=flt, **kw))

    assert keys({"type": "report"}) == ["a", "b"]
    assert keys({"type": {"$eq": "memo"}}) == ["c", "d"]
    assert keys({"type": {"$ne": "memo"}}) == ["a", "b"]
    assert keys({"score": {"$gt": 4}}) == ["a", "c"]
    assert keys({"score": {"$gte": 4.5}}) == ["a", "c"]
    assert keys({"score": {"$lt": 4.5}}) == ["b", "d"]
    assert keys({"score": {"$lte": 4.5, "$gt": 3}}) == ["c"]
    assert keys({"type": "report", "score": {"$gt": 4}}) == ["a"]
    assert keys({"tags": ["x", "y"]}) == ["a", "c"]  # lists compare whole, not contained
    assert keys({"tags": ["x"]}) == ["b"]
    assert keys({"meta": {"lang": "zh"}}) == ["a"]
    assert keys({"type": "nothing"}) == []
    assert keys({"score": {"$gt": 2}}, limit=1, offset=1) == ["b"]  # filter, then page
    assert keys({"type": "report"}, query="report") == ["a", "b"]
    with pytest.raises(InvalidInput, match="operator"):
        lg.search(("docs",), filter={"score": {"$regex": "x"}})


def test_query_uses_hybrid_search(lg: Any) -> None:
    lg.put(("kb",), "tea", {"text": "Alice prefers green tea in the morning"})
    lg.put(("kb",), "car", {"text": "The car needs new tyres before winter"})
    lg.put(("kb",), "serial", {"text": "Router serial number QZ-7731-K"})
    lg.put(("kb",), "zh", {"text": "爱丽丝喜欢在早上喝绿茶"})
    lg.put(("other",), "tea", {"text": "Bob prefers green tea"})
    hits = lg.search(("kb",), query="what does alice drink?", limit=2)
    assert hits[0].key in ("tea", "zh") and hits[0].score is not None
    assert lg.search(("kb",), query="QZ-7731-K", limit=1)[0].key == "serial"
    assert lg.search(("kb",), query="绿茶", limit=1)[0].key == "zh"
    assert all(h.namespace == ("kb",) for h in lg.search(("kb",), query="green tea"))
    page1 = lg.search(("kb",), query="tea", limit=2)
    page2 = lg.search(("kb",), query="tea", limit=2, offset=2)
    assert not {h.key for h in page1} & {h.key for h in page2}
    # the fused score is memdb's: the BM25 and exact routes take part, not only vectors
    mem = lg.memory_store
    flt = {"uri_prefix": "mem://langgraph/general/ns/kb/"}
    detail = (run(mem.search("QZ-7731-K", filter=flt)) if isinstance(lg, OnLoop)
              else mem.search("QZ-7731-K", filter=flt))[0].details
    assert detail["bm25_rank"] == 1 and detail["exact_rank"] == 1


def test_index_fields_choose_the_searched_text(fresh_db: str, embedder: Any) -> None:
    with MemdbStore(fresh_db, embedder=embedder, index={"fields": ["title"]}) as lg:
        lg.put(("kb",), "a", {"title": "pelican migration", "body": "volcano eruption"})
        lg.put(("kb",), "b", {"title": "volcano", "body": "x"}, index=["body"])
        lg.put(("kb",), "c", {"title": "volcano eruption"}, index=False)
        assert [h.key for h in lg.search(("kb",), query="pelican")][:1] == ["a"]
        content = {m.uri.rsplit("=", 1)[1]: m.content for m in lg.memory_store.list()}
        assert content == {"a": "pelican migration\n[kb/a]", "b": "x\n[kb/b]", "c": "[kb/c]"}
        # only indexed text is searched by words: "volcano" is in no indexed field
        hits = lg.memory_store.search("volcano", filter={"uri_prefix": lg._root})
        assert all(h.details["bm25_rank"] is None for h in hits)
        assert lg.get(("kb",), "c").value == {"title": "volcano eruption"}
    # index["embed"] sets the embedder of the store it opens: with embedder= it is ambiguous
    with pytest.raises(InvalidInput, match="embedder="):
        MemdbStore(fresh_db, embedder=embedder,
                   index={"dims": 3, "embed": lambda t: [[1.0] * 3 for _ in t]})


def test_list_namespaces(lg: Any) -> None:
    for ns in [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f"),
               ("a", "c", "f"), ("x", "v1")]:
        lg.put(ns, "k", {"v": 1})
    assert lg.list_namespaces(prefix=("a", "b"), max_depth=3) == [
        ("a", "b", "c"), ("a", "b", "d"), ("a", "b", "f")]
    assert lg.list_namespaces(suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert lg.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert lg.list_namespaces(prefix=("a",), suffix=("d", "*")) == [
        ("a", "b", "d", "e"), ("a", "b", "d", "i")]
    assert lg.list_namespaces(max_depth=1) == [("a",), ("x",)]
    everything = lg.list_namespaces()
    assert len(everything) == 6 and everything == sorted(everything)
    assert lg.list_namespaces(limit=2, offset=1) == everything[1:3]
    # as in LangGraph's InMemoryStore, a namespace stays listed once its last item is deleted
    lg.delete(("x", "v1"), "k")
    assert lg.list_namespaces(prefix=("x",)) == [("x", "v1")]
    assert lg.search(("x",)) == []


def test_batch_reads_before_puts_and_last_put_wins(lg: Any) -> None:
    lg.put(("b",), "k", {"v": 0})
    results = lg.batch([
        PutOp(("b",), "k", {"v": 1}),
        GetOp(("b",), "k"),
        PutOp(("b",), "k", {"v": 2}),
        SearchOp(("b",)),
        ListNamespacesOp(),
        PutOp(("b",), "new", {"v": 3}),
    ])
    assert results[0] is None and results[2] is None and results[5] is None
    assert results[1].value == {"v": 0} and [i.value for i in results[3]] == [{"v": 0}]
    assert results[4] == [("b",)]
    assert lg.get(("b",), "k").value == {"v": 2} and lg.get(("b",), "new").value == {"v": 3}


def _expires(mem: MemoryStore) -> dict[str, datetime | None]:
    return {m.uri.rsplit("=", 1)[1]: m.expires_at for m in mem.list(limit=100)}


def test_ttl(fresh_db: str, embedder: Any, raw: Any) -> None:
    lg = MemdbStore(fresh_db, embedder=embedder, ttl={"default_ttl": 10})
    mem = _memories(fresh_db, embedder, "default")
    lg.put(("t",), "default", {"v": 1})
    lg.put(("t",), "short", {"v": 2}, ttl=1)
    lg.put(("t",), "forever", {"v": 3}, ttl=None)
    exp = _expires(mem)
    now = datetime.now(UTC)
    assert exp["forever"] is None
    assert 9.5 * 60 < (exp["default"] - now).total_seconds() <= 600
    assert 50 < (exp["short"] - now).total_seconds() <= 60
    # reads renew a TTL (refresh_on_read defaults to true); refresh_ttl=False leaves it
    raw.execute("UPDATE memdb.memories SET expires_at = now() + interval '5 seconds' "
                "WHERE expires_at IS NOT NULL")
    lg.get(("t",), "short", refresh_ttl=False)
    assert (_expires(mem)["short"] - datetime.now(UTC)).total_seconds() < 6
    lg.get(("t",), "short")
    assert (_expires(mem)["short"] - datetime.now(UTC)).total_seconds() > 50
    lg.search(("t",), refresh_ttl=True)
    assert (_expires(mem)["default"] - datetime.now(UTC)).total_seconds() > 500
    assert _expires(mem)["forever"] is None
    # an expired item is gone for every read, and a put makes it new
    raw.execute("UPDATE memdb.memories SET expires_at = now() - interval '1 second' "
                "WHERE uri LIKE '%=short'")
    assert lg.get(("t",), "short") is None
    assert "short" not in {i.key for i in lg.search(("t",))}
    assert "short" not in {i.key for i in lg.search(("t",), query="2")}
    lg.put(("t",), "short", {"v": 22}, ttl=1)
    item = lg.get(("t",), "short")
    assert item.value == {"v": 22} and item.created_at == item.updated_at
    with pytest.raises(InvalidInput, match="ttl"):
        lg.put(("t",), "bad", {"v": 1}, ttl=-1)
    with pytest.raises(InvalidInput, match="ttl"):
        MemdbStore(fresh_db, ttl={"default_ttl": 0})
    lg.close()
    mem.close()


def test_bad_input_is_refused_and_changes_nothing(lg: Any) -> None:
    with pytest.raises(InvalidNamespaceError):
        lg.put(("a.b",), "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        lg.put(("langgraph", "x"), "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        lg.put((), "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        lg.batch([GetOp(("a.b",), "k")])
    with pytest.raises(InvalidInput):
        lg.put(("a",), "k", {"v": float("nan")})
    with pytest.raises(InvalidInput):
        lg.batch([PutOp(("a",), "ok", {"v": 1}), PutOp(("a",), "k", {"v": object()})])
    with pytest.raises(InvalidInput):
        lg.put(("a",), "k", {"big": "x" * 70_000})
    assert lg.search(()) == [] and lg.list_namespaces() == []


def test_tenants_never_see_each_other(fresh_db: str, embedder: Any) -> None:
    a = MemdbStore(fresh_db, tenant="tenant-a", embedder=embedder)
    b = make("async", fresh_db, embedder, tenant="tenant-b")
    try:
        a.put(("users", "alice"), "secret", {"text": "A's green tea secret"})
        b.put(("users", "alice"), "secret", {"text": "B's black coffee secret"})
        b.put(("users", "bob"), "only-b", {"text": "green tea"})
        assert a.get(("users", "alice"), "secret").value["text"].startswith("A's")
        assert b.get(("users", "alice"), "secret").value["text"].startswith("B's")
        assert a.get(("users", "bob"), "only-b") is None
        assert {(i.namespace, i.value["text"]) for i in a.search((), query="green tea")} == {
            (("users", "alice"), "A's green tea secret")}
        assert a.list_namespaces() == [("users", "alice")]
        a.delete(("users", "alice"), "secret")
        assert b.get(("users", "alice"), "secret") is not None
    finally:
        a.close()
        b.close()


def test_langgraph_is_optional() -> None:
    """`import memdb` works without LangGraph; the integration names the extra."""
    import subprocess
    import sys

    code = ("import sys; sys.modules['langgraph'] = None; import memdb\n"
            "from memdb.core.errors import MissingDependency\n"
            "try:\n    import memdb.integrations.langgraph\n"
            "except MissingDependency as exc:\n    print('missing:', exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert "pip install 'memdb[langgraph]'" in out


def test_get_uses_the_norm_key_index(fresh_db: str, embedder: Any, raw: Any) -> None:
    """An item is found through memories_norm_key_idx, not by scanning the subject's rows."""
    from memdb.core import sql
    from memdb.integrations import _langgraph_map as lgm

    with MemdbStore(fresh_db, embedder=embedder) as lg:
        lg.batch([PutOp(("p", str(i % 7)), f"k{i}", {"i": i}, index=False)
                  for i in range(300)])
        raw.execute("ANALYZE memdb.memories")
        uri = lgm.item_uri(lg._root, ("p", "3"), "k3")
        with lg.memory_store.core.transaction() as conn:
            plan = "\n".join(r["QUERY PLAN"] for r in conn.execute(
                "EXPLAIN " + sql.query("langgraph_get"),
                {"tenant": lg.tenant, "subject": lg.subject, "category": lg.category,
                 "uris": [uri], "keys": [lgm.norm_key(uri)]}).fetchall())
        assert "memories_norm_key_idx" in plan, plan
        assert lg.get(("p", "3"), "k3").value == {"i": 3}


def test_concurrent_first_puts_of_one_key_leave_one_item(fresh_db: str, embedder: Any) -> None:
    import threading

    stores = [MemdbStore(fresh_db, embedder=embedder) for _ in range(4)]
    barrier = threading.Barrier(len(stores))

    def put(n: int) -> None:
        barrier.wait()
        stores[n].put(("race",), "key", {"writer": n})

    threads = [threading.Thread(target=put, args=(n,)) for n in range(len(stores))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        with _memories(fresh_db, embedder, "default") as mem:
            current = mem.list(uri_prefix=stores[0]._root + "race/")
        assert len(current) == 1
        assert stores[0].get(("race",), "key").value == current[0].metadata
        assert [i.key for i in stores[1].search(("race",))] == ["key"]
    finally:
        for s in stores:
            s.close()


def test_the_sync_store_serves_async_callers(fresh_db: str, embedder: Any) -> None:
    """MemdbStore's a-methods (an async graph given the sync store) run its batch in a
    worker thread: the same results as the sync calls."""
    import asyncio

    async def main(lg: MemdbStore) -> tuple[Any, list[Any]]:
        await lg.aput(("a",), "k", {"text": "绿茶 green tea"})
        return await lg.aget(("a",), "k"), await lg.asearch(("a",), query="绿茶")

    with MemdbStore(fresh_db, embedder=embedder) as lg:
        item, hits = asyncio.run(main(lg))
        assert item == lg.get(("a",), "k") and [h.key for h in hits] == ["k"]


def test_a_store_of_the_wrong_kind_is_refused_before_anything_opens(fresh_db, embedder):
    """MemdbStore takes a MemoryStore, AsyncMemdbStore an AsyncMemoryStore; anything else is
    InvalidInput naming what was expected (the one _own_store check both constructors use)."""
    with MemoryStore(fresh_db, embedder=embedder, gate=None) as sync_store:
        with pytest.raises(InvalidInput, match="memdb AsyncMemoryStore, got MemoryStore"):
            AsyncMemdbStore(store=sync_store)
    with pytest.raises(InvalidInput, match="memdb MemoryStore, got dict"):
        MemdbStore(store={})

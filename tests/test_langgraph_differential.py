"""memdb's LangGraph store beside LangGraph's own InMemoryStore, as an oracle: random sequences
of puts, gets, deletes, searches (with and without a query and filters) and list_namespaces
calls (prefixes, suffixes, wildcards, max_depth, paging), with TTL refreshes on reads, run on
both; values (with their key order), keys, order and error types must agree. Where memdb
differs on purpose (docs/langgraph.md), the oracle's answer is adjusted by a stated rule:

* order without a query: most recently updated first (InMemoryStore keeps insertion order);
  a read that renews an item's TTL updates it (InMemoryStore has no TTL);
* a query: the same set of items (memdb ranks them; InMemoryStore without an index does not);
* list_namespaces: the namespaces that ever held an item (InMemoryStore also lists the ones a
  get or a delete merely touched).
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from typing import Any

import pytest

pytest.importorskip("langgraph.store.base")
hypothesis = pytest.importorskip("hypothesis")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from langgraph.store.memory import InMemoryStore  # noqa: E402

from memdb import MemoryStore  # noqa: E402
from memdb.integrations.langgraph import AsyncMemdbStore, MemdbStore  # noqa: E402

LABELS = st.sampled_from(["a", "b", "用户", "x y"])
NAMESPACES = st.lists(LABELS, min_size=1, max_size=3).map(tuple)
KEYS = st.sampled_from(["k1", "k2", "钥匙", "a/b"])
FIELDS = st.sampled_from(["n", "text", "zz", "a", "中文"])
SCALARS = st.one_of(st.integers(-3, 3), st.sampled_from(["red", "绿", "3"]), st.booleans(),
                    st.none())
VALUES = st.dictionaries(FIELDS, st.one_of(SCALARS, st.dictionaries(FIELDS, SCALARS,
                                                                    max_size=2)), max_size=4)
FILTERS = st.one_of(
    st.none(),
    st.fixed_dictionaries({"n": st.integers(-3, 3)}),
    st.fixed_dictionaries({"text": st.sampled_from(["red", "绿"])}),
    st.fixed_dictionaries({"n": st.fixed_dictionaries({"$ne": st.integers(-1, 1)})}),
    st.fixed_dictionaries({"n": st.fixed_dictionaries({"$gte": st.integers(-1, 1)})}),
    st.fixed_dictionaries({"text": st.just("red"),
                           "n": st.fixed_dictionaries({"$lt": st.integers(0, 2)})}),
)
PATTERNS = st.lists(st.sampled_from(["a", "b", "用户", "x y", "*"]), min_size=1, max_size=2)

OPS = st.one_of(
    st.tuples(st.just("put"), NAMESPACES, KEYS, VALUES),
    st.tuples(st.just("get"), NAMESPACES, KEYS, st.booleans()),
    st.tuples(st.just("delete"), NAMESPACES, KEYS),
    st.tuples(st.just("search"), st.lists(LABELS, max_size=2).map(tuple), FILTERS,
              st.integers(0, 4), st.integers(0, 3)),
    st.tuples(st.just("query"), st.lists(LABELS, max_size=2).map(tuple), FILTERS,
              st.sampled_from(["red", "绿色 green", "3"])),
    st.tuples(st.just("namespaces"), st.none() | PATTERNS.map(tuple),
              st.none() | PATTERNS.map(tuple), st.none() | st.integers(1, 3),
              st.integers(1, 5), st.integers(0, 2)),
)

_tenants = itertools.count()


def _outcome(fn: Any) -> tuple[str, Any]:
    try:
        return "ok", fn()
    except Exception as exc:  # noqa: BLE001 (compared by type)
        return "error", exc


def _same_error(mine: Any, theirs: Any) -> None:
    assert mine[0] == theirs[0] == "error", (mine, theirs)
    assert isinstance(mine[1], type(theirs[1])), (mine[1], theirs[1])


def _item(item: Any) -> tuple[Any, ...]:
    return None if item is None else (item.namespace, item.key, item.value, list(item.value))


class Model:
    """What the oracle cannot say: when each item was last updated, which namespaces held
    an item."""

    def __init__(self) -> None:
        self.clock = itertools.count()
        self.updated: dict[tuple[tuple[str, ...], str], int] = {}
        self.held: set[tuple[str, ...]] = set()

    def order(self, items: list[Any]) -> list[Any]:
        return sorted(items, key=lambda i: -self.updated[(i.namespace, i.key)])


def _step(op: tuple[Any, ...], mine: MemdbStore, oracle: InMemoryStore, model: Model) -> None:
    kind = op[0]
    if kind == "put":
        _, ns, key, value = op
        a, b = _outcome(lambda: mine.put(ns, key, value)), _outcome(
            lambda: oracle.put(ns, key, value))
        assert a[0] == b[0] == "ok", (a, b)
        model.updated[(ns, key)] = next(model.clock)
        model.held.add(ns)
    elif kind == "get":
        _, ns, key, refresh = op
        got, want = mine.get(ns, key, refresh_ttl=refresh), oracle.get(ns, key)
        assert _item(got) == _item(want)
        if got is not None and refresh:  # renewing the TTL is an update in memdb
            model.updated[(ns, key)] = next(model.clock)
    elif kind == "delete":
        _, ns, key = op
        mine.delete(ns, key)
        oracle.delete(ns, key)
        model.updated.pop((ns, key), None)
    elif kind == "search":
        _, prefix, flt, limit, offset = op
        a = _outcome(lambda: mine.search(prefix, filter=flt, limit=limit, offset=offset,
                                         refresh_ttl=False))
        b = _outcome(lambda: oracle.search(prefix, filter=flt, limit=1000))
        if b[0] == "error":
            _same_error(a, b)
            return
        assert a[0] == "ok", a
        want = model.order(b[1])[offset:offset + limit]
        assert [_item(i) for i in a[1]] == [_item(i) for i in want]
        assert all(i.score is None for i in a[1])
    elif kind == "query":
        _, prefix, flt, query = op
        a = _outcome(lambda: mine.search(prefix, query=query, filter=flt, limit=100,
                                         refresh_ttl=False))
        b = _outcome(lambda: oracle.search(prefix, query=query, filter=flt, limit=100))
        if b[0] == "error":
            _same_error(a, b)
            return
        assert a[0] == "ok", a
        assert sorted(map(repr, map(_item, a[1]))) == sorted(map(repr, map(_item, b[1])))
    else:
        _, prefix, suffix, depth, limit, offset = op
        a = _outcome(lambda: mine.list_namespaces(prefix=prefix, suffix=suffix,
                                                  max_depth=depth, limit=limit, offset=offset))
        b = _outcome(lambda: oracle.list_namespaces(prefix=prefix, suffix=suffix, limit=10_000))
        if b[0] == "error":
            _same_error(a, b)
            return
        assert a[0] == "ok", a
        held = [ns for ns in b[1] if ns in model.held]
        if depth is not None:
            held = sorted({ns[:depth] for ns in held})
        assert a[1] == held[offset:offset + limit]


@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow])
@given(ops=st.lists(OPS, min_size=1, max_size=14))
def test_memdb_store_agrees_with_in_memory_store(module_db: str, embedder: Any,
                                                 ops: list[tuple[Any, ...]]) -> None:
    memories = MemoryStore(module_db, tenant=f"diff-{next(_tenants)}", embedder=embedder,
                           gate=None, subject="langgraph")
    mine = MemdbStore(store=memories, ttl={"default_ttl": 60})
    oracle, model = InMemoryStore(), Model()
    try:
        for op in ops:
            _step(op, mine, oracle, model)
    finally:
        memories.close()


def test_concurrent_puts_agree_with_in_memory_store(module_db: str, embedder: Any) -> None:
    """Puts of one key from 12 threads, then from 24 asyncio tasks: both stores end with one
    item holding one of the values written, and then agree on every read."""
    tenant = f"diff-{next(_tenants)}"
    values = [{"writer": n, "text": f"写入 {n}"} for n in range(24)]
    mine = MemdbStore(module_db, tenant=tenant, embedder=embedder, pool_size=6)
    oracle = InMemoryStore()
    try:
        for store in (mine, oracle):
            barrier = threading.Barrier(12)

            def put(n: int, store: Any = store, barrier: Any = barrier) -> None:
                barrier.wait()
                store.put(("race",), "key", values[n])

            threads = [threading.Thread(target=put, args=(n,)) for n in range(12)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert store.get(("race",), "key").value in values[:12]
            assert [i.key for i in store.search(("race",))] == ["key"]
    finally:
        mine.close()

    async def tasks(store: Any) -> Any:
        await asyncio.gather(*(store.aput(("race",), "key", v) for v in values))
        return await store.aget(("race",), "key"), await store.asearch(("race",))

    async def on_memdb() -> Any:
        async with AsyncMemdbStore(module_db, tenant=tenant, embedder=embedder) as store:
            return await tasks(store)

    (got, hits), (want, oracle_hits) = asyncio.run(on_memdb()), asyncio.run(tasks(oracle))
    assert _item(got) == _item(want) == (("race",), "key", values[-1], list(values[-1]))
    assert [_item(h) for h in hits] == [_item(h) for h in oracle_hits]

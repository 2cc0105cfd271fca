"""AsyncMemoryStore: the same surface as MemoryStore, written once, native on asyncio.

The behaviour tests of the core modules run on both drivers (conftest.BOTH_DRIVERS and
tests/drivers.py); this module checks what is particular to the async driver: the surfaces
match name for name and signature for signature, no operation body exists twice, nothing
blocks the event loop (the local embedder runs in worker threads, the OpenAI-compatible
clients are the async ones, a slow LLM is abandoned by a cancelled task), and concurrent
coroutines neither duplicate nor lose writes. LLM and embedding endpoints are faked only by
the canned server of tests/canned_openai.py, talked to by the real ``openai`` client.
"""

from __future__ import annotations

import ast
import asyncio
import functools
import inspect
import json
import threading
import time
import typing
from pathlib import Path

import pytest

import memdb
from memdb import AsyncMemoryStore, MemoryStore, OpenAIEmbedder
from memdb.core.family import Family
from memdb.core.llm import ChatLLM
from memdb.families.aio import async_class
from memdb.families.tool import MemoryTool
from tests.canned_openai import CannedOpenAI, Delay, Reply

PACKAGE = Path(memdb.__file__).parent


def _public(cls: type) -> dict[str, object]:
    return {n: inspect.getattr_static(cls, n) for n in dir(cls) if not n.startswith("_")}


def _family_classes(cls: type) -> dict[str, type]:
    """The families a class exposes: properties whose return annotation is a Family."""
    found = {}
    for name, raw in _public(cls).items():
        fget = raw.fget if isinstance(raw, property) else getattr(raw, "func", None)
        if fget is None:
            continue
        hint = typing.get_type_hints(fget).get("return")
        if isinstance(hint, type) and issubclass(hint, Family):
            found[name] = hint
    return found


def _surfaces() -> list[tuple[str, type, type]]:
    pairs = [("MemoryStore", MemoryStore, AsyncMemoryStore),
             ("MemoryTool", MemoryTool, async_class(MemoryTool))]
    for name, family in _family_classes(MemoryStore).items():
        pairs.append((f"store.{name}", family, async_class(family)))
    return pairs


@pytest.mark.parametrize("label,sync_cls,async_cls", _surfaces(), ids=lambda x: str(x)[:40])
def test_surfaces_match_name_for_name_and_signature_for_signature(label, sync_cls, async_cls):
    sync_api, async_api = _public(sync_cls), _public(async_cls)
    assert sorted(sync_api) == sorted(async_api), label
    for name, raw in sync_api.items():
        twin = async_api[name]
        if inspect.isfunction(raw):
            assert inspect.signature(raw) == inspect.signature(twin), f"{label}.{name}"
            no_io = getattr(raw, "__memdb_no_io__", False)
            assert inspect.iscoroutinefunction(twin) is not no_io, f"{label}.{name}"
            assert not inspect.iscoroutinefunction(raw), f"{label}.{name}"
        else:  # properties, settings, static helpers: the same kind of thing on both
            assert isinstance(twin, (property, staticmethod, classmethod)), f"{label}.{name}"


def test_the_store_has_families_and_only_named_methods_skip_the_loop():
    """Every I/O operation is a coroutine; the plain ones are few and listed here."""
    assert _family_classes(MemoryStore), "the store exposes its families as typed properties"
    plain = sorted(f"{label}.{n}" for label, cls, _ in _surfaces()
                   for n, raw in _public(cls).items()
                   if inspect.isfunction(raw) and getattr(raw, "__memdb_no_io__", False))
    # consistency() sets a context variable for a block of reads (docs/scaling.md);
    # jobs.start_worker() starts threads that connect on their own (docs/jobs.md)
    assert plain == ["MemoryStore.consistency", "MemoryStore.tool", "MemoryTool.schema",
                     "store.jobs.start_worker"]


def test_operations_are_written_once():
    """No sync/async twins in memdb/: coroutines are defined only by the bridge and the
    derivation (the async classes have no hand-written operation bodies)."""
    allowed = {"bridge.py", "_async_pg.py", "aio.py",
               # BaseStore's abstract abatch must be a coroutine: it delegates the one
               # batch body to _bridge.run (AsyncMemdbStore) or a thread (MemdbStore)
               "langgraph.py",
               # ... and the batcher that groups concurrent async calls into one batch (as
               # LangGraph's AsyncBatchedBaseStore does): scheduling, no operation body
               "_langgraph_batch.py",
               # what both doors hold: the key checker (keys.lookup through _bridge.run) and
               # the store cache (async context managers over AsyncMemoryStore)
               "_doors.py"}
    # the doors: the MCP SDK and FastAPI call coroutine handlers, which await AsyncMemoryStore
    doors = {"mcp", "http", "ui"}  # (ui: the memory browser's pages are FastAPI handlers)
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if any(isinstance(n, ast.AsyncFunctionDef) for n in ast.walk(tree)) \
                and path.name not in allowed \
                and not doors & set(path.relative_to(PACKAGE).parts[:-1]):
            offenders.append(str(path.relative_to(PACKAGE)))
    assert offenders == []
    assert all(not inspect.iscoroutinefunction(getattr(AsyncMemoryStore, n))
               or getattr(AsyncMemoryStore, n).__wrapped__ is getattr(MemoryStore, n)
               for n in _public(MemoryStore) if inspect.isfunction(getattr(MemoryStore, n)))


class ThreadRecorder:
    """The fixture embedder, recording the thread each call runs in."""

    def __init__(self, inner) -> None:
        self.inner, self.model, self.dims = inner, inner.model, inner.dims
        self.threads: set[int] = set()

    def embed_passages(self, texts):
        self.threads.add(threading.get_ident())
        return self.inner.embed_passages(texts)

    def embed_queries(self, texts):
        self.threads.add(threading.get_ident())
        return self.inner.embed_queries(texts)


def test_the_local_embedder_runs_off_the_event_loop(fresh_db, embedder):
    recorder = ThreadRecorder(embedder)

    async def main() -> int:
        async with AsyncMemoryStore(fresh_db, embedder=recorder, gate=None) as store:
            await store.add("Alice prefers green tea", subject="alice")
            await asyncio.gather(*(store.search("茶", subject="alice") for _ in range(4)))
        return threading.get_ident()

    loop_thread = asyncio.run(main())
    assert recorder.threads and loop_thread not in recorder.threads


def test_the_openai_embedder_uses_the_async_client(fresh_db):
    with CannedOpenAI(dims=16) as api:
        embedder = OpenAIEmbedder("canned-16", 16, base_url=api.base_url, api_key="k")
        embedder._client = None  # any synchronous request would now fail loudly

        async def main():
            async with AsyncMemoryStore(fresh_db, embedder=embedder, gate=None) as store:
                await store.add("我对花生过敏", subject="bob")
                return await store.search("花生", subject="bob")

        hits = asyncio.run(main())
        assert [h.memory.content for h in hits] == ["我对花生过敏"]
        assert embedder._async_client is not None and len(api.requests) == 2


def _ticks_during(coro_factory):
    """Run the coroutine with a 20 ms ticker beside it: (result, ticks, seconds)."""
    async def main():
        ticks = 0
        done = asyncio.Event()

        async def ticker():
            nonlocal ticks
            while not done.is_set():
                await asyncio.sleep(0.02)
                ticks += 1

        task = asyncio.create_task(ticker())
        started = time.perf_counter()
        try:
            result = await coro_factory()
        finally:
            done.set()
            await task
        return result, ticks, time.perf_counter() - started

    return asyncio.run(main())


def test_a_slow_llm_is_abandoned_and_the_loop_keeps_running(fresh_db, embedder):
    """Canned model answering after 6 s; remember's bound is 0.5 s: the heuristic path is
    taken well before the answer (the 5 s bound leaves room for opening the store and embedding
    on a loaded machine), and the loop served the ticker meanwhile (a blocked loop ticks 0
    times)."""
    late = json.dumps({"facts": [{"content": "I prefer window seats",
                                  "category": "preferences"}]})
    with CannedOpenAI([Delay(6.0, late)]) as api:
        async def remember():
            async with AsyncMemoryStore(fresh_db, embedder=embedder) as store:
                return await store.remember("I prefer aisle seats on long flights.",
                                            llm=ChatLLM(api.base_url, model="canned"),
                                            timeout=0.5)

        result, ticks, seconds = _ticks_during(remember)
    assert result.path == "heuristic" and result.fallback_reason.startswith("timeout")
    assert seconds < 5.0 and ticks >= 10, (seconds, ticks)


def test_the_llm_answers_through_the_async_client(fresh_db, embedder):
    reply = json.dumps({"facts": [{"content": "用户喜欢乌龙茶", "category": "preferences"}]})
    with CannedOpenAI([Reply(reply)]) as api:
        llm = ChatLLM(api.base_url, model="canned")
        llm._client = None  # a synchronous request would fail

        async def main():
            async with AsyncMemoryStore(fresh_db, embedder=embedder) as store:
                return await store.remember("我喜欢喝乌龙茶。", llm=llm)

        result = asyncio.run(main())
    assert result.path == "llm" and llm._async_client is not None


def test_concurrent_coroutines_neither_duplicate_nor_lose_writes(fresh_db, embedder):
    async def main():
        async with AsyncMemoryStore(fresh_db, embedder=embedder, gate=None,
                                    pool_size=4) as store:
            same = await asyncio.gather(*(store.add("Bob is allergic to peanuts",
                                                    subject="bob") for _ in range(12)))
            distinct = await asyncio.gather(*(store.add(f"fact {i}: 事实 {i}", subject="bob")
                                              for i in range(24)))
            return same, distinct, await store.count()

    same, distinct, count = asyncio.run(main())
    assert sum(r.created for r in same) == 1 and len({r.id for r in same}) == 1
    assert all(r.created for r in distinct) and len({r.id for r in distinct}) == 24
    assert count == 25


def test_lazy_open_close_and_errors(fresh_db, embedder):
    async def main():
        store = AsyncMemoryStore(fresh_db, embedder=embedder, gate=None)
        assert "password" not in repr(store)
        added = await store.add("lazy open works", subject="carol")  # no `async with`
        got = await store.get(added.id)
        with pytest.raises(memdb.NotFound):
            await store.get("00000000-0000-0000-0000-000000000000")
        with pytest.raises(memdb.InvalidInput):
            await store.add("", subject="carol")
        await store.close()
        return got

    assert asyncio.run(main()).content == "lazy open works"
    with pytest.raises(memdb.InvalidInput):
        AsyncMemoryStore(fresh_db, tenant="a\x00b")  # checked before any I/O


def test_sync_code_cannot_reach_the_async_pool_by_accident(fresh_db, embedder):
    store = AsyncMemoryStore(fresh_db, embedder=embedder, gate=None)
    core = store._sync
    core.db.connect()
    with pytest.raises(RuntimeError, match="async driver"):
        core.get("00000000-0000-0000-0000-000000000000")
    functools.partial(core.db.close)()


def test_every_embedding_goes_through_the_checked_bridge():
    """Library code embeds only through embeddings.embed_checked (checked vectors; the local
    model off the loop under the async driver), never by calling an embedder directly."""
    allowed = {"embeddings.py", "demo.py"}  # the embedders themselves; the demo's warm-up
    direct = []
    for path in PACKAGE.rglob("*.py"):
        if path.name in allowed or "evaluation" in path.parts:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if ".embed_passages(" in line or ".embed_queries(" in line:
                if "def embed_" not in line:
                    direct.append(f"{path.relative_to(PACKAGE)}:{number}")
    assert direct == []


def test_dir_shows_the_shape_and_no_old_names(fresh_db, embedder):
    """dir(store) lists the core verbs and the families; the old flat names are gone."""
    with MemoryStore(fresh_db, embedder=embedder, gate=None) as store:
        shown = {n for n in dir(store) if not n.startswith("_")}
        assert {"sessions", "documents", "maintenance", "search", "recall"} <= shown
        assert not shown & {"add_message", "search_documents", "maintain", "token_counter"}
        assert not hasattr(store, "add_message") and not hasattr(store, "maintain")
        assert len({n for n in shown if callable(getattr(store, n))}) < 40
        astore = AsyncMemoryStore(fresh_db, embedder=embedder, gate=None)
        assert {n for n in dir(astore) if not n.startswith("_")} == shown

"""Concurrent writers of the same content make exactly one memory: threads sharing a store,
threads with stores of their own, separate processes, and overlapping batches.

Vectors are precomputed (deterministic random unit vectors) so the writers collide in the
database rather than queue behind the embedder.
"""

from __future__ import annotations

import multiprocessing as mp
import random
import threading
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import psycopg
import pytest

import memdb.families.store
from memdb import AddResult, DatabaseError, DatabaseUnavailable, MemoryStore
from memdb.core.errors import translate

DIMS = 384
THREADS = 8


def unit_vector(seed: int) -> list[float]:
    v = np.random.default_rng(seed).normal(size=DIMS)
    return (v / np.linalg.norm(v)).tolist()


def race(n: int, work: Callable[[int], object]) -> list:
    """Run work(0..n-1) in n threads released together; results in thread order."""
    barrier = threading.Barrier(n, timeout=30)

    def run(i: int) -> object:
        barrier.wait()
        return work(i)

    with ThreadPoolExecutor(max_workers=n) as pool:
        return list(pool.map(run, range(n), timeout=120))


def rows(raw, content: str | None = None) -> int:
    if content is None:
        return raw.execute("SELECT count(*) FROM memdb.memories").fetchone()[0]
    return raw.execute(
        "SELECT count(*) FROM memdb.memories WHERE content_hash = memdb.content_hash(%s)",
        (content,),
    ).fetchone()[0]


def assert_one_winner(results: list[AddResult]) -> None:
    assert len({r.id for r in results}) == 1, results
    assert sum(r.created for r in results) == 1, results


def test_threads_one_store_same_content(store, raw):
    store.space_id()  # (also exercised concurrently below, in a fresh store)
    for round_ in range(5):
        text = f"Round {round_}: 张三 prefers window seats 靠窗"
        vector = unit_vector(round_)
        results = race(THREADS, lambda i, t=text, v=vector: store.add(t, embedding=v))
        assert_one_winner(results)
        assert rows(raw, text) == 1
        assert store.get(results[0].id).access_count == THREADS - 1
    assert rows(raw) == 5
    history = raw.execute(
        "SELECT op, count(*) FROM memdb.memory_history GROUP BY op"
    ).fetchall()
    assert dict(history) == {"insert": 5}  # bumps change no stored field: no history rows


def test_threads_one_store_variants_of_same_text_real_embedder(store, raw):
    """Through the real embedder, and with texts that only normalize to the same thing."""
    variants = ["Lisa likes React", "lisa LIKES react", "  Lisa likes React  ",
                "Ｌｉｓａ ｌｉｋｅｓ Ｒｅａｃｔ", "Lisa\tlikes\nReact", "LISA LIKES REACT",
                "lisa likes react", "Lisa likes  React"]
    results = race(THREADS, lambda i: store.add(variants[i], subject="lisa", importance=i / 10))
    assert_one_winner(results)
    assert rows(raw) == 1
    m = store.get(results[0].id)
    assert m.has_embedding and m.access_count == THREADS - 1
    assert m.importance == pytest.approx(0.7)  # the highest of all writers
    assert m.content in variants


def test_threads_separate_stores_same_content(fresh_db, embedder, raw):
    """Each thread has its own store (own pool); the first use also registers the embedding
    space concurrently."""
    stores = [MemoryStore(fresh_db, embedder=embedder, pool_size=1,
                          gate=None) for _ in range(THREADS)]
    try:
        for round_ in range(3):
            text = f"Meeting {round_} moved to room 4B"
            vector = unit_vector(100 + round_)
            results = race(THREADS, lambda i, t=text, v=vector: stores[i].add(t, embedding=v))
            assert_one_winner(results)
            assert rows(raw, text) == 1
        assert len({st.space_id() for st in stores}) == 1
    finally:
        for st in stores:
            st.close()
    assert rows(raw) == 3
    assert raw.execute("SELECT count(*) FROM memdb.embedding_spaces").fetchone()[0] == 1


def test_threads_same_content_other_subjects_are_separate(store, raw):
    results = race(THREADS, lambda i: store.add("shared sentence", subject=f"user{i % 4}",
                                                embedding=unit_vector(7)))
    assert len({r.id for r in results}) == 4
    assert sum(r.created for r in results) == 4
    assert rows(raw) == 4


def test_concurrent_overlapping_add_many(store, raw, monkeypatch):
    """Batches that overlap in different orders (the classic deadlock shape) all succeed and
    leave each content once. One statement per batch locks its keys in key order, so this
    needs no retry: retries are turned off."""
    monkeypatch.setattr(memdb.families.store, "_WRITE_ATTEMPTS", 1)
    contents = [f"fact {n}: 项目{n}的截止日期" for n in range(40)]
    vectors = {c: unit_vector(200 + n) for n, c in enumerate(contents)}
    rng = random.Random(11)
    batches = []
    for i in range(THREADS):
        batch = contents[(i * 5) % 40:] + contents[:(i * 5) % 40]  # every batch has all 40
        batch = batch[: 20 + i * 2]
        if i % 2:
            batch.reverse()
        else:
            rng.shuffle(batch)
        batches.append(batch)

    def work(i: int) -> list[AddResult]:
        return store.add_many([{"content": c, "embedding": vectors[c]} for c in batches[i]])

    for _ in range(3):
        results = race(THREADS, work)
        by_content: dict[str, set] = {}
        for batch, res in zip(batches, results, strict=True):
            assert len(res) == len(batch)
            for c, r in zip(batch, res, strict=True):
                by_content.setdefault(c, set()).add(r.id)
        assert all(len(v) == 1 for v in by_content.values())
    assert rows(raw) == len({c for b in batches for c in b})
    dup = raw.execute(
        "SELECT count(*) FROM (SELECT content_hash FROM memdb.memories "
        "GROUP BY tenant, subject, content_hash HAVING count(*) > 1) d"
    ).fetchone()[0]
    assert dup == 0


def test_concurrent_overlapping_add_many_separate_stores(fresh_db, embedder, raw):
    """Several statements per transaction (batch_size): a deadlock PostgreSQL breaks is
    retried by the store, so the callers see no error."""
    n_stores, n_items = 3, 24
    contents = [f"note {n}" for n in range(n_items)]
    vectors = [unit_vector(300 + n) for n in range(n_items)]
    stores = [MemoryStore(fresh_db, embedder=embedder, pool_size=1, gate=None)
              for _ in range(n_stores)]
    try:
        def work(i: int) -> list[AddResult]:
            order = list(range(n_items))
            random.Random(i).shuffle(order)
            return stores[i].add_many(
                [{"content": contents[n], "embedding": vectors[n]} for n in order],
                batch_size=n_items // 2)

        results = race(n_stores, work)
    finally:
        for st in stores:
            st.close()
    ids = Counter()
    created = Counter()
    for res in results:
        for r in res:
            ids[r.id] += 1
            created[r.id] += r.created
    assert len(ids) == n_items and set(ids.values()) == {n_stores}
    assert set(created.values()) == {1}
    assert rows(raw) == n_items


# -- processes ------------------------------------------------------------------------------------
CONTENTS = [f"process-shared memory #{n}: 第{n}条记忆" for n in range(20)]


def _process_worker(dsn: str, seed: int, barrier, queue) -> None:
    """Runs in a spawned process: its own MemoryStore adds the same 20 contents."""
    try:
        # the local model is never loaded: vectors are given
        with MemoryStore(dsn, gate=None) as st:
            order = list(range(len(CONTENTS)))
            random.Random(seed).shuffle(order)
            barrier.wait(timeout=60)
            out = []
            for n in order:
                r = st.add(CONTENTS[n], embedding=unit_vector(1000 + n))
                out.append((n, str(r.id), r.created))
        queue.put(("ok", seed, out))
    except BaseException as exc:  # report, never hang the parent
        queue.put(("error", seed, f"{type(exc).__name__}: {exc}"))


def test_processes_same_contents(fresh_db, raw):
    ctx = mp.get_context("spawn")
    n_proc = 4
    barrier = ctx.Barrier(n_proc)
    queue = ctx.Queue()
    procs = [ctx.Process(target=_process_worker, args=(fresh_db, i, barrier, queue))
             for i in range(n_proc)]
    for p in procs:
        p.start()
    try:
        reports = [queue.get(timeout=120) for _ in procs]
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
    errors = [r for r in reports if r[0] != "ok"]
    assert not errors, errors
    ids: dict[int, set[str]] = {}
    created = Counter()
    for _, _, out in reports:
        assert len(out) == len(CONTENTS)
        for n, mid, was_created in out:
            ids.setdefault(n, set()).add(mid)
            created[n] += was_created
    assert all(len(v) == 1 for v in ids.values()), ids
    assert set(created.values()) == {1}
    assert rows(raw) == len(CONTENTS)
    stored = dict(raw.execute("SELECT id::text, content FROM memdb.memories").fetchall())
    assert {stored[next(iter(ids[n]))] for n in ids} == set(CONTENTS)
    assert all(p.exitcode == 0 for p in procs)


def test_deadlock_is_a_typed_database_error_not_unavailable(fresh_db, store):
    """A deadlock PostgreSQL breaks (SQLSTATE 40P01) is a DatabaseError the caller may retry,
    not DatabaseUnavailable: the server is fine."""
    a, b = (store.add(t, embedding=unit_vector(n)).id for n, t in enumerate(("row a", "row b")))
    conns = [psycopg.connect(fresh_db) for _ in range(2)]
    try:
        for c in conns:
            c.execute("SET deadlock_timeout = '50ms'")
        conns[0].execute("UPDATE memdb.memories SET importance = 0.1 WHERE id = %s", (a,))
        conns[1].execute("UPDATE memdb.memories SET importance = 0.2 WHERE id = %s", (b,))

        def cross(i: int) -> BaseException | None:
            mine = (b, a)[i]
            try:
                conns[i].execute("UPDATE memdb.memories SET importance = 0.3 WHERE id = %s",
                                 (mine,))
                conns[i].commit()
            except psycopg.Error as exc:
                conns[i].rollback()
                return exc
            return None

        errors = [e for e in race(2, cross) if e is not None]
    finally:
        for c in conns:
            c.close()
    assert len(errors) == 1 and errors[0].sqlstate == "40P01"
    err = translate(errors[0])
    assert isinstance(err, DatabaseError) and not isinstance(err, DatabaseUnavailable)

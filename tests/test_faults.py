"""Faults: connections lost under the DAL, and a server killed with SIGKILL mid-write.

* Connection loss: an admin connection terminates the store's backends (``pg_terminate_backend``)
  while a call is in flight, or while they sit idle in the pool. The call in flight raises
  ``DatabaseUnavailable`` (never a raw psycopg exception), nothing is half-written, the pool
  replaces the dead connections, and the next call works.
* Crash safety: a separate embedded server, a child process writing tagged batches with
  ``add_many``, the postmaster and its children SIGKILLed mid-run, a restart on the same data
  folder; then every acknowledged batch is complete, no batch is partial, and amcheck finds
  the indexes sound.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import psycopg
import pytest

from memdb import DatabaseUnavailable, MemoryStore
from memdb.connection import APPLICATION_NAME

DIMS = 8


class NoEmbedder:
    """Every vector is precomputed here; an embedding call would be a test bug."""

    model, dims = f"precomputed-{DIMS}", DIMS

    def embed_passages(self, texts):
        raise AssertionError("no embedding expected")

    embed_queries = embed_passages


def unit(seed: int) -> list[float]:
    v = np.random.default_rng(seed).normal(size=DIMS)
    return (v / np.linalg.norm(v)).tolist()


def store_backends(admin: psycopg.Connection) -> list[int]:
    return [r[0] for r in admin.execute(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
        "AND application_name = %s AND pid <> pg_backend_pid()", (APPLICATION_NAME,))]


def terminate_store_backends(admin: psycopg.Connection) -> int:
    pids = store_backends(admin)
    for pid in pids:
        admin.execute("SELECT pg_terminate_backend(%s, 5000)", (pid,))
    return len(pids)


def wait_for_lock_wait(admin: psycopg.Connection, timeout: float = 20.0) -> None:
    """Until a store backend is blocked on a lock (its call is in flight)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if admin.execute(
            "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() "
            "AND application_name = %s AND wait_event_type = 'Lock'", (APPLICATION_NAME,),
        ).fetchone():
            return
        time.sleep(0.05)
    raise AssertionError("the call never reached the database")


def in_flight(call) -> tuple[threading.Thread, dict]:
    outcome: dict = {}

    def run() -> None:
        try:
            outcome["result"] = call()
        except BaseException as exc:  # noqa: BLE001 - the test inspects it
            outcome["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


@pytest.fixture
def seeded(fresh_db):
    with MemoryStore(fresh_db, embedder=NoEmbedder()) as store:
        store.add_many([{"content": f"记忆 {i}: Alice likes green tea variety {i}",
                         "subject": "alice", "embedding": unit(i)} for i in range(20)])
        yield store


@pytest.mark.parametrize("operation", ["search", "add_many"])
def test_connection_killed_mid_call(seeded, fresh_db, operation):
    store = seeded
    calls = {
        "search": lambda: store.search("green tea", k=5, embedding=unit(3)),
        "add_many": lambda: store.add_many([{"content": f"新的记忆 {i}", "embedding": unit(100 + i)}
                                            for i in range(10)]),
    }
    with psycopg.connect(fresh_db, autocommit=True) as admin, \
            psycopg.connect(fresh_db) as locker:
        # the call blocks behind this lock, so it is surely in flight when its backend dies
        locker.execute("LOCK TABLE memdb.memories IN ACCESS EXCLUSIVE MODE")
        thread, outcome = in_flight(calls[operation])
        wait_for_lock_wait(admin)
        assert terminate_store_backends(admin) >= 1
        thread.join(30)
        locker.rollback()
        assert not thread.is_alive()
        error = outcome.get("error")
        assert isinstance(error, DatabaseUnavailable), repr(error)
        assert not isinstance(error, psycopg.Error)
        assert isinstance(error.__cause__, psycopg.OperationalError)  # chained, typed by SQLSTATE
        assert admin.execute("SELECT count(*) FROM memdb.memories").fetchone()[0] == 20
    # the pool dropped the dead connection: the next calls work
    hits = store.search_by_vector(unit(3), k=5)
    assert len(hits) == 5 and hits[0].memory.content.startswith("记忆 3:")
    assert len(store.add_many([{"content": "after the loss", "embedding": unit(999)}])) == 1


def test_idle_pooled_connections_killed_are_not_errors(seeded, fresh_db):
    store = seeded
    # grow the pool to several connections, all idle afterwards
    barrier = threading.Barrier(4)

    def hold() -> None:
        with store.db.transaction(tenant=store.tenant) as conn:
            barrier.wait(10)
            conn.execute("SELECT 1")

    threads = [threading.Thread(target=hold) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    with psycopg.connect(fresh_db, autocommit=True) as admin:
        before = set(store_backends(admin))
        assert len(before) >= 2
        for _round in range(2):
            assert terminate_store_backends(admin) >= 1
            started = time.monotonic()
            for _ in range(6):  # more calls than pooled connections: each one is checked
                assert store.count() == 20
                assert len(store.search("tea", k=3, routes=["bm25"])) == 3
            # dead connections are replaced at once (psycopg_pool's check= backs off 1-4 s
            # between dead connections: 7 s for this pool)
            assert time.monotonic() - started < 2.0
        assert not before & set(store_backends(admin))  # all of them were replaced


def test_first_use_from_many_threads_opens_one_pool(fresh_db):
    """The pool is opened lazily; threads racing to be first used to each open one (or use
    one not yet open and fail with "the pool is not open yet")."""
    from memdb.connection import Database

    db = Database(fresh_db)
    try:
        barrier = threading.Barrier(6)
        pools, errors = [], []

        def first_call() -> None:
            barrier.wait(10)
            try:
                with db.transaction(tenant="default") as conn:
                    conn.execute("SELECT 1")
                pools.append(db.pool)
            except Exception as exc:  # noqa: BLE001 - collected for the assertion
                errors.append(exc)

        threads = [threading.Thread(target=first_call) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert errors == [] and len(pools) == 6 and len({id(p) for p in pools}) == 1
    finally:
        db.close()

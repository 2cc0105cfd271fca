"""Faults on a real Citus cluster (a coordinator and two workers built from the vendored
source: tests/citus_build.py, tests/citus_cluster.py), with memdb distributed by tenant.

* A worker stopped (``pg_ctl stop -m immediate``) in the middle of a tenant's ``add_many``:
  the call raises a typed :class:`memdb.core.errors.DatabaseUnavailable` (not a psycopg error),
  nothing of the batch is there once the worker is back, and the batch can be written again.
  While that worker is down, a tenant whose shards are on the other worker reads and writes
  as usual; the stopped worker's tenants get ``DatabaseUnavailable`` for every call.
* A third worker added and the shard rebalancer run (``citus_rebalance_start`` +
  ``citus_rebalance_wait``: shard moves by logical replication) while a thread keeps adding
  memories to every tenant: shards move to the new worker, and afterwards every memory,
  those written before and during the moves, is found by get, list and search in its tenant.

The module runs on a cluster of its own (about 10 s to start), not on the session's
``citus_cluster``: it stops a worker and grows the cluster by one.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Iterator, Sequence

import numpy as np
import psycopg
import pytest

from memdb import MemoryInput, MemoryStore
from memdb.core.errors import DatabaseUnavailable, MemdbError

pytestmark = pytest.mark.citus

TENANTS = ["acme", "globex", "initech", "umbrella", "hooli", "wayne", "stark", "tyrell",
           "腾讯", "阿里", "soylent", "cyberdyne"]


class TextHashEmbedder:
    """A unit vector per text (seeded by its sha256): a query finds the memory whose content
    it repeats. No model runs, so the faults are timed by the database alone."""

    model = "citus-faults-hash"
    dims = 64

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        out = np.empty((len(texts), self.dims), dtype=np.float32)
        for i, text in enumerate(texts):
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
            vec = np.random.default_rng(seed).standard_normal(self.dims)
            out[i] = vec / np.linalg.norm(vec)
        return out

    embed_queries = embed_passages


EMBEDDER = TextHashEmbedder()


@pytest.fixture(scope="module")
def cluster() -> Iterator:
    from tests.citus_build import CitusUnavailable
    from tests.citus_cluster import migrated_cluster

    try:
        with migrated_cluster() as cluster:
            # The test cluster runs with synchronous_commit = off (fast tests): a node stopped
            # with -m immediate would then lose the commits of its last ~200 ms, which are
            # not what is tested here. On: a commit is on the worker's disk when acknowledged.
            for i in range(len(cluster.nodes)):
                with psycopg.connect(cluster.dsn(node=i), autocommit=True) as conn:
                    conn.execute("ALTER SYSTEM SET synchronous_commit = on")
                    conn.execute("SELECT pg_reload_conf()")
            yield cluster
    except CitusUnavailable as exc:
        pytest.skip(f"no Citus cluster: {exc}")


def _store(cluster, tenant: str) -> MemoryStore:
    return MemoryStore(cluster.dsn(), embedder=EMBEDDER, tenant=tenant, gate=None)


def _placement(cluster) -> dict[str, int]:
    """tenant -> index in cluster.nodes of the worker holding its memdb.memories shard."""
    ports = {node.port: i for i, node in enumerate(cluster.nodes)}
    with psycopg.connect(cluster.dsn(), autocommit=True) as conn:
        return {t: ports[conn.execute(
            "SELECT nodeport FROM citus_shards WHERE table_name = 'memdb.memories'::regclass"
            " AND shardid = get_shard_id_for_distribution_column('memdb.memories', %s::text)",
            (t,)).fetchone()[0]] for t in TENANTS}


def _stop_when_blocked(cluster, node: int, stopped: threading.Event,
                       errors: list[BaseException]) -> None:
    """Stop worker ``node`` (pg_ctl stop -m immediate) once a transaction there waits for a
    row lock: the batch has written its first statements and is blocked at the row held."""
    try:
        deadline = time.monotonic() + 120
        with psycopg.connect(cluster.dsn(node=node), autocommit=True) as conn:
            while not conn.execute("SELECT count(*) FROM pg_locks WHERE NOT granted"
                                   ).fetchone()[0]:
                if time.monotonic() > deadline:
                    raise TimeoutError("the batch never waited for the held row")
                time.sleep(0.005)
        cluster.stop_node(node)
        stopped.set()
    except BaseException as exc:  # reported by the test
        errors.append(exc)


def test_a_worker_stopped_during_a_batch_write(cluster):
    """The batch (one transaction of 30 statements of 20 items) meets, at item 301, a
    duplicate of a memory another session holds locked (SELECT ... FOR UPDATE): 300 items are
    written in the open transaction when the worker holding the tenant is stopped. A batch
    written in several transactions would leave them behind (checked by hand: 300 rows)."""
    placement = _placement(cluster)
    victim = "acme"
    node = placement[victim]
    healthy = next(t for t in TENANTS if placement[t] != node)
    known = [f"{victim} knew this before 之前的记忆 {i}" for i in range(20)]
    batch = [MemoryInput(content=f"{victim} batch fact {i}: 批量写入的第{i}条记忆",
                         subject="alice") for i in range(600)]
    batch[300] = MemoryInput(content=known[0], subject="alice")
    with _store(cluster, victim) as store, _store(cluster, healthy) as other:
        store.add_many([MemoryInput(content=c, subject="alice") for c in known])
        before = store.count()
        assert before == 20
        holder = psycopg.connect(cluster.dsn())
        holder.execute("SELECT id FROM memdb.memories WHERE tenant = %s AND content = %s"
                       " FOR UPDATE", (victim, known[0]))
        stopped, errors = threading.Event(), []
        stopper = threading.Thread(target=_stop_when_blocked,
                                   args=(cluster, node, stopped, errors))
        stopper.start()
        try:
            with pytest.raises(MemdbError) as caught:
                store.add_many(batch, batch_size=20)  # one transaction, 30 statements
            stopper.join(timeout=120)
            assert not errors, errors
            assert stopped.is_set()
            assert isinstance(caught.value, DatabaseUnavailable), repr(caught.value)
            assert not isinstance(caught.value, psycopg.Error)
            assert isinstance(caught.value.__cause__, psycopg.Error)  # chained, typed
            # the other worker's tenants go on: write, batch write, search, read
            made = other.add(f"{healthy} still works 另一个节点照常工作", subject="bob")
            assert [r.outcome for r in other.add_many(
                [f"{healthy} batch while down {i}" for i in range(30)], batch_size=7)] == \
                ["created"] * 30
            assert other.search(f"{healthy} still works 另一个节点照常工作")[0].memory.id == \
                made.id
            assert other.count() == 31
            # the stopped worker's tenants get the same typed error, for reads too
            with pytest.raises(DatabaseUnavailable):
                store.count()
            with pytest.raises(DatabaseUnavailable):
                store.add("one more while the worker is down")
        finally:
            holder.close()
            stopper.join(timeout=120)
            if stopped.is_set():
                cluster.start_node(node)
        # back: nothing of the batch, everything from before; the batch can be written again
        assert store.count() == before
        assert not store.search(batch[7].content, k=3, routes=["exact"])
        assert {m.content for m in store.list(limit=1000)} == set(known)
        outcomes = [r.outcome for r in store.add_many(batch, batch_size=20)]
        assert outcomes == ["created"] * 300 + ["duplicate"] + ["created"] * 299
        assert store.count() == before + 599
        assert other.count() == 31


def _writer(cluster, stop: threading.Event, written: list[tuple[str, str, str, float]],
            failed: list[tuple[str, str]]) -> None:
    """Add memories to every tenant in turn until ``stop``: (tenant, id, content, time) of
    each acknowledged write, (tenant, error) of each refused one."""
    stores = {t: _store(cluster, t) for t in TENANTS}
    try:
        i = 0
        while not stop.is_set():
            tenant = TENANTS[i % len(TENANTS)]
            content = f"{tenant} written during the rebalance {i} 再平衡期间写入"
            try:
                made = stores[tenant].add(content, subject=f"user{i % 3}")
                written.append((tenant, str(made.id), content, time.monotonic()))
            except MemdbError as exc:
                failed.append((tenant, repr(exc)))
            i += 1
    finally:
        for store in stores.values():
            store.close()


def test_rebalancing_onto_a_new_worker_keeps_every_memory(cluster):
    expected: dict[str, dict[str, str]] = {t: {} for t in TENANTS}  # tenant -> id -> content
    for tenant in TENANTS:
        with _store(cluster, tenant) as store:
            store.add_many([MemoryInput(content=f"{tenant} fact {i}: 租户的第{i}条记忆",
                                        subject=f"user{i % 3}") for i in range(40)])
            expected[tenant] = {str(m.id): m.content for m in store.list(limit=1000)}
    before = _placement(cluster)
    new = cluster.add_worker()
    new_index = len(cluster.nodes) - 1
    stop, written, failed = threading.Event(), [], []
    writer = threading.Thread(target=_writer, args=(cluster, stop, written, failed))
    writer.start()
    try:
        time.sleep(0.5)  # the writer is under way before the first move
        with psycopg.connect(cluster.dsn(), autocommit=True) as conn:
            started = time.monotonic()
            conn.execute("SELECT citus_rebalance_start()")
            conn.execute("SELECT citus_rebalance_wait()")
            finished = time.monotonic()
            tasks = conn.execute("SELECT status::text, count(*) FROM pg_dist_background_task"
                                 " GROUP BY 1").fetchall()
            on_new = conn.execute(
                "SELECT count(*) FROM citus_shards WHERE table_name = 'memdb.memories'::regclass"
                " AND nodeport = %s", (new.port,)).fetchone()[0]
        time.sleep(0.5)
    finally:
        stop.set()
        writer.join(timeout=60)
    assert tasks and {status for status, _ in tasks} == {"done"}, tasks
    assert on_new >= 1  # shards moved to the new worker
    after = _placement(cluster)
    moved = {t for t in TENANTS if after[t] != before[t]}
    assert moved and {after[t] for t in moved} == {new_index}, (before, after)
    # writes went on during the moves, also to the moving tenants, and none was refused
    assert failed == []
    during = [w for w in written if started <= w[3] <= finished]
    assert {w[0] for w in during} & moved, (len(written), len(during))
    for tenant, mid, content, _ in written:
        expected[tenant][mid] = content
    total = 0
    for tenant in TENANTS:
        with _store(cluster, tenant) as store:
            want = expected[tenant]
            total += len(want)
            assert store.count() == len(want), tenant
            assert {str(m.id): m.content for m in store.list(limit=1000)} == want, tenant
            for mid, content in want.items():
                assert store.get(mid).content == content
            own = [(mid, c) for mid, c in want.items() if "rebalance" in c]
            for mid, content in [*list(want.items())[:2], *own[:2], *own[-2:]]:
                hits = store.search(content, k=3)
                assert hits and str(hits[0].memory.id) == mid, (tenant, content)
                assert {h.memory.tenant for h in hits} == {tenant}
    with psycopg.connect(cluster.dsn(), autocommit=True) as conn:  # and nothing else
        assert conn.execute("SELECT count(*) FROM memdb.memories").fetchone()[0] == total

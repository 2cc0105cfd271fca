"""Schedules of recurring jobs on a real Citus cluster (a coordinator and two workers:
tests/citus_cluster.py): memdb.job_schedules is distributed by tenant, co-located with the
memories, and concurrent callers of memdb.enqueue_due_schedules on the coordinator enqueue
one job per due schedule, on its tenant's shard."""

from __future__ import annotations

import threading

import psycopg
import pytest

from memdb import MemoryStore
from tests.test_jobs_citus import TENANTS, _node_of

pytestmark = pytest.mark.citus


@pytest.fixture
def cluster_db(citus_cluster) -> str:
    from tests.citus_cluster import reset

    dsn = citus_cluster.dsn()
    reset(dsn)
    return dsn


def test_schedules_are_colocated_and_enqueued_once_across_workers(cluster_db, embedder):
    for tenant in TENANTS:
        with MemoryStore(cluster_db, tenant=tenant, embedder=embedder, gate=None) as store:
            store.jobs.schedule("traces.purge", every=86_400, payload={"note": "清理 traces"})
            dsn = store.db.dsn
    made, lock, barrier = [], threading.Lock(), threading.Barrier(4)

    def call() -> None:
        with psycopg.connect(dsn, autocommit=True) as conn:
            barrier.wait()
            rows = conn.execute("SELECT tenant, created FROM memdb.enqueue_due_schedules()"
                                ).fetchall()
        with lock:
            made.extend(rows)

    threads = [threading.Thread(target=call) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(t for t, created in made if created) == sorted(TENANTS)
    with psycopg.connect(cluster_db, autocommit=True) as conn:
        colocated = conn.execute(
            "SELECT count(DISTINCT colocationid) FROM pg_dist_partition WHERE logicalrelid IN "
            "('memdb.job_schedules'::regclass, 'memdb.memories'::regclass)").fetchone()[0]
        assert colocated == 1
        nodes = {t: _node_of(conn, "memdb.job_schedules", t) for t in TENANTS}
        assert nodes == {t: _node_of(conn, "memdb.jobs", t) for t in TENANTS}
        assert len(set(nodes.values())) == 2
    for tenant in TENANTS:
        with MemoryStore(cluster_db, tenant=tenant, embedder=embedder, gate=None) as store:
            [job] = store.jobs.list()
            assert (job.kind, job.payload) == ("traces.purge", {"note": "清理 traces"})
            assert store.jobs.schedules()[0].last_job == job.id

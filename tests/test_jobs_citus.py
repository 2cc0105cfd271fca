"""The job queue on a real Citus cluster (a coordinator and two workers: tests/citus_cluster.py):
memdb.jobs is distributed by tenant, co-located with the memories, each tenant's jobs on its
memories' shard; a worker on the coordinator claims and completes jobs of tenants living on
different workers."""

from __future__ import annotations

import psycopg
import pytest

from memdb import MemoryStore
from memdb.jobs import Registry, Worker

pytestmark = pytest.mark.citus
TENANTS = ("acme", "globex", "initech", "umbrella")


@pytest.fixture
def cluster_db(citus_cluster) -> str:
    from tests.citus_cluster import reset

    dsn = citus_cluster.dsn()
    reset(dsn)
    return dsn


def _node_of(conn: psycopg.Connection, table: str, tenant: str) -> str:
    return conn.execute(
        "SELECT s.nodename || ':' || s.nodeport FROM citus_shards s "
        "WHERE s.table_name = %s::regclass "
        "AND s.shardid = get_shard_id_for_distribution_column(%s::regclass, %s::text)",
        (table, table, tenant)).fetchone()[0]


def test_jobs_live_on_their_tenants_shard_and_workers_claim_across_nodes(cluster_db,
                                                                         embedder):
    reg = Registry()
    reg.register("test.citus", lambda ctx: {"tenant": ctx.job.tenant})
    ids = {}
    for tenant in TENANTS:
        with MemoryStore(cluster_db, tenant=tenant, embedder=embedder, gate=None) as store:
            ids[tenant] = [store.jobs.enqueue("test.citus", {"n": n}).id for n in range(3)]
    with psycopg.connect(cluster_db, autocommit=True) as conn:
        colocated = conn.execute(
            "SELECT count(DISTINCT colocationid) FROM pg_dist_partition "
            "WHERE logicalrelid IN ('memdb.jobs'::regclass, 'memdb.memories'::regclass)"
        ).fetchone()[0]
        assert colocated == 1
        nodes = {t: _node_of(conn, "memdb.jobs", t) for t in TENANTS}
        assert nodes == {t: _node_of(conn, "memdb.memories", t) for t in TENANTS}
        assert len(set(nodes.values())) == 2  # the tenants' jobs are spread over both workers
        for tenant in TENANTS:  # each tenant's rows are in its own shard
            shard = conn.execute("SELECT get_shard_id_for_distribution_column("
                                 "'memdb.jobs', %s::text)", (tenant,)).fetchone()[0]
            rows = conn.execute(
                "SELECT count(*) FROM memdb.jobs WHERE tenant = %s", (tenant,)).fetchone()[0]
            assert rows == 3 and shard
    worker = Worker(cluster_db, handlers=reg, concurrency=2)
    try:
        assert worker.run(until_idle=True)["done"] == 3 * len(TENANTS)
    finally:
        worker.stop()
    for tenant in TENANTS:
        with MemoryStore(cluster_db, tenant=tenant, embedder=embedder, gate=None) as store:
            jobs = store.jobs.list()
            assert {j.id for j in jobs} == set(ids[tenant])
            assert {(j.state, j.result["tenant"]) for j in jobs} == {("done", tenant)}

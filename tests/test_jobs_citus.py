"""The job queue on a real Citus cluster (a coordinator and two workers: tests/citus_cluster.py):
memdb.jobs is distributed by tenant, co-located with the memories, each tenant's jobs on its
memories' shard; a worker on the coordinator claims and completes jobs of tenants living on
different workers."""

from __future__ import annotations

import logging
import time

import psycopg
import pytest

from memdb import MemoryStore
from memdb.core.errors import Forbidden, NotFound
from memdb.families.jobs import QueueFull, Registry, Worker

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


def test_a_subjects_jobs_are_confined_to_it_on_the_cluster(cluster_db, embedder):
    """Revision 0024 on Citus: the generated subject column and the subject policy reach the
    shards; a store confined to a subject sees and enqueues only its subject's jobs, and the
    tenant's bound still counts the whole tenant's queue."""
    with MemoryStore(cluster_db, tenant="acme", embedder=embedder, gate=None) as acme:
        alice = acme.jobs.enqueue("test.citus", {"subject": "alice", "text": "爱丽丝的话"})
        acme.jobs.enqueue("test.citus", {"note": "the whole tenant's"})
        with MemoryStore(cluster_db, tenant="acme", subject="bob", embedder=embedder,
                         gate=None) as bob:
            own = bob.jobs.enqueue("test.citus", {"note": "bob's"})
            assert own.subject == "bob"
            assert [j.id for j in bob.jobs.list()] == [own.id]
            with pytest.raises(NotFound):
                bob.jobs.get(alice.id)
            with pytest.raises(Forbidden):
                bob.jobs.enqueue("test.citus", {"subject": "alice"})
            bob.jobs.max_pending = 3
            with pytest.raises(QueueFull):
                bob.jobs.enqueue("test.citus", {"note": "a fourth"})
        assert {j.subject for j in acme.jobs.list()} == {"alice", "bob", None}


@pytest.fixture
def citus_effects(citus_cluster, cluster_db):
    """public.job_effects distributed by tenant beside memdb.jobs (a handler's row commits on
    the job's shard, in the job's transaction), and synchronous_commit on in every node for
    the test (the cluster runs with it off: a node stopped -m immediate would lose its last
    acknowledged commits, which is not what is tested), both undone afterwards."""
    with psycopg.connect(cluster_db, autocommit=True) as conn:
        conn.execute("CREATE TABLE public.job_effects (tenant text, job_id uuid, note text)")
        conn.execute("SELECT create_distributed_table('public.job_effects', 'tenant', "
                     "colocate_with => 'memdb.jobs')")
        conn.execute("GRANT SELECT, INSERT ON public.job_effects TO memdb_app")
    nodes = range(len(citus_cluster.nodes))
    for i in nodes:
        with psycopg.connect(citus_cluster.dsn(node=i), autocommit=True) as conn:
            conn.execute("ALTER SYSTEM SET synchronous_commit = on")
            conn.execute("SELECT pg_reload_conf()")
    try:
        yield cluster_db
    finally:
        for i in nodes:
            with psycopg.connect(citus_cluster.dsn(node=i), autocommit=True) as conn:
                conn.execute("ALTER SYSTEM RESET synchronous_commit")
                conn.execute("SELECT pg_reload_conf()")
        with psycopg.connect(cluster_db, autocommit=True) as conn:
            conn.execute("DROP TABLE public.job_effects")


def _wait_all_done(dsn: str, total: int, deadline: float) -> dict[str, int]:
    states: dict[str, int] = {}
    while time.monotonic() < deadline:
        try:
            with psycopg.connect(dsn, autocommit=True) as conn:
                states = dict(conn.execute(
                    "SELECT state, count(*) FROM memdb.jobs GROUP BY state").fetchall())
        except psycopg.Error:  # (the node may still be starting)
            states = {}
        if states.get("done") == total:
            return states
        time.sleep(0.2)
    return states


def test_a_worker_node_restart_loses_no_job_and_applies_none_twice(citus_cluster,
                                                                   citus_effects, embedder,
                                                                   caplog):
    """Jobs of four tenants on both Citus workers; a memdb Worker (2 threads) runs them, each
    handler writing one effect row through ctx.conn (its job's transaction) then holding it
    80 ms. While jobs are queued and running, the node holding one tenant's shard is stopped
    (pg_ctl -m immediate) and started again 2 s later. The Worker rides the outage (its
    threads log the database errors and retry; none dies) and then drains the queue: every
    job is done, each with exactly one effect row."""
    dsn = citus_effects
    ports = {node.port: i for i, node in enumerate(citus_cluster.nodes)}
    reg = Registry()

    @reg.handler("test.restart")
    def effect(ctx):
        ctx.conn.execute("INSERT INTO public.job_effects VALUES (%s, %s, %s)",
                         (ctx.job.tenant, ctx.job.id, "效果 effect"))
        time.sleep(0.08)  # the node may go while the job's transaction is open

    ids: dict[str, set] = {}
    for tenant in TENANTS:
        with MemoryStore(dsn, tenant=tenant, embedder=embedder, gate=None) as store:
            ids[tenant] = {store.jobs.enqueue("test.restart", {"n": n}, max_attempts=50).id
                           for n in range(12)}
    total = sum(len(v) for v in ids.values())
    with psycopg.connect(dsn, autocommit=True) as conn:
        where = {t: ports[int(_node_of(conn, "memdb.jobs", t).rsplit(":", 1)[1])]
                 for t in TENANTS}
    assert len(set(where.values())) == 2  # tenants on both worker nodes
    victim = TENANTS[0]
    node = where[victim]
    worker = Worker(dsn, handlers=reg, concurrency=2, lease=1.0, poll_interval=0.3,
                    backoff=0.1)
    caplog.set_level(logging.WARNING, logger="memdb.jobs")
    worker.start()
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:  # some jobs done, most not
            deadline = time.monotonic() + 20
            while conn.execute("SELECT count(*) FROM public.job_effects").fetchone()[0] < 6:
                assert time.monotonic() < deadline, "the worker never started"
                time.sleep(0.02)
        try:
            citus_cluster.stop_node(node)
            time.sleep(2.0)
            threads = [t for t in worker._threads if t.is_alive()]
            assert len(threads) == 3, "a worker thread died in the outage"  # 2 + listener
        finally:
            citus_cluster.start_node(node)
        states = _wait_all_done(dsn, total, time.monotonic() + 30)
        assert states == {"done": total}, states
        assert all(t.is_alive() for t in worker._threads)  # survived, still serving
    finally:
        worker.stop()
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute("SELECT tenant, job_id, count(*) FROM public.job_effects "
                            "GROUP BY 1, 2").fetchall()
    assert {t: {r[1] for r in rows if r[0] == t} for t in TENANTS} == ids  # none lost
    assert {r[2] for r in rows} == {1}  # none applied twice
    port = f":{citus_cluster.nodes[node].port}"  # the worker met the outage, and lived
    assert any(port in r.getMessage() for r in caplog.records
               if r.name == "memdb.jobs" and r.levelno >= logging.WARNING), caplog.text


def test_a_failed_job_backs_off_then_dies_with_its_last_error(cluster_db, embedder):
    """memdb.fail_job on the cluster: a handler's error is recorded (state failed, due again
    after the backoff), and the last attempt leaves the job dead keeping the error. (Citus
    refuses an UPDATE mixing now() with column references: fail_job then raised, and the job
    stayed running, its error lost, until its lease ran out.)"""
    reg = Registry()

    @reg.handler("test.boom")
    def boom(ctx):
        raise RuntimeError(f"出错了 boom {ctx.job.tenant}")

    with MemoryStore(cluster_db, tenant="globex", embedder=embedder, gate=None) as store:
        job = store.jobs.enqueue("test.boom", {}, max_attempts=2)
        worker = Worker(cluster_db, handlers=reg, backoff=0.2)
        try:
            assert worker.handle(worker.claim(1)[0]) == "failed"
            first = store.jobs.get(job.id)
            assert (first.state, first.attempts) == ("failed", 1)
            assert first.last_error == "RuntimeError: 出错了 boom globex"
            assert worker.claim(1) == []  # backing off
            time.sleep(0.3)
            assert worker.handle(worker.claim(1)[0]) == "dead"
        finally:
            worker.stop()
        dead = store.jobs.get(job.id)
    assert (dead.state, dead.attempts, dead.last_error) == (
        "dead", 2, "RuntimeError: 出错了 boom globex")
    assert dead.finished_at is not None

"""Schedules of recurring jobs (memdb.job_schedules, memdb.enqueue_due_schedules) and the
built-in job kinds (memdb.families.jobs.builtin) on a real PostgreSQL: a schedule enqueues at most
one
job per period however many workers call at once, a worker runs the due schedules, and the
built-in kinds run the store's maintenance as jobs (English and Chinese texts)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from memdb import MemoryStore
from memdb.core.errors import InvalidInput, NotFound
from memdb.families.jobs import Worker


@pytest.fixture
def stores(fresh_db, embedder):
    with MemoryStore(fresh_db, tenant="acme", embedder=embedder, gate=None) as a, \
            MemoryStore(fresh_db, tenant="globex", embedder=embedder, gate=None) as b:
        yield a, b


def _worker(store, embedder, **options):
    dsn = store.db.dsn
    return Worker(dsn, store_factory=lambda t: MemoryStore(dsn, tenant=t, embedder=embedder,
                                                           gate=None, pool_size=2),
                  **options)


def test_schedules_set_list_remove_per_tenant(stores):
    acme, globex = stores
    s = acme.jobs.schedule("memories.purge_expired", every=3600)
    assert (s.kind, s.period_seconds, s.payload, s.last_run) == \
        ("memories.purge_expired", 3600, {}, None)
    acme.jobs.schedule("traces.purge", timedelta(days=1), {"older_than_days": 7})
    changed = acme.jobs.schedule("memories.purge_expired", every=60)
    assert changed.period_seconds == 60 and changed.created_at == s.created_at
    assert [x.kind for x in acme.jobs.schedules()] == ["memories.purge_expired", "traces.purge"]
    assert globex.jobs.schedules() == []  # row-level security
    assert globex.jobs.unschedule("traces.purge") is False
    assert acme.jobs.unschedule("traces.purge") is True
    assert [x.kind for x in acme.jobs.schedules()] == ["memories.purge_expired"]
    for bad in (0, 1.5, -3, 400 * 86_400, "hourly"):
        with pytest.raises(InvalidInput):
            acme.jobs.schedule("traces.purge", every=bad)
    with pytest.raises(InvalidInput):
        acme.jobs.schedule("Bad Kind", every=60)


def test_a_due_schedule_is_enqueued_once_per_period(stores):
    acme, globex = stores
    acme.jobs.schedule("traces.purge", every=3600, payload={"older_than_days": 30})
    first = acme.jobs.run_schedules()
    assert [(r["kind"], r["created"]) for r in first] == [("traces.purge", True)]
    assert acme.jobs.run_schedules() == []  # not due again before the next period
    [sched] = acme.jobs.schedules()
    assert sched.last_job == first[0]["job_id"]
    start = datetime.fromtimestamp(sched.next_run.timestamp() - 3600, UTC)
    assert start <= datetime.now(UTC) < sched.next_run
    assert sched.next_run.timestamp() % 3600 == 0  # aligned on the period
    # made due again within the same period (a clock step, a manual change): the same job
    acme.jobs.schedule("traces.purge", every=3600, payload={"older_than_days": 30},
                       next_run=datetime.now(UTC) - timedelta(seconds=1))
    again = acme.jobs.run_schedules()
    assert [(r["job_id"], r["created"]) for r in again] == [(first[0]["job_id"], False)]
    [job] = acme.jobs.list()
    assert job.idempotency_key == f"schedule:traces.purge@{start:%Y-%m-%dT%H:%M:%SZ}"
    assert job.payload == {"older_than_days": 30}
    assert globex.jobs.list() == []


def test_concurrent_workers_never_double_enqueue(stores, fresh_db):
    """8 connections call memdb.enqueue_due_schedules at once, five rounds, on 12 schedules of
    two tenants made due again each round within the same period: one job per schedule."""
    acme, globex = stores
    kinds = [f"test.sched{n}" for n in range(6)]
    for store in stores:
        for kind in kinds:
            store.jobs.schedule(kind, every=86_400)
    dsn = acme.db.dsn
    made: list[tuple[str, str, bool]] = []
    lock = threading.Lock()
    for _ in range(5):
        for store in stores:  # due again, same period
            for kind in kinds:
                store.jobs.schedule(kind, every=86_400,
                                    next_run=datetime.now(UTC) - timedelta(seconds=1))
        barrier = threading.Barrier(8)

        def call(barrier: threading.Barrier = barrier) -> None:
            with psycopg.connect(dsn, autocommit=True) as conn:
                barrier.wait()
                rows = conn.execute(
                    "SELECT tenant, kind, created FROM memdb.enqueue_due_schedules()").fetchall()
            with lock:
                made.extend(rows)

        threads = [threading.Thread(target=call) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    created = [(t, k) for t, k, c in made if c]
    assert sorted(created) == sorted((s.tenant, k) for s in stores for k in kinds)
    assert len(made) >= 12 * 5 - 12  # the later rounds found the period's job (created false)
    for store in stores:
        assert sorted(j.kind for j in store.jobs.list()) == sorted(kinds)


def test_the_worker_runs_due_schedules_as_jobs(stores, embedder):
    acme, globex = stores
    kept = acme.add("Alice prefers green tea. 爱丽丝喜欢绿茶。")
    gone = acme.add("The meeting room code is 4321. 会议室密码是4321。", ttl=1)
    acme.jobs.schedule("memories.purge_expired", every=3600)
    globex.jobs.schedule("memories.purge_expired", every=3600)
    import time
    time.sleep(1.2)  # the ttl passes
    worker = _worker(acme, embedder, tenants=["acme"])
    try:
        counts = worker.run(until_idle=True)
    finally:
        worker.stop()
    assert counts["done"] == 1
    [job] = acme.jobs.list()
    assert (job.kind, job.state, job.result) == ("memories.purge_expired", "done", {"purged": 1})
    assert acme.get(kept.id) is not None
    with pytest.raises(NotFound):
        acme.get(gone.id)
    assert globex.jobs.list() == []  # a worker of acme's only enqueues acme's schedules
    assert globex.jobs.schedules()[0].last_run is None


def test_builtin_kinds_run_the_stores_operations(stores, embedder):
    acme, _ = stores
    ids = [r.id for r in acme.add_many(["Alice works with Bob at Acme.", "张三和李四是同事。"])]
    link = acme.jobs.enqueue("graph.link", {"memory_ids": [str(i) for i in ids],
                                            "heuristic": True})
    doc = {"id": "kb:tea",
           "text": "# Tea\n\nGreen tea is brewed at 80 °C.\n\n绿茶用八十度的水冲泡。"}
    ingest = acme.jobs.enqueue("documents.ingest", {"documents": [doc]})
    again = acme.jobs.enqueue("documents.ingest", {"documents": [doc]})
    bad = acme.jobs.enqueue("traces.purge", {"older_than": 3})
    worker = _worker(acme, embedder)
    try:
        worker.run(until_idle=True)
    finally:
        worker.stop()
    linked = acme.jobs.get(link.id)
    assert linked.state == "done" and linked.result["linked"] == 2
    assert acme.graph.neighbors("张三") or acme.graph.neighbors("Alice")
    first, second = acme.jobs.get(ingest.id), acme.jobs.get(again.id)
    assert first.state == second.state == "done"
    assert first.result["counts"] == {"created": 1}
    assert second.result["counts"] == {"unchanged": 1}  # idempotent: not written twice
    hits = acme.documents.search("绿茶 水温", 3)
    assert any("绿茶" in h.hit.memory.content for h in hits)
    dead = acme.jobs.get(bad.id)
    assert dead.state == "dead" and "older_than" in dead.last_error and dead.attempts == 1


def test_cli_schedule_set_list_run_remove(fresh_db, embedder):
    from tests.cli_helpers import ok_json, run

    made = ok_json(fresh_db, "--tenant", "acme", "jobs", "schedule", "set", "memories.sediment",
                   "--every", "86400", "--payload", '{"subject": "张三"}')
    assert (made["kind"], made["period_seconds"], made["payload"]) == \
        ("memories.sediment", 86400, {"subject": "张三"})
    assert [s["kind"] for s in ok_json(fresh_db, "--tenant", "acme", "jobs", "schedule",
                                       "list")] == ["memories.sediment"]
    assert ok_json(fresh_db, "--tenant", "globex", "jobs", "schedule", "list") == []
    ran = ok_json(fresh_db, "--tenant", "acme", "jobs", "schedule", "run")
    assert [(r["kind"], r["created"]) for r in ran] == [("memories.sediment", True)]
    assert ok_json(fresh_db, "--tenant", "acme", "jobs", "schedule", "run") == []
    bad = run(fresh_db, "--tenant", "acme", "jobs", "schedule", "set", "x.y", "--every", "60",
              "--payload", "not json")
    assert bad.exit_code == 1 and "not JSON" in bad.output
    assert ok_json(fresh_db, "--tenant", "acme", "jobs", "schedule", "remove",
                   "memories.sediment") == {"removed": True}
    assert run(fresh_db, "--tenant", "acme", "jobs", "schedule", "remove",
               "memories.sediment").exit_code == 1


def test_reembed_job_after_a_model_change(stores, embedder, raw):
    """A model change leaves memories without a vector (here: cleared as the admin); the
    embeddings.reembed job embeds them, and running it again writes nothing."""
    acme, _ = stores
    acme.add_many(["Bob's flight lands at 9 pm.", "鲍勃的航班晚上九点降落。"])
    raw.execute("UPDATE memdb.memories SET embedding = NULL WHERE tenant = 'acme'")
    first = acme.jobs.enqueue("embeddings.reembed", {"batch_size": 1})
    worker = _worker(acme, embedder)
    try:
        worker.run(until_idle=True)
        second = acme.jobs.enqueue("embeddings.reembed")
        worker.run(until_idle=True)
    finally:
        worker.stop()
    assert acme.jobs.get(first.id).result == {"embedded": 2}
    assert acme.jobs.get(second.id).result == {"embedded": 0}
    assert acme.search("航班 降落", 1)[0].memory.content == "鲍勃的航班晚上九点降落。"

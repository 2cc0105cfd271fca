"""The durable job queue (memdb.jobs, docs/jobs.md) on a real PostgreSQL: enqueue, claim,
complete, fail with backoff, dead, cancel, retry, idempotency keys, backpressure, row-level
security between tenants, and the worker's transaction (effect and completion together)."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest

from memdb import MemoryStore
from memdb.core.errors import Conflict, Forbidden, InvalidInput, NotFound
from memdb.families.jobs import PermanentFailure, QueueFull, Registry, Worker

EFFECTS = """
CREATE TABLE IF NOT EXISTS public.job_effects (tenant text, job_id uuid, note text);
GRANT SELECT, INSERT ON public.job_effects TO memdb_app;
"""


@pytest.fixture
def stores(fresh_db, embedder):
    with MemoryStore(fresh_db, tenant="acme", embedder=embedder, gate=None) as a, \
            MemoryStore(fresh_db, tenant="globex", embedder=embedder, gate=None) as b:
        yield a, b


@pytest.fixture
def effects(raw):
    raw.execute(EFFECTS)
    return raw


def _effects(raw, tenant=None):
    rows = raw.execute("SELECT tenant, job_id, note FROM public.job_effects").fetchall()
    return [r for r in rows if tenant is None or r[0] == tenant]


def _registry() -> Registry:
    reg = Registry()

    @reg.handler("test.write")
    def write(ctx):
        ctx.conn.execute("INSERT INTO public.job_effects VALUES (%s, %s, %s)",
                         (ctx.job.tenant, ctx.job.id, ctx.job.payload.get("note")))
        if ctx.job.payload.get("fail_times", 0) >= ctx.job.attempts:
            raise RuntimeError(f"attempt {ctx.job.attempts} fails 失败")
        return {"note": ctx.job.payload.get("note"), "attempt": ctx.job.attempts}

    @reg.handler("test.poison")
    def poison(ctx):
        raise PermanentFailure("malformed payload 格式错误")

    return reg


def test_enqueue_get_list(stores):
    acme, _ = stores
    job = acme.jobs.enqueue("test.write", {"note": "你好 hello"})
    assert (job.state, job.attempts, job.tenant, job.kind) == ("queued", 0, "acme", "test.write")
    assert acme.jobs.get(str(job.id)).payload == {"note": "你好 hello"}
    second = acme.jobs.enqueue("test.write", {"note": "two"})
    assert [j.id for j in acme.jobs.list()] == [second.id, job.id]  # newest first
    assert acme.jobs.list(state="done") == []
    assert [j.id for j in acme.jobs.list(kind="test.write", limit=1)] == [second.id]
    with pytest.raises(InvalidInput):
        acme.jobs.enqueue("Bad Kind!")
    with pytest.raises(InvalidInput):
        acme.jobs.list(state="sleeping")
    with pytest.raises(NotFound):
        acme.jobs.get("00000000-0000-0000-0000-000000000000")


def test_idempotency_key_returns_the_same_job(stores):
    acme, globex = stores
    one = acme.jobs.enqueue("test.write", {"note": "a"}, idempotency_key="turn-1")
    again = acme.jobs.enqueue("test.write", {"note": "b"}, idempotency_key="turn-1")
    assert again.id == one.id and again.payload == {"note": "a"}
    other_kind = acme.jobs.enqueue("test.other", idempotency_key="turn-1")
    other_tenant = globex.jobs.enqueue("test.write", idempotency_key="turn-1")
    assert len({one.id, other_kind.id, other_tenant.id}) == 3


def test_worker_completes_with_its_effect_in_the_same_transaction(stores, effects):
    acme, _ = stores
    job = acme.jobs.enqueue("test.write", {"note": "记住 this"})
    worker = Worker(acme.db.dsn, handlers=_registry())
    try:
        assert worker.run_pending() == 1
    finally:
        worker.stop()
    done = acme.jobs.get(job.id)
    assert (done.state, done.attempts, done.result) == ("done", 1, {"note": "记住 this",
                                                                    "attempt": 1})
    assert done.finished_at is not None and done.locked_by is None
    assert _effects(effects) == [("acme", job.id, "记住 this")]
    assert acme.jobs.wait(job.id, timeout=0).state == "done"


def test_fail_backs_off_then_dies_keeping_the_last_error(stores, effects):
    acme, _ = stores
    job = acme.jobs.enqueue("test.write", {"note": "x", "fail_times": 9}, max_attempts=3)
    worker = Worker(acme.db.dsn, handlers=_registry(), backoff=0.2)
    try:
        assert worker.run_pending() == 1
        failed = acme.jobs.get(job.id)
        assert (failed.state, failed.attempts) == ("failed", 1)
        assert "attempt 1 fails 失败" in failed.last_error
        # due again only after the backoff (0.2 s), then 0.4 s: not claimable before
        assert worker.claim() == []
        delay = (failed.run_after - failed.updated_at).total_seconds()
        assert 0.15 < delay < 0.3
        time.sleep(0.25)
        assert worker.run_pending() == 1
        second = acme.jobs.get(job.id)
        assert second.state == "failed"
        assert 0.35 < (second.run_after - second.updated_at).total_seconds() < 0.5
        time.sleep(0.45)
        assert worker.run_pending() == 1
    finally:
        worker.stop()
    dead = acme.jobs.get(job.id)
    assert (dead.state, dead.attempts) == ("dead", 3)
    assert "attempt 3 fails" in dead.last_error and dead.finished_at is not None
    assert _effects(effects) == []  # every failed attempt's write was rolled back


def test_permanent_failure_is_dead_at_once(stores):
    acme, _ = stores
    job = acme.jobs.enqueue("test.poison")
    worker = Worker(acme.db.dsn, handlers=_registry())
    try:
        worker.run_pending()
    finally:
        worker.stop()
    dead = acme.jobs.get(job.id)
    assert (dead.state, dead.attempts) == ("dead", 1)
    assert "格式错误" in dead.last_error


def test_cancel_and_retry(stores, effects):
    acme, _ = stores
    job = acme.jobs.enqueue("test.write", {"note": "never"})
    assert acme.jobs.cancel(job.id).state == "cancelled"
    assert acme.jobs.cancel(job.id).state == "cancelled"  # idempotent
    worker = Worker(acme.db.dsn, handlers=_registry())
    try:
        assert worker.run_pending() == 0  # a cancelled job is never run
        retried = acme.jobs.retry(job.id)
        assert (retried.state, retried.attempts) == ("queued", 0)
        assert worker.run_pending() == 1
        with pytest.raises(Conflict):  # a done job is never run twice
            acme.jobs.retry(job.id)
        assert acme.jobs.cancel(job.id).state == "done"  # finished: left as it is
        dead = acme.jobs.enqueue("test.poison")
        worker.run_pending()
        assert acme.jobs.retry(dead.id).state == "queued"
    finally:
        worker.stop()
    assert len(_effects(effects)) == 1
    with pytest.raises(NotFound):
        acme.jobs.cancel("00000000-0000-0000-0000-000000000000")


def test_a_running_job_cannot_be_cancelled_and_its_lease_stays_with_it(stores, effects):
    """While a handler runs, its transaction holds the job's row: cancel is refused (not
    waited for) and another worker never takes the job over, even past the lease."""
    acme, _ = stores
    reg = Registry()
    started, release = threading.Event(), threading.Event()

    @reg.handler("test.slow")
    def slow(ctx):
        started.set()
        release.wait(10)
        ctx.conn.execute("INSERT INTO public.job_effects VALUES (%s, %s, 'slow')",
                         (ctx.job.tenant, ctx.job.id))

    job = acme.jobs.enqueue("test.slow")
    first = Worker(acme.db.dsn, handlers=reg, lease=0.2)
    other = Worker(acme.db.dsn, handlers=reg, lease=0.2)
    thread = threading.Thread(target=first.run_pending)
    thread.start()
    try:
        assert started.wait(10)
        time.sleep(0.4)  # past the lease
        assert other.claim() == []
        with pytest.raises(Conflict):
            acme.jobs.cancel(job.id)
        release.set()
        thread.join(10)
    finally:
        release.set()
        first.stop()
        other.stop()
    assert acme.jobs.get(job.id).state == "done"
    assert len(_effects(effects)) == 1


def test_an_expired_lease_is_claimed_again_and_its_last_attempt_dies(stores):
    acme, _ = stores
    job = acme.jobs.enqueue("test.write", max_attempts=2)
    dead_worker = Worker(acme.db.dsn, handlers=_registry(), lease=0.1, worker_id="dead")
    live = Worker(acme.db.dsn, handlers=_registry(), lease=0.1, worker_id="live")
    try:
        assert [j.id for j in dead_worker.claim()] == [job.id]  # then "dies"
        assert live.claim() == []  # leased
        time.sleep(0.15)
        taken = live.claim()
        assert [(j.id, j.attempts, j.locked_by) for j in taken] == [(job.id, 2, "live")]
        # the first worker comes back: it no longer holds the job
        assert dead_worker.handle(taken[0]) == "lost"
        time.sleep(0.15)  # the second lease expires on the last attempt
        assert live.claim() == []
    finally:
        dead_worker.stop()
        live.stop()
    dead = acme.jobs.get(job.id)
    assert dead.state == "dead" and "lease expired" in dead.last_error


def test_backpressure_bounds_each_tenant(stores):
    acme, globex = stores
    acme.jobs.max_pending = 3
    for n in range(2):
        acme.jobs.enqueue("test.write", {"n": n})
    keyed = acme.jobs.enqueue("test.write", {"n": 2}, idempotency_key="turn-9")
    with pytest.raises(QueueFull, match="full"):
        acme.jobs.enqueue("test.write", {"n": 3})
    assert len(acme.jobs.list()) == 3  # nothing written
    # a known idempotency key is still answered: the job exists
    assert acme.jobs.enqueue("test.write", idempotency_key="turn-9").id == keyed.id
    # the bound is per tenant; finishing jobs makes room
    assert globex.jobs.enqueue("test.write").state == "queued"
    acme.jobs.cancel(acme.jobs.list()[0].id)
    assert acme.jobs.enqueue("test.write", {"n": 4}).state == "queued"


def test_tenants_cannot_see_each_others_jobs(stores, fresh_db):
    acme, globex = stores
    job = acme.jobs.enqueue("test.write", {"secret": "acme's"})
    assert globex.jobs.list() == []
    with pytest.raises(NotFound):
        globex.jobs.get(job.id)
    with pytest.raises(NotFound):
        globex.jobs.cancel(job.id)
    with pytest.raises(NotFound):
        globex.jobs.retry(job.id)
    assert acme.jobs.get(job.id).state == "queued"
    # row-level security itself: memdb_app confined to globex reads no row of acme
    with globex.db.transaction(tenant="globex") as conn:
        assert conn.execute("SELECT count(*) AS n FROM memdb.jobs").fetchone()["n"] == 0
    with pytest.raises(Forbidden), globex.db.transaction(tenant="globex") as conn:
        conn.execute("INSERT INTO memdb.jobs (tenant, kind) VALUES ('acme', 'x')")


def test_worker_tenant_filter_and_kinds(stores, effects):
    acme, globex = stores
    a = acme.jobs.enqueue("test.write", {"note": "a"})
    b = globex.jobs.enqueue("test.write", {"note": "b"})
    unknown = acme.jobs.enqueue("test.unknown")
    worker = Worker(acme.db.dsn, handlers=_registry(), tenants=["globex"])
    try:
        assert worker.run_pending() == 1
    finally:
        worker.stop()
    assert acme.jobs.get(a.id).state == "queued"
    assert globex.jobs.get(b.id).state == "done"
    assert acme.jobs.get(unknown.id).state == "queued"  # no handler here: never claimed


def test_claim_needs_a_worker_and_a_positive_limit(stores):
    acme, _ = stores
    with acme.db.transaction(tenant="") as conn, pytest.raises(psycopg.Error):
        conn.execute("SELECT * FROM memdb.claim_jobs('w', 0, 60)")


def test_listen_wakes_an_idle_worker(stores, effects):
    """A running worker sleeps with a 30 s fallback poll; an enqueue wakes it by NOTIFY."""
    acme, _ = stores
    worker = Worker(acme.db.dsn, handlers=_registry(), poll_interval=30).start()
    try:
        time.sleep(0.5)  # idle, listening
        job = acme.jobs.enqueue("test.write", {"note": "wake"})
        started = time.monotonic()
        assert acme.jobs.wait(job.id, timeout=5).state == "done"
        assert time.monotonic() - started < 2
    finally:
        worker.stop()


def test_in_process_worker_of_a_store(stores, effects):
    acme, globex = stores
    with acme.jobs.start_worker(concurrency=2, handlers=_registry()):
        jobs = [acme.jobs.enqueue("test.write", {"note": str(n)}) for n in range(5)]
        other = globex.jobs.enqueue("test.write", {"note": "globex"})
        assert all(acme.jobs.wait(j.id, timeout=10).state == "done" for j in jobs)
    assert globex.jobs.get(other.id).state == "queued"  # this store's tenant only
    assert len(_effects(effects, "acme")) == 5


def test_a_store_confined_to_a_subject_sees_only_its_subjects_jobs(stores, fresh_db, embedder):
    """A payload holds what a subject said (remember's turn), so a job belongs to the subject
    its payload names (memdb.jobs.subject) and row-level security keeps it from the others:
    a store confined to a subject (a key bound to one) reads, cancels and enqueues only its
    subject's jobs; the tenant's store sees them all."""
    acme, _ = stores
    alice = acme.remember("我对花生过敏。I am allergic to peanuts.", subject="alice", wait=False)
    tenant_wide = acme.jobs.enqueue("test.write", {"note": "no subject"})
    assert (acme.jobs.get(alice.job_id).subject, tenant_wide.subject) == ("alice", None)
    with MemoryStore(fresh_db, tenant="acme", subject="bob", embedder=embedder,
                     gate=None) as bob:
        own = bob.remember("Bob 喜欢乌龙茶。Bob likes oolong tea.", wait=False)
        assert [str(j.id) for j in bob.jobs.list()] == [str(own.job_id)]
        assert bob.jobs.get(own.job_id).payload["subject"] == "bob"
        for other in (alice.job_id, tenant_wide.id):
            with pytest.raises(NotFound):
                bob.jobs.get(other)
            with pytest.raises(NotFound):
                bob.jobs.cancel(other)
            with pytest.raises(NotFound):
                bob.jobs.retry(other)
        made = bob.jobs.enqueue("test.write", {"note": "bob's own, no subject"})
        assert (made.state, made.subject, made.payload) == (
            "queued", "bob", {"note": "bob's own, no subject", "subject": "bob"})
        with pytest.raises(Forbidden, match="confined to subject 'bob'"):
            bob.jobs.enqueue("test.write", {"note": "for alice", "subject": "alice"})
        with pytest.raises(Forbidden):
            bob.jobs.enqueue("documents.ingest", {"options": {"subject": "alice"}})
        assert bob.jobs.stats()["queued"] == 2  # bob's two, not the tenant's four
    assert acme.jobs.get(alice.job_id).state == "queued"  # the refused cancel changed nothing
    assert {str(j.id) for j in acme.jobs.list()} == {str(alice.job_id), str(tenant_wide.id),
                                                    str(own.job_id), str(made.id)}
    assert acme.jobs.stats()["queued"] == 4


def test_a_subject_is_bounded_by_its_tenants_queue_and_keys(stores, fresh_db, embedder):
    """The bound of unfinished jobs is the tenant's even for a store that sees only its
    subject's jobs; an idempotency key another subject's job holds is a Conflict, not that
    job (which the caller may not see)."""
    acme, _ = stores
    acme.jobs.enqueue("test.write", {"subject": "alice"}, idempotency_key="k1")
    acme.jobs.enqueue("test.write", {"subject": "alice"})
    with MemoryStore(fresh_db, tenant="acme", subject="bob", embedder=embedder,
                     gate=None) as bob:
        with pytest.raises(Conflict, match="another subject"):
            bob.jobs.enqueue("test.write", {"note": "x"}, idempotency_key="k1")
        bob.jobs.max_pending = 2
        with pytest.raises(QueueFull):
            bob.jobs.enqueue("test.write", {"note": "over the tenant's bound"})
        assert bob.jobs.list() == []
    assert len(acme.jobs.list()) == 2


def test_sql_role_with_a_subject_set_reads_only_that_subjects_jobs(stores, fresh_db):
    """The same through raw SQL as a real application login (no DAL): memdb.subject set
    narrows memdb.jobs to that subject; memdb.pending_jobs counts only the caller's tenant."""
    from tests.app_login import app_login

    acme, _ = stores
    a = acme.jobs.enqueue("test.write", {"subject": "alice", "note": "alice's turn"})
    acme.jobs.enqueue("test.write", {"subject": "bob"})
    acme.jobs.enqueue("test.write", {"note": "tenant-wide"})
    with app_login(fresh_db) as dsn, psycopg.connect(dsn) as conn:
        conn.execute("SELECT set_config('memdb.tenant', 'acme', true), "
                     "set_config('memdb.subject', 'alice', true)")
        rows = conn.execute("SELECT id, subject FROM memdb.jobs").fetchall()
        assert rows == [(a.id, "alice")]
        assert conn.execute("SELECT memdb.pending_jobs('acme', 100)").fetchone()[0] == 3
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT memdb.pending_jobs('globex', 100)")
        conn.rollback()
        conn.execute("SELECT set_config('memdb.tenant', 'acme', true)")
        assert len(conn.execute("SELECT id FROM memdb.jobs").fetchall()) == 3
        conn.rollback()  # no tenant set: no job, and no count of anyone's
        assert conn.execute("SELECT id FROM memdb.jobs").fetchall() == []
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT memdb.pending_jobs('acme', 100)")

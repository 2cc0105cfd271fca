"""Workers under stress, on a real PostgreSQL: SIGKILLed in the middle of jobs (every job done
exactly once, no effect applied twice), and fairness between tenants when one floods."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memdb import MemoryStore
from memdb.families.jobs import Registry, Worker

ROOT = Path(__file__).resolve().parent.parent
KILLS = 100


@pytest.fixture
def effects(raw):
    raw.execute("CREATE TABLE public.job_effects (tenant text, job_id uuid, note text);"
                "GRANT SELECT, INSERT ON public.job_effects TO memdb_app")
    return raw


def _line(out) -> str:
    """The zygote's next line; a clear failure at its end (it died) instead of reading ''
    for ever."""
    line = out.readline()
    if not line:
        raise AssertionError("the worker zygote's output ended (did it die?)")
    return line.strip()


def _next_pid(out) -> int:
    while True:
        line = _line(out)
        if line.isdigit():
            return int(line)


def test_sigkill_mid_job_applies_every_effect_exactly_once(fresh_db, embedder, effects):
    """100 workers, each SIGKILLed 0-40 ms after its handler wrote its effect (the handler
    then sleeps 30 ms before its commit: most kills land between the write and the commit,
    some after, in the next claim); then one worker drains the queue. Every job is done,
    and has exactly one effect row: a killed attempt's write was rolled back with it."""
    rng = random.Random(34)
    with MemoryStore(fresh_db, tenant="acme", embedder=embedder, gate=None) as store:
        jobs = [store.jobs.enqueue("test.kill", {"n": n}, max_attempts=100).id
                for n in range(400)]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        zygote = subprocess.Popen([sys.executable, str(ROOT / "tests" / "jobs_worker.py"),
                                   store.db.dsn], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, env=env)
        try:
            assert _line(zygote.stdout) == "ready"
            for _ in range(KILLS):
                zygote.stdin.write("fork\n")
                zygote.stdin.flush()
                pid = _next_pid(zygote.stdout)
                while _line(zygote.stdout) != f"in {pid}":
                    pass  # (lines of earlier workers' jobs)
                time.sleep(rng.uniform(0, 0.04))  # mostly before its commit, at times after
                os.kill(pid, signal.SIGKILL)
        finally:
            zygote.kill()
            zygote.wait()
        time.sleep(0.35)  # the killed workers' leases expire
        reg = Registry()

        @reg.handler("test.kill")
        def drain(ctx):
            ctx.conn.execute("INSERT INTO public.job_effects VALUES (%s, %s, 'kill')",
                             (ctx.job.tenant, ctx.job.id))

        Worker(store.db.dsn, handlers=reg, concurrency=2, lease=0.3).run(until_idle=True)
        states = {j.id: (j.state, j.attempts) for j in store.jobs.list(limit=1000)}
    assert {s for s, _ in states.values()} == {"done"}
    rows = effects.execute("SELECT job_id, count(*) FROM public.job_effects "
                           "GROUP BY job_id").fetchall()
    assert sorted(r[0] for r in rows) == sorted(jobs)
    assert {r[1] for r in rows} == {1}  # never twice
    # the kills really landed inside jobs: those jobs ran again after their lease
    interrupted = sum(1 for _, attempts in states.values() if attempts > 1)
    assert interrupted >= KILLS // 2, interrupted


def test_a_flooding_tenant_does_not_starve_another(fresh_db, embedder):
    """8 worker threads; tenant flood has 3,000 jobs queued first, then tenant calm enqueues
    20. Each job takes 5 ms. calm's jobs all finish within 2 s of being enqueued (first in,
    first out they would wait for the whole flood: about 3,000 x 5 ms / 8 = 1.9 s at best,
    and much more on a loaded machine), while most of the flood is still queued."""
    reg = Registry()
    reg.register("test.sleep", lambda ctx: time.sleep(0.005))
    with MemoryStore(fresh_db, tenant="flood", embedder=embedder, gate=None) as flood, \
            MemoryStore(fresh_db, tenant="calm", embedder=embedder, gate=None) as calm:
        with flood.db.transaction(tenant="flood") as conn:  # 3,000 jobs in one statement
            conn.execute("SELECT memdb.enqueue_job('flood', 'test.sleep') "
                         "FROM generate_series(1, 3000)")
        worker = Worker(flood.db.dsn, handlers=reg, concurrency=8).start()
        try:
            time.sleep(0.3)  # the flood is being worked on
            started = time.monotonic()
            mine = [calm.jobs.enqueue("test.sleep").id for _ in range(20)]
            for job_id in mine:
                calm.jobs.wait(job_id, timeout=10)
            took = time.monotonic() - started
            left = flood.jobs.stats()["queued"]
        finally:
            worker.stop()
    print(f"calm's 20 jobs took {took:.2f} s; flood still queued: {left}")
    assert took < 2.0, took
    assert left > 1500, left

"""``store.jobs``: the tenant's durable job queue (``memdb.jobs``; docs/jobs.md).

>>> job = store.jobs.enqueue("demo.echo", {"text": "你好"})     # doctest: +SKIP
>>> store.jobs.wait(job.id, timeout=30).state                  # doctest: +SKIP
'done'

Every call runs in a transaction confined to the store's tenant by row-level security. The
jobs are run by workers (:class:`memdb.families.jobs.Worker`, ``memdb worker``), or by
:meth:`Jobs.start_worker` inside this process.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from ...core import bridge, sql
from ...core import validate as v
from ...core.errors import InvalidInput, NotFound
from ...core.family import Family
from ...core.ops.jobs import MAX_JOBS_LIST as MAX_LIST
from ._models import STATES, Job
from ._queue import DEFAULT_MAX_PENDING, enqueue, queue_errors
from ._registry import Registry, check_kind
from ._schedules import ScheduleMethods

__all__ = ["Jobs", "MAX_LIST"]


def _id(value: object) -> UUID:
    if isinstance(value, UUID):
        return value
    try:
        return UUID(str(value))
    except ValueError:
        raise InvalidInput(f"not a job id (UUID): {str(value)[:80]!r}") from None


class Jobs(ScheduleMethods, Family):
    """The store's tenant's jobs: enqueue, get, list, wait, cancel, retry, stats; and its
    schedules of recurring jobs (schedule, schedules, unschedule, run_schedules)."""

    max_pending: int = DEFAULT_MAX_PENDING  # the tenant's bound of unfinished jobs

    def enqueue(self, kind: str, payload: dict[str, Any] | None = None, *,
                idempotency_key: str | None = None, delay: float | timedelta | None = None,
                run_after: datetime | None = None, max_attempts: int = 5,
                conn: Any = None) -> Job:
        """Add a job of ``kind`` (its handler is looked up by the worker) with a JSON
        ``payload``; returns it (queued). ``idempotency_key``: a job of the same kind and key
        already enqueued (in any state) is returned instead. ``delay`` / ``run_after``: not
        before then. ``max_attempts`` (1-100): failed attempts before it is dead.
        ``conn``: enqueue inside this transaction of the store's tenant (e.g. with the write
        it follows up: both commit or neither). :class:`~memdb.families.jobs.QueueFull` when the
        tenant already has :attr:`max_pending` unfinished jobs. A store confined to a subject
        enqueues that subject's jobs: a payload naming no subject gets ``"subject"`` set to it,
        one naming another subject is :class:`~memdb.core.errors.Forbidden`."""
        check_kind(kind)
        if payload is not None and not isinstance(payload, dict):
            raise InvalidInput("a job's payload is a JSON object (dict)")
        v.positive_int(max_attempts, "max_attempts", 100)
        if idempotency_key is not None and not (isinstance(idempotency_key, str)
                                                and 1 <= len(idempotency_key) <= 256):
            raise InvalidInput("idempotency_key must be a string of 1-256 characters")
        if delay is not None:
            seconds = delay.total_seconds() if isinstance(delay, timedelta) else float(delay)
            if seconds < 0:
                raise InvalidInput("delay must be >= 0")
            if run_after is not None:
                raise InvalidInput("give delay or run_after, not both")
            run_after = datetime.now().astimezone() + timedelta(seconds=seconds)
        args = dict(idempotency_key=idempotency_key, run_after=run_after,
                    max_attempts=max_attempts, max_pending=self.max_pending)
        if conn is not None:
            job_id, _ = enqueue(conn, self._core.tenant, kind, payload, **args)
            return self._get(conn, job_id)
        with queue_errors(), self._core.transaction() as tx:
            job_id, _ = enqueue(tx, self._core.tenant, kind, payload, **args)
            return self._get(tx, job_id)

    def _get(self, conn: Any, job_id: UUID) -> Job:
        """The job, as this transaction may see it (row-level security)."""
        row = conn.execute(sql.query("get_job"), {"tenant": self._core.tenant,
                                                  "id": job_id}).fetchone()
        if row is None:
            raise NotFound(f"no job {job_id} in this tenant")
        return Job.from_row(row)

    def get(self, id: UUID | str) -> Job:
        """One job of the tenant by id (:class:`~memdb.core.errors.NotFound` otherwise)."""
        job_id = _id(id)
        with self._core.transaction() as conn:
            return self._get(conn, job_id)

    def list(self, *, state: str | None = None, kind: str | None = None,
             limit: int = 50) -> list[Job]:
        """The tenant's jobs, newest first; ``state`` / ``kind``: only those. A store confined
        to a subject sees only its subject's jobs (row-level security; so do get, wait,
        cancel, retry and stats)."""
        if state is not None and state not in STATES:
            raise InvalidInput(f"state must be one of {STATES}, got {state!r}")
        if kind is not None:
            check_kind(kind)
        v.positive_int(limit, "limit", MAX_LIST)
        with self._core.transaction() as conn:
            rows = conn.execute(sql.query("list_jobs"), {
                "tenant": self._core.tenant, "state": state, "kind": kind,
                "limit": limit}).fetchall()
        return [Job.from_row(r) for r in rows]

    def wait(self, id: UUID | str, *, timeout: float = 60.0) -> Job:
        """The job once finished (done, dead or cancelled); :class:`TimeoutError` if it is not
        after ``timeout`` seconds. Polls, 20 ms at first, up to 0.5 s apart."""
        job_id = _id(id)
        if not isinstance(timeout, (int, float)) or timeout < 0:
            raise InvalidInput("timeout must be a number of seconds >= 0")
        deadline = time.monotonic() + timeout
        pause = 0.02
        while True:
            job = self.get(job_id)
            if job.finished:
                return job
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"job {job_id} is still {job.state} after {timeout:g} s")
            time.sleep(min(pause, left))
            pause = min(pause * 1.5, 0.5)

    def cancel(self, id: UUID | str) -> Job:
        """Cancel a job that is not being handled (queued, failed, or claimed but not started):
        it is never run. A job whose handler runs right now: :class:`~memdb.core.errors.Conflict`;
        a finished one is returned as it is."""
        return self._change("cancel_job", _id(id))

    def retry(self, id: UUID | str) -> Job:
        """Queue a dead, failed or cancelled job again now, its attempts back to 0. A done job:
        :class:`~memdb.core.errors.Conflict` (enqueue a new one); a queued or running one is
        returned as it is."""
        return self._change("retry_job", _id(id))

    def _change(self, query: str, job_id: UUID) -> Job:
        with queue_errors(), self._core.transaction() as conn:
            self._get(conn, job_id)  # NotFound for a job the store may not see
            row = conn.execute(sql.query(query),
                               {"tenant": self._core.tenant, "id": job_id}).fetchone()
            if row["state"] is None:
                raise NotFound(f"no job {job_id} in this tenant")
            return self._get(conn, job_id)

    def stats(self) -> dict[str, Any]:
        """Queue depth by state, ``oldest_due_seconds`` (age of the oldest due job not yet
        running; None when none), ``done_last_hour`` and ``dead_last_hour``."""
        with self._core.transaction() as conn:
            row = conn.execute(sql.query("job_stats"), {"tenant": self._core.tenant}).fetchone()
        return dict(row)

    @bridge.no_io
    def start_worker(self, *, concurrency: int = 1, handlers: Registry | None = None,
                     all_tenants: bool = False, **options: Any) -> Any:
        """A :class:`~memdb.families.jobs.Worker` on this store's database, running in background
        threads of this process (the embedded default's in-process worker): it handles this
        store's tenant's jobs (every tenant's with ``all_tenants``). Stop it with
        ``worker.stop()`` (or use it as a context manager) before closing the store.
        ``options``: the Worker's (lease, poll_interval, backoff, kinds...)."""
        from ._worker import Worker

        store = self._store
        sync = type(store)
        while getattr(sync, "_driver", "sync") != "sync":  # the async driver's core
            sync = sync.__base__
        factory = options.pop("store_factory", None) or (
            lambda tenant: sync(store.db.dsn, tenant=tenant, embedder=store.embedder,
                                gate=store.gate, pool_size=2))
        worker = Worker(store.db.dsn, concurrency=concurrency, handlers=handlers,
                        tenants=None if all_tenants else [self._core.tenant],
                        store_factory=factory, **options)
        return worker.start()

"""``Worker``: claims jobs across tenants and runs their handlers (docs/jobs.md).

Each of ``concurrency`` threads loops: claim one due job (``memdb.claim_jobs``: FOR UPDATE
SKIP LOCKED, fair between tenants), then run its handler in a transaction confined to the
job's tenant that first locks the job's row (``memdb.start_job``) and ends by marking it done
(``memdb.complete_job``): the handler's writes through ``ctx.conn`` and the completion commit
together. A failed attempt is recorded afterwards (``memdb.fail_job``: backoff, or dead). An
idle thread sleeps until ``NOTIFY memdb_jobs`` (a listener thread's ``LISTEN``), a retry it
scheduled itself falls due, or ``poll_interval`` passes (the fallback poll: a notification
lost while reconnecting, or another worker's failed job coming due).

>>> from memdb.families.jobs import Worker, handlers
>>> handlers.register("demo.noop", lambda ctx: None)                # doctest: +SKIP
>>> Worker(concurrency=4).run(until_idle=True)                       # doctest: +SKIP
{'done': 12, 'failed': 0, 'dead': 0, 'lost': 0}
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from ...core import sql
from ...core.connection import Database
from ...core.errors import InvalidInput, MemdbError
from ._models import Job, PermanentFailure
from ._queue import CHANNEL, claim
from ._registry import Registry
from ._registry import handlers as default_handlers
from ._schedules import enqueue_due

__all__ = ["Worker", "JobContext"]

log = logging.getLogger("memdb.jobs")


class JobContext:
    """What a handler gets: ``job`` (its row, locked), ``conn`` (the job's transaction,
    confined to ``job.tenant`` by row-level security: write the job's effects here),
    ``worker``, and ``store``: a :class:`~memdb.MemoryStore` of the job's tenant (made by the
    worker's ``store_factory``; its own transactions do NOT commit with the job: use them only
    for effects that are idempotent by themselves)."""

    __slots__ = ("job", "conn", "worker")

    def __init__(self, job: Job, conn: Any, worker: Worker) -> None:
        self.job, self.conn, self.worker = job, conn, worker

    @property
    def store(self) -> Any:
        return self.worker.store_for(self.job.tenant)


class Worker:
    """Runs queued jobs (see the module docstring).

    ``dsn``: the database (default: ``$MEMDB_DSN``, else the embedded server), as an
    application login: a worker claims across tenants through ``memdb.claim_jobs`` (SECURITY
    DEFINER, executable by memdb_app) and runs each job confined to its tenant.
    ``handlers``: the :class:`~memdb.families.jobs.Registry` (default
    ``memdb.families.jobs.handlers``);
    ``kinds``: only these kinds (default: every registered kind: a worker never claims a job
    it has no handler for). ``tenants``: only these tenants' jobs (default: every tenant).
    ``lease``: seconds a claimed job stays reserved before another worker may take it over if
    this one died (its row stays locked while its handler runs, whatever the lease).
    ``backoff``: seconds before the first retry of a failed job, doubling at each attempt.
    ``poll_interval``: the longest an idle thread sleeps without a notification.
    ``store_factory``: ``tenant -> MemoryStore`` for ``ctx.store`` (cached per tenant).
    ``schedules``: enqueue the due schedules (of its tenants and kinds) each time it looks for
    work, at most once per ``schedule_interval`` seconds (``memdb.enqueue_due_schedules``).
    """

    def __init__(self, dsn: str | None = None, *, concurrency: int = 1,
                 handlers: Registry | None = None, tenants: list[str] | None = None,
                 kinds: list[str] | None = None, lease: float = 60.0,
                 poll_interval: float = 30.0, backoff: float = 1.0,
                 worker_id: str | None = None,
                 store_factory: Callable[[str], Any] | None = None,
                 schedules: bool = True, schedule_interval: float = 1.0) -> None:
        if not isinstance(concurrency, int) or not 1 <= concurrency <= 256:
            raise InvalidInput("concurrency must be an integer 1-256")
        for name, value in (("lease", lease), ("poll_interval", poll_interval)):
            if not isinstance(value, (int, float)) or value <= 0:
                raise InvalidInput(f"{name} must be a number of seconds > 0")
        if not isinstance(backoff, (int, float)) or backoff < 0:
            raise InvalidInput("backoff must be a number of seconds >= 0")
        self.handlers = handlers if handlers is not None else default_handlers
        self.concurrency = concurrency
        self.tenants = list(tenants) if tenants else None
        self._kinds = list(kinds) if kinds else None
        self.lease, self.poll_interval, self.backoff = float(lease), float(poll_interval), \
            float(backoff)
        self.id = worker_id or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._dsn = dsn
        self._store_factory = store_factory
        self._stores: dict[str, Any] = {}
        self._db: Database | None = None
        self._lock = threading.Lock()
        self._wake = threading.Condition()
        self._generation = 0
        self._next_due: float | None = None  # monotonic time a retry of ours falls due
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self.counts = {"done": 0, "failed": 0, "dead": 0, "lost": 0}
        self.schedules, self.schedule_interval = bool(schedules), float(schedule_interval)
        self._schedules_at: float | None = None  # monotonic time of the last look

    def __repr__(self) -> str:
        return f"Worker(id={self.id!r}, concurrency={self.concurrency}, tenants={self.tenants!r})"

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- connections -----------------------------------------------------------------------
    @property
    def db(self) -> Database:
        with self._lock:
            if self._db is None:
                self._db = Database(self._dsn, max_size=self.concurrency + 1)
            return self._db

    def store_for(self, tenant: str) -> Any:
        """The store of ``tenant`` for handlers (``ctx.store``), made once by the factory."""
        if self._store_factory is None:
            raise RuntimeError("this worker has no store_factory: ctx.store is unavailable")
        with self._lock:
            if tenant not in self._stores:
                self._stores[tenant] = self._store_factory(tenant)
            return self._stores[tenant]

    @property
    def kinds(self) -> list[str]:
        return self._kinds or self.handlers.kinds()

    # -- one job -----------------------------------------------------------------------------
    def claim(self, limit: int = 1) -> list[Job]:
        """Claim up to ``limit`` due jobs for this worker (they are running, leased to it)."""
        kinds = self.kinds
        if not kinds:
            return []
        with self.db.transaction(tenant="") as conn:  # memdb_app; the claim is a definer
            return claim(conn, self.id, limit, self.lease, self.tenants, kinds)

    def handle(self, job: Job) -> str:
        """Run one claimed job's handler; its outcome: done, failed, dead or lost (the lease
        was lost: cancelled, or taken over)."""
        fn = self.handlers.get(job.kind)
        try:
            if fn is None:
                raise PermanentFailure(f"no handler for job kind {job.kind!r} in this worker")
            with self.db.transaction(tenant=job.tenant) as conn:
                row = conn.execute(sql.query("start_job"), {
                    "tenant": job.tenant, "id": job.id, "worker": self.id}).fetchone()
                if row is None:
                    return self._count("lost")
                result = fn(JobContext(Job.from_row(row), conn, self))
                conn.execute(sql.query("complete_job"), {
                    "tenant": job.tenant, "id": job.id, "worker": self.id,
                    "result": None if result is None else Jsonb(result)})
            return self._count("done")
        except Exception as exc:  # noqa: BLE001 (any handler error fails the attempt)
            log.warning("job %s (%s) failed: %s: %s", job.id, job.kind, type(exc).__name__, exc)
            return self._fail(job, exc)

    def _fail(self, job: Job, exc: Exception) -> str:
        error = f"{type(exc).__name__}: {exc}"[:4000]
        with self.db.transaction(tenant=job.tenant) as conn:
            row = conn.execute(sql.query("fail_job"), {
                "tenant": job.tenant, "id": job.id, "worker": self.id, "error": error,
                "backoff": self.backoff,
                "retry": not isinstance(exc, PermanentFailure)}).fetchone()
        state = row["state"] if row else None
        if state == "failed":
            due = time.monotonic() + self.backoff * 2 ** max(job.attempts - 1, 0)
            with self._wake:
                self._next_due = due if self._next_due is None else min(self._next_due, due)
        return self._count(state or "lost")

    def _count(self, outcome: str) -> str:
        with self._lock:
            self.counts[outcome] += 1
        return outcome

    def enqueue_schedules(self, *, force: bool = False) -> int:
        """Enqueue the due schedules of this worker's tenants and kinds (at most once per
        ``schedule_interval`` unless ``force``); how many jobs it made."""
        kinds = self.kinds
        if not self.schedules or not kinds:
            return 0
        now = time.monotonic()
        with self._lock:
            if not force and self._schedules_at is not None \
                    and now - self._schedules_at < self.schedule_interval:
                return 0
            self._schedules_at = now
        with self.db.transaction(tenant="") as conn:  # memdb_app; the function is a definer
            rows = enqueue_due(conn, self.tenants, kinds)
        return sum(1 for r in rows if r["created"])

    def run_pending(self) -> int:
        """Claim and handle jobs in the calling thread until none is due; how many ran
        (the due schedules are enqueued first: :meth:`enqueue_schedules`)."""
        n = 0
        self.enqueue_schedules()
        while not self._stopping.is_set():
            jobs = self.claim(1)
            if not jobs:
                return n
            self.handle(jobs[0])
            n += 1
        return n

    # -- threads -----------------------------------------------------------------------------
    def _sleep(self, seen: int) -> None:
        with self._wake:
            if self._generation != seen or self._stopping.is_set():
                return
            timeout = self.poll_interval
            if self._next_due is not None:
                timeout = max(0.0, min(timeout, self._next_due - time.monotonic()))
            self._wake.wait(timeout)
            if self._next_due is not None and self._next_due <= time.monotonic():
                self._next_due = None

    def _loop(self, until_idle: bool) -> None:
        while not self._stopping.is_set():
            seen = self._generation
            try:
                ran = self.run_pending()
            except MemdbError as exc:  # the database is away: try again a little later
                log.warning("worker %s: %s", self.id, exc)
                self._stopping.wait(min(self.poll_interval, 1.0))
                continue
            if until_idle:
                return
            if not ran:
                self._sleep(seen)

    def _listen(self) -> None:
        """LISTEN memdb_jobs; every notification (and every reconnection) wakes the threads."""
        while not self._stopping.is_set():
            try:
                with psycopg.connect(self.db.dsn, autocommit=True) as conn:
                    conn.execute(sql.query("listen_jobs"))
                    self._notify()  # whatever was enqueued while not listening
                    while not self._stopping.is_set():
                        for _ in conn.notifies(timeout=0.5, stop_after=1):
                            self._notify()
            except psycopg.Error as exc:
                log.warning("worker %s: LISTEN %s: %s", self.id, CHANNEL, exc)
                self._stopping.wait(1.0)

    def _notify(self) -> None:
        with self._wake:
            self._generation += 1
            self._wake.notify_all()

    def start(self, *, until_idle: bool = False) -> Worker:
        """Start the threads in the background (and the listener, unless ``until_idle``:
        then each thread ends once no job is due); returns the worker."""
        if self._threads:
            raise RuntimeError("this worker is already started")
        self._stopping.clear()  # (the threads connect: no I/O here, e.g. on an event loop)
        targets = [] if until_idle else [("listen", self._listen)]
        targets += [(f"job-{n}", lambda: self._loop(until_idle))
                    for n in range(self.concurrency)]
        for name, target in targets:
            thread = threading.Thread(target=target, name=f"memdb-worker-{name}", daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the job threads (True when all ended)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for thread in self._threads:
            if thread.name.endswith("listen"):
                continue
            while thread.is_alive():
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                thread.join(0.2 if left is None else min(0.2, left))
        return True

    def stop(self, timeout: float | None = 30.0) -> None:
        """Graceful stop: no new claims; jobs being handled finish (up to ``timeout``
        seconds: a job still running then is rolled back by the process's exit and retried
        after its lease); then the connections close."""
        self._stopping.set()
        self._notify()
        self.join(timeout)
        for thread in self._threads:
            thread.join(1.0)
        self._threads = []
        with self._lock:
            stores, self._stores = list(self._stores.values()), {}
            db, self._db = self._db, None
        for store in stores:
            store.close()
        if db is not None:
            db.close()

    def run(self, *, until_idle: bool = False, handle_signals: bool = False) -> dict[str, int]:
        """Run in the foreground until :meth:`stop` (or, ``until_idle``, until no job is due);
        returns the counts of outcomes. ``handle_signals``: SIGTERM and SIGINT stop it
        gracefully (main thread only)."""
        previous: dict[int, Any] = {}
        if handle_signals:
            for sig in (signal.SIGTERM, signal.SIGINT):
                previous[sig] = signal.signal(sig, lambda *_: self._begin_stop())
        try:
            self.start(until_idle=until_idle)
            self.join()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self.stop()
        return dict(self.counts)

    def _begin_stop(self) -> None:
        self._stopping.set()
        threading.Thread(target=self._notify, daemon=True).start()  # not in the handler

"""Read replicas: reads and searches on a hot standby, writes on the primary.

``MemoryStore(dsn, read_dsn=...)`` (or ``$MEMDB_READ_DSN``) keeps a second connection pool to
a streaming standby of the primary. The store's read operations (get, list, search, recall,
history, count, profile, context, sessions' get/list/state, documents' search, the graph's
search and neighbours, meta.read, ask's retrieval) run there; everything else runs on the
primary: every write, the reads a write makes first (update's current version, remember's
search of what is already known, sessions.update_state's read), recall's trace row, traces,
review, maintenance, export and erasure.

Which server a read uses is its *consistency*:

* ``"read_your_writes"`` (default): the standby, once it has replayed this store's own last
  write. After a write the store asks the primary for its WAL position (one query, at the
  next such read, not at the write) and waits, polling ``pg_last_wal_replay_lsn()`` on the
  standby, for at most ``read_timeout`` seconds; reads with no write in between skip both.
* ``"replica"``: the standby as it is; a just-written memory may not be there yet.
* ``"primary"``: the primary (the read does not use the standby at all).

A standby that does not catch up within the timeout, or cannot be reached, does not fail the
read: it runs on the primary, a :class:`ReplicaFallback` warning says why, and
``store.replica.stats["fallback"]`` counts it (``read_fallback=False`` raises
:class:`~memdb.core.errors.ReplicaLagging` or :class:`~memdb.core.errors.ReplicaUnavailable`
instead).
A standby found unreachable is left alone for ``RETRY_AFTER`` seconds (reads go straight to
the primary), then tried again. Writes never touch the standby, so a dead one never breaks
them. A standby lost in the middle of a read raises ReplicaUnavailable (a
DatabaseUnavailable); the next read goes to the primary.

Row-level security is the same on the standby: it replays the primary's tables, roles and
policies, and each read transaction sets the tenant and subject as on the primary.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import time
import warnings
from collections.abc import Iterator
from typing import Any

from . import bridge, sql
from .connection import Database
from .errors import DatabaseUnavailable, InvalidInput, ReplicaLagging, ReplicaUnavailable
from .masking import redact_dsn

__all__ = ["ReadReplica", "ReplicaFallback", "CONSISTENCY", "DEFAULT_TIMEOUT", "RETRY_AFTER"]

CONSISTENCY = ("read_your_writes", "replica", "primary")
DEFAULT_TIMEOUT = 1.0  # seconds a read_your_writes read waits for the standby to replay
RETRY_AFTER = 5.0  # seconds a standby found unreachable is skipped
POOL_TIMEOUT = 2.0  # seconds to wait for a standby connection before calling it down
_MAX_PAUSE = 0.05  # longest pause between two replay polls

# Per read: {id(ReadReplica): (consistency, timeout)} set by MemoryStore.consistency(); a
# context variable, so each thread and each asyncio task has its own.
_scope: contextvars.ContextVar[dict[int, tuple[str, float | None]] | None] = \
    contextvars.ContextVar("memdb_read_consistency", default=None)


class ReplicaFallback(UserWarning):
    """A read meant for the standby ran on the primary (the standby lagged or was down)."""


def check_consistency(level: object) -> str:
    if level not in CONSISTENCY:
        raise InvalidInput(f"consistency must be one of {CONSISTENCY}, got {level!r}")
    return str(level)


def check_timeout(timeout: object) -> float:
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) \
            or not 0 <= timeout <= 600:
        raise InvalidInput(f"read timeout must be a number of seconds in [0, 600], "
                           f"got {timeout!r}")
    return float(timeout)


def lsn_value(text: str) -> int:
    """A pg_lsn's text (``16/B374D848``) as a comparable integer."""
    high, _, low = text.partition("/")
    return (int(high, 16) << 32) + int(low, 16)


def lsn_text(value: int) -> str:
    return f"{value >> 32:X}/{value & 0xFFFFFFFF:X}"


class ReadReplica:
    """The standby's pool and the bookkeeping of one store's reads (see the module docstring).

    ``stats``: reads served by the ``replica``, by the ``primary`` (consistency primary),
    ``fallback`` reads (meant for the standby, run on the primary), ``waits`` (reads that
    waited for replay) and ``wait_ms`` (their total wait).
    """

    def __init__(self, primary: Database, read_dsn: str, *, driver: str, pool_size: int,
                 consistency: str = "read_your_writes", timeout: float = DEFAULT_TIMEOUT,
                 fallback: bool = True) -> None:
        self.primary = primary
        self.dsn = read_dsn
        self.consistency = check_consistency(consistency)
        self.timeout = check_timeout(timeout)
        if not isinstance(fallback, bool):
            raise InvalidInput("read_fallback must be True or False")
        self.fallback = fallback
        self._driver, self._pool_size = driver, pool_size
        self._db: Database | None = None
        self._lock = threading.Lock()  # bookkeeping only; never held across I/O
        self._dirty = False  # a write committed since the primary's WAL position was read
        self._target = 0  # the WAL position the standby must replay to show our writes
        self._replayed = 0  # the standby's replay position, as last seen
        self._down_until = 0.0
        self.stats: dict[str, float] = {"replica": 0, "primary": 0, "fallback": 0,
                                        "waits": 0, "wait_ms": 0.0}

    def __repr__(self) -> str:
        return (f"ReadReplica(dsn={redact_dsn(self.dsn)!r}, consistency={self.consistency!r}, "
                f"timeout={self.timeout})")

    # -- scopes ----------------------------------------------------------------------------
    def scope(self, consistency: str, timeout: float | None = None) -> Any:
        """A context manager: reads inside the block use ``consistency`` (and ``timeout``);
        bad values are refused here, not on entering it."""
        level = check_consistency(consistency)
        wait = None if timeout is None else check_timeout(timeout)
        return self._scoped(level, wait)

    @contextlib.contextmanager
    def _scoped(self, level: str, wait: float | None) -> Iterator[None]:
        token = _scope.set({**(_scope.get() or {}), id(self): (level, wait)})
        try:
            yield
        finally:
            _scope.reset(token)

    def _level(self) -> tuple[str, float]:
        level, wait = (_scope.get() or {}).get(id(self), (self.consistency, None))
        return level, self.timeout if wait is None else wait

    # -- writes ----------------------------------------------------------------------------
    @contextlib.contextmanager
    def writing(self, transaction: Any) -> Iterator[Any]:
        """A primary transaction whose commit later reads must see (read_your_writes)."""
        with transaction as conn:
            yield conn
        self._dirty = True  # after the commit; the WAL position is asked for when needed

    # -- reads -----------------------------------------------------------------------------
    @contextlib.contextmanager
    def read(self, tenant: str, subject: str | None, *,
             pipelined: bool = False, snapshot: bool = False) -> Iterator[Any]:
        """A read transaction confined to ``tenant`` (and ``subject``), on the server the
        current consistency picks (``pipelined``, ``snapshot``: see
        :meth:`Database.transaction`)."""
        on_replica = False
        try:
            with contextlib.ExitStack() as stack:
                conn, on_replica = self._enter(stack, tenant, subject, pipelined, snapshot)
                yield conn
        except ReplicaUnavailable:
            raise
        except DatabaseUnavailable as exc:
            if not on_replica:
                raise
            self._mark_down()
            raise ReplicaUnavailable(f"the read replica was lost during the read: {exc}") \
                from exc

    def _enter(self, stack: contextlib.ExitStack, tenant: str, subject: str | None,
               pipelined: bool, snapshot: bool) -> tuple[Any, bool]:
        level, timeout = self._level()
        if level == "primary":
            self._count("primary")
            return stack.enter_context(self.primary.transaction(
                tenant=tenant, subject=subject, pipelined=pipelined, snapshot=snapshot)), False
        left = self._down_until - time.monotonic()
        if left > 0:
            return self._fall_back(stack, tenant, subject, pipelined, snapshot, ReplicaUnavailable(
                f"the read replica is unavailable (tried again in {left:.1f} s)")), False
        target = self._target_lsn() if level == "read_your_writes" else 0
        try:
            db = self._database()
            if target > self._replayed and not self._catch_up(db, target, timeout):
                return self._fall_back(stack, tenant, subject, pipelined, snapshot, ReplicaLagging(
                    f"the read replica did not replay this store's last write "
                    f"({lsn_text(target)}) within {timeout:g} s")), False
            conn = stack.enter_context(db.transaction(tenant=tenant, subject=subject,
                                                      pipelined=pipelined, snapshot=snapshot))
        except DatabaseUnavailable as exc:
            self._mark_down()
            return self._fall_back(stack, tenant, subject, pipelined, snapshot, ReplicaUnavailable(
                f"the read replica is unavailable: {exc}"), cause=exc), False
        self._count("replica")
        return conn, True

    def _fall_back(self, stack: contextlib.ExitStack, tenant: str, subject: str | None,
                   pipelined: bool, snapshot: bool,
                   error: ReplicaLagging | ReplicaUnavailable,
                   cause: BaseException | None = None) -> Any:
        if not self.fallback:
            raise error from cause
        warnings.warn(f"{error}; read from the primary", ReplicaFallback, stacklevel=5)
        self._count("fallback")
        return stack.enter_context(self.primary.transaction(tenant=tenant, subject=subject,
                                                            pipelined=pipelined,
                                                            snapshot=snapshot))

    def _target_lsn(self) -> int:
        """The primary's WAL position after this store's last write (asked once per batch of
        writes; a primary that cannot be reached raises DatabaseUnavailable, as any read)."""
        if self._dirty:
            self._dirty = False  # before asking: a write committing meanwhile sets it again
            try:
                with self.primary.statement() as conn:
                    row = conn.execute(sql.query("wal_commit_lsn")).fetchone()
            except BaseException:
                self._dirty = True
                raise
            with self._lock:
                self._target = max(self._target, lsn_value(row["lsn"]))
        return self._target

    def _catch_up(self, db: Database, target: int, timeout: float) -> bool:
        """Wait (at most ``timeout`` s) until the standby has replayed ``target``."""
        started = time.monotonic()
        pause = 0.001
        waited = False
        try:
            with db.statement() as conn:
                while True:
                    row = conn.execute(sql.query("replica_replayed"),
                                       {"lsn": lsn_text(target)}).fetchone()
                    if row["caught_up"]:
                        replayed = target if row["replayed"] is None else max(
                            target, lsn_value(row["replayed"]))
                        with self._lock:
                            self._replayed = max(self._replayed, replayed)
                        return True
                    left = timeout - (time.monotonic() - started)
                    if left <= 0:
                        return False
                    waited = True
                    bridge.sleep(min(pause, left))
                    pause = min(pause * 2, _MAX_PAUSE)
        finally:
            if waited:
                with self._lock:
                    self.stats["waits"] += 1
                    self.stats["wait_ms"] += (time.monotonic() - started) * 1000

    def _database(self) -> Database:
        db = self._db
        if db is None:  # the sync driver connects here: a standby that is down raises
            db = Database(self.dsn, max_size=self._pool_size, driver=self._driver,
                          timeout=POOL_TIMEOUT)
            with self._lock:
                spare = None
                if self._db is None:
                    self._db = db
                else:
                    db, spare = self._db, db
            if spare is not None:
                spare.close()
        return db

    def _mark_down(self) -> None:
        self._down_until = time.monotonic() + RETRY_AFTER
        with self._lock:
            db, self._db = self._db, None
        if db is not None:
            with contextlib.suppress(Exception):
                db.close()

    def _count(self, key: str) -> None:
        with self._lock:
            self.stats[key] += 1

    def reset(self) -> None:
        """Close the standby's pooled connections (after a migration: new types)."""
        if self._db is not None:
            self._db.reset()

    def close(self) -> None:
        with self._lock:
            db, self._db = self._db, None
        if db is not None:
            db.close()

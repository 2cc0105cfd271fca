"""The queue's statements on a connection, shared by the family and the worker: each runs the
named query of ``sql/queries/jobs.sql`` and turns the queue's own SQLSTATEs into errors."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import datetime
from typing import Any
from uuid import UUID

import psycopg
from psycopg.types.json import Jsonb

from ...core import sql
from ...core.errors import Conflict, MemdbError
from ._models import Job, QueueFull

__all__ = ["enqueue", "claim", "queue_errors", "CHANNEL", "DEFAULT_MAX_PENDING"]

CHANNEL = "memdb_jobs"  # NOTIFY'd by enqueue_job and retry_job
DEFAULT_MAX_PENDING = 10_000  # a tenant's unfinished jobs (the backpressure bound)


def _sqlstate(exc: BaseException) -> str | None:
    while exc is not None:
        state = getattr(exc, "sqlstate", None)
        if state:
            return state
        exc = exc.__cause__  # type: ignore[assignment]
    return None


@contextlib.contextmanager
def queue_errors() -> Iterator[None]:
    """QueueFull for SQLSTATE MD002, Conflict for MD003 (raised inside ``Database``'s
    transactions, which wrap driver errors in memdb errors)."""
    try:
        yield
    except (MemdbError, psycopg.Error) as exc:
        state = _sqlstate(exc)
        diag = getattr(exc, "diag", None)
        message = (getattr(diag, "message_primary", None) or str(exc)).split(" [SQLSTATE")[0]
        if state == "MD002":
            raise QueueFull(message) from exc
        if state == "MD003":
            raise Conflict(message) from exc
        raise


def enqueue(conn: Any, tenant: str, kind: str, payload: dict[str, Any] | None = None, *,
            idempotency_key: str | None = None, run_after: datetime | None = None,
            max_attempts: int = 5, max_pending: int = DEFAULT_MAX_PENDING) -> tuple[UUID, bool]:
    """Enqueue in ``conn``'s transaction (confined to ``tenant``); (job id, created)."""
    with queue_errors():
        row = conn.execute(sql.query("enqueue_job"), {
            "tenant": tenant, "kind": kind, "payload": Jsonb(payload or {}),
            "idempotency_key": idempotency_key, "run_after": run_after,
            "max_attempts": max_attempts, "max_pending": max_pending}).fetchone()
    return row["id"], bool(row["created"])


def claim(conn: Any, worker: str, limit: int, lease: float, tenants: list[str] | None,
          kinds: list[str] | None) -> list[Job]:
    """memdb.claim_jobs in ``conn``'s transaction (as memdb_app; the function is a definer)."""
    rows = conn.execute(sql.query("claim_jobs"), {
        "worker": worker, "limit": limit, "lease": lease, "tenants": tenants,
        "kinds": kinds}).fetchall()
    return [Job.from_row(r) for r in rows]

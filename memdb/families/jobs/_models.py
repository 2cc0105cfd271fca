"""What the queue hands out: a job's row as a frozen dataclass, its states, the queue's errors."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from ...core.errors import Conflict
from ...core.ops.jobs import JOB_STATES as STATES

__all__ = ["Job", "STATES", "FINISHED", "PENDING", "QueueFull", "PermanentFailure"]

FINISHED = frozenset({"done", "dead", "cancelled"})  # never run again unless retried
PENDING = frozenset({"queued", "running", "failed"})  # count toward the tenant's bound


class QueueFull(Conflict):
    """The tenant's queue holds its bound of unfinished jobs (backpressure): nothing was
    enqueued; retry later (SQLSTATE MD002; HTTP 409 like every Conflict)."""


class PermanentFailure(Exception):
    """Raised by a handler for a job that can never succeed (a malformed payload...): the job
    is dead at once, with this error as its last_error, instead of being retried."""


@dataclass(frozen=True)
class Job:
    """One job (a row of memdb.jobs). ``state``: queued, running, done, failed (an attempt
    failed; due again at ``run_after``), dead (attempts used up; ``last_error`` says why) or
    cancelled. ``result``: what the handler returned (done jobs). ``subject``: the subject
    its payload names (None: a job of the whole tenant); only that subject's stores, and the
    tenant's, see it."""

    tenant: str
    id: UUID
    kind: str
    subject: str | None
    payload: dict[str, Any]
    state: str
    attempts: int
    max_attempts: int
    run_after: datetime
    locked_by: str | None
    locked_until: datetime | None
    last_error: str | None
    result: Any
    idempotency_key: str | None
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None

    @property
    def finished(self) -> bool:
        """Done, dead or cancelled: the queue will not run it again unless retried."""
        return self.state in FINISHED

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Job:
        return cls(**{name: row[name] for name in cls.__dataclass_fields__})

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (ids and dates as strings)."""
        out = asdict(self)
        for key, value in out.items():
            if isinstance(value, (UUID, datetime)):
                out[key] = str(value) if isinstance(value, UUID) else value.isoformat()
        return out

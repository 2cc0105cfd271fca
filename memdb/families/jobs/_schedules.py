"""Schedules of recurring jobs (memdb.job_schedules): "run a job of this kind every period",
per tenant. Any worker enqueues the due ones when it wakes up (``memdb.enqueue_due_schedules``:
at most one job per schedule and period, whatever the number of workers), so the work done
while the agent sleeps (expiry, decay, sedimentation, trace purging...) is ordinary jobs,
visible with the others.

>>> store.jobs.schedule("memories.purge_expired", every=3600)   # doctest: +SKIP
Schedule(kind='memories.purge_expired', period_seconds=3600, ...)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from ...core import sql
from ...core.errors import InvalidInput
from ._registry import check_kind

__all__ = ["Schedule", "ScheduleMethods", "enqueue_due", "MAX_PERIOD"]

MAX_PERIOD = 366 * 86_400  # a year: the CHECK of memdb.job_schedules.period_seconds


@dataclass(frozen=True)
class Schedule:
    """One schedule: a job of ``kind`` with ``payload`` every ``period_seconds``; due next at
    ``next_run``; ``last_run`` / ``last_job``: when it was last enqueued, and that job."""

    tenant: str
    kind: str
    payload: dict[str, Any]
    period_seconds: int
    next_run: datetime
    last_run: datetime | None
    last_job: UUID | None
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Schedule:
        return cls(**{name: row[name] for name in cls.__dataclass_fields__})

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        for key, value in out.items():
            if isinstance(value, UUID):
                out[key] = str(value)
            elif isinstance(value, datetime):
                out[key] = value.isoformat()
        return out


def period_seconds(every: float | timedelta) -> int:
    """A period given in seconds or as a timedelta: a whole number of seconds, 1 s to a year."""
    seconds = every.total_seconds() if isinstance(every, timedelta) else every
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) \
            or seconds != int(seconds) or not 1 <= seconds <= MAX_PERIOD:
        raise InvalidInput(f"a schedule's period is a whole number of seconds, 1 to "
                           f"{MAX_PERIOD} (a year), got {every!r}")
    return int(seconds)


def enqueue_due(conn: Any, tenants: list[str] | None = None,
                kinds: list[str] | None = None) -> list[dict[str, Any]]:
    """``memdb.enqueue_due_schedules`` on ``conn`` (memdb_app, no tenant: a definer):
    one row (tenant, kind, job_id, created) per due schedule it enqueued."""
    return conn.execute(sql.query("enqueue_due_schedules"),
                        {"tenants": tenants, "kinds": kinds}).fetchall()


class ScheduleMethods:
    """The schedule half of ``store.jobs`` (mixed into :class:`memdb.families.jobs.Jobs`)."""

    _core: Any

    def schedule(self, kind: str, every: float | timedelta,
                 payload: dict[str, Any] | None = None, *,
                 next_run: datetime | None = None) -> Schedule:
        """Run a job of ``kind`` (with ``payload``) every ``every`` seconds (or timedelta; 1 s
        to a year), enqueued by whichever worker wakes up first once it is due. A new schedule
        is due now (or at ``next_run``); setting one that exists changes its period and
        payload. Periods are aligned on multiples of the period since the epoch (UTC): with
        every=3600 the jobs run in each clock hour."""
        check_kind(kind)
        if payload is not None and not isinstance(payload, dict):
            raise InvalidInput("a schedule's payload is a JSON object (dict)")
        if next_run is not None and (not isinstance(next_run, datetime)
                                     or next_run.tzinfo is None):
            raise InvalidInput("next_run must be a datetime with a time zone")
        period, now = period_seconds(every), datetime.now(UTC)
        with self._core.transaction() as conn:
            row = conn.execute(sql.query("set_schedule"), {
                "tenant": self._core.tenant, "kind": kind, "payload": Jsonb(payload or {}),
                "period": period, "next_run": next_run, "now": now,
                "soon": now + timedelta(seconds=period)}).fetchone()
        return Schedule.from_row(row)

    def schedules(self) -> list[Schedule]:
        """The tenant's schedules, by kind."""
        with self._core.transaction() as conn:
            rows = conn.execute(sql.query("list_schedules"),
                                {"tenant": self._core.tenant}).fetchall()
        return [Schedule.from_row(r) for r in rows]

    def unschedule(self, kind: str) -> bool:
        """Remove the schedule of ``kind`` (its jobs already enqueued stay); False when there
        was none."""
        check_kind(kind)
        with self._core.transaction() as conn:
            row = conn.execute(sql.query("remove_schedule"),
                               {"tenant": self._core.tenant, "kind": kind}).fetchone()
        return row is not None

    def run_schedules(self) -> list[dict[str, Any]]:
        """Enqueue this tenant's due schedules now (what every worker does when it wakes up);
        one dict (kind, job_id, created) per schedule due."""
        with self._core.transaction() as conn:  # the function is a definer; one tenant
            rows = enqueue_due(conn, [self._core.tenant])
        return [{"kind": r["kind"], "job_id": r["job_id"], "created": r["created"]}
                for r in rows]

    def throughput(self, hours: int = 24) -> list[dict[str, Any]]:
        """Jobs finished per hour over the last ``hours`` (1-8784): dicts (hour, done, dead),
        oldest first; hours with none are left out."""
        if isinstance(hours, bool) or not isinstance(hours, int) or not 1 <= hours <= 8784:
            raise InvalidInput("hours must be an integer 1-8784")
        with self._core.transaction() as conn:
            rows = conn.execute(sql.query("job_throughput"),
                                {"tenant": self._core.tenant, "hours": hours}).fetchall()
        return [dict(r) for r in rows]

"""``store.traces``: the stored record of each :meth:`~memdb.MemoryStore.recall` (plan,
candidates, chosen ids, status, timings; the query redacted), their statistics, retention and
erasure (``memdb.retrieval_traces``).

>>> store.traces.stats()["degraded_rate"]                        # doctest: +SKIP
0.0
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from ..core import sql
from ..core import validate as v
from ..core.errors import InvalidInput, NotFound
from ..core.family import Family

__all__ = ["Traces"]


class Traces(Family):
    """``store.traces`` (see the module docstring). ``retention_days``: how long
    :meth:`purge` keeps traces (default 30, or ``$MEMDB_TRACE_RETENTION_DAYS``)."""

    retention_days: float = float(os.environ.get("MEMDB_TRACE_RETENTION_DAYS", "30"))

    def list(self, limit: int = 20) -> list[dict[str, Any]]:
        """The newest traces (summaries), newest first."""
        v.positive_int(limit, "limit", 10_000)
        with self._core.transaction() as conn:
            return [dict(r) for r in conn.execute(sql.query("list_traces"),
                                                  {"tenant": self._store.tenant, "limit": limit})]

    def get(self, trace_id: UUID | str) -> dict[str, Any]:
        """One trace with its plan, candidates and chosen ids; NotFound otherwise."""
        try:
            tid = trace_id if isinstance(trace_id, UUID) else UUID(str(trace_id))
        except ValueError:
            raise InvalidInput(f"not a trace id (UUID): {trace_id!r}") from None
        with self._core.transaction() as conn:
            row = conn.execute(sql.query("get_trace"),
                               {"tenant": self._store.tenant, "id": tid}).fetchone()
        if row is None:
            raise NotFound(f"no trace {tid}")
        return dict(row)

    def stats(self, since: datetime | timedelta | None = None) -> dict[str, Any]:
        """Empty-result, fallback and degraded rates, p50/p95 latency and the intent
        distribution of the kept traces (since a time, or for the last timedelta)."""
        if isinstance(since, timedelta):
            v.days(since.total_seconds() / 86_400, "since")
            since = datetime.now().astimezone() - since
        elif since is not None and not isinstance(since, datetime):
            raise InvalidInput("since must be a datetime or a timedelta")
        with self._core.transaction() as conn:
            return conn.execute(sql.query("trace_stats"),
                                {"tenant": self._store.tenant, "since": since}).fetchone()["stats"]

    def purge(self, older_than_days: float | None = None) -> int:
        """Delete traces older than the retention period (default
        ``retention_days``, 30, or $MEMDB_TRACE_RETENTION_DAYS); returns how many."""
        days = self.retention_days if older_than_days is None else older_than_days
        days = v.days(days, "older_than_days")
        with self._core.transaction() as conn:
            return int(conn.execute(sql.query("purge_traces"), {
                "tenant": self._store.tenant,
                "older_than": timedelta(days=days)}).fetchone()["purged"])

    def erase(self, subject: str) -> int:
        """Erasure with the subject: delete every trace that searched or returned the
        subject's memories; returns how many."""
        with self._core.transaction() as conn:
            return int(conn.execute(sql.query("erase_traces"), {
                "tenant": self._store.tenant,
                "subject": v.name(subject, "subject")}).fetchone()["erased"])

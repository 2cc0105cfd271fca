"""The job queue's operations (memdb.jobs), declared once like those of
:mod:`memdb.core.ops.catalog`: the MCP tool ``job``, the docs' reference tables, and the limits the
family and the doors take."""

from __future__ import annotations

from ._operation import Operation
from ._param import REQUIRED, Param

__all__ = ["JOB", "JOBS", "JOB_OPERATIONS", "JOB_STATES", "MAX_JOBS_LIST"]

JOB_STATES = ("queued", "running", "done", "failed", "dead", "cancelled")
MAX_JOBS_LIST = 1000
_ERRORS = ("InvalidInput", "NotFound", "Forbidden", "DatabaseUnavailable")

JOB = Operation(
    "job", "A background job by its id (as returned when it was enqueued): its state "
    "(queued, running, done, failed and waiting to retry, dead, cancelled), attempts, last "
    "error, and its result once done.",
    (Param("id", "uuid", "The job's id.", REQUIRED, argument=True),),
    scope="tenant", result="job: id, kind, subject, state, attempts, last_error, result",
    errors=_ERRORS,
    doors=(("cli", "jobs get"), ("http", "GET /v1/jobs/{job_id}"), ("mcp", "job")))

JOBS = Operation(
    "jobs", "The tenant's background jobs, newest first.",
    (Param("state", "str", "Only jobs in this state.", choices=JOB_STATES),
     Param("kind", "str", "Only jobs of this kind.", min_length=1, max_length=64),
     Param("limit", "int", "At most this many.", 50, minimum=1, maximum=MAX_JOBS_LIST)),
    scope="tenant", result="items: jobs", errors=_ERRORS,
    doors=(("cli", "jobs list"), ("http", "GET /v1/jobs")))

JOB_OPERATIONS: tuple[Operation, ...] = (JOB, JOBS)

"""memdb's durable job queue in PostgreSQL (docs/jobs.md).

- ``store.jobs`` (:class:`Jobs`): enqueue, get, list, wait, cancel, retry, stats of the
  store's tenant's jobs;
- :data:`handlers` (a :class:`Registry`): the function run for each job kind, inside the
  job's transaction (:class:`JobContext`);
- :class:`Worker`: claims jobs across tenants (fairly, with leases), runs them, records
  failures with backoff, and enqueues the due schedules (``store.jobs.schedule``);
  ``memdb worker`` runs one;
- :mod:`memdb.families.jobs.builtin`: the kinds memdb handles itself (expiry, decay, sedimentation,
  re-embedding, trace purging, graph linking, session summaries, document ingestion).
- :mod:`memdb.families.jobs.remember`: the ``remember`` job of ``store.remember(..., wait=False)``
  (its handler is registered on import).
- :mod:`memdb.families.jobs.transcribe`: the ``transcribe`` job of
  ``store.percepts.transcribe_pending()`` (recordings kept before they were transcribed).
"""

from . import builtin, transcribe  # register the built-in and transcribe job kinds
from ._models import FINISHED, PENDING, STATES, Job, PermanentFailure, QueueFull
from ._queue import CHANNEL, DEFAULT_MAX_PENDING, enqueue
from ._registry import Handler, Registry, handlers
from ._schedules import Schedule
from ._worker import JobContext, Worker
from .family import Jobs
from .remember import RememberJob

__all__ = ["Job", "Jobs", "JobContext", "Worker", "Registry", "Handler", "handlers",
           "QueueFull", "PermanentFailure", "STATES", "FINISHED", "PENDING", "CHANNEL",
           "DEFAULT_MAX_PENDING", "enqueue", "RememberJob", "Schedule", "builtin",
           "transcribe"]

"""The ``transcribe`` job: a recording kept ``not_transcribed`` (no transcription endpoint when
it was perceived) transcribed by the endpoint ``$MEMDB_TRANSCRIBE_MODEL`` configures on the
worker, its memory updated (:meth:`memdb.write.perceive.Percepts.transcribe`). Enqueued one per
recording by ``store.percepts.transcribe_pending()`` (idempotency key
``transcribe:<memory id>``). Idempotent: a recording already transcribed is left as it is.

No endpoint on the worker, or a recording that is gone: the job fails for good (dead, with
``last_error``; ``store.jobs.retry`` once an endpoint is configured). An endpoint that fails is
retried with the queue's backoff."""

from __future__ import annotations

from typing import Any

from ...core.errors import NotFound
from ...write.perceive import TRANSCRIBE_JOB, transcriber_from_env
from ._models import PermanentFailure
from ._registry import handlers

__all__ = ["KIND", "run_transcribe"]

KIND = TRANSCRIBE_JOB


@handlers.handler(KIND)
def run_transcribe(ctx: Any) -> dict[str, Any]:
    """Transcribe the recording ``payload.memory_id`` (see the module docstring)."""
    p = ctx.job.payload
    if not isinstance(p, dict) or not isinstance(p.get("memory_id"), str):
        raise PermanentFailure("a transcribe job's payload needs memory_id")
    transcriber = transcriber_from_env()
    if transcriber is None:
        raise PermanentFailure("no transcription endpoint is configured on the worker "
                               "(MEMDB_TRANSCRIBE_MODEL)")
    try:
        with ctx.store.consistency("primary"):
            return ctx.store.percepts.transcribe(p["memory_id"], transcriber=transcriber)
    except NotFound as exc:
        raise PermanentFailure(str(exc)) from exc

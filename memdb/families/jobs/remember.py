"""remember without waiting: ``store.remember(turn, wait=False)`` (docs/jobs.md).

The call keeps the turn as said, at once, then enqueues a ``remember`` job that runs the
extraction and reconciliation of :func:`memdb.write.remember.remember` (the LLM path when one is
configured, with its heuristic fallback) on a worker:

- the turn is written as one memory (kind episodic, category events, ``source_type``
  user_statement, ``source_id`` the turn id, ``created_by`` :data:`RAW_TURN_CREATOR`, content
  the ``role: content`` lines), embedded in the same call like any ``add``, so the keyword and
  vector routes find it as soon as the call returns. A memory rather than a session message,
  because the search routes read memories (sessions are read by ``context``) and a turn
  needs no session. ``remember`` leaves such turns out of the memories it reconciles with,
  so a turn never makes its own facts (or a later turn's) a no-op;
- the job (idempotency key: the subject and the turn id, so the same turn sent twice is one
  job) carries the checked messages. Its result is the :class:`~memdb.write.remember.RememberResult`
  as a dict, with ``raw_memory_id``; when the model fails or its reply is junk, the job is
  still done, with ``path`` heuristic and ``fallback_reason``; a handler error is retried,
  then the job is dead with ``last_error``. The turn stays whatever the job does.

The job's writes go through the worker's store (``ctx.store``), not the job's transaction: a
retry after a killed worker finds what the first attempt wrote (exact duplicates are bumped,
not copied, and the facts already written are found by the reconciliation), so it adds no
second copy.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ...core.errors import InvalidInput
from ...write.remember import RAW_TURN_CREATOR, read_turn, remember, write_timeout
from ._models import PermanentFailure
from ._registry import handlers

__all__ = ["KIND", "RememberJob", "remember_later", "run_remember", "RAW_TURN_CREATOR"]

KIND = "remember"
MAX_ATTEMPTS = 3


@dataclass(frozen=True)
class RememberJob:
    """What ``remember(..., wait=False)`` returns: the ``job_id`` to follow
    (``store.jobs.wait(job_id)``), the ``turn_id``, the memory keeping the turn as said
    (``memory_id``; None when the write gate refused it, see ``reasons``), the raw write's
    ``outcome`` (created, duplicate... or rejected) and the job's ``state`` when enqueued."""

    job_id: str
    turn_id: str
    memory_id: str | None
    outcome: str
    state: str
    reasons: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["reasons"] = list(self.reasons)
        return out


def remember_later(store: Any, messages: Any, *, session_id: str | None = None,
                   turn_id: str | None = None, subject: str | None = None,
                   use_llm: bool = True, timeout: float | None = None) -> RememberJob:
    """Keep the turn as said and enqueue its extraction (see the module docstring).
    ``use_llm``: False runs the heuristic extractor only (``remember(llm=None)``)."""
    turn = read_turn(store, messages, session_id=session_id, turn_id=turn_id, subject=subject)
    timeout = write_timeout(timeout)
    raw = store.add_many([{
        "content": turn.text, "subject": turn.subject, "kind": "episodic",
        "category": "events", "source_type": "user_statement", "source_id": turn.turn_id,
        "session_id": turn.session_id, "created_by": RAW_TURN_CREATOR,
        "metadata": {"remember": {"raw": True, "turn_id": turn.turn_id}}}],
        reason="remember: the turn as said, before extraction")[0]
    payload = {"messages": turn.messages, "session_id": turn.session_id,
               "turn_id": turn.turn_id, "subject": turn.subject, "llm": bool(use_llm),
               "timeout": timeout, "raw_memory_id": None if raw.id is None else str(raw.id)}
    job = store.jobs.enqueue(KIND, payload, max_attempts=MAX_ATTEMPTS,
                             idempotency_key=f"{turn.subject}\n{turn.turn_id}"[:256])
    return RememberJob(str(job.id), turn.turn_id, None if raw.id is None else str(raw.id),
                       raw.outcome, job.state, tuple(raw.reasons))


@handlers.handler(KIND)
def run_remember(ctx: Any) -> dict[str, Any]:
    """The ``remember`` job: extraction and reconciliation of the turn in its payload, written
    through ``ctx.store`` with the store's LLM (``$MEMDB_LLM_*``) unless the payload says
    ``llm`` false. A malformed payload is a :class:`PermanentFailure`."""
    p = ctx.job.payload
    if not isinstance(p, dict) or not isinstance(p.get("turn_id"), str):
        raise PermanentFailure("a remember job's payload needs messages and turn_id")
    store = ctx.store
    try:
        with store.consistency("primary"):
            result = remember(store, p.get("messages"),
                              llm=store.llm if p.get("llm", True) else None,
                              session_id=p.get("session_id"), turn_id=p["turn_id"],
                              subject=p.get("subject"), timeout=p.get("timeout"))
    except InvalidInput as exc:
        raise PermanentFailure(f"invalid turn: {exc}") from exc
    return {**result.to_dict(), "raw_memory_id": p.get("raw_memory_id")}

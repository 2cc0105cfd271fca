"""The agent interface on :class:`~memdb.MemoryStore`: the function-calling memory tool
(:mod:`memdb.families.tool`) and ``remember`` (LLM fact extraction with reconciliation,
:mod:`memdb.write.remember`).

``Agent`` is a mixin of the store's core verbs: it uses the store's ``search``, ``get``,
``add_many``, ``update``, ``decide``, ``tenant``, ``subject`` and ``llm``.
"""

from __future__ import annotations

from typing import Any

from ..core import bridge
from ..core import validate as v
from ..core.errors import InvalidInput
from ..core.llm import ChatLLM
from ..write.remember import RememberResult, remember
from .jobs.remember import RememberJob, remember_later
from .tool import ACTIONS, MemoryTool

__all__ = ["Agent"]

_FROM_ENV: Any = object()


class Agent:
    """Agent-interface methods of MemoryStore (see the module docstring)."""

    @bridge.no_io
    def tool(self, *, subject: str | None = None, source_id: str | None = None,
             agent: str | None = None,
             allow: tuple[str, ...] | list[str] = ACTIONS) -> MemoryTool:
        """A :class:`~memdb.families.tool.MemoryTool` over this store, bound to ``subject``."""
        return MemoryTool(self, subject=v.optional_name(subject, "subject"),
                          source_id=v.optional_text(source_id, "source_id", 1024),
                          agent=v.optional_name(agent, "agent"), allow=allow)

    def dispatch(self, tool_call: Any, *, subject: str | None = None,
                 source_id: str | None = None) -> str:
        """Execute one model tool call of the memory tool; its compact JSON result (errors
        included: this never raises). Shorthand for ``store.tool(...).dispatch(call)``."""
        return self.tool(subject=subject).dispatch(tool_call, source_id=source_id)

    def remember(self, messages: Any, *, session_id: str | None = None,
                 turn_id: str | None = None, subject: str | None = None,
                 llm: ChatLLM | None = _FROM_ENV, timeout: float | None = None,
                 dry_run: bool = False, wait: bool = True) -> RememberResult | RememberJob:
        """Extract facts from a conversation turn (a string, or a list of ``{"role",
        "content"}`` messages), reconcile them with the subject's similar memories and write
        them through the write gate (see :mod:`memdb.write.remember`).

        ``turn_id``: the provenance ``source_id`` of what the user said (default: a hash of
        the session and the turn). ``llm``: default the store's (``$MEMDB_LLM_*``); None
        forces the heuristic extractor. ``timeout``: the most the write waits for the LLM
        (default ``$MEMDB_LLM_TIMEOUT_REMEMBER`` or 60 s; docs/configuration.md).
        ``dry_run``: decide, write nothing.

        ``wait=False``: return at once with a :class:`~memdb.families.jobs.RememberJob`: the turn is
        kept as said (a memory, searchable at once) and a ``remember`` job, run by a worker
        (``store.jobs.start_worker()``, ``memdb worker``), does the extraction; follow it with
        ``store.jobs.wait(r.job_id)`` (:mod:`memdb.families.jobs.remember`). The job uses the
        worker's
        LLM (``$MEMDB_LLM_*``), or none when ``llm`` is None here.

        >>> r = store.remember("记住：我对花生过敏。以后都用中文回答。", session_id="s1")
        >>> [(d.action, d.outcome) for d in r.decisions]      # doctest: +SKIP
        [('add', 'created'), ('add', 'created')]
        """
        if not isinstance(wait, bool):
            raise InvalidInput("wait must be true or false")
        if not wait:
            if dry_run:
                raise InvalidInput("dry_run needs wait=True (a job writes; a dry run does not)")
            return remember_later(self, messages, session_id=session_id, turn_id=turn_id,
                                  subject=subject, use_llm=llm is not None, timeout=timeout)
        chat = self.llm if llm is _FROM_ENV else llm  # type: ignore[attr-defined]
        with self.consistency("primary"):  # type: ignore[attr-defined]
            # what is already known decides the writes: read it where they go
            return remember(self, messages, llm=chat, session_id=session_id, turn_id=turn_id,
                            subject=subject, timeout=timeout, dry_run=dry_run)

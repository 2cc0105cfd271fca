"""The agent loop's profile read and task-end write trigger on :class:`~memdb.MemoryStore`.

An agent loop reads ``store.profile(subject)`` (or renders it into the prompt with
``store.context(..., include_profile=True)``), calls ``store.remember(turn)`` after each turn,
and ``store.task_end(session, outcome=..., summary=...)`` when a task ends
(:mod:`memdb.retrieval.profile`,
:mod:`memdb.families.task_end`).

``AgentLoop`` is a mixin of the store's core verbs: it uses the store's ``_transaction()``,
``_begin()``, ``tenant``, ``subject``, ``gate``, ``add_many``, ``sessions.get_state`` and
``llm``.
"""

from __future__ import annotations

from typing import Any

from ..core.llm import ChatLLM
from ..retrieval.profile import Profiles
from .task_end import TaskEndResult, task_end

__all__ = ["AgentLoop"]

_FROM_ENV: Any = object()


class AgentLoop(Profiles):
    """``profile`` and ``task_end`` (see the module docstring)."""

    def task_end(self, session: str, *, outcome: str, summary: str,
                 subject: str | None = None, task: str | None = None,
                 rules: list[str] | tuple[str, ...] = (), fix: str | None = None,
                 task_id: str | None = None, llm: ChatLLM | None = _FROM_ENV,
                 timeout: float | None = None, dry_run: bool = False) -> TaskEndResult:
        """Record how a task ended (see :mod:`memdb.families.task_end`).

        ``outcome``: "success" (the summary becomes a pattern memory; its rule and lesson
        sentences and ``rules`` are proposed into the review queue) or "failure" (a
        reflection phrased as "下次…时，先…" / "Next time, … before …", tagged reflection).
        ``task``: what the task was (default: the session's working-state goal); ``fix``:
        what to do first next time (failure); ``task_id``: the provenance source_id (default:
        a hash of subject, session, outcome and summary, so repeating a call is idempotent);
        ``llm``: default the store's (``$MEMDB_LLM_*``), None for offline phrasing;
        ``dry_run``: the gate's decisions, nothing written.

        >>> r = store.task_end("s1", outcome="failure", summary="部署失败：没有先备份数据库",
        ...                    task="部署服务", fix="备份数据库")      # doctest: +SKIP
        >>> r.writes[0].content                                        # doctest: +SKIP
        '下次部署服务时，先备份数据库，再继续。（上次：部署失败：没有先备份数据库）'
        """
        chat = self.llm if llm is _FROM_ENV else llm  # type: ignore[attr-defined]
        return task_end(self, session, outcome=outcome, summary=summary, subject=subject,
                        task=task, rules=rules, fix=fix, task_id=task_id, llm=chat,
                        timeout=timeout, dry_run=dry_run)

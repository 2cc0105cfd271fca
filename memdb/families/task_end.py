"""``store.task_end(session, outcome=..., summary=...)``: the write trigger an agent loop calls
when a task ends (``remember`` is the one it calls after each turn).

* ``outcome="success"``: the summary becomes a **pattern** memory (category ``patterns``, tags
  ``task-end``/``success``: what worked for this task), and its sentences with a rule or lesson
  cue (always/never/must/every time/next time, 必须/不要/总是/每次/以后都/下次…), plus any
  ``rules=`` given, are
  **rule candidates**: each must pass the write gate as a rule (kind procedural, category
  system) and is then *proposed* into the review queue (``memdb.review_queue``, as
  sedimentation does), never written as a rule directly; approving it
  (:meth:`memdb.families.review.Review.approve`) makes it a system rule.
* ``outcome="failure"``: a **reflection** phrased as an actionable rule, "下次…时，先…" /
  "Next time, … before …" (category ``patterns``, tag ``reflection``, so the gate's reflection
  TTL default applies, 180 days). Its text comes from, in order: ``fix=`` (what to do first
  next time), a sentence of the summary already phrased that way, the LLM (``MEMDB_LLM_*``,
  asked for JSON ``{"rule": ...}`` (path ``task_end``: schema, max_tokens, timeout), and
  only used when the reply is phrased that way and is about the report: two of its content
  words occur in the task and summary, :mod:`memdb.write.grounding`; the remedy itself is new
  text by design), or an offline
  template quoting the summary; ``fallback_reason`` says why the LLM's rule was not used.

Every write goes through the store's write gate (correction detection off: a failure report
saying "did not X, so Y" is not a correction of a memory) with provenance ``source_type``
system (the agent loop's own report of its task; an LLM only rephrases it), ``source_id`` the
task id, and the session. ``task`` defaults to the goal of the session's working state.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import asdict, dataclass, replace
from typing import Any

from ..core import sql
from ..core import validate as v
from ..core.errors import InvalidInput
from ..core.llm import ChatLLM, LLMError
from ..write.extract import json_values
from ..write.gate import DEFAULT_POLICY, WritePolicy
from ..write.grounding import units
from ..write.importance import RULE
from ..write.remember import write_timeout
from .context import language_of
from .sediment import classify
from .summarize import normal_form, split_sentences

__all__ = ["task_end", "TaskEndResult", "TaskEndWrite", "OUTCOMES", "ACTIONABLE",
           "reflection_text", "REFLECTION_PROMPT"]

OUTCOMES = ("success", "failure")
MAX_SUMMARY_CHARS = 8000
MAX_RULES = 20
# "下次…先…" / "Next time, … before …": what makes a reflection actionable
ACTIONABLE = re.compile(r"下次.{0,200}?先|\bnext time\b.{0,300}?\bbefore\b", re.I | re.S)
REFLECTION_PROMPT = (
    "You turn the report of a failed task into one actionable rule for next time.\n"
    'Return only JSON: {"rule": str}. Write the rule in the report\'s language: Chinese as '
    '"下次…时，先…", English as "Next time, … before …". One concrete sentence: what to do '
    "or check first, before which step.")


_RULE_SCHEMA = {"type": "object", "additionalProperties": False, "required": ["rule"],
                "properties": {"rule": {"type": "string", "maxLength": 400}}}


@dataclass(frozen=True)
class TaskEndWrite:
    """One thing task_end wrote or proposed. ``role``: pattern | reflection | rule;
    ``outcome``: the write's outcome (created, duplicate, merged, superseded, rejected) for
    memories, ``proposed`` / ``already_proposed`` / ``rejected`` for rules (``would_propose``
    in a dry run); ``id``: the memory or review-queue entry."""

    role: str
    content: str
    outcome: str
    id: str | None
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True)
class TaskEndResult:
    """What :func:`task_end` did. ``path``: where the reflection's text came from (fix,
    summary, llm, template; None on success); ``fallback_reason``: why the LLM's text was not
    used."""

    session: str
    subject: str
    outcome: str
    task: str | None
    source_id: str
    writes: tuple[TaskEndWrite, ...]
    path: str | None = None
    fallback_reason: str | None = None
    dry_run: bool = False

    @property
    def memory_ids(self) -> tuple[str, ...]:
        return tuple(w.id for w in self.writes if w.role != "rule" and w.id)

    @property
    def proposed_ids(self) -> tuple[str, ...]:
        return tuple(w.id for w in self.writes if w.role == "rule" and w.id)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["writes"] = [{**asdict(w), "reasons": list(w.reasons)} for w in self.writes]
        return out


def _clause(text: str) -> str:
    """A phrase to embed in a sentence: trimmed of end punctuation; English lower-cased first
    letter (unless it looks like a name or an acronym)."""
    text = " ".join(text.split()).strip().rstrip("。.！!？?；;，,")
    if len(text) > 1 and text[0].isupper() and text[1].islower() and text[0].isascii():
        text = text[0].lower() + text[1:]
    return text


def _brief(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def success_text(summary: str, task: str | None, lang: str) -> str:
    """The pattern memory of a successful task."""
    if lang == "zh":
        return f"成功完成「{_clause(task)}」的做法：{summary}" if task else f"成功的做法：{summary}"
    return f"What worked for {_clause(task)}: {summary}" if task else f"What worked: {summary}"


def reflection_text(summary: str, task: str | None, fix: str | None, lang: str,
                    llm: ChatLLM | None = None, timeout: float | None = None
                    ) -> tuple[str, str, str | None]:
    """The reflection of a failed task: (text, path, why the LLM was not used)."""
    last = _brief(summary)
    if fix:
        if lang == "zh":
            doing = _clause(task) if task else "做类似任务"
            return f"下次{doing}时，先{_clause(fix)}，再继续。（上次：{last}）", "fix", None
        doing = _clause(task) if task else "retry a similar task"
        return f"Next time, {_clause(fix)} before you {doing}. (Last time: {last})", "fix", None
    for sentence in split_sentences(summary):
        if ACTIONABLE.search(sentence):
            return sentence, "summary", None
    reason = "no LLM configured"
    if llm is not None:
        prompt = [{"role": "system", "content": REFLECTION_PROMPT},
                  {"role": "user", "content": f"Task: {task or '(not given)'}\n"
                                              f"What happened: {summary}\n\nJSON:"}]
        try:
            reply = llm.complete(prompt, path="task_end", schema=_RULE_SCHEMA, timeout=timeout)
            rule = next((val.get("rule") for val in json_values(reply)
                         if isinstance(val, dict) and isinstance(val.get("rule"), str)), None)
            if rule is None:
                reason = "bad_response: no JSON rule in the reply"
            elif not ACTIONABLE.search(rule) or len(rule) > 1000 or "\x00" in rule:
                reason = "bad_response: the rule is not phrased as 下次…先… / Next time … before …"
            elif len(units(rule) & units(f"{task or ''}\n{summary}")) < 2:
                reason = ("bad_response: the rule is not about the report (fewer than two of "
                          "its content words occur in the task and summary)")
            else:
                return " ".join(rule.split()), "llm", None
        except LLMError as exc:
            reason = f"{exc.kind}: {exc}"
        except Exception as exc:  # noqa: BLE001 (a broken model client must not stop a write)
            reason = f"error: {type(exc).__name__}"
    if lang == "zh":
        doing = _clause(task) if task else "做类似任务"
        return f"下次{doing}前，先核对上次失败的原因再动手：{last}", "template", reason
    doing = _clause(task) if task else "retry a similar task"
    return (f"Next time, check what went wrong last time before you {doing}: {last}",
            "template", reason)


def _rule_candidates(summary: str, rules: list[str]) -> list[str]:
    """Explicit rules first, then the summary's sentences with a rule or lesson cue; each
    text once."""
    seen: set[str] = set()
    out = []
    found = [s for s in split_sentences(summary)
             if classify(s) in ("rule", "lesson") or RULE.search(s)]
    for text in [*rules, *found]:
        key = normal_form(text)
        if key and key not in seen:
            seen.add(key)
            out.append(text.strip())
    return out[:MAX_RULES]


def task_end(store: Any, session: str, *, outcome: str, summary: str,
             subject: str | None = None, task: str | None = None,
             rules: list[str] | tuple[str, ...] = (), fix: str | None = None,
             task_id: str | None = None, llm: ChatLLM | None = None,
             timeout: float | None = None, dry_run: bool = False) -> TaskEndResult:
    """See the module docstring; :meth:`MemoryStore.task_end` is the public entry."""
    session = v.name(session, "session")
    if outcome not in OUTCOMES:
        raise InvalidInput(f"outcome must be one of {OUTCOMES}, got {outcome!r}")
    summary = v.content(summary, "summary").strip()
    if len(summary) > MAX_SUMMARY_CHARS:
        raise InvalidInput(f"summary is longer than {MAX_SUMMARY_CHARS} characters")
    who = v.optional_name(subject, "subject") or store.subject or "default"
    if isinstance(rules, str) or not isinstance(rules, (list, tuple)):
        raise InvalidInput("rules must be a list of strings")
    rules = [v.content(r, "rule") for r in rules]
    fix = None if fix is None else v.content(fix, "fix")
    if task is None:
        task = store.sessions.get_state(session, subject=who).goal
    else:
        task = v.content(task, "task")
    timeout = write_timeout(timeout)
    source_id = v.optional_text(task_id, "task_id", 256) or "task-" + hashlib.sha256(
        f"{who}\n{session}\n{outcome}\n{summary}".encode()).hexdigest()[:16]
    lang = language_of(f"{task or ''} {summary}")
    policy: WritePolicy | None = store.gate
    gate = None if policy is None else replace(policy, detect_corrections=False)
    base: dict[str, Any] = {
        "subject": who, "kind": "semantic", "category": "patterns", "scope": "user",
        "session_id": session, "source_type": "system", "source_id": source_id,
        "created_by": "memdb.task_end"}
    meta = {"session": session, "outcome": outcome, "task": task, "task_id": source_id}
    reason = f"task end ({outcome}) of session {session}"
    writes: list[TaskEndWrite] = []
    path = fallback = None
    if outcome == "success":
        item = {**base, "content": success_text(summary, task, lang),
                "tags": ["task-end", "success"], "metadata": {"task_end": meta}}
        role = "pattern"
    else:
        text, path, fallback = reflection_text(summary, task, fix, lang, llm, timeout)
        item = {**base, "content": text, "tags": ["reflection", "task-end", "failure"],
                "metadata": {"task_end": {**meta, "path": path}, "reflection": True}}
        role = "reflection"
    result = store.add_many([item], reason=reason, gate=gate, dry_run=dry_run)[0]
    writes.append(TaskEndWrite(role, item["content"], result.outcome,
                               None if result.id is None else str(result.id), result.reasons))
    candidates = _rule_candidates(summary, rules) if outcome == "success" else rules
    sources = [result.id] if result.id is not None else []
    writes += _propose(store, who, candidates, source_id, sources, policy, reason, dry_run)
    return TaskEndResult(session, who, outcome, task, source_id, tuple(writes), path, fallback,
                         dry_run)


def _propose(store: Any, subject: str, texts: list[str], source_id: str, sources: list[Any],
             policy: WritePolicy | None, reason: str, dry_run: bool) -> list[TaskEndWrite]:
    """Rule candidates through the gate (as rules), the accepted ones into the review queue."""
    if not texts:
        return []
    decisions = (policy or DEFAULT_POLICY).decide_many([
        {"content": t, "subject": subject, "kind": "procedural", "category": "system",
         "source_type": "system", "source_id": source_id} for t in texts])
    out = []
    with store.core.transaction() as conn:
        store.core.begin(conn, reason)
        for text, decision in zip(texts, decisions, strict=True):
            if decision.item is None:
                out.append(TaskEndWrite("rule", text, "rejected", None, decision.reasons))
                continue
            if dry_run:
                out.append(TaskEndWrite("rule", text, "would_propose", None, decision.reasons))
                continue
            row = conn.execute(sql.query("review_propose"), {
                "tenant": store.tenant, "subject": subject, "kind": "procedural",
                "category": "system", "content": text, "reason": "task-end rule",
                "source_ids": sources}).fetchone()
            out.append(TaskEndWrite("rule", text,
                                    "proposed" if row is not None else "already_proposed",
                                    None if row is None else str(row["id"]), decision.reasons))
    return out

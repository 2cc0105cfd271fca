"""``store.remember(messages)``: turn a conversation turn into memories.

1. **Extract** candidate facts (preferences, entities, events, rules) through the configured
   :class:`~memdb.llm.ChatLLM` with a strict JSON prompt, parsed with distrust
   (:func:`memdb._extract.parse_reply`: JSON inside prose or code fences is found, malformed
   items are repaired or dropped). With no LLM, or when it fails, times out or answers with
   no usable JSON, a heuristic extractor keeps the explicit statements ("记住…", "以后都…",
   "我喜欢…", "I prefer…", "never…", "always…", "remember that…"). The LLM call is bounded
   by ``timeout`` (default ``$MEMDB_REMEMBER_TIMEOUT`` or 10 s, and never more than the
   client's own timeout): a write never waits longer for the model.
2. **Reconcile** each candidate with the subject's similar memories (one hybrid search on the
   turn, whose top hits the model sees numbered): ``noop`` (already known: nothing written),
   ``update`` (supersede the target: the new fact is written with the target's ``norm_key``,
   given one first if it had none, so the write path's supersession closes the old version),
   or ``add``.
3. **Write** through the store's write gate with provenance ``source_type`` user_statement
   (``source_id`` = the turn id) or model_inference (a hypothesis), importance scored
   heuristically when the model gave none, and the model's (or the heuristic's) reason in the
   history row.
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import asdict, dataclass
from typing import Any

from . import _bridge
from . import _validate as v
from ._extract import (
    Candidate,
    build_prompt,
    heuristic_candidates,
    parse_reply,
    score_importance,
)
from .errors import InvalidInput
from .llm import ChatLLM, LLMError

__all__ = ["remember", "RememberResult", "RememberDecision", "DEFAULT_REMEMBER_TIMEOUT"]

DEFAULT_REMEMBER_TIMEOUT = 10.0
MAX_TURN_CHARS = 20_000
_SEARCH_K = 8


@dataclass(frozen=True)
class RememberDecision:
    """What became of one candidate fact. ``action``: add | update | noop | rejected;
    ``outcome``: the write's outcome (created, superseded, duplicate, merged, hypothesis,
    rejected) or None for a noop; ``memory_id``: the memory now holding the fact;
    ``target_id``: the existing memory an update superseded or a noop matched."""

    content: str
    action: str
    outcome: str | None
    memory_id: str | None
    target_id: str | None
    category: str
    kind: str
    importance: float
    source_type: str
    reason: str
    gate_reasons: tuple[str, ...] = ()


@dataclass(frozen=True)
class RememberResult:
    """The turn's id, which extractor ran (``path``: llm | heuristic), why the LLM was not
    used (``fallback_reason``), the decisions, and what the parser dropped or repaired."""

    turn_id: str
    path: str
    fallback_reason: str | None
    decisions: tuple[RememberDecision, ...]
    dropped: int = 0
    repaired: int = 0
    llm_ms: float | None = None
    dry_run: bool = False

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["decisions"] = [{**asdict(d), "gate_reasons": list(d.gate_reasons)}
                            for d in self.decisions]
        return out


def _messages(messages: Any) -> list[dict[str, str]]:
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    if not isinstance(messages, (list, tuple)) or not messages:
        raise InvalidInput("messages must be a non-empty list of {role, content} or a string")
    out = []
    for m in messages:
        if not isinstance(m, dict) or not isinstance(m.get("content"), str) \
                or m.get("role") not in ("user", "assistant", "system", "tool"):
            raise InvalidInput("each message needs a role (user/assistant/system/tool) and "
                               "string content")
        out.append({"role": m["role"], "content": m["content"]})
    if sum(len(m["content"]) for m in out) > MAX_TURN_CHARS:
        raise InvalidInput(f"the turn is longer than {MAX_TURN_CHARS} characters")
    return out


def _bounded(llm: ChatLLM, prompt: list[dict[str, str]], timeout: float) -> str:
    """``llm.complete``, waited for at most ``timeout`` seconds (:func:`memdb._bridge.bounded`:
    a daemon thread synchronously, a cancelled task under the async driver)."""
    return str(_bridge.bounded(
        lambda: llm.complete(prompt, json_mode=True, max_tokens=1200), timeout,
        lambda: LLMError("timeout", f"no answer within {timeout:g} s")))


def write_timeout(timeout: float | None) -> float:
    """How long a write may wait for the LLM: ``timeout``, else ``$MEMDB_REMEMBER_TIMEOUT``,
    else :data:`DEFAULT_REMEMBER_TIMEOUT` seconds (InvalidInput unless positive)."""
    if timeout is None:
        raw = os.environ.get("MEMDB_REMEMBER_TIMEOUT")
        try:
            timeout = float(raw) if raw else DEFAULT_REMEMBER_TIMEOUT
        except ValueError:
            raise InvalidInput(f"MEMDB_REMEMBER_TIMEOUT must be seconds, got {raw!r}") from None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise InvalidInput("timeout must be a positive number of seconds")
    return float(timeout)


def _same(a: str, b: str) -> bool:
    norm = lambda s: "".join(ch for ch in s.casefold() if ch.isalnum())  # noqa: E731
    return norm(a) == norm(b)


def remember(store: Any, messages: Any, *, llm: ChatLLM | None, session_id: str | None = None,
             turn_id: str | None = None, subject: str | None = None,
             timeout: float | None = None, dry_run: bool = False) -> RememberResult:
    """See the module docstring; :meth:`MemoryStore.remember` is the public entry."""
    msgs = _messages(messages)
    session_id = v.optional_name(session_id, "session_id")
    subject = v.optional_name(subject, "subject") or store.subject or "default"
    turn_text = "\n".join(f"{m['role']}: {m['content']}" for m in msgs)
    user_text = "\n".join(m["content"] for m in msgs if m["role"] == "user")
    turn_id = v.optional_text(turn_id, "turn_id", 256) or (
        "turn-" + hashlib.sha256(f"{session_id}\n{turn_text}".encode()).hexdigest()[:16])
    timeout = write_timeout(timeout)

    query = (user_text or turn_text)[:2000]
    existing = list(store.search(query, _SEARCH_K, subject=subject)) if query.strip() else []
    path, fallback, llm_ms = "heuristic", "no LLM configured", None
    candidates: list[Candidate] | None = None
    dropped = repaired = 0
    if llm is not None:
        started = time.perf_counter()
        try:
            reply = _bounded(llm, build_prompt(turn_text, [h.memory.content for h in existing]),
                             min(float(timeout), llm.timeout))
            parsed = parse_reply(reply)
            dropped, repaired = parsed.dropped, parsed.repaired
            if parsed.error:
                fallback = f"bad_response: {parsed.error}"
            else:
                candidates, path, fallback = parsed.candidates, "llm", None
        except LLMError as exc:
            fallback = f"{exc.kind}: {exc}"
        except Exception as exc:  # noqa: BLE001 (a broken model client must not stop a write)
            fallback = f"error: {type(exc).__name__}"
        llm_ms = round((time.perf_counter() - started) * 1000, 1)
    if candidates is None:
        candidates = heuristic_candidates(user_text)
    decisions = [_reconcile(store, c, existing, path, subject, session_id, turn_id, dry_run)
                 for c in candidates]
    return RememberResult(turn_id, path, fallback, tuple(decisions), dropped, repaired, llm_ms,
                          dry_run)


def _reconcile(store: Any, c: Candidate, existing: list[Any], path: str, subject: str,
               session_id: str | None, turn_id: str, dry_run: bool) -> RememberDecision:
    importance = c.importance if c.importance is not None else score_importance(
        c.content, rule=c.rule)
    target = None
    if c.target is not None and 1 <= c.target <= len(existing):
        target = existing[c.target - 1].memory
    action = c.action if target is not None else "add"
    if action == "add":  # the model may miss an exact repeat; so may the heuristic
        same = next((h.memory for h in existing if _same(h.memory.content, c.content)), None)
        if same is not None:
            action, target = "noop", same
    reason = f"remember ({path}): {c.reason or action}"
    base = {"content": c.content, "category": c.category, "kind": c.kind,
            "importance": importance, "source_type": c.source, "reason": reason}
    if action == "noop":
        return RememberDecision(action="noop", outcome=None, memory_id=str(target.id),
                                target_id=str(target.id), **base)
    item: dict[str, Any] = {
        "content": c.content, "subject": subject, "kind": c.kind, "category": c.category,
        "importance": importance, "source_type": c.source, "source_id": turn_id,
        "session_id": session_id, "created_by": "memdb.remember", "rule": c.rule,
        "metadata": {"remember": {"path": path, "turn_id": turn_id}},
    }
    if action == "update":
        # supersession needs the same category and norm_key as the old version
        item["category"] = base["category"] = target.category.value
        item["norm_key"] = target.norm_key or f"memdb:{target.id}"
        decision = store.decide([item])[0]
        if decision.item is None or dry_run:
            return RememberDecision(
                action="rejected" if decision.item is None else "update",
                outcome="rejected" if decision.item is None else None, memory_id=None,
                target_id=str(target.id), gate_reasons=decision.reasons, **base)
        if target.norm_key is None:
            store.update(target.id, norm_key=item["norm_key"],
                         reason=f"remember: keyed for supersession by turn {turn_id}")
    result = store.add_many([item], reason=reason, dry_run=dry_run)[0]
    return RememberDecision(
        action="rejected" if result.rejected else action, outcome=result.outcome,
        memory_id=None if result.id is None else str(result.id),
        target_id=None if target is None else str(target.id),
        gate_reasons=result.reasons, **base)

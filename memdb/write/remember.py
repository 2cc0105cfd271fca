"""``store.remember(messages)``: turn a conversation turn into memories.

1. **Extract** candidate facts (preferences, entities, events, rules) through the configured
   :class:`~memdb.core.llm.ChatLLM` (path ``remember``: schema-constrained JSON where the server
   supports it, bounded by ``max_tokens`` and a timeout), parsed with distrust
   (:func:`memdb.write.extract.parse_reply`) and checked for meaning
   (:func:`memdb.write.extract.check_candidates`): a fact that is a schema word or is not grounded
   in the turn is refused and listed in ``result.refused``; a decision naming a memory that
   was not shown, a ``noop`` whose memory does not cover the fact, or an ``update`` of an
   unrelated memory becomes ``add`` and the decision's ``fallback`` says why. The heuristic
   extractor ("记住…", "以后都…", "我喜欢…", "I prefer…", "never…", "always…", "remember
   that…", "I'm allergic…") runs too: its candidates that the model's facts leave out are
   written with ``path`` "heuristic" (so a model keeping one fact of three loses none). With
   no LLM, or when it fails, times out, loops or none of its facts pass, the heuristic alone
   runs and ``fallback_reason`` says why. ``timeout`` lowers the path's bound (default
   ``$MEMDB_LLM_TIMEOUT_REMEMBER`` / ``$MEMDB_REMEMBER_TIMEOUT``, else 60 s).
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
from dataclasses import asdict, dataclass, replace
from typing import Any

from ..core import validate as v
from ..core.errors import InvalidInput
from ..core.llm import DEFAULT_LIMITS, ChatLLM, LLMError
from .extract import (
    Candidate,
    build_prompt,
    check_candidates,
    extract_schema,
    heuristic_candidates,
    parse_reply,
    score_importance,
    uncovered,
)
from .grounding import Refused

__all__ = ["remember", "RememberResult", "RememberDecision", "DEFAULT_REMEMBER_TIMEOUT", "Turn",
           "read_turn", "RAW_TURN_CREATOR"]

DEFAULT_REMEMBER_TIMEOUT = DEFAULT_LIMITS["remember"].timeout
MAX_TURN_CHARS = 20_000
_SEARCH_K = 8
RAW_TURN_CREATOR = "memdb.remember.raw"  # created_by of a turn kept as said (remember, wait=False)


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
    path: str = "heuristic"
    fallback: str | None = None


@dataclass(frozen=True)
class RememberResult:
    """The turn's id, which extractor's reply was used (``path``: llm | heuristic), why the
    LLM's was not (``fallback_reason``), the decisions (each with its own ``path`` and
    ``fallback``), the model's facts the checks ``refused`` (each with its reason), and
    what the parser dropped or repaired."""

    turn_id: str
    path: str
    fallback_reason: str | None
    decisions: tuple[RememberDecision, ...]
    dropped: int = 0
    repaired: int = 0
    llm_ms: float | None = None
    dry_run: bool = False
    refused: tuple[Refused, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["decisions"] = [{**asdict(d), "gate_reasons": list(d.gate_reasons)}
                            for d in self.decisions]
        out["refused"] = [r.to_dict() for r in self.refused]
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


def write_timeout(timeout: float | None) -> float | None:
    """How long a write may wait for the LLM: ``timeout``, else ``$MEMDB_REMEMBER_TIMEOUT``,
    else None (the client's limit of the path decides); InvalidInput unless positive."""
    if timeout is None:
        raw = os.environ.get("MEMDB_REMEMBER_TIMEOUT")
        if not raw:
            return None
        try:
            timeout = float(raw)
        except ValueError:
            raise InvalidInput(f"MEMDB_REMEMBER_TIMEOUT must be seconds, got {raw!r}") from None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise InvalidInput("timeout must be a positive number of seconds")
    return float(timeout)


def _same(a: str, b: str) -> bool:
    norm = lambda s: "".join(ch for ch in s.casefold() if ch.isalnum())  # noqa: E731
    return norm(a) == norm(b)


@dataclass(frozen=True)
class Turn:
    """A conversation turn, checked: its messages, session, subject (the store's, else
    "default"), the whole turn as text (``role: content`` lines), what the user said, and its
    id (given, else a hash of the session and the text)."""

    messages: list[dict[str, str]]
    session_id: str | None
    subject: str
    text: str
    user_text: str
    turn_id: str


def read_turn(store: Any, messages: Any, *, session_id: str | None = None,
              turn_id: str | None = None, subject: str | None = None) -> Turn:
    """The turn ``remember`` works on (InvalidInput for a malformed one)."""
    msgs = _messages(messages)
    session_id = v.optional_name(session_id, "session_id")
    subject = v.optional_name(subject, "subject") or store.subject or "default"
    turn_text = "\n".join(f"{m['role']}: {m['content']}" for m in msgs)
    user_text = "\n".join(m["content"] for m in msgs if m["role"] == "user")
    turn_id = v.optional_text(turn_id, "turn_id", 256) or (
        "turn-" + hashlib.sha256(f"{session_id}\n{turn_text}".encode()).hexdigest()[:16])
    return Turn(msgs, session_id, subject, turn_text, user_text, turn_id)


def remember(store: Any, messages: Any, *, llm: ChatLLM | None, session_id: str | None = None,
             turn_id: str | None = None, subject: str | None = None,
             timeout: float | None = None, dry_run: bool = False) -> RememberResult:
    """See the module docstring; :meth:`MemoryStore.remember` is the public entry. Turns kept
    as said (``created_by`` :data:`RAW_TURN_CREATOR`) are not facts to reconcile with: the
    search that finds the similar memories leaves them out."""
    turn = read_turn(store, messages, session_id=session_id, turn_id=turn_id, subject=subject)
    msgs, session_id, subject = turn.messages, turn.session_id, turn.subject
    turn_text, user_text, turn_id = turn.text, turn.user_text, turn.turn_id
    timeout = write_timeout(timeout)

    query = (user_text or turn_text)[:2000]
    existing = [h for h in store.search(query, _SEARCH_K, subject=subject)
                if h.memory.created_by != RAW_TURN_CREATOR] if query.strip() else []
    path, fallback, llm_ms = "heuristic", "no LLM configured", None
    candidates: list[Candidate] | None = None
    refused: list[Refused] = []
    dropped = repaired = 0
    heuristic = heuristic_candidates(user_text)
    if llm is not None:
        started = time.perf_counter()
        try:
            candidates, refused, dropped, repaired, fallback = _from_llm(
                llm, msgs, turn_text, existing, timeout)
            if candidates is not None:
                path = "llm"
        except LLMError as exc:
            fallback = f"{exc.kind}: {exc}"
        except Exception as exc:  # noqa: BLE001 (a broken model client must not stop a write)
            fallback = f"error: {type(exc).__name__}"
        llm_ms = round((time.perf_counter() - started) * 1000, 1)
    if candidates is None:
        candidates = heuristic
    else:
        gap = "the model's facts left it out"
        candidates = candidates + [replace(h, fallback=gap) for h in
                                   uncovered(heuristic, [c.content for c in candidates])]
    decisions = [_reconcile(store, c, existing, "heuristic" if _heur(c) else path, subject,
                            session_id, turn_id, dry_run) for c in candidates]
    return RememberResult(turn_id, path, fallback, tuple(decisions), dropped, repaired, llm_ms,
                          dry_run, tuple(refused))


def _heur(c: Candidate) -> bool:
    return c.reason.startswith("heuristic:")


def _from_llm(llm: ChatLLM, msgs: list[dict[str, str]], turn_text: str, existing: list[Any],
              timeout: float | None
              ) -> tuple[list[Candidate] | None, list[Refused], int, int, str | None]:
    """The model's checked candidates (None when its reply is unusable), the refused facts,
    the parser's drop and repair counts, and why the reply was not used."""
    shown = [(h.memory.content, h.memory.category.value) for h in existing]
    reply = llm.complete(build_prompt(turn_text, [m for m, _ in shown]), path="remember",
                         schema=extract_schema(len(shown)), timeout=timeout)
    parsed = parse_reply(reply)
    if parsed.error:
        return None, [], parsed.dropped, parsed.repaired, f"bad_response: {parsed.error}"
    said = "\n".join(m["content"] for m in msgs)
    kept, refused = check_candidates(parsed.candidates, said, shown)
    if parsed.candidates and not kept:
        return (None, refused, parsed.dropped, parsed.repaired,
                f"bad_response: none of the model's {len(parsed.candidates)} facts passed the "
                "checks (see refused)")
    return kept, refused, parsed.dropped, parsed.repaired, None


def _reconcile(store: Any, c: Candidate, existing: list[Any], path: str, subject: str,
               session_id: str | None, turn_id: str, dry_run: bool) -> RememberDecision:
    importance = c.importance if c.importance is not None else score_importance(
        c.content, rule=c.rule)
    target = None
    if c.action != "add" and c.target is not None and 1 <= c.target <= len(existing):
        target = existing[c.target - 1].memory  # checked by _extract.check_candidates
    action = c.action if target is not None else "add"
    if action == "add":  # the model may miss an exact repeat; so may the heuristic
        same = next((h.memory for h in existing if _same(h.memory.content, c.content)), None)
        if same is not None:
            action, target = "noop", same
    reason = f"remember ({path}): {c.reason or action}"
    base = {"content": c.content, "category": c.category, "kind": c.kind,
            "importance": importance, "source_type": c.source, "reason": reason,
            "path": path, "fallback": c.fallback}
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

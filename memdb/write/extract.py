"""Fact extraction for :meth:`MemoryStore.remember`, without I/O: the LLM prompt, a tolerant
parser of the model's reply and a heuristic extractor (Chinese and English cues); the
importance heuristic lives in :mod:`memdb.write.importance` (re-exported here).

The parser distrusts the model: it finds the JSON inside prose or code fences, accepts a top
level list or an object holding one (``facts``/``memories``/``items``), repairs what it can
(a bare string becomes a fact; an unknown category becomes ``general``; an out-of-range or
missing importance is scored heuristically) and drops the rest, counting what it dropped.

Then :func:`check_candidates` checks what the facts *mean* (:mod:`memdb.write.grounding`): a fact
must be grounded in the turn (not a schema word such as ``user_statement``, not text absent
from the turn), a reconcile decision may only name a memory that was shown, a ``noop`` only a
memory that covers the fact, an ``update`` only one that shares a content word or the
category with it. A refused fact is reported (:class:`~memdb.write.grounding.Refused`); a refused
decision falls back to ``add``, and the item says so. :func:`uncovered` picks the heuristic
candidates that the model's facts leave out, so a model that keeps one fact of three loses
none.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ..core.models import Category
from .grounding import Refused, coverage, covers, grounded, schema_token, units
from .importance import PREFERENCE as _PREFERENCE
from .importance import REMEMBER as _REMEMBER
from .importance import RULE as _RULE
from .importance import score_importance

__all__ = ["Candidate", "Parsed", "SYSTEM_PROMPT", "build_prompt", "parse_reply",
           "heuristic_candidates", "score_importance", "MAX_FACT_CHARS", "extract_schema",
           "check_candidates", "uncovered"]

MAX_FACT_CHARS = 1000
MAX_FACTS = 20
_ACTIONS = ("add", "update", "noop")
_CATEGORIES = {c.value for c in Category} - {"system"}

SYSTEM_PROMPT = (
    "You extract long-term memories from a conversation turn.\n"
    'Return only JSON: {"facts": [{"content": str, "category": one of preferences|entities|'
    'events|patterns|tools|skills|general, "kind": semantic|episodic|procedural, '
    '"importance": 0-1, "source": "user_statement"|"model_inference", '
    '"action": "add"|"update"|"noop", "target": null or the number of an existing memory, '
    '"reason": str}]}\n'
    "Rules: one self-contained statement per fact, in the user's language; only durable facts "
    "(preferences, people and things, events, rules the user sets); \"source\" is "
    "user_statement when the user said it, model_inference when you inferred it; compare with "
    'the existing memories: "noop" if one already says it, "update" with its number as target '
    'if the new fact changes or corrects it, else "add". No facts: {"facts": []}.')


@dataclass(frozen=True)
class Candidate:
    """One fact to reconcile and write."""

    content: str
    category: str = "general"
    kind: str = "semantic"
    importance: float | None = None
    source: str = "user_statement"
    action: str = "add"
    target: int | None = None
    reason: str = ""
    rule: bool = False
    fallback: str | None = None  # why the model's decision on this item was not followed


@dataclass
class Parsed:
    """What :func:`parse_reply` made of a reply: the usable candidates, how many items were
    dropped or repaired, and why the whole reply was unusable (None when it was usable)."""

    candidates: list[Candidate] = field(default_factory=list)
    dropped: int = 0
    repaired: int = 0
    error: str | None = None


def extract_schema(shown: int) -> dict[str, Any]:
    """The JSON schema of a reply, for schema-constrained decoding: at most 10 facts of at
    most 300 characters, enums for the closed fields, ``target`` one of the ``shown``
    memories' numbers or null."""
    target: dict[str, Any] = {"type": "null"} if not shown else {
        "anyOf": [{"type": "integer", "enum": list(range(1, shown + 1))}, {"type": "null"}]}
    fact = {"type": "object", "additionalProperties": False,
            "required": ["content", "category", "kind", "importance", "source", "action",
                         "target", "reason"],
            "properties": {
                "content": {"type": "string", "minLength": 2, "maxLength": 300},
                "category": {"type": "string", "enum": sorted(_CATEGORIES)},
                "kind": {"type": "string", "enum": ["semantic", "episodic", "procedural"]},
                "importance": {"type": "number"},
                "source": {"type": "string", "enum": ["user_statement", "model_inference"]},
                "action": {"type": "string", "enum": list(_ACTIONS)},
                "target": target,
                "reason": {"type": "string", "maxLength": 200}}}
    return {"type": "object", "additionalProperties": False, "required": ["facts"],
            "properties": {"facts": {"type": "array", "maxItems": 10, "items": fact}}}


def build_prompt(turn: str, existing: list[str]) -> list[dict[str, str]]:
    """The chat messages asking the model for the facts of ``turn``, given numbered existing
    memories (1-based)."""
    memories = "\n".join(f"[{n}] {text}" for n, text in enumerate(existing, 1)) or "(none)"
    return [{"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": f"Existing memories:\n{memories}\n\nConversation turn:"
                                        f"\n{turn}\n\nJSON:"}]


_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


def json_values(text: str) -> list[Any]:
    """Every JSON object or array found in ``text`` (fenced blocks first, then raw scans)."""
    found: list[Any] = []
    chunks = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    for chunk in chunks:
        pos = 0
        while True:
            starts = [i for i in (chunk.find("{", pos), chunk.find("[", pos)) if i >= 0]
            if not starts:
                break
            start = min(starts)
            try:
                value, end = decoder.raw_decode(chunk, start)
            except (json.JSONDecodeError, RecursionError):
                pos = start + 1
                continue
            found.append(value)
            pos = end
        if found:
            return found
    return found


def _items(value: Any) -> list[Any] | None:
    if isinstance(value, list):
        return value
    if isinstance(value, dict):
        for key in ("facts", "memories", "items", "results"):
            if isinstance(value.get(key), list):
                return value[key]
        if isinstance(value.get("content"), str):  # a single fact object
            return [value]
    return None


def parse_reply(text: str) -> Parsed:
    """Candidates from a model's reply (see the module docstring)."""
    out = Parsed()
    items = None
    for value in json_values(text):
        items = _items(value)
        if items is not None:
            break
    if items is None:
        out.error = "no JSON facts in the reply"
        return out
    for raw in items[:MAX_FACTS * 2]:
        candidate, repaired = _candidate(raw)
        if candidate is None:
            out.dropped += 1
        else:
            out.repaired += repaired
            out.candidates.append(candidate)
    out.dropped += max(0, len(out.candidates) - MAX_FACTS) + max(0, len(items) - MAX_FACTS * 2)
    out.candidates = out.candidates[:MAX_FACTS]
    return out


def _candidate(raw: Any) -> tuple[Candidate | None, int]:
    """A Candidate from one item and how many of its fields were repaired, or (None, 0)."""
    if isinstance(raw, str):
        raw = {"content": raw}
    if not isinstance(raw, dict):
        return None, 0
    content = raw.get("content", raw.get("fact", raw.get("text")))
    if not isinstance(content, str) or not content.strip() or len(content) > MAX_FACT_CHARS \
            or "\x00" in content:
        return None, 0
    repaired = 0
    category = raw.get("category")
    if category not in _CATEGORIES:
        repaired += category is not None
        category = "general"
    kind = raw.get("kind")
    if kind not in ("semantic", "episodic", "procedural"):
        repaired += kind is not None
        kind = "episodic" if category == "events" else "semantic"
    importance = raw.get("importance")
    if isinstance(importance, bool) or not isinstance(importance, (int, float)) \
            or not 0 <= importance <= 1:
        repaired += importance is not None
        importance = None
    source = raw.get("source")
    if source not in ("user_statement", "model_inference"):
        repaired += source is not None
        source = "user_statement"
    action = raw.get("action")
    if action not in _ACTIONS:
        repaired += action is not None
        action = "add"
    target = raw.get("target")
    if isinstance(target, bool) or not isinstance(target, int):
        repaired += target is not None and action != "add"
        target = None
    if action != "add" and target is None:
        action = "add"  # an update/noop without a target cannot be checked: treat as new
    reason = raw.get("reason")
    reason = reason[:300] if isinstance(reason, str) else ""
    return Candidate(content.strip(), category, kind, importance, source, action, target,
                     reason, rule=kind == "procedural"), repaired


def check_candidates(candidates: list[Candidate], turn: str, shown: list[tuple[str, str]]
                     ) -> tuple[list[Candidate], list[Refused]]:
    """The model's candidates whose content is grounded in ``turn``, with decisions the checks
    refuse turned into ``add`` (``fallback`` says why), and the refused facts.

    ``shown``: the (content, category) of the memories the prompt numbered, in order.
    """
    kept: list[Candidate] = []
    refused: list[Refused] = []
    for c in candidates:
        if schema_token(c.content):
            refused.append(Refused(c.content, "a schema word, not a fact"))
            continue
        found, total = coverage(c.content, turn)
        if total < 2:
            refused.append(Refused(c.content, "too short to be a fact (fewer than two "
                                              "content words)"))
            continue
        if not grounded(c.content, turn, 0.5):
            refused.append(Refused(c.content, f"not grounded in the turn ({found} of {total} "
                                              "content words found)"))
            continue
        fallback = None
        if c.action != "add":
            if c.target is None or not 1 <= c.target <= len(shown):
                fallback = (f"{c.action} names memory [{c.target}], which was not shown "
                            f"(1..{len(shown)}): added")
            else:
                memory, category = shown[c.target - 1]
                if c.action == "noop" and not covers(memory, c.content):
                    fallback = f"noop: memory [{c.target}] does not cover the fact: added"
                elif c.action == "update" and schema_token(memory):
                    fallback = f"update: memory [{c.target}] is not a fact: added"
                elif c.action == "update" and not (units(memory) & units(c.content)) \
                        and category != c.category:
                    fallback = (f"update: memory [{c.target}] shares no word or category "
                                "with the fact: added")
        if fallback is not None:
            c = Candidate(c.content, c.category, c.kind, c.importance, c.source, "add", None,
                          c.reason, c.rule, fallback)
        kept.append(c)
    return kept, refused


_CLAUSE = re.compile(r"[，,;；、]")


def uncovered(heuristic: list[Candidate], facts: list[str]) -> list[Candidate]:
    """The heuristic candidates holding a clause that none of ``facts`` covers (half its
    content words found in the facts together); a question clause does not count."""
    pool = "\n".join(facts)
    out = []
    for h in heuristic:
        clauses = [c.strip() for c in _CLAUSE.split(h.content) if c.strip()]
        for clause in clauses:
            if clause.endswith(("?", "？")) or not units(clause):
                continue
            if not grounded(clause, pool, 0.5):
                out.append(h)
                break
    return out


# -- the heuristic extractor ------------------------------------------------------------------
_ENTITY = re.compile(r"我(?:叫|是|住在|在.{1,12}(?:工作|上班|上学)|的名字是|对.{1,12}过敏)|"
                     r"\b(?:my\s+name\s+is|I\s+am\s+(?:a|an)\b|I'?m\s+(?:a|an)\b|I\s+live\s+in|"
                     r"I\s+work\s+(?:at|for|as)|I'?m\s+allergic|I\s+am\s+allergic)", re.I)
_SPLIT = re.compile(r"(?<=[。！？!?;；\n])|(?<=\.)\s+")


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SPLIT.split(text) if s and s.strip()]


def heuristic_candidates(turn: str) -> list[Candidate]:
    """Explicit statements in the user's text: "记住…", "以后都…", "我喜欢…", "I prefer…",
    "never…", "always…", "remember that…", "my name is…" (the prompt's categories by cue)."""
    out: list[Candidate] = []
    for sentence in _sentences(turn):
        explicit = bool(_REMEMBER.match(sentence))
        content = _REMEMBER.sub("", sentence, count=1).strip() if explicit else sentence
        content = content.strip(" ，,:：")
        if not content:
            continue
        rule = bool(_RULE.search(content))
        preference = bool(_PREFERENCE.search(content))
        entity = bool(_ENTITY.search(content))
        if not (explicit or rule or preference or entity):
            continue
        if rule:
            category, kind, cue = "preferences", "procedural", "rule"
        elif preference:
            category, kind, cue = "preferences", "semantic", "preference"
        elif entity:
            category, kind, cue = "entities", "semantic", "entity"
        else:
            category, kind, cue = "general", "semantic", "explicit"
        importance = score_importance(content, explicit=explicit, rule=rule)
        out.append(Candidate(content[:MAX_FACT_CHARS], category, kind, importance,
                             "user_statement",
                             "add", None, f"heuristic: {cue} cue"
                             + (" (explicit remember)" if explicit else ""), rule=rule))
    return out[:MAX_FACTS]

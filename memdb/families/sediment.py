"""Sedimentation: durable knowledge from session summaries, by cue words, offline.

Each sentence of a summary gets at most one class, by the first matching class in
:data:`CLASSES` order (most specific first): ``lesson`` (learned, next time, 教训, 下次…),
``decision`` (decided, agreed, 决定, 确定…), ``preference`` (prefer, likes, 喜欢, 偏好…),
``rule`` (always, never, must, 必须, 不要, 禁止…). Sentences are deduplicated by normal form
across all summaries; each keeps the ids of every summary it came from. Frequency patterns:
a sentence with no cue that recurs in several summaries, and (in memdb.families.lifecycle, from the
stored lexemes) words that recur in several summaries. Where each class goes
(:data:`TARGETS`): rules become review-queue proposals (memories only once approved), the
others memories of the given kind and category. No I/O here: :mod:`memdb.families.lifecycle` reads
the summaries and writes the results.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from uuid import UUID

from .summarize import normal_form, split_sentences

__all__ = ["CLASSES", "TARGETS", "Candidate", "classify", "extract", "pattern_text", "topic_text"]

_CUES: dict[str, list[str]] = {
    "lesson": [r"\blearn(ed|t)\b", r"\blessons?\b", r"\bnext time\b", r"\bshould have\b",
               r"\bturned out\b", r"\bmistake\b", r"\bin hindsight\b",
               "教训", "下次", "学到", "吸取", "经验是", "以后要", "早知道"],
    "decision": [r"\bdecid(e|ed|es)\b", r"\bdecision\b", r"\bagreed\b", r"\bwe will\b",
                 r"\bwe'll\b", r"\bchose\b", r"\bgoing with\b", r"\bsettled on\b",
                 "决定", "确定了", "选定", "商定", "定下", "选择了", "同意"],
    "preference": [r"\bprefers?\b", r"\bpreferred\b", r"\blikes?\b", r"\bloves?\b",
                   r"\bfavou?rite\b", r"\bwould rather\b", r"\bdislikes?\b", r"\bhates?\b",
                   "喜欢", "偏好", "更愿意", "倾向于", "爱喝", "爱吃", "讨厌", "最爱"],
    "rule": [r"\balways\b", r"\bnever\b", r"\bmust\b", r"\bdo not\b", r"\bdon't\b",
             r"\bis required\b", r"\bis forbidden\b",
             "必须", "总是", "永远", "不要", "不许", "禁止", "务必", "一定要", "不得"],
}
CLASSES: tuple[str, ...] = tuple(_CUES)
_PATTERNS = {name: re.compile("|".join(cues), re.IGNORECASE) for name, cues in _CUES.items()}

# class -> (destination, kind, category): "memory" is written at once, "review" is proposed
TARGETS: dict[str, tuple[str, str, str]] = {
    "lesson": ("memory", "procedural", "skills"),
    "decision": ("memory", "episodic", "events"),
    "preference": ("memory", "semantic", "preferences"),
    "pattern": ("memory", "semantic", "patterns"),
    "rule": ("review", "procedural", "system"),
}


@dataclass(frozen=True)
class Candidate:
    """One sentence worth keeping: its class, text, and the summaries it came from."""

    cls: str
    content: str
    source_ids: tuple[UUID, ...] = field(default=())

    @property
    def destination(self) -> str:
        return TARGETS[self.cls][0]

    def to_dict(self) -> dict[str, object]:
        return {"class": self.cls, "content": self.content, "destination": self.destination,
                "source_ids": [str(i) for i in self.source_ids]}


def classify(sentence: str) -> str | None:
    """The sentence's class, or None when no cue matches.

    >>> classify("下次部署前一定要先备份数据库"), classify("Alice prefers green tea")
    ('lesson', 'preference')
    """
    text = sentence.strip()
    for name in CLASSES:
        if _PATTERNS[name].search(text):
            return name
    return None


def extract(summaries: Sequence[tuple[UUID, str]], *, min_sessions: int = 3
            ) -> list[Candidate]:
    """Classified sentences of ``summaries`` ((id, text), oldest first), each once, with every
    summary it appears in; a sentence with no class that recurs in at least ``min_sessions``
    summaries becomes a ``pattern`` (:func:`pattern_text`)."""
    found: dict[str, tuple[str | None, str, list[UUID]]] = {}
    for summary_id, text in summaries:
        for sentence in split_sentences(text):
            key = normal_form(sentence)
            if len(key) < 4:
                continue
            if key in found:
                if summary_id not in found[key][2]:
                    found[key][2].append(summary_id)
                continue
            found[key] = (classify(sentence), sentence, [summary_id])
    out = []
    for cls, text, ids in found.values():
        if cls is not None:
            out.append(Candidate(cls, text, tuple(ids)))
        elif len(ids) >= min_sessions:
            out.append(Candidate("pattern", pattern_text(text), tuple(ids)))
    return out


def _is_cjk(text: str) -> bool:
    return re.search(r"[\u3400-\u9fff]", text) is not None


def pattern_text(sentence: str) -> str:
    """The memory text of a sentence that keeps coming back (stable: later runs dedup)."""
    if _is_cjk(sentence):
        return f"近期会话中反复出现：{sentence}"
    return f"Recurring in recent sessions: {sentence}"


def topic_text(term: str) -> str:
    """The memory text of a recurring topic (a stemmed word; stable: later runs dedup)."""
    return f"Recurring topic in recent sessions: {term}"

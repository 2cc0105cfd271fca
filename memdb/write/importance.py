"""Heuristic importance for a memory written without one (no I/O; Chinese and English cues).

Shared by every write path: :meth:`MemoryStore.add` / ``add_many`` (through
:meth:`memdb.write.inputs.MemoryInput.to_item`, when ``importance`` is left unset), ``remember``
(:mod:`memdb.write.remember`) and the memory tool (:mod:`memdb.families.tool`) when the model gives
none.

Base 0.5 (the old fixed default, so a plain statement scores what it always did); explicit
"remember"/"记住" +0.2, a rule cue (always/never/from now on, 以后都/每次/务必…) +0.15, a
correction ("不是A，是B", "not A, B") +0.15, a named entity, title or date +0.05, a
preference (我喜欢…, I prefer…) +0.05; capped at 0.95.

>>> score_importance("记住：以后都用中文回答")
0.85
"""

from __future__ import annotations

import re

from ..core.corrections import detect_correction

__all__ = ["score_importance", "REMEMBER", "RULE", "PREFERENCE", "NAMED"]

REMEMBER = re.compile(r"^\s*(?:请|please\s+)?(?:记住|记得|别忘了|不要忘记|remember(?:\s+that)?|"
                      r"don'?t\s+forget(?:\s+that)?|note\s+that)\s*[:：,，]?\s*", re.I)
RULE = re.compile(r"以后都|以后(?:请|要|别|不要)|从现在起|每次|总是|永远不要|不要再|务必|一律|"
                  r"\b(?:always|never|from now on|every time|whenever)\b", re.I)
PREFERENCE = re.compile(r"我(?:很|最|更|比较|特别)?(?:喜欢|爱|偏好|讨厌|不喜欢|不爱|习惯)|"
                        r"\bI\s+(?:really\s+|usually\s+)?(?:prefer|like|love|hate|dislike|"
                        r"enjoy|don'?t\s+like)\b|\bmy\s+favou?rite\b", re.I)
NAMED = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*|《[^》]+》|“[^”]+”|"
                   r"\b\d{4}-\d{2}-\d{2}\b|\d{1,2}月\d{1,2}日")


def score_importance(text: str, *, explicit: bool = False, rule: bool = False) -> float:
    """A heuristic importance in [0.5, 0.95] for a fact the caller gave none (see the module
    docstring). ``explicit``/``rule``: the caller already knows the text is an explicit
    "remember" or a rule."""
    score = 0.5
    if explicit or REMEMBER.match(text) or re.search(r"记住|remember", text, re.I):
        score += 0.2
    if rule or RULE.search(text):
        score += 0.15
    if detect_correction(text) is not None:
        score += 0.15
    if NAMED.search(text.strip()):
        score += 0.05
    if PREFERENCE.search(text):
        score += 0.05
    return round(min(score, 0.95), 2)

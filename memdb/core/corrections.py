"""Facts phrased as corrections ("不是上海，是北京", "actually Beijing, not Shanghai"): the cue
the write gate (:mod:`memdb.write.gate`) and the importance heuristic
(:mod:`memdb.write.importance`) both
read. Pure text, no I/O, no memdb imports: the bottom of the write path."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Correction", "detect_correction"]


@dataclass(frozen=True, slots=True)
class Correction:
    """A fact phrased as a correction: ``old`` is what it denies, ``new`` what it asserts."""

    old: str
    new: str


_CORRECTIONS = (
    # 不是A，是B / 不是A而是B / 不是A，而是B
    re.compile(r"不是(?P<old>[^，,。；;！!？?]+?)\s*[，,]?\s*(?:而|却|反而)?是(?P<new>[^。；;！!？?]+)"),
    # actually B, not A
    re.compile(r"\bactually\b,?\s*(?P<new>[^,;]+?)\s*[,;]\s*(?:and\s+|but\s+)?not\s+"
               r"(?P<old>[^,;.!?]+)", re.IGNORECASE),
    # not A, (but) B  /  isn't A, it's B
    re.compile(r"(?:\bnot|n't)\s+(?P<old>[^,;.!?]+?)\s*[,;]\s*(?:but\s+)?(?P<new>[^.!?]+)",
               re.IGNORECASE),
)


def detect_correction(text: str) -> Correction | None:
    """The (old, new) of a text phrased as a correction, or None.

    >>> detect_correction("不是上海，是北京")
    Correction(old='上海', new='北京')
    """
    for pattern in _CORRECTIONS:
        m = pattern.search(text)
        if m and m.group("old").strip() and m.group("new").strip():
            return Correction(_strip_article(m.group("old")), _strip_article(m.group("new")))
    return None


def _strip_article(text: str) -> str:
    return re.sub(r"^(?:it'?s|it is|is|the|a|an)\s+", "", text.strip(), flags=re.I).strip()

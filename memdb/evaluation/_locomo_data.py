"""Reading LoCoMo-format files (Maharana et al., ACL 2024) into plain dataclasses.

Tolerates the known problems of the published data: evidence strings holding two ids
("D8:6; D9:17"), malformed ids ("D", "D:11:26"), zero-padded turn numbers ("D30:05" is
D30:5), questions without evidence, sessions that have a date but no turns.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime

__all__ = ["Turn", "Question", "Conversation", "load_locomo", "parse_evidence", "parse_date"]

_SESSION = re.compile(r"session_(\d+)")
_DIA_ID = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)", re.IGNORECASE)


@dataclass(frozen=True)
class Turn:
    dia_id: str
    session: int
    speaker: str
    text: str
    caption: str | None
    date: datetime | None

    @property
    def content(self) -> str:
        """What is stored: "Speaker: text", plus " [image: caption]" for a shared image."""
        out = f"{self.speaker}: {self.text}".strip()
        return f"{out} [image: {self.caption}]" if self.caption else out


@dataclass(frozen=True)
class Question:
    question: str
    category: int
    evidence: tuple[str, ...]  # normalized dia ids; empty = no evidence (counts as found)


@dataclass
class Conversation:
    sample_id: str
    turns: list[Turn] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)
    last_date: datetime | None = None


def parse_evidence(values: object) -> tuple[str, ...]:
    """Normalized dia ids of an evidence list: splits "D8:6; D9:17", drops what holds no id
    ("D"), removes zero padding ("D30:05" -> "D30:5"), keeps order, no duplicates."""
    if isinstance(values, str):
        values = [values]
    out: list[str] = []
    for value in values or ():
        for m in _DIA_ID.finditer(str(value)):
            dia = f"D{int(m.group(1))}:{int(m.group(2))}"
            if dia not in out:
                out.append(dia)
    return tuple(out)


def parse_date(text: object) -> datetime | None:
    """"1:56 pm on 8 May, 2023" -> 2023-05-08 13:56 UTC; None if absent or unparseable."""
    if not isinstance(text, str) or not text.strip():
        return None
    cleaned = re.sub(r"\s+", " ", text.strip())
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%d %B, %Y", "%d %B %Y"):
        try:
            return datetime.strptime(cleaned, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    return None


def _conversation(sample: dict) -> Conversation:
    conv = sample.get("conversation") or {}
    result = Conversation(sample_id=str(sample.get("sample_id") or f"conv-{id(sample)}"))
    dates = []
    sessions = sorted((int(m.group(1)), key) for key in conv
                      if (m := _SESSION.fullmatch(key)) and isinstance(conv[key], list))
    for number, key in sessions:
        date = parse_date(conv.get(f"{key}_date_time"))
        for turn in conv[key]:
            text = str(turn.get("text") or "").strip()
            caption = str(turn.get("blip_caption") or "").strip() or None
            ids = parse_evidence(turn.get("dia_id"))
            if not ids or not (text or caption):
                continue
            result.turns.append(Turn(ids[0], number, str(turn.get("speaker") or "").strip(),
                                     text, caption, date))
    for key, value in conv.items():
        if key.endswith("_date_time") and (date := parse_date(value)):
            dates.append(date)
    result.last_date = max(dates, default=None)
    for qa in sample.get("qa") or ():
        question = str(qa.get("question") or "").strip()
        if question:
            result.questions.append(Question(question, int(qa.get("category") or 0),
                                             parse_evidence(qa.get("evidence"))))
    return result


def load_locomo(path: str | os.PathLike[str], limit_conversations: int | None = None
                ) -> list[Conversation]:
    """The conversations of a LoCoMo-format JSON file (a list of samples), in file order."""
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    if isinstance(data, dict):  # a single sample
        data = [data]
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list of LoCoMo samples")
    if limit_conversations is not None:
        data = data[:limit_conversations]
    return [_conversation(sample) for sample in data]

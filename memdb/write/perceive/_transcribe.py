"""A transcript of a recording from an OpenAI-compatible ``/v1/audio/transcriptions`` endpoint,
when one is configured.

``MEMDB_TRANSCRIBE_MODEL`` names the model (no transcript without it; e.g. ``whisper-1``);
``MEMDB_TRANSCRIBE_BASE_URL`` and ``MEMDB_TRANSCRIBE_API_KEY`` default to
``MEMDB_LLM_BASE_URL`` and ``MEMDB_LLM_API_KEY``. The call goes through the ``openai`` client
with ``response_format="verbose_json"``, so the reply carries segments with their start and
end times, kept for citations. The reply is untrusted output: each segment becomes one line of
plain text (control characters removed, at most :data:`MAX_SEGMENTS` segments), and the memory
content cites each line by its time (``[1:05–1:09] ...``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from ...core.errors import InvalidInput, MissingDependency
from ...core.validate import MAX_CONTENT_CHARS

__all__ = ["Transcriber", "Transcript", "Segment", "transcriber_from_env", "stamp",
           "MAX_SEGMENTS", "TranscriptionFailed"]

MAX_SEGMENTS = 5000
_SEGMENT_CHARS = 2000
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


class TranscriptionFailed(InvalidInput):
    """The transcription endpoint failed or replied with nothing usable."""


@dataclass(frozen=True, slots=True)
class Segment:
    start: float
    end: float
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {"start": self.start, "end": self.end, "text": self.text}


@dataclass(frozen=True, slots=True)
class Transcript:
    """The text, its timed segments, the language the model heard and the duration it saw."""

    text: str
    segments: tuple[Segment, ...]
    language: str | None
    duration_s: float | None

    def content(self) -> str:
        """The memory content: one line per segment, cited by its time."""
        if not self.segments:
            return self.text[:MAX_CONTENT_CHARS]
        lines = (f"[{stamp(s.start)}–{stamp(s.end)}] {s.text}" for s in self.segments)
        return "\n".join(lines)[:MAX_CONTENT_CHARS]


def stamp(seconds: float) -> str:
    """``m:ss`` (``h:mm:ss`` from an hour) of a time in seconds."""
    whole = int(seconds)
    h, rest = divmod(whole, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def _clean(text: Any) -> str:
    if not isinstance(text, str):
        return ""
    return " ".join(_CONTROL.sub(" ", text).split())[:_SEGMENT_CHARS]


def _seconds(value: Any) -> float | None:
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return round(out, 3) if 0 <= out < 10 ** 7 else None


class Transcriber:
    """One transcription endpoint: ``transcribe(data, name, mime)`` -> :class:`Transcript`."""

    def __init__(self, base_url: str | None, *, model: str, api_key: str | None = None,
                 timeout: float = 600.0, max_retries: int = 1) -> None:
        if not isinstance(model, str) or not model.strip():
            raise InvalidInput("a transcription model name is needed")
        try:
            import openai
        except ImportError as exc:  # pragma: no cover - openai is a dependency of memdb
            raise MissingDependency("transcription needs the openai package") from exc
        self.model = model
        self._client = openai.OpenAI(base_url=base_url, api_key=api_key or "not-needed",
                                     timeout=timeout, max_retries=max_retries)
        self._errors: tuple[type[BaseException], ...] = (openai.OpenAIError,)

    def transcribe(self, data: bytes, name: str, mime: str) -> Transcript:
        try:
            reply = self._client.audio.transcriptions.create(
                model=self.model, file=(name, data, mime), response_format="verbose_json",
                timestamp_granularities=["segment"])
        except self._errors as exc:
            raise TranscriptionFailed(f"the transcription endpoint failed: "
                                      f"{type(exc).__name__}") from None
        segments = []
        for seg in list(getattr(reply, "segments", None) or [])[:MAX_SEGMENTS]:
            get = seg.get if isinstance(seg, dict) else (lambda k, s=seg: getattr(s, k, None))
            text, start, end = _clean(get("text")), _seconds(get("start")), _seconds(get("end"))
            if text and start is not None:
                segments.append(Segment(start, max(end or start, start), text))
        text = "\n".join(s.text for s in segments) or _clean(getattr(reply, "text", ""))
        if not text:
            raise TranscriptionFailed("the transcription endpoint returned no text")
        language = _clean(getattr(reply, "language", None))[:40] or None
        return Transcript(text, tuple(segments), language,
                          _seconds(getattr(reply, "duration", None)))


def transcriber_from_env() -> Transcriber | None:
    """The endpoint the environment configures, or None when MEMDB_TRANSCRIBE_MODEL is unset."""
    model = os.environ.get("MEMDB_TRANSCRIBE_MODEL")
    if not model:
        return None
    return Transcriber(os.environ.get("MEMDB_TRANSCRIBE_BASE_URL")
                       or os.environ.get("MEMDB_LLM_BASE_URL") or None,
                       api_key=os.environ.get("MEMDB_TRANSCRIBE_API_KEY")
                       or os.environ.get("MEMDB_LLM_API_KEY"), model=model)

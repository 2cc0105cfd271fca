"""What :meth:`memdb.families.documents.Documents.ask` and
:meth:`~memdb.families.documents.Documents.retrieve`
return."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...write.grounding import Refused

__all__ = ["Passage", "Expansion", "RerankInfo", "Retrieval", "AskResult"]


@dataclass(frozen=True, slots=True)
class Passage:
    """One numbered context passage (and, when an answer cites it, one citation).

    ``number`` is the ``[n]`` the prompt gave it. ``memory_id`` is the memory holding the
    text; for a document chunk ``document_uri``/``title``/``heading_path`` and the character
    offsets ``char_start``/``char_end`` into the document's extracted text say where it is
    (they are None for an ordinary memory, whose ``uri`` is its ``mem://`` URI).
    ``details``: the ranks that placed it (each route's rank, each query variant's rank with
    expansion, the rerank score and the rank before reranking).
    """

    number: int
    memory_id: str
    text: str
    score: float
    source_type: str
    uri: str
    document_id: str | None = None
    document_uri: str | None = None
    title: str | None = None
    heading_path: tuple[str, ...] = ()
    char_start: int | None = None
    char_end: int | None = None
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """``title › heading › subheading`` (or the URI) for display and for the prompt."""
        heads = self.heading_path
        if heads and self.title and heads[0] == self.title:  # the title is often the H1
            heads = heads[1:]
        parts = [p for p in (self.title, *heads) if p]
        return " › ".join(parts) if parts else self.uri

    def to_dict(self) -> dict[str, Any]:
        return {"number": self.number, "memory_id": self.memory_id, "text": self.text,
                "score": self.score, "source_type": self.source_type, "uri": self.uri,
                "document_id": self.document_id, "document_uri": self.document_uri,
                "title": self.title, "heading_path": list(self.heading_path),
                "char_start": self.char_start, "char_end": self.char_end,
                "details": self.details}


@dataclass(frozen=True, slots=True)
class Expansion:
    """How the question was expanded: ``kind`` (mqe | hyde), the variants searched besides
    the question (rewrites, or the hypothetical passage), ``fallback`` — why the plain
    question was searched alone instead (None when the expansion worked) — and the rewrites
    the checks ``refused``, each with its reason (:mod:`memdb.retrieval.ask._expand`)."""

    kind: str
    variants: tuple[str, ...] = ()
    fallback: str | None = None
    refused: tuple[Refused, ...] = ()

    @property
    def applied(self) -> bool:
        return self.fallback is None and bool(self.variants)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "applied": self.applied, "variants": list(self.variants),
                "fallback": self.fallback, "refused": [r.to_dict() for r in self.refused]}


@dataclass(frozen=True, slots=True)
class RerankInfo:
    """Which reranker ran, and ``fallback`` — why the original order was kept (None when the
    reranker's scores were used)."""

    name: str
    candidates: int = 0
    fallback: str | None = None

    @property
    def applied(self) -> bool:
        return self.fallback is None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "applied": self.applied, "candidates": self.candidates,
                "fallback": self.fallback}


@dataclass(frozen=True, slots=True)
class Retrieval:
    """Ranked passages for a question, with what expansion and reranking did."""

    question: str
    passages: tuple[Passage, ...]
    expansion: Expansion | None = None
    rerank: RerankInfo | None = None
    notes: tuple[str, ...] = ()
    timings: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"question": self.question, "passages": [p.to_dict() for p in self.passages],
                "expansion": None if self.expansion is None else self.expansion.to_dict(),
                "rerank": None if self.rerank is None else self.rerank.to_dict(),
                "notes": list(self.notes), "timings": self.timings}


@dataclass(frozen=True, slots=True)
class AskResult:
    """A grounded answer, or the ranked passages when there is no (working) LLM.

    ``mode``: ``"llm"`` (``answer`` is the model's text, ``citations`` the passages it cited
    with valid ``[n]`` markers, in order of first mention) or ``"passages"`` (no LLM, or it
    failed — ``notes`` says why; ``answer`` is None and ``citations`` are all the passages).
    ``unknown``: the model said it does not know from the context. ``dropped_citations``:
    ``[n]`` markers naming passages that were not given (removed from ``answer``;
    ``raw_answer`` keeps the reply as it came).
    """

    question: str
    mode: str
    answer: str | None
    citations: tuple[Passage, ...]
    passages: tuple[Passage, ...]
    unknown: bool = False
    dropped_citations: tuple[int, ...] = ()
    raw_answer: str | None = None
    expansion: Expansion | None = None
    rerank: RerankInfo | None = None
    notes: tuple[str, ...] = ()
    timings: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"question": self.question, "mode": self.mode, "answer": self.answer,
                "unknown": self.unknown, "citations": [p.to_dict() for p in self.citations],
                "passages": [p.to_dict() for p in self.passages],
                "dropped_citations": list(self.dropped_citations),
                "raw_answer": self.raw_answer,
                "expansion": None if self.expansion is None else self.expansion.to_dict(),
                "rerank": None if self.rerank is None else self.rerank.to_dict(),
                "notes": list(self.notes), "timings": self.timings}

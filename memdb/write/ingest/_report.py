"""What an ingest did: one :class:`FileResult` per source and the :class:`IngestReport`."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["FileResult", "IngestReport", "Document", "Citation", "DocumentHit"]


@dataclass(frozen=True, slots=True)
class FileResult:
    """The outcome for one source.

    ``status``: created | updated | unchanged | removed | error (with ``dry_run``: the
    status it would have). ``chunks`` is the document's chunk count; ``created`` how many new
    memories were written, ``reused`` how many chunks point at memories that already held the
    same text (unchanged chunks of an updated file, or identical text elsewhere in the scope),
    ``removed`` how many memories the document let go.
    """

    uri: str
    status: str
    format: str | None = None
    title: str | None = None
    chunks: int = 0
    created: int = 0
    reused: int = 0
    removed: int = 0
    embedded: int = 0
    version: int | None = None
    size: int | None = None
    encoding: str | None = None
    document_id: str | None = None
    error_kind: str | None = None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


@dataclass(slots=True)
class IngestReport:
    """Every source's result, the documents pruned, and where the time went (seconds)."""

    files: list[FileResult] = field(default_factory=list)
    pruned: list[FileResult] = field(default_factory=list)
    dry_run: bool = False
    read_seconds: float = 0.0
    chunk_seconds: float = 0.0
    embed_seconds: float = 0.0
    db_seconds: float = 0.0
    total_seconds: float = 0.0

    @property
    def counts(self) -> dict[str, int]:
        """How many sources ended in each status (plus 'pruned')."""
        counts = Counter(f.status for f in self.files)
        if self.pruned:
            counts["pruned"] = len(self.pruned)
        return dict(counts)

    @property
    def errors(self) -> list[FileResult]:
        return [f for f in self.files if f.status == "error"]

    @property
    def chunks(self) -> int:
        """Chunks of the documents written (created or updated) by this run."""
        return sum(f.chunks for f in self.files if f.status in ("created", "updated"))

    @property
    def ok(self) -> bool:
        return not self.errors

    def to_dict(self) -> dict[str, Any]:
        return {
            "counts": self.counts, "chunks": self.chunks, "dry_run": self.dry_run,
            "embedded": sum(f.embedded for f in self.files),
            "seconds": {"read": round(self.read_seconds, 3), "chunk": round(self.chunk_seconds, 3),
                        "embed": round(self.embed_seconds, 3), "db": round(self.db_seconds, 3),
                        "total": round(self.total_seconds, 3)},
            "files": [f.to_dict() for f in self.files],
            "pruned": [f.to_dict() for f in self.pruned],
        }


@dataclass(frozen=True, slots=True)
class Document:
    """One ingested document (a row of memdb.documents, without its text)."""

    id: str
    uri: str
    title: str | None
    format: str
    content_hash: str
    size: int
    version: int
    chunk_count: int
    subject: str
    scope: str
    project_id: str | None
    session_id: str | None
    metadata: dict[str, Any]
    created_at: Any
    ingested_at: Any

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["created_at"] = self.created_at.isoformat()
        out["ingested_at"] = self.ingested_at.isoformat()
        return out


@dataclass(frozen=True, slots=True)
class Citation:
    """Where a chunk's text is in a document: offsets into the document's extracted text."""

    document_id: str
    uri: str
    title: str | None
    position: int
    heading_path: tuple[str, ...]
    char_start: int
    char_end: int
    parent_start: int
    parent_end: int

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["heading_path"] = list(self.heading_path)
        return out


@dataclass(frozen=True, slots=True)
class DocumentHit:
    """A search hit on a document chunk: the hit, where it comes from (every document that
    holds the same text; the first is its owner), and with ``parents=True`` the parent
    section's text."""

    hit: Any  # memdb.core.models.SearchHit
    citations: tuple[Citation, ...]
    parent_text: str | None = None

    @property
    def citation(self) -> Citation | None:
        return self.citations[0] if self.citations else None

    def to_dict(self) -> dict[str, Any]:
        return {**self.hit.to_dict(), "citations": [c.to_dict() for c in self.citations],
                "parent_text": self.parent_text}

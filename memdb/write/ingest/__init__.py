"""Knowledge ingestion: files, folders and raw texts become documents whose chunks are
memories (kind semantic, source_type document), searchable like any other memory and cited
back to their document, heading path and character offsets.

It is reached as ``store.documents`` (:class:`memdb.families.documents.Documents`: ``ingest``,
``list``, ``remove``, ``search``, ``citations``); this package is the pipeline: sources,
readers, the chunker and the batched writes. The database side is
``memdb.known_chunks_batch`` and ``memdb.ingest_documents`` (one call per batch of
documents), ``memdb.remove_documents`` and ``memdb.prune_documents``
(``sql/functions/17*.sql``).
"""

from __future__ import annotations

from ...core.tokens import TokenCounter, default_counter, estimate_tokens
from ._chunker import Chunk, ChunkOptions, chunk_text
from ._pipeline import MAX_FILE_BYTES, IngestSettings, run_ingest
from ._readers import FileProblem
from ._report import Citation, Document, DocumentHit, FileResult, IngestReport
from ._sniff import describe, detect
from ._sources import FileBytes, TextSource

__all__ = ["TextSource", "FileBytes", "document_format", "describe", "DOCUMENT_FORMATS",
           "IngestReport", "FileResult", "Document", "Citation",
           "DocumentHit", "Chunk", "ChunkOptions", "chunk_text", "default_counter",
           "estimate_tokens", "MAX_FILE_BYTES", "IngestSettings", "run_ingest", "TokenCounter"]

DOCUMENT_FORMATS = ("Markdown", "text", "HTML", "PDF", "Word (.docx)", "PowerPoint (.pptx)",
                    "Excel (.xlsx)", "CSV", "EPUB", "JSON", "XML")
"""The document formats ingestion reads, for messages."""


def document_format(data: bytes, name: str) -> str | None:
    """The document format ingestion reads ``data`` (a file called ``name``) as: a binary
    format by its content (``pdf``, ``docx``, ``pptx``, ``xlsx``, ``epub``), else the text
    format its suffix names (``text`` for an unknown suffix); None when it is no document
    memdb reads (binary data, an archive, a legacy Office file, a suffix that lies)."""
    try:
        fmt = detect(data, name)
    except FileProblem:
        return None
    if fmt not in ("pdf", "docx", "pptx", "xlsx", "epub") and describe(data) != "text":
        return None  # an image, executable or other binary data is no text document
    return fmt

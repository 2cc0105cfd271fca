"""Knowledge ingestion: files, folders and raw texts become documents whose chunks are
memories (kind semantic, source_type document), searchable like any other memory and cited
back to their document, heading path and character offsets.

It is reached as ``store.documents`` (:class:`memdb.documents.Documents`: ``ingest``,
``list``, ``remove``, ``search``, ``citations``); this package is the pipeline: sources,
readers, the chunker and the batched writes. The database side is
``memdb.known_chunks_batch`` and ``memdb.ingest_documents`` (one call per batch of
documents), ``memdb.remove_documents`` and ``memdb.prune_documents``
(``sql/functions/17*.sql``).
"""

from __future__ import annotations

from ..tokens import TokenCounter, default_counter, estimate_tokens
from ._chunker import Chunk, ChunkOptions, chunk_text
from ._pipeline import MAX_FILE_BYTES, IngestSettings, run_ingest
from ._report import Citation, Document, DocumentHit, FileResult, IngestReport
from ._sources import TextSource

__all__ = ["TextSource", "IngestReport", "FileResult", "Document", "Citation",
           "DocumentHit", "Chunk", "ChunkOptions", "chunk_text", "default_counter",
           "estimate_tokens", "MAX_FILE_BYTES", "IngestSettings", "run_ingest", "TokenCounter"]

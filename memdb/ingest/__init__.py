"""Knowledge ingestion: files, folders and raw texts become documents whose chunks are
memories (kind semantic, source_type document), searchable like any other memory and cited
back to their document, heading path and character offsets.

>>> report = store.ingest(["docs/"], chunk_tokens=256, overlap=32)
>>> report.counts
{'created': 12, 'error': 1}
>>> for h in store.search_documents("how do I rotate keys?", k=3, parents=True):
...     print(h.citation.uri, h.citation.char_start, h.parent_text[:80])

:class:`Ingest` is a mixin of :class:`memdb.MemoryStore`; the database side is
``memdb.known_chunks_batch`` and ``memdb.ingest_documents`` (one call per batch of
documents), ``memdb.remove_documents`` and ``memdb.prune_documents``
(``sql/functions/17*.sql``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .. import _sql
from .. import _validate as v
from ..errors import Forbidden, InvalidInput
from ..models import Category
from ._chunker import Chunk, ChunkOptions, chunk_text
from ._pipeline import MAX_FILE_BYTES, IngestSettings, run_ingest
from ._report import Citation, Document, DocumentHit, FileResult, IngestReport
from ._sources import TextSource
from ._tokens import TokenCounter, default_counter, estimate_tokens

__all__ = ["Ingest", "TextSource", "IngestReport", "FileResult", "Document", "Citation",
           "DocumentHit", "Chunk", "ChunkOptions", "chunk_text", "default_counter",
           "estimate_tokens", "MAX_FILE_BYTES"]


def _category(value: str | Mapping[str, str]) -> str | dict[str, str]:
    if isinstance(value, str):
        return v.choice(value, Category, "category").value
    if isinstance(value, Mapping):
        return {str(k): v.choice(c, Category, "category").value for k, c in value.items()}
    raise InvalidInput("category must be a category name or a mapping of glob to category")


def _citation(row: dict[str, Any]) -> Citation:
    return Citation(document_id=str(row["document_id"]), uri=row["uri"], title=row["title"],
                    position=row["position"], heading_path=tuple(row["heading_path"] or ()),
                    char_start=row["char_start"], char_end=row["char_end"],
                    parent_start=row["parent_start"], parent_end=row["parent_end"])


class Ingest:
    """Ingestion methods of :class:`memdb.MemoryStore` (uses its ``_transaction``,
    ``_begin``, ``tenant``, ``subject``, ``embedder`` and ``space_id``)."""

    def ingest(self, sources: Iterable[Any] | str | TextSource, *,
               subject: str | None = None, scope: str = "user", project_id: str | None = None,
               session_id: str | None = None, category: str | Mapping[str, str] = "general",
               tags: Sequence[str] | None = None, importance: float = 0.5,
               chunk_tokens: int = 256, overlap: int = 32, parent_tokens: int = 1024,
               include: Sequence[str] = (), exclude: Sequence[str] = (),
               root: str | None = None, prune: bool = False, dry_run: bool = False,
               force: bool = False, max_bytes: int = MAX_FILE_BYTES, embed_batch: int = 256,
               counter: TokenCounter | None = None,
               progress: Callable[[FileResult], None] | None = None) -> IngestReport:
        """Ingest files, folders (recursively) and raw texts as documents.

        ``sources``: paths (str or PathLike; folders are walked, ``include``/``exclude``
        globs match the path relative to the folder or the file name; hidden entries are
        skipped) and :class:`TextSource` items (or dicts with ``id`` and ``text``).
        Formats: Markdown, plain text, HTML and PDF (the last two need the ``docs`` extra).
        Chunks: at most ``chunk_tokens`` tokens of the bundled model's tokenizer, with
        ``overlap`` tokens repeated between neighbours, cut at headings, blocks, paragraphs
        and sentences first; parents are sections of at most ``parent_tokens``.
        Each chunk becomes a memory in the given scope (``subject`` defaults to the store's),
        ``category`` (a name, or a mapping of glob → name; default ``general``), ``tags``.

        Unchanged documents (same bytes, same options) are skipped without writing; changed
        ones have their chunks replaced in one transaction; ``prune`` removes documents under
        the folders given that no longer exist there. ``root`` confines every file to that
        folder. Problems with one source (unreadable, binary, empty, over ``max_bytes``,
        undecodable, symlink loop, outside ``root``, embedding failure) are reported in its
        :class:`FileResult`; the rest of the run goes on. ``dry_run`` reads and chunks
        but writes and embeds nothing. ``progress`` is called with each source's result; if
        it also has a ``start(files)`` method, that is called first with the number of
        sources found (a progress bar's total).
        """
        from ..store import MemoryInput  # validation shared with add(); no import cycle

        if isinstance(sources, (str, TextSource)) or hasattr(sources, "__fspath__"):
            sources = [sources]
        confined = self.subject  # type: ignore[attr-defined]
        who = subject if subject is not None else (confined or "default")
        if confined is not None and who != confined:
            raise Forbidden(f"this store is confined to subject {confined!r}")
        MemoryInput(content="x", subject=who, scope=scope, project_id=project_id,
                    session_id=session_id, importance=importance, tags=tags).to_item()
        v.positive_int(max_bytes, "max_bytes", 2**40)
        v.positive_int(embed_batch, "embed_batch", 100_000)
        settings = IngestSettings(
            subject=v.name(who, "subject"), scope=scope, project_id=project_id,
            session_id=session_id, category=_category(category), tags=v.tags(tags),
            importance=float(importance),
            options=ChunkOptions(chunk_tokens=chunk_tokens, overlap=overlap,
                                 parent_tokens=parent_tokens),
            max_bytes=max_bytes, embed_batch=embed_batch)
        return run_ingest(self, list(sources), settings, include=tuple(include),  # type: ignore[arg-type]
                          exclude=tuple(exclude), root=root, prune=prune, dry_run=dry_run,
                          force=force, counter=counter, progress=progress)

    def documents(self, *, subject: str | None = None, prefix: str | None = None,
                  limit: int = 1000, offset: int = 0) -> list[Document]:
        """This tenant's documents (optionally one subject's, or URIs starting with
        ``prefix``), by URI."""
        v.positive_int(limit, "limit", 100_000)
        v.offset(offset)
        with self._transaction() as conn:  # type: ignore[attr-defined]
            rows = conn.execute(_sql.query("list_documents"), {
                "tenant": self.tenant, "subject": v.optional_name(subject, "subject"),  # type: ignore[attr-defined]
                "prefix": prefix, "limit": limit, "offset": offset}).fetchall()
        return [Document(**{**r, "id": str(r["id"])}) for r in rows]

    def remove_document(self, uris: str | Iterable[str], *, reason: str | None = None) -> int:
        """Remove documents by URI with their chunk memories (text another document shares
        stays, owned by it); returns how many documents were removed."""
        wanted = [uris] if isinstance(uris, str) else list(uris)
        if not wanted or not all(isinstance(u, str) and u for u in wanted):
            raise InvalidInput("give one or more document URIs")
        with self._transaction() as conn:  # type: ignore[attr-defined]
            self._begin(conn, reason or "document removed")  # type: ignore[attr-defined]
            rows = conn.execute(_sql.query("remove_documents"),
                                {"tenant": self.tenant, "uris": wanted}).fetchall()  # type: ignore[attr-defined]
        return len(rows)

    def citations(self, memory_ids: Iterable[Any], *, parents: bool = False
                  ) -> dict[str, list[tuple[Citation, str | None]]]:
        """For each memory id that holds document text: where it is cited from (every
        document holding the text, the owner first) and, with ``parents``, the parent text."""
        ids = [str(i) for i in memory_ids]
        if not ids:
            return {}
        with self._transaction() as conn:  # type: ignore[attr-defined]
            rows = conn.execute(_sql.query("citations"),
                                {"ids": ids, "parents": parents}).fetchall()
        out: dict[str, list[tuple[Citation, str | None]]] = {}
        for row in rows:
            out.setdefault(str(row["memory_id"]), []).append((_citation(row), row["parent_text"]))
        return out

    def search_documents(self, query: str, k: int = 10, *, parents: bool = False,
                         **search: Any) -> list[DocumentHit]:
        """Search the document chunks (``source_type='document'``) like :meth:`search`, each
        hit with its citations. With ``parents``, small chunks are searched and their parent
        sections returned: one hit per parent (the best chunk's), with the parent's text."""
        search.setdefault("source_type", "document")
        hits = self.search(query, k=k * 3 if parents else k, **search)  # type: ignore[attr-defined]
        cites = self.citations([h.memory.id for h in hits], parents=parents)
        out: list[DocumentHit] = []
        seen: set[tuple[str, int, int]] = set()
        for hit in hits:
            found = cites.get(str(hit.memory.id), [])
            citations = tuple(c for c, _ in found)
            parent = found[0][1] if found else None
            if parents and citations:
                key = (citations[0].document_id, citations[0].parent_start,
                       citations[0].parent_end)
                if key in seen:
                    continue
                seen.add(key)
            out.append(DocumentHit(hit, citations, parent))
            if len(out) == k:
                break
        return out

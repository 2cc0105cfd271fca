"""The ingest run: discover → read and hash → skip unchanged → extract → chunk → ask the
database which chunks it already holds (one ``memdb.known_chunks_batch`` call per group of
documents) → embed the chunks whose text is new (batched across documents, each distinct text
once, retried with backoff) → write the batch with one call of ``memdb.ingest_documents`` →
prune.

Documents are written in batches, one transaction and one set-based SQL call per embedding
batch, so a search sees each document's old chunks or its new ones, never a mix. If the batch
call fails, the batch is rolled back to its savepoint and its documents are written one by one,
each in its own savepoint, so a failing document is reported and rolled back alone.
"""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import os
import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import psycopg
from psycopg.types.json import Jsonb

from ...core import bridge, sql
from ...core.embeddings import embed_checked
from ...core.errors import (
    EmbeddingError,
    Forbidden,
    InvalidInput,
    MissingDependency,
    TooLarge,
    translate,
)
from ...core.family import StoreCore
from ...core.tokens import TokenCounter
from ._chunker import Chunk, ChunkOptions, chunk_text
from ._formats import extract
from ._readers import CONVERTED, FileProblem, read_regular
from ._report import FileResult, IngestReport
from ._sniff import detect
from ._sources import Source, discover

__all__ = ["IngestSettings", "run_ingest"]

MAX_FILE_BYTES = 32 * 1024 * 1024
_RETRY_STATES = ("40001", "40P01")
_WRITE_CHUNKS = 4096  # most chunks in one write, when few of them need embedding
_BYTES_PER_TOKEN = 16  # more than any token of real text: max_chunks' ceiling on bytes


@dataclass(frozen=True)
class IngestSettings:
    """Where chunks go (scope fields, category, tags, importance) and how they are cut."""

    subject: str
    scope: str
    project_id: str | None
    session_id: str | None
    category: str | Mapping[str, str]
    tags: list[str]
    importance: float
    options: ChunkOptions
    max_bytes: int = MAX_FILE_BYTES
    embed_batch: int = 256
    max_chunks: int | None = None  # most chunks one call may write (None: no limit)
    embed_attempts: int = 3
    backoff: float = 0.5

    def category_for(self, source: Source) -> str:
        if isinstance(self.category, str):
            return self.category
        name = source.relative or source.uri
        for pattern, category in self.category.items():
            if fnmatch.fnmatch(name, pattern) or fnmatch.fnmatch(source.uri, pattern):
                return category
        return "general"


@dataclass
class _Prepared:
    source: Source
    document: dict[str, Any]
    chunks: list[Chunk]
    items: list[dict[str, Any]]
    updating: bool
    encoding: str | None
    vectors: list[np.ndarray | None] = field(default_factory=list)
    to_embed: list[int] = field(default_factory=list)  # chunk indexes needing a vector
    embedded: int = 0  # texts this document added to an embedding call
    source_format: str | None = None  # the file's format, when converted to Markdown


def _context(title: str | None, path: Sequence[str]) -> str | None:
    parts = list(path)
    if title and (not parts or parts[0] != title):
        parts.insert(0, title)
    return " › ".join(parts) or None


def _caller_metadata(stored: dict[str, Any]) -> dict[str, Any]:
    """A text source's stored metadata as its caller gave it (without the source format a
    converted CSV, JSON or XML text is stored with)."""
    return {k: v for k, v in stored.items() if k != "source_format"}


class _Run:
    def __init__(self, core: StoreCore, settings: IngestSettings, *, dry_run: bool,
                 force: bool, counter: TokenCounter | None,
                 progress: Callable[[FileResult], None] | None) -> None:
        self.core, self.s = core, settings
        self.dry_run, self.force = dry_run, force
        self.counter, self.progress = counter, progress
        self.report = IngestReport(dry_run=dry_run)
        self.state: dict[str, dict[str, Any]] = {}
        self._space_id: int | None = None

    # -- helpers ---------------------------------------------------------------------------
    def _done(self, result: FileResult) -> None:
        self.report.files.append(result)
        if self.progress is not None:
            self.progress(result)

    def _error(self, source: Source, kind: str, message: str, **extra: Any) -> None:
        self._done(FileResult(source.uri, "error", error_kind=kind, error=message, **extra))

    def space_id(self) -> int:
        if self._space_id is None:
            self._space_id = self.core.space_id()
        return self._space_id

    def load_state(self, uris: list[str]) -> None:
        started = time.perf_counter()
        with self.core.transaction() as conn:
            for i in range(0, len(uris), 1000):
                rows = conn.execute(sql.query("document_state"), {
                    "tenant": self.core.tenant, "uris": uris[i:i + 1000]}).fetchall()
                self.state.update({r["uri"]: r for r in rows})
        self.report.db_seconds += time.perf_counter() - started

    # -- one source ------------------------------------------------------------------------
    def _read(self, source: Source) -> tuple[bytes | str, int]:
        if source.text is not None:
            return source.text.text, len(source.text.text.encode("utf-8"))
        if source.upload is not None:
            data = source.upload.data
            if len(data) > self.s.max_bytes:
                raise FileProblem("too_large", f"{len(data)} bytes is over the limit of "
                                               f"{self.s.max_bytes} bytes (max_bytes)")
            return data, len(data)
        assert source.path is not None
        try:
            size = os.stat(source.path).st_size
        except OSError as exc:
            raise FileProblem("unreadable", f"cannot stat {source.path}: {exc.strerror}") from None
        if size > self.s.max_bytes:
            raise FileProblem("too_large", f"{size} bytes is over the limit of "
                                           f"{self.s.max_bytes} bytes (max_bytes)")
        data = read_regular(source.path, self.s.max_bytes)  # a FIFO is reported, never waited on
        if len(data) > self.s.max_bytes:
            raise FileProblem("too_large", f"over the limit of {self.s.max_bytes} bytes")
        return data, len(data)

    def prepare(self, source: Source) -> _Prepared | None:
        """Read, hash and chunk one source; None when it is finished (unchanged or error)."""
        if source.problem is not None:
            self._error(source, source.problem.kind, str(source.problem))
            return None
        started = time.perf_counter()
        try:
            raw, size = self._read(source)
        except FileProblem as exc:
            self._error(source, exc.kind, str(exc))
            return None
        finally:
            self.report.read_seconds += time.perf_counter() - started
        digest = hashlib.sha256(raw.encode("utf-8") if isinstance(raw, str) else raw).hexdigest()
        category = self.s.category_for(source)
        settings = {**self.s.options.to_json(), "category": category, "tags": self.s.tags,
                    "importance": self.s.importance}
        metadata = dict(source.text.metadata or {}) if source.text else {}
        old = self.state.get(source.uri)
        scope = {"subject": self.s.subject, "scope": self.s.scope,
                 "project_id": self.s.project_id, "session_id": self.s.session_id}
        if (old is not None and not self.force and old["content_hash"] == digest
                and old["chunking"] == settings
                and all(old[k] == v for k, v in scope.items())
                and (source.text is None or (_caller_metadata(old["metadata"]) == metadata
                                             and old["title"] == source.text.title))):
            self._done(FileResult(source.uri, "unchanged", title=old["title"],
                                  chunks=old["chunk_count"], version=old["version"], size=size))
            return None
        started = time.perf_counter()
        try:
            if source.text is not None:
                fmt = source.text.format
                text = raw.replace("\r\n", "\n").replace("\r", "\n")  # type: ignore[union-attr]
                if not text.strip():
                    raise FileProblem("empty", "no text")
                title = source.text.title
                encoding, doc_meta = None, metadata
                if fmt in CONVERTED:  # CSV, JSON or XML text: converted as its file would be
                    extracted = extract(text.encode("utf-8"), fmt, source.uri)
                    text = extracted.text  # the title stays the caller's
                    doc_meta = {**metadata, "source_format": fmt}
            else:  # the content decides the format; a suffix that lies is refused
                name = (source.upload.name if source.upload is not None
                        else source.path.name)  # type: ignore[union-attr]
                fmt = detect(raw, name)  # type: ignore[arg-type]
                extracted = extract(raw, fmt, name)  # type: ignore[arg-type]
                text, title, encoding = extracted.text, extracted.title, extracted.encoding
                doc_meta = {**extracted.metadata, **({"encoding": encoding} if encoding else {})}
            source_format = fmt
            if fmt in CONVERTED:  # stored as the Markdown it was converted to
                fmt = "markdown"
            chunks = chunk_text(text, markdown=fmt in ("markdown", "html"),
                                options=self.s.options, counter=self.counter)
        except FileProblem as exc:
            self._error(source, exc.kind, str(exc), size=size)
            return None
        except MissingDependency as exc:
            self._error(source, "missing_dependency", str(exc), size=size)
            return None
        finally:
            self.report.chunk_seconds += time.perf_counter() - started
        if not chunks:
            self._error(source, "empty", "no text to chunk", size=size)
            return None
        document = {**scope, "uri": source.uri, "title": title, "format": fmt,
                    "content_hash": digest, "size": size, "content": text,
                    "chunking": settings, "metadata": doc_meta, "category": category,
                    "tags": self.s.tags, "importance": self.s.importance}
        items = [{"content": c.text, "search_context": _context(title, c.heading_path),
                  "heading_path": list(c.heading_path), "char_start": c.start,
                  "char_end": c.end, "parent_start": c.parent_start,
                  "parent_end": c.parent_end, "tokens": c.tokens} for c in chunks]
        return _Prepared(source, document, chunks, items, old is not None, encoding,
                         source_format=source_format)

    def plan_embeddings(self, group: list[_Prepared]) -> None:
        """Which chunks need a vector: not those whose text the scope already holds (one
        query for the whole group), nor repeats of a text earlier in the same document."""
        if not group:
            return
        started = time.perf_counter()
        with self.core.transaction() as conn:
            rows = conn.execute(sql.query("known_chunks_batch"), {
                "tenant": self.core.tenant,
                "documents": Jsonb([{
                    **{k: p.document[k] for k in
                       ("uri", "subject", "scope", "project_id", "session_id")},
                    "texts": [i["content"] for i in p.items],
                    "contexts": [i["search_context"] for i in p.items]} for p in group]),
                "space_id": self.space_id()}).fetchall()
        self.report.db_seconds += time.perf_counter() - started
        known: set[tuple[int, int]] = {(r["doc"] - 1, r["chunk"] - 1) for r in rows}
        for d, prepared in enumerate(group):
            seen: set[tuple[str, str | None]] = set()
            for n, item in enumerate(prepared.items):
                key = (item["content"], item["search_context"])
                if (d, n) not in known and key not in seen:
                    prepared.to_embed.append(n)
                seen.add(key)
            prepared.vectors = [None] * len(prepared.items)

    # -- embedding and writing -------------------------------------------------------------
    def _embed(self, texts: list[str]) -> np.ndarray:
        delay = self.s.backoff
        for attempt in range(self.s.embed_attempts):
            try:
                return embed_checked(self.core.embedder, texts)
            except Exception as exc:  # noqa: BLE001 - any provider failure is retried
                if attempt + 1 == self.s.embed_attempts:
                    if isinstance(exc, EmbeddingError):
                        raise
                    raise EmbeddingError(f"{type(exc).__name__}: {exc}") from exc
                bridge.sleep(delay * (1 + random.random() * 0.1))
                delay *= 2
        raise AssertionError("unreachable")

    @staticmethod
    def _embedding_text(item: dict[str, Any]) -> str:
        context = item["search_context"]
        return f"{context}\n{item['content']}" if context else item["content"]

    def _fill(self, prepared: _Prepared, vectors: Sequence[np.ndarray]) -> None:
        by_text: dict[tuple[str, str | None], np.ndarray] = {}
        for n, vec in zip(prepared.to_embed, vectors, strict=True):
            prepared.vectors[n] = vec
            item = prepared.items[n]
            by_text[(item["content"], item["search_context"])] = vec
        for n, item in enumerate(prepared.items):  # exact repeats share the first one's vector
            if prepared.vectors[n] is None:
                prepared.vectors[n] = by_text.get((item["content"], item["search_context"]))

    def embed(self, batch: list[_Prepared]) -> list[_Prepared]:
        """Vectors for every batch member, each distinct text embedded once per batch;
        members whose embedding fails are reported."""
        texts: list[str] = []
        index: dict[str, int] = {}
        for p in batch:
            fresh = 0
            for n in p.to_embed:
                text = self._embedding_text(p.items[n])
                if text not in index:
                    index[text] = len(texts)
                    texts.append(text)
                    fresh += 1
            p.embedded = fresh  # what this document added to the embedding call
        started = time.perf_counter()
        try:
            matrix = self._embed(texts) if texts else np.empty((0, 0), dtype=np.float32)
            for p in batch:
                self._fill(p, [matrix[index[self._embedding_text(p.items[n])]]
                               for n in p.to_embed])
            return batch
        except EmbeddingError:
            ok = []
            for p in batch:  # find the documents that fail on their own; keep the rest
                try:
                    self._fill(p, embed_checked(self.core.embedder,
                        [self._embedding_text(p.items[n]) for n in p.to_embed]))
                    p.embedded = len(p.to_embed)
                    ok.append(p)
                except Exception as exc:  # noqa: BLE001
                    self._error(p.source, "embedding", f"embedding failed: {exc}",
                                size=p.document["size"])
            return ok
        finally:
            self.report.embed_seconds += time.perf_counter() - started

    def write(self, batch: list[_Prepared]) -> None:
        """One ``memdb.ingest_documents`` call for the batch in a savepoint; if it fails,
        each document on its own (a failing document is reported, the others written)."""
        if not batch:
            return
        started = time.perf_counter()
        space_id = self.space_id()
        results: list[FileResult] | None = None
        with self.core.transaction() as conn:
            self.core.begin(conn, "ingest")
            if len(batch) > 1:
                try:
                    with conn.transaction():  # a savepoint: the singles below start clean
                        rows = self._call(conn, batch, space_id)
                    results = [self._result(p, row) for p, row in zip(batch, rows, strict=True)]
                except psycopg.Error:
                    results = None
            if results is None:
                results = [self._write_one(conn, p, space_id) for p in batch]
        self.report.db_seconds += time.perf_counter() - started
        for result in results:
            self._done(result)

    def _call(self, conn: psycopg.Connection, batch: list[_Prepared],
              space_id: int) -> list[dict[str, Any]]:
        rows = conn.execute(sql.query("ingest_documents"), {
            "tenant": self.core.tenant, "documents": Jsonb([p.document for p in batch]),
            "chunks": Jsonb([p.items for p in batch]),
            "embeddings": [v for p in batch for v in p.vectors],
            "space_id": space_id}).fetchall()
        if len(rows) != len(batch):
            raise AssertionError("memdb.ingest_documents returned one row per document")
        return rows

    @staticmethod
    def _result(p: _Prepared, row: dict[str, Any]) -> FileResult:
        return FileResult(
            p.source.uri, "updated" if p.updating else "created",
            format=p.source_format, title=p.document["title"], chunks=row["chunks"],
            created=row["created"], reused=row["reused"], removed=row["removed"],
            embedded=p.embedded, version=row["version"], size=p.document["size"],
            encoding=p.encoding, document_id=str(row["document_id"]))

    def _write_one(self, conn: psycopg.Connection, p: _Prepared, space_id: int) -> FileResult:
        for attempt in range(4):
            try:
                with conn.transaction():  # a savepoint: this document alone rolls back
                    row = self._call(conn, [p], space_id)[0]
                return self._result(p, row)
            except psycopg.Error as exc:
                state = getattr(exc, "sqlstate", None)
                if state in _RETRY_STATES and attempt < 3:
                    missing = [n for n, v in enumerate(p.vectors) if v is None]
                    if missing:  # what we believed stored changed meanwhile: embed it all
                        p.to_embed = missing
                        try:
                            self._fill(p, self._embed([self._embedding_text(p.items[n])
                                                       for n in missing]))
                            p.embedded += len(missing)
                        except EmbeddingError as emb:
                            return FileResult(p.source.uri, "error", error_kind="embedding",
                                              error=str(emb), size=p.document["size"])
                    bridge.sleep(random.uniform(0.005, 0.05) * (attempt + 1))
                    continue
                error = translate(exc)
                kind = "forbidden" if isinstance(error, Forbidden) else "database"
                return FileResult(p.source.uri, "error", error_kind=kind, error=str(error),
                                  size=p.document["size"])
        raise AssertionError("unreachable")

    # -- the whole run ---------------------------------------------------------------------
    def run(self, items: Iterable[Any], *, include: Sequence[str], exclude: Sequence[str],
            root: Any, follow_outside_links: bool, prune: bool) -> IngestReport:
        started = time.perf_counter()
        sources, prefixes = discover(items, include=include, exclude=exclude, root=root,
                                     follow_outside_links=follow_outside_links)
        if prune and not prefixes:
            raise InvalidInput("prune needs at least one folder to compare against")
        start = getattr(self.progress, "start", None)
        if callable(start):
            start(len(sources))
        if self.s.max_chunks is not None:
            self.refuse_over_bytes(sources)
        self.load_state([s.uri for s in sources])
        prepared_all: Iterable[_Prepared | None] = map(self.prepare, sources)
        if self.s.max_chunks is not None and not self.dry_run:
            prepared_all = list(prepared_all)  # every document chunked before any is embedded
            self.refuse_over_limit([p for p in prepared_all if p is not None])
        group: list[_Prepared] = []  # chunked, not yet checked against the database
        batch: list[_Prepared] = []  # checked, waiting to be embedded and written
        grouped = pending = written = 0
        for prepared in prepared_all:
            if prepared is None:
                continue
            source = prepared.source
            if self.dry_run:
                self._done(FileResult(
                    source.uri, "updated" if prepared.updating else "created",
                    format=prepared.source_format, title=prepared.document["title"],
                    chunks=len(prepared.chunks), size=prepared.document["size"],
                    encoding=prepared.encoding))
                continue
            group.append(prepared)
            grouped += len(prepared.items)
            if grouped < self.s.embed_batch:
                continue
            self.plan_embeddings(group)
            batch += group
            pending += sum(len(p.to_embed) for p in group)
            written += grouped
            group, grouped = [], 0
            # a full embedding batch, or many chunks the database already holds
            if pending >= self.s.embed_batch or written >= _WRITE_CHUNKS:
                self.write(self.embed(batch))
                batch, pending, written = [], 0, 0
        self.plan_embeddings(group)
        batch += group
        if batch:
            self.write(self.embed(batch))
        if prune:
            self.prune(prefixes, [s.uri for s in sources])
        self.report.total_seconds = time.perf_counter() - started
        return self.report

    def refuse_over_bytes(self, sources: list[Source]) -> None:
        """``max_chunks``, checked before any chunking: texts larger than ``max_chunks``
        chunks of ``chunk_tokens`` tokens could hold (at 16 bytes a token) are refused."""
        assert self.s.max_chunks is not None
        ceiling = self.s.max_chunks * self.s.options.chunk_tokens * _BYTES_PER_TOKEN
        total = 0
        for source in sources:
            if source.text is not None:
                total += len(source.text.text.encode("utf-8", "surrogatepass"))
            elif source.upload is not None:
                total += len(source.upload.data)
            elif source.path is not None and source.problem is None:
                with contextlib.suppress(OSError):
                    total += os.stat(source.path).st_size
        if total > ceiling:
            raise TooLarge(f"these documents hold {total} bytes, more than {self.s.max_chunks} "
                           f"chunks of {self.s.options.chunk_tokens} tokens can (the limit of "
                           f"{self.s.max_chunks} chunks per ingest call, max_chunks); nothing "
                           "was embedded or stored")

    def refuse_over_limit(self, prepared: list[_Prepared]) -> None:
        """``max_chunks``: refuse the whole call, before anything is embedded or written,
        when the documents to write make more chunks than that."""
        total = sum(len(p.items) for p in prepared)
        if self.s.max_chunks is not None and total > self.s.max_chunks:
            raise TooLarge(f"these documents make {total} chunks, over the limit of "
                           f"{self.s.max_chunks} chunks per ingest call (max_chunks); nothing "
                           "was embedded or stored")

    def prune(self, prefixes: list[str], keep: list[str]) -> None:
        started = time.perf_counter()
        with self.core.transaction() as conn:
            self.core.begin(conn, "ingest --prune")
            rows = conn.execute(sql.query("prune_documents"), {
                "tenant": self.core.tenant, "prefixes": prefixes, "keep": keep,
                "dry_run": self.dry_run}).fetchall()
        self.report.db_seconds += time.perf_counter() - started
        self.report.pruned = [FileResult(r["uri"], "removed", chunks=r["chunks"],
                                         document_id=str(r["document_id"])) for r in rows]


def run_ingest(core: StoreCore, items: Iterable[Any], settings: IngestSettings, *,
               include: Sequence[str] = (), exclude: Sequence[str] = (), root: Any = None,
               follow_outside_links: bool = False, prune: bool = False,
               dry_run: bool = False, force: bool = False,
               counter: TokenCounter | None = None,
               progress: Callable[[FileResult], None] | None = None) -> IngestReport:
    """Run one ingest (see :meth:`memdb.families.documents.Documents.ingest`)."""
    run = _Run(core, settings, dry_run=dry_run, force=force, counter=counter,
               progress=progress)
    return run.run(items, include=include, exclude=exclude, root=root,
                   follow_outside_links=follow_outside_links, prune=prune)

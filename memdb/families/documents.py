"""``store.documents``: knowledge ingestion and answering from it.

Files, folders and raw texts become documents whose chunks are memories (kind semantic,
source_type document), searchable like any other memory and cited back to their document,
heading path and character offsets (:mod:`memdb.write.ingest`); :meth:`Documents.ask` answers a
question from the best passages with numbered citations through an OpenAI-compatible chat
model, or returns the ranked, cited passages when there is no model (:mod:`memdb.retrieval.ask`).

>>> report = store.documents.ingest(["docs/"], chunk_tokens=256, overlap=32)  # doctest: +SKIP
>>> report.counts                                                            # doctest: +SKIP
{'created': 12, 'error': 1}
>>> for h in store.documents.search("how do I rotate keys?", k=3, parents=True):  # +SKIP
...     print(h.citation.uri, h.citation.char_start, h.parent_text[:80])
>>> r = store.documents.ask("多久轮换一次密钥？", k=5)                           # doctest: +SKIP
>>> r.mode, r.answer        # ('llm', '每90天轮换一次 [1]。') with MEMDB_LLM_MODEL set

The database side is ``memdb.known_chunks_batch`` and ``memdb.ingest_documents`` (one call
per batch of documents), ``memdb.remove_documents``, ``memdb.prune_documents``
(``sql/functions/17*.sql``) and ``memdb.search_fused`` (query expansion).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ..core import sql
from ..core import validate as v
from ..core.errors import Forbidden, InvalidInput
from ..core.family import Family
from ..core.filters import Filter
from ..core.llm import ChatLLM, LLMError
from ..core.models import Category, SearchHit
from ..retrieval.ask import (
    EXPANSIONS,
    FROM_ENV,
    MAX_K,
    MAX_QUESTION_CHARS,
    RERANKERS,
    AskResult,
    Expansion,
    Reranker,
    RerankInfo,
    Retrieval,
    build_messages,
    parse_citations,
    says_unknown,
    steps,
    strip_citations,
    without_markers,
)
from ..write.grounding import coverage, grounded
from ..write.ingest import (
    MAX_FILE_BYTES,
    ChunkOptions,
    Citation,
    Document,
    DocumentHit,
    FileBytes,
    FileResult,
    IngestReport,
    IngestSettings,
    TextSource,
    TokenCounter,
    run_ingest,
)
from ..write.inputs import MemoryInput

__all__ = ["Documents"]

log = logging.getLogger("memdb.ask")


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


class Documents(Family):
    """``store.documents`` (see the module docstring)."""

    # -- ingestion (memdb.write.ingest)
    # --------------------------------------------------------------
    def ingest(self, sources: Iterable[Any] | str | TextSource, *,
               subject: str | None = None, scope: str = "user", project_id: str | None = None,
               session_id: str | None = None, category: str | Mapping[str, str] = "general",
               tags: Sequence[str] | None = None, importance: float = 0.5,
               chunk_tokens: int = 256, overlap: int = 32, parent_tokens: int = 1024,
               include: Sequence[str] = (), exclude: Sequence[str] = (),
               root: str | None = None, follow_outside_links: bool = False,
               prune: bool = False, dry_run: bool = False,
               force: bool = False, max_bytes: int = MAX_FILE_BYTES, embed_batch: int = 256,
               max_chunks: int | None = None, counter: TokenCounter | None = None,
               progress: Callable[[FileResult], None] | None = None) -> IngestReport:
        """Ingest files, folders (recursively) and raw texts as documents.

        ``sources``: paths (str or PathLike; folders are walked, ``include``/``exclude``
        globs match the path relative to the folder or the file name; hidden entries are
        skipped), :class:`TextSource` items (or dicts with ``id`` and ``text``) and
        :class:`~memdb.write.ingest.FileBytes` items (an upload's bytes with a document id).
        Formats: Markdown, plain text, HTML and PDF (the last two need the ``docs`` extra).
        Chunks: at most ``chunk_tokens`` tokens of the bundled model's tokenizer, with
        ``overlap`` tokens repeated between neighbours, cut at headings, blocks, paragraphs
        and sentences first; parents are sections of at most ``parent_tokens``.
        Each chunk becomes a memory in the given scope (``subject`` defaults to the store's),
        ``category`` (a name, or a mapping of glob → name; default ``general``), ``tags``.

        Unchanged documents (same bytes, same options) are skipped without writing; changed
        ones have their chunks replaced in one transaction; ``prune`` removes documents under
        the folders given that no longer exist there. Symlinks: each folder given is the
        root of what is found in it (a file named directly: its own folder), and a symlink
        to a file or folder, at any depth or through a chain of links, that resolves outside
        it is skipped and reported (``outside_root``); ``follow_outside_links=True`` follows
        such links. ``root`` confines every file to that folder (whatever
        ``follow_outside_links`` says). Problems with one source (unreadable, binary, empty,
        over ``max_bytes``, undecodable, symlink loop, outside the root, embedding failure)
        are reported in its :class:`FileResult`; the rest of the run goes on. ``dry_run``
        reads and chunks but writes and embeds nothing. ``max_chunks`` bounds the work of
        one call: when the documents to write (new or changed) make more chunks than that,
        the whole call is refused with :class:`~memdb.core.errors.TooLarge` before anything is
        embedded or written (the HTTP and MCP doors set it per request). ``progress`` is
        called with each source's result; if it also has a ``start(files)`` method, that is
        called first with the number of sources found (a progress bar's total).
        """
        if isinstance(sources, (str, TextSource, FileBytes)) or hasattr(sources, "__fspath__"):
            sources = [sources]
        confined = self._store.subject
        who = subject if subject is not None else (confined or "default")
        if confined is not None and who != confined:
            raise Forbidden(f"this store is confined to subject {confined!r}")
        MemoryInput(content="x", subject=who, scope=scope, project_id=project_id,
                    session_id=session_id, importance=importance, tags=tags).to_item()
        v.positive_int(max_bytes, "max_bytes", 2**40)
        v.positive_int(embed_batch, "embed_batch", 100_000)
        if max_chunks is not None:
            v.positive_int(max_chunks, "max_chunks", 2**31)
        settings = IngestSettings(
            subject=v.name(who, "subject"), scope=scope, project_id=project_id,
            session_id=session_id, category=_category(category), tags=v.tags(tags),
            importance=float(importance),
            options=ChunkOptions(chunk_tokens=chunk_tokens, overlap=overlap,
                                 parent_tokens=parent_tokens),
            max_bytes=max_bytes, embed_batch=embed_batch, max_chunks=max_chunks)
        return run_ingest(self._core, list(sources), settings, include=tuple(include),
                          exclude=tuple(exclude), root=root,
                          follow_outside_links=bool(follow_outside_links), prune=prune,
                          dry_run=dry_run,
                          force=force, counter=counter, progress=progress)

    def list(self, *, subject: str | None = None, prefix: str | None = None,
             limit: int = 1000, offset: int = 0) -> list[Document]:
        """This tenant's documents (optionally one subject's, or URIs starting with
        ``prefix``), by URI."""
        v.positive_int(limit, "limit", 100_000)
        v.offset(offset)
        with self._core.read() as conn:
            rows = conn.execute(sql.query("list_documents"), {
                "tenant": self._store.tenant, "subject": v.optional_name(subject, "subject"),
                "prefix": prefix, "limit": limit, "offset": offset}).fetchall()
        return [Document(**{**r, "id": str(r["id"])}) for r in rows]

    def remove(self, uris: str | Iterable[str], *, reason: str | None = None) -> int:
        """Remove documents by URI with their chunk memories (text another document shares
        stays, owned by it); returns how many documents were removed."""
        wanted = [uris] if isinstance(uris, str) else list(uris)
        if not wanted or not all(isinstance(u, str) and u for u in wanted):
            raise InvalidInput("give one or more document URIs")
        with self._core.transaction() as conn:
            self._core.begin(conn, reason or "document removed")
            rows = conn.execute(sql.query("remove_documents"),
                                {"tenant": self._store.tenant, "uris": wanted}).fetchall()
        return len(rows)

    def citations(self, memory_ids: Iterable[Any], *, parents: bool = False
                  ) -> dict[str, list[tuple[Citation, str | None]]]:
        """For each memory id that holds document text: where it is cited from (every
        document holding the text, the owner first) and, with ``parents``, the parent text."""
        ids = [str(i) for i in memory_ids]
        if not ids:
            return {}
        with self._core.read() as conn:
            rows = conn.execute(sql.query("citations"),
                                {"tenant": self._store.tenant, "ids": ids,
                                 "parents": parents}).fetchall()
        out: dict[str, list[tuple[Citation, str | None]]] = {}
        for row in rows:
            out.setdefault(str(row["memory_id"]), []).append((_citation(row), row["parent_text"]))
        return out

    def search(self, query: str, k: int = 10, *, parents: bool = False,
               **search: Any) -> list[DocumentHit]:
        """Search the document chunks (``source_type='document'``) like :meth:`search`, each
        hit with its citations. With ``parents``, small chunks are searched and their parent
        sections returned: one hit per parent (the best chunk's), with the parent's text."""
        search.setdefault("source_type", "document")
        hits = self._store.search(query, k=k * 3 if parents else k, **search)
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

    # -- answering (memdb.retrieval.ask)
    # -------------------------------------------------------------------
    def retrieve(self, question: str, k: int = 5, *, include_memories: bool = False,
                 expand: str | None = None, n_queries: int = 3, variant_weight: float = 1.0,
                 rrf_k: float = 60.0, reranker: Reranker | str | None = None,
                 rerank_depth: int = 20, llm: ChatLLM | None = FROM_ENV,
                 filter: Filter | dict[str, Any] | None = None,
                 **conditions: Any) -> Retrieval:
        """The ``k`` best passages for ``question``, numbered from 1, each with its citation.

        Searches document chunks (``source_type='document'``) unless ``include_memories``
        (then every memory; an explicit ``source_type=`` condition wins). Filters as
        :meth:`search`. ``expand``: None (default), ``"mqe"`` (``n_queries`` rewrites) or
        ``"hyde"``; each variant weighs ``variant_weight`` against the question's 1 in the
        fusion (RRF constant ``rrf_k``). ``reranker``: a :class:`Reranker`, or ``"llm"`` for
        :class:`LLMReranker` over ``llm``; it reorders the top ``rerank_depth`` candidates.
        ``llm``: default from MEMDB_LLM_*; None disables every LLM step.
        """
        started = time.perf_counter()
        question = self._question(question)
        v.positive_int(k, "k", MAX_K)
        v.positive_int(n_queries, "n_queries", 8)
        v.positive_int(rerank_depth, "rerank_depth", 200)
        if expand is not None and expand not in EXPANSIONS:
            raise InvalidInput(f"expand must be one of {EXPANSIONS} or None, got {expand!r}")
        for value, name in ((variant_weight, "variant_weight"), (rrf_k, "rrf_k")):
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not math.isfinite(value) or value < 0:
                raise InvalidInput(f"{name} must be a finite number >= 0")
        if isinstance(reranker, str) and reranker not in RERANKERS:
            raise InvalidInput(f"reranker must be a Reranker or one of {RERANKERS}")
        if reranker is not None and not isinstance(reranker, str) \
                and not callable(getattr(reranker, "rerank", None)):
            raise InvalidInput("reranker must have a rerank(query, passages) method")
        if not include_memories and "source_type" not in conditions:
            conditions["source_type"] = "document"
        flt = Filter.of(filter, **conditions).to_json()
        chat = self._chat(llm)
        notes: list[str] = []
        timings: dict[str, float] = {}
        depth = max(k, rerank_depth) if reranker is not None else k

        expansion: Expansion | None = None
        hits: list[SearchHit]
        if expand is not None:
            t0 = time.perf_counter()
            expansion = steps.expand(expand, chat, question, n_queries)
            timings["expand_ms"] = round(1000 * (time.perf_counter() - t0), 1)
        t0 = time.perf_counter()
        if expansion is None:
            hits = list(self._store.search(question, k=depth, filter=flt))
        else:
            if expansion.fallback is not None:
                notes.append(f"{expand} expansion failed ({expansion.fallback}): "
                             "searched with the question alone")
                log.warning("%s expansion fell back to the plain question: %s", expand,
                            expansion.fallback)
                hits = list(self._store.search(question, k=depth, filter=flt))
            else:
                hits = steps.search_fused(self._store, question, expansion, depth, flt,
                                           variant_weight, rrf_k)
        timings["search_ms"] = round(1000 * (time.perf_counter() - t0), 1)

        rerank_info: RerankInfo | None = None
        if reranker is not None:
            t0 = time.perf_counter()
            hits, rerank_info = steps.rerank(reranker, chat, question, hits)
            timings["rerank_ms"] = round(1000 * (time.perf_counter() - t0), 1)
            if rerank_info.fallback is not None:
                notes.append(f"rerank failed ({rerank_info.fallback}): kept the search order")
                log.warning("rerank fell back to the search order: %s", rerank_info.fallback)
        passages = steps.passages(hits[:k], self.citations([h.memory.id for h in hits[:k]]))
        timings["total_ms"] = round(1000 * (time.perf_counter() - started), 1)
        return Retrieval(question, passages, expansion, rerank_info, tuple(notes), timings)

    def ask(self, question: str, k: int = 5, *, include_memories: bool = False,
            expand: str | None = None, n_queries: int = 3, variant_weight: float = 1.0,
            rrf_k: float = 60.0, reranker: Reranker | str | None = None,
            rerank_depth: int = 20, llm: ChatLLM | None = FROM_ENV, answer: bool = True,
            max_passage_chars: int = 2000, filter: Filter | dict[str, Any] | None = None,
            **conditions: Any) -> AskResult:
        """Answer ``question`` from the ``k`` best passages (see :meth:`retrieve` for the
        search, expansion and rerank options), citing them as ``[n]``.

        With an LLM (``llm``, default from MEMDB_LLM_*; ``answer=False`` skips it) the model
        is told to use only the passages and to say "I don't know" otherwise; the answer's
        ``citations`` are the passages its valid ``[n]`` markers name, and markers naming
        passages that were not given are dropped (``dropped_citations``). Without an LLM, or
        when it fails (timeout, HTTP error, empty reply, a reply cut off at max_tokens or
        looping, or an answer that is not grounded in the passages and question: half its
        content words must occur in them), the result holds the ranked passages
        (``mode="passages"``, all of them as ``citations``) and ``notes`` says why.
        """
        started = time.perf_counter()
        chat = self._chat(llm)
        found = self.retrieve(question, k, include_memories=include_memories, expand=expand,
                              n_queries=n_queries, variant_weight=variant_weight, rrf_k=rrf_k,
                              reranker=reranker, rerank_depth=rerank_depth, llm=chat,
                              filter=filter, **conditions)
        v.positive_int(max_passage_chars, "max_passage_chars", 100_000)
        notes = list(found.notes)
        timings = dict(found.timings)
        common = {"question": found.question, "passages": found.passages,
                  "expansion": found.expansion, "rerank": found.rerank}

        def passages_only(why: str | None) -> AskResult:
            if why:
                notes.append(why)
            timings["total_ms"] = round(1000 * (time.perf_counter() - started), 1)
            return AskResult(mode="passages", answer=None, citations=found.passages,
                             notes=tuple(notes), timings=timings, **common)

        if not answer:
            return passages_only(None)
        if chat is None:
            return passages_only("no LLM configured (MEMDB_LLM_MODEL): the ranked passages "
                                 "are the answer")
        if not found.passages:
            return passages_only("no passage matched the question: the LLM was not asked")
        t0 = time.perf_counter()
        try:
            reply = chat.complete(build_messages(found.question, found.passages,
                                                 max_passage_chars), path="answer")
        except LLMError as exc:
            log.warning("answering fell back to the passages: %s", exc)
            return passages_only(f"the LLM failed ({exc}): the ranked passages are the answer")
        timings["llm_ms"] = round(1000 * (time.perf_counter() - t0), 1)

        by_number = {p.number: p for p in found.passages}
        cited = parse_citations(reply)
        dropped = tuple(n for n in cited if n not in by_number)
        citations = tuple(by_number[n] for n in cited if n in by_number)
        text = strip_citations(reply, set(dropped)).strip()
        unknown = not citations and says_unknown(reply)
        context = "\n".join([found.question, *(p.text for p in found.passages)])
        if not unknown and not grounded(without_markers(text), context, 0.5):
            hit, total = coverage(without_markers(text), context)
            return passages_only(f"the answer is not grounded in the passages ({hit} of "
                                 f"{total} content words found): the ranked passages are "
                                 "the answer")
        if dropped:
            notes.append(f"dropped citations of passages that were not given: {list(dropped)}")
        if not citations and not unknown:
            notes.append("the answer cites no passage: treat it as ungrounded")
        timings["total_ms"] = round(1000 * (time.perf_counter() - started), 1)
        return AskResult(mode="llm", answer=text, citations=citations, unknown=unknown,
                         dropped_citations=dropped, raw_answer=reply, notes=tuple(notes),
                         timings=timings, **common)

    # -- the steps ---------------------------------------------------------------------------
    @staticmethod
    def _question(question: object) -> str:
        if not isinstance(question, str) or not question.strip():
            raise InvalidInput("the question must be a non-empty string")
        v.optional_text(question, "question", MAX_QUESTION_CHARS)
        return question.strip()

    def _chat(self, llm: ChatLLM | None) -> ChatLLM | None:
        if llm is FROM_ENV:
            return self._store.llm
        if llm is not None and not callable(getattr(llm, "complete", None)):
            raise InvalidInput("llm must be a ChatLLM or None")
        return llm

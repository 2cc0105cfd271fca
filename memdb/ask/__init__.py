"""Answering from knowledge: hybrid search over document chunks (and, if asked, memories),
then a grounded answer with numbered citations through an OpenAI-compatible chat model, or
the ranked, cited passages when there is no model (or it fails).

>>> r = store.ask("多久轮换一次密钥？", k=5)
>>> r.mode, r.answer                    # ('llm', '每90天轮换一次 [1]。') with MEMDB_LLM_MODEL set
>>> [(c.number, c.document_uri, c.heading_path, c.char_start) for c in r.citations]

Optional, off by default: query expansion (``expand="mqe"``: n rewrites by the LLM;
``expand="hyde"``: a hypothetical answer passage embedded for the vector route), each variant
searched with ``memdb.search_hybrid`` and fused with the question's own ranking by weighted
RRF in SQL (``memdb.search_fused``); and a rerank hook (:class:`Reranker`,
:class:`LLMReranker`). Every LLM step falls back (to the plain question, the original order,
the passages) and says so in the result's ``notes``.

:class:`Ask` is a mixin of :class:`memdb.MemoryStore`.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence
from typing import Any

from psycopg.types.json import Jsonb

from .. import _sql
from .. import _validate as v
from ..embeddings import embed_checked
from ..errors import InvalidInput
from ..filters import Filter
from ..llm import ChatLLM, LLMError
from ..models import Memory, SearchHit
from ..search import DEFAULT_OPTIONS
from ._expand import EXPANSIONS, hypothetical_passage, rewrite_queries
from ._models import AskResult, Expansion, Passage, RerankInfo, Retrieval
from ._prompt import SYSTEM_PROMPT, build_messages, parse_citations, says_unknown, strip_citations
from ._rerank import RERANKERS, LLMReranker, Reranker

__all__ = ["Ask", "AskResult", "Retrieval", "Passage", "Expansion", "RerankInfo", "Reranker",
           "LLMReranker", "EXPANSIONS", "RERANKERS", "SYSTEM_PROMPT", "parse_citations"]

log = logging.getLogger("memdb.ask")

_FROM_ENV: Any = object()  # llm= default: the LLM the environment configures (MEMDB_LLM_*)
MAX_QUESTION_CHARS = 4000
MAX_K = 50


def _reason(exc: BaseException) -> str:
    """Why a step failed, for notes and logs: memdb errors say it without quoting input;
    anything else only by its type (its message might hold passage text)."""
    from ..errors import MemdbError

    return str(exc) if isinstance(exc, MemdbError) else type(exc).__name__


class Ask:
    """``retrieve`` and ``ask`` on :class:`memdb.MemoryStore` (uses its ``search``,
    ``citations``, ``embedder``, ``llm``, ``tenant`` and ``_transaction``)."""

    # -- retrieval ---------------------------------------------------------------------------
    def retrieve(self, question: str, k: int = 5, *, include_memories: bool = False,
                 expand: str | None = None, n_queries: int = 3, variant_weight: float = 1.0,
                 rrf_k: float = 60.0, reranker: Reranker | str | None = None,
                 rerank_depth: int = 20, llm: ChatLLM | None = _FROM_ENV,
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
            expansion = self._expand(expand, chat, question, n_queries)
            timings["expand_ms"] = round(1000 * (time.perf_counter() - t0), 1)
        t0 = time.perf_counter()
        if expansion is None:
            hits = list(self.search(question, k=depth, filter=flt))  # type: ignore[attr-defined]
        else:
            if expansion.fallback is not None:
                notes.append(f"{expand} expansion failed ({expansion.fallback}): "
                             "searched with the question alone")
                log.warning("%s expansion fell back to the plain question: %s", expand,
                            expansion.fallback)
                hits = list(self.search(question, k=depth, filter=flt))  # type: ignore[attr-defined]
            else:
                hits = self._search_fused(question, expansion, depth, flt, variant_weight, rrf_k)
        timings["search_ms"] = round(1000 * (time.perf_counter() - t0), 1)

        rerank_info: RerankInfo | None = None
        if reranker is not None:
            t0 = time.perf_counter()
            hits, rerank_info = self._rerank(reranker, chat, question, hits)
            timings["rerank_ms"] = round(1000 * (time.perf_counter() - t0), 1)
            if rerank_info.fallback is not None:
                notes.append(f"rerank failed ({rerank_info.fallback}): kept the search order")
                log.warning("rerank fell back to the search order: %s", rerank_info.fallback)
        passages = self._passages(hits[:k])
        timings["total_ms"] = round(1000 * (time.perf_counter() - started), 1)
        return Retrieval(question, passages, expansion, rerank_info, tuple(notes), timings)

    # -- answering ---------------------------------------------------------------------------
    def ask(self, question: str, k: int = 5, *, include_memories: bool = False,
            expand: str | None = None, n_queries: int = 3, variant_weight: float = 1.0,
            rrf_k: float = 60.0, reranker: Reranker | str | None = None,
            rerank_depth: int = 20, llm: ChatLLM | None = _FROM_ENV, answer: bool = True,
            max_passage_chars: int = 2000, filter: Filter | dict[str, Any] | None = None,
            **conditions: Any) -> AskResult:
        """Answer ``question`` from the ``k`` best passages (see :meth:`retrieve` for the
        search, expansion and rerank options), citing them as ``[n]``.

        With an LLM (``llm``, default from MEMDB_LLM_*; ``answer=False`` skips it) the model
        is told to use only the passages and to say "I don't know" otherwise; the answer's
        ``citations`` are the passages its valid ``[n]`` markers name, and markers naming
        passages that were not given are dropped (``dropped_citations``). Without an LLM, or
        when it fails (timeout, HTTP error, empty reply), the result holds the ranked passages
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
                                                 max_passage_chars))
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
        if llm is _FROM_ENV:
            return self.llm  # type: ignore[attr-defined,no-any-return]
        if llm is not None and not callable(getattr(llm, "complete", None)):
            raise InvalidInput("llm must be a ChatLLM or None")
        return llm

    def _expand(self, kind: str, chat: ChatLLM | None, question: str, n: int) -> Expansion:
        """The variants of one expansion, or the reason there are none."""
        if chat is None:
            return Expansion(kind, fallback="no LLM configured (MEMDB_LLM_MODEL)")
        try:
            if kind == "mqe":
                return Expansion(kind, tuple(rewrite_queries(chat, question, n)))
            return Expansion(kind, (hypothetical_passage(chat, question),))
        except LLMError as exc:
            return Expansion(kind, fallback=str(exc))

    def _search_fused(self, question: str, expansion: Expansion, k: int,
                      flt: dict[str, Any], variant_weight: float,
                      rrf_k: float) -> list[SearchHit]:
        """The question and its variants searched and fused by weighted RRF in one SQL call
        (``memdb.search_fused``); each hit's details hold every variant's rank and score."""
        embedder = self.embedder  # type: ignore[attr-defined]
        if expansion.kind == "mqe":
            texts = [question, *expansion.variants]
            vectors = list(embed_checked(embedder, texts, query=True))
            variants: list[dict[str, Any]] = [{"query": question, "weight": 1.0}] + [
                {"query": q, "weight": variant_weight} for q in expansion.variants]
            names = ["question"] + [f"mqe{n}" for n in range(1, len(expansion.variants) + 1)]
        else:  # hyde: the hypothetical passage is embedded as a passage, vector route only
            vectors = [embed_checked(embedder, [question], query=True)[0],
                       embed_checked(embedder, list(expansion.variants))[0]]
            variants = [{"query": question, "weight": 1.0},
                        {"query": None, "weight": variant_weight,
                         "options": {"routes": ["vector"]}}]
            names = ["question", "hyde"]
        params = {"tenant": self.tenant, "variants": Jsonb(variants),  # type: ignore[attr-defined]
                  "embeddings": vectors, "k": k, "filter": Jsonb(flt),
                  "options": Jsonb(DEFAULT_OPTIONS.to_json()), "rrf_k": float(rrf_k),
                  "depth": None}
        with self._transaction() as conn:  # type: ignore[attr-defined]
            rows = conn.execute(_sql.query("search_fused"), params).fetchall()
        return [SearchHit(
            memory=Memory.from_row(r), score=float(r["score"]), rank=int(r["rank"]),
            details={"fused": float(r["score"]), "variants": [
                {"variant": name, "weight": var["weight"], "rank": rank, "score": score}
                for name, var, rank, score in zip(names, variants, r["variant_ranks"],
                                                  r["variant_scores"], strict=True)]})
            for r in rows]

    def _rerank(self, reranker: Reranker | str, chat: ChatLLM | None, question: str,
                hits: list[SearchHit]) -> tuple[list[SearchHit], RerankInfo]:
        """``hits`` reordered by the reranker's scores (stable for ties), or unchanged with
        the reason when it fails."""
        name = reranker if isinstance(reranker, str) else \
            str(getattr(reranker, "name", type(reranker).__name__))
        if not hits:
            return hits, RerankInfo(name, 0)
        if isinstance(reranker, str):
            if chat is None:
                return hits, RerankInfo(name, len(hits), "no LLM configured (MEMDB_LLM_MODEL)")
            reranker = LLMReranker(chat)
        try:
            scores = [float(s) for s in reranker.rerank(question,
                                                        [h.memory.content for h in hits])]
            if len(scores) != len(hits) or not all(math.isfinite(s) for s in scores):
                raise LLMError("bad_response",
                               f"the reranker gave {len(scores)} scores for {len(hits)} passages"
                               if len(scores) != len(hits) else "a score is not finite")
        except Exception as exc:  # the hook may raise anything: keep the search order
            return hits, RerankInfo(name, len(hits), _reason(exc))
        order = sorted(range(len(hits)), key=lambda i: -scores[i])
        out = []
        for new_rank, i in enumerate(order, start=1):
            h = hits[i]
            out.append(SearchHit(memory=h.memory, score=h.score, rank=new_rank,
                                 details={**h.details, "rerank_score": scores[i],
                                          "rank_before_rerank": h.rank}))
        return out, RerankInfo(name, len(hits))

    def _passages(self, hits: Sequence[SearchHit]) -> tuple[Passage, ...]:
        cites = self.citations([h.memory.id for h in hits])  # type: ignore[attr-defined]
        out = []
        for n, h in enumerate(hits, start=1):
            m = h.memory
            found = cites.get(str(m.id))
            c = found[0][0] if found else None
            out.append(Passage(
                number=n, memory_id=str(m.id), text=m.content, score=h.score,
                source_type=str(m.source_type), uri=c.uri if c else m.uri,
                document_id=c.document_id if c else None, document_uri=c.uri if c else None,
                title=c.title if c else None, heading_path=c.heading_path if c else (),
                char_start=c.char_start if c else None, char_end=c.char_end if c else None,
                details={**h.details, "search_rank": h.rank}))
        return tuple(out)

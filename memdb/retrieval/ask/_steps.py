"""The steps of :meth:`memdb.families.documents.Documents.retrieve` and ``ask``: query expansion,
the
fused search of the variants (one SQL call, ``memdb.search_fused``), reranking and numbering
the passages. Only :func:`search_fused` does I/O, through the store it is given."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from psycopg.types.json import Jsonb

from ...core import sql
from ...core.embeddings import embed_checked
from ...core.llm import ChatLLM, LLMError
from ...core.models import Memory, SearchHit
from ..search import DEFAULT_OPTIONS
from ._expand import hypothetical_passage, rewrite_queries
from ._models import Expansion, Passage, RerankInfo
from ._rerank import LLMReranker, Reranker

__all__ = ["expand", "search_fused", "rerank", "passages", "reason"]


def reason(exc: BaseException) -> str:
    """Why a step failed, for notes and logs: memdb errors say it without quoting input;
    anything else only by its type (its message might hold passage text)."""
    from ...core.errors import MemdbError

    return str(exc) if isinstance(exc, MemdbError) else type(exc).__name__


def expand(kind: str, chat: ChatLLM | None, question: str, n: int) -> Expansion:
    """The variants of one expansion, or the reason there are none."""
    if chat is None:
        return Expansion(kind, fallback="no LLM configured (MEMDB_LLM_MODEL)")
    try:
        if kind == "mqe":
            variants, refused = rewrite_queries(chat, question, n)
            return Expansion(kind, tuple(variants), refused=tuple(refused))
        return Expansion(kind, (hypothetical_passage(chat, question),))
    except LLMError as exc:
        return Expansion(kind, fallback=str(exc))

def search_fused(store: Any, question: str, expansion: Expansion, k: int,
                 flt: dict[str, Any], variant_weight: float, rrf_k: float) -> list[SearchHit]:
    """The question and its variants searched and fused by weighted RRF in one SQL call
    (``memdb.search_fused``); each hit's details hold every variant's rank and score."""
    embedder = store.embedder
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
    params = {"tenant": store.tenant, "variants": Jsonb(variants),
              "embeddings": vectors, "k": k, "filter": Jsonb(flt),
              "options": Jsonb(DEFAULT_OPTIONS.to_json()), "rrf_k": float(rrf_k),
              "depth": None}
    with store.core.read() as conn:
        rows = conn.execute(sql.query("search_fused"), params).fetchall()
    return [SearchHit(
        memory=Memory.from_row(r), score=float(r["score"]), rank=int(r["rank"]),
        details={"fused": float(r["score"]), "variants": [
            {"variant": name, "weight": var["weight"], "rank": rank, "score": score}
            for name, var, rank, score in zip(names, variants, r["variant_ranks"],
                                              r["variant_scores"], strict=True)]})
        for r in rows]

def rerank(reranker: Reranker | str, chat: ChatLLM | None, question: str,
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
        return hits, RerankInfo(name, len(hits), reason(exc))
    order = sorted(range(len(hits)), key=lambda i: -scores[i])
    out = []
    for new_rank, i in enumerate(order, start=1):
        h = hits[i]
        out.append(SearchHit(memory=h.memory, score=h.score, rank=new_rank,
                             details={**h.details, "rerank_score": scores[i],
                                      "rank_before_rerank": h.rank}))
    return out, RerankInfo(name, len(hits))

def passages(hits: Sequence[SearchHit],
             cites: dict[str, list[tuple[Any, str | None]]]) -> tuple[Passage, ...]:
    """The hits numbered from 1 as passages, each with its first citation (``cites``: what
    ``store.documents.citations`` returned for their ids)."""
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

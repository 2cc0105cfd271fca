"""Query decomposition for multi-hop questions (search option ``decompose``).

A question that joins two facts is split into up to three sub-queries; the original and the
sub-queries are then searched and fused by weighted RRF in one SQL call
(``memdb.search_fused``). This module is only the query planning: a small, deterministic,
language-aware heuristic with no model. The rules (first that applies, then no more):

English
  1. Named-entity coordination: ``A and B`` / ``A or B`` / ``A, B and C`` where every
     conjunct is a capitalized name (``Caroline and Melanie``, ``Paris or Rome``) gives one
     sub-query per name, the coordination replaced by that name and ``both``/``either``/
     ``which of`` dropped: "What do Caroline and Melanie both like?" -> "What do Caroline
     like?", "What do Melanie like?". Lower-case phrases ("rock and roll", "salt and pepper")
     never split.
  2. Clause coordination: ``..., and <wh-word or auxiliary> ...`` ("Where did Jon go and what
     did he buy?") splits into the clauses around the ``and``.

Chinese
  1. Coordination with a distributive marker: ``A和B都…`` / ``A与B分别…`` (和 与 跟 及 同,
     then 都 分别 各自 俩 两人 一起): one sub-query per conjunct. Without the marker 和 is
     left alone (中华人民共和国, 和平).
  2. Clause coordination on 以及 / 并且 / 而且 / 还有 / ，另外 between two clauses of at
     least two characters each.

A query no rule splits gives no sub-queries, and the search runs as a plain hybrid search.
"""

from __future__ import annotations

import re
import time
from typing import Any

from psycopg.types.json import Jsonb

from . import _sql
from .embeddings import embed_checked

__all__ = ["split_query", "search_decomposed", "MAX_SUBQUERIES"]

MAX_SUBQUERIES = 3

_NAME = r"[A-Z][\w'’.-]*(?:\s+[A-Z][\w'’.-]*)?"
_EN_COORD = re.compile(
    rf"\b(?:(?:both|either)\s+)?({_NAME}(?:\s*,\s*{_NAME})*)\s*,?\s+(and|or)\s+({_NAME})\b")
_EN_DROP = re.compile(r"\b(?:both|either|each)\b\s*|\bwhich\s+of\s+", re.IGNORECASE)
_EN_CLAUSE = re.compile(
    r"\s*,?\s+and\s+(?=(?:what|where|when|who|whom|whose|which|how|why|did|does|do|is|was|"
    r"are|were|has|have|had|can|could|will|would)\b)", re.IGNORECASE)
# Capitalized words that start a question or are pronouns: not names.
_NOT_NAMES = {"what", "where", "when", "who", "which", "how", "why", "did", "does", "do", "is",
              "was", "are", "were", "has", "have", "had", "can", "could", "will", "would",
              "i", "the", "a", "an", "in", "on", "and", "or", "both", "either"}

_CJK = r"\u3400-\u9fff"
_ZH_COORD = re.compile(
    rf"([{_CJK}A-Za-z]{{1,4}})[和与跟及同]([{_CJK}A-Za-z]{{1,4}}?)(?=都|分别|各自|俩|两人|一起)")
_ZH_CLAUSE = re.compile(r"\s*(?:以及|并且|而且|还有|[，,]\s*另外)\s*")


def _clean(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip(" ,，;；")
    return text


def _is_name(phrase: str) -> bool:
    words = phrase.split()
    return bool(words) and all(w[0].isupper() for w in words) and \
        words[0].lower() not in _NOT_NAMES


def _split_en(query: str) -> list[str]:
    for m in _EN_COORD.finditer(query):
        names = [n.strip() for n in m.group(1).split(",")] + [m.group(3).strip()]
        if m.start() == 0 or not all(_is_name(n) for n in names):
            continue  # a capitalized first word may just start the sentence
        return [_clean(_EN_DROP.sub("", query[:m.start()] + n + query[m.end():]))
                for n in names]
    parts = [_clean(p) for p in _EN_CLAUSE.split(query)]
    parts = [p for p in parts if len(p.split()) >= 2]
    return parts if len(parts) >= 2 else []


def _split_zh(query: str) -> list[str]:
    m = _ZH_COORD.search(query)
    if m:
        return [_clean(query[:m.start()] + part + query[m.end():])
                for part in (m.group(1), m.group(2))]
    parts = [_clean(p) for p in _ZH_CLAUSE.split(query)]
    parts = [p for p in parts if len(p) >= 2]
    return parts if len(parts) >= 2 else []


def split_query(query: str) -> list[str]:
    """The sub-queries of ``query`` (0, 2 or 3 of them, never the query itself), by the rules
    in this module's docstring; [] when no rule applies."""
    if not isinstance(query, str) or not query.strip():
        return []
    query = query.strip()
    subs = _split_zh(query) if re.search(f"[{_CJK}]", query) else _split_en(query)
    out: list[str] = []
    for sub in subs:
        if sub and sub != query and sub not in out:
            out.append(sub)
    return out[:MAX_SUBQUERIES] if len(out) >= 2 else []


def search_decomposed(store: Any, query: str, vector: Any, subqueries: list[str], k: int,
                      flt: dict[str, Any], options: dict[str, Any], explain: bool,
                      embed_seconds: float) -> Any:
    """``query`` and its ``subqueries`` (weight 1 each) searched with ``options`` and fused by
    weighted RRF in one SQL call (``memdb.search_fused``), with the same RRF constant as the
    routes' fusion (the options' ``rrf_k``, SQL default 60). ``vector`` is the query's own vector
    (None: no vector route); the sub-queries are embedded here. Each hit's ``details`` holds
    the fused score and every variant's rank and score; ``explain`` names the sub-queries."""
    from .models import Memory, SearchHit
    from .search import SearchResults

    started = time.perf_counter()
    texts = [query, *subqueries]
    if vector is None:
        vectors = None
    else:
        vectors = [vector, *embed_checked(store.embedder, subqueries, query=True)]
    embed_seconds += time.perf_counter() - started
    variants = [{"query": q, "weight": 1.0} for q in texts]
    params = {"tenant": store.tenant, "variants": Jsonb(variants), "embeddings": vectors,
              "k": k, "filter": Jsonb(flt), "options": Jsonb(options),
              "rrf_k": float(options.get("rrf_k", 60.0)), "depth": None}
    started = time.perf_counter()
    with store._read() as conn:
        rows = conn.execute(_sql.query("search_fused"), params).fetchall()
    results = SearchResults(SearchHit(
        memory=Memory.from_row(r), score=float(r["score"]), rank=int(r["rank"]),
        details={"fused": float(r["score"]), "variants": [
            {"query": q, "rank": rank, "score": score}
            for q, rank, score in zip(texts, r["variant_ranks"], r["variant_scores"],
                                      strict=True)]})
        for r in rows)
    if explain:
        results.explain = {
            "sql": _sql.query("search_fused"),
            "params": {**params, "variants": variants, "filter": flt, "options": options,
                       "embeddings": None if vectors is None else
                       f"<{len(vectors)} vectors {len(vectors[0])}>"},
            "embed_ms": round(embed_seconds * 1000, 3),
            "db_ms": round((time.perf_counter() - started) * 1000, 3),
            "subqueries": list(subqueries),
            "routes": {},
        }
    return results

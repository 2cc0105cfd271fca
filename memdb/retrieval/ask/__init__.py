"""Answering from knowledge: hybrid search over document chunks (and, if asked, memories),
then a grounded answer with numbered citations through an OpenAI-compatible chat model, or
the ranked, cited passages when there is no model (or it fails).

>>> r = store.documents.ask("多久轮换一次密钥？", k=5)
>>> r.mode, r.answer                    # ('llm', '每90天轮换一次 [1]。') with MEMDB_LLM_MODEL set
>>> [(c.number, c.document_uri, c.heading_path, c.char_start) for c in r.citations]

Optional, off by default: query expansion (``expand="mqe"``: n rewrites by the LLM;
``expand="hyde"``: a hypothetical answer passage embedded for the vector route), each variant
searched with ``memdb.search_hybrid`` and fused with the question's own ranking by weighted
RRF in SQL (``memdb.search_fused``); and a rerank hook (:class:`Reranker`,
:class:`LLMReranker`). Every LLM step falls back (to the plain question, the original order,
the passages) and says so in the result's ``notes``.

``ask`` and ``retrieve`` are methods of ``store.documents``
(:class:`memdb.families.documents.Documents`);
this package holds their models, prompts, expansions and rerankers.
"""

from __future__ import annotations

from typing import Any

from . import _steps as steps
from ._expand import EXPANSIONS
from ._models import AskResult, Expansion, Passage, RerankInfo, Retrieval
from ._prompt import (
    SYSTEM_PROMPT,
    build_messages,
    parse_citations,
    says_unknown,
    strip_citations,
    without_markers,
)
from ._rerank import RERANKERS, LLMReranker, Reranker

__all__ = ["AskResult", "Retrieval", "Passage", "Expansion", "RerankInfo", "Reranker",
           "LLMReranker", "EXPANSIONS", "RERANKERS", "SYSTEM_PROMPT", "parse_citations",
           "build_messages", "says_unknown", "strip_citations", "without_markers", "steps",
           "FROM_ENV", "MAX_K", "MAX_QUESTION_CHARS"]

FROM_ENV: Any = object()  # llm= default: the LLM the environment configures (MEMDB_LLM_*)
MAX_QUESTION_CHARS = 4000
MAX_K = 50

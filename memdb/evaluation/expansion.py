"""Does query expansion (MQE, HyDE) or an LLM rerank help retrieval? A LoCoMo comparison.

:func:`run_expansion` stores a LoCoMo-format file as :func:`memdb.evaluation.run_locomo` does
(one memory per dialog turn, with its search context, in a scratch database dropped
afterwards) and runs every question through :meth:`memdb.families.documents.Documents.retrieve`
once per
configuration — ``none`` (the plain hybrid search, the same ranking as run_locomo's
``hybrid``), ``mqe``, ``hyde``, each optionally with a reranker — reporting recall@k and MRR
per configuration and category, the latency, and how many questions fell back to the plain
query (``fallback_rate``). A configuration whose fallback rate is not 0 did not measure what
its name says: with no endpoint configured every LLM step falls back, and the rows equal
``none``.

The LLM is any OpenAI-compatible chat endpoint (``MEMDB_LLM_BASE_URL``, ``MEMDB_LLM_MODEL``,
``MEMDB_LLM_API_KEY``); ``memdb eval expansion PATH`` is the command line.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

from ..core.embeddings import Embedder, embedder_from_env
from ..core.llm import ChatLLM
from ..families.store import MemoryStore
from ..retrieval.ask import EXPANSIONS, RERANKERS
from ._locomo_data import load_locomo
from ._metrics import CATEGORY_NAMES, QuestionResult, score_question, summarize
from ._scratch import scratch_database
from .locomo import Progress, memory_inputs

__all__ = ["run_expansion", "format_expansion"]


def run_expansion(path: str | os.PathLike[str], *, dsn: str | None = None,
                  ks: Sequence[int] = (5, 10, 25), expands: Sequence[str] = ("none", "mqe", "hyde"),
                  rerank: str | None = None, llm: ChatLLM | None = None,
                  limit_conversations: int | None = None, max_questions: int | None = None,
                  n_queries: int = 3, variant_weight: float = 1.0, progress: bool = True,
                  embedder: Embedder | None = None) -> dict[str, Any]:
    """Retrieval figures per configuration; see the module docstring. ``llm``: the chat model
    for expansion and rerank (None: those steps fall back and the report says so)."""
    started = time.perf_counter()
    ks = sorted({int(k) for k in ks})
    if not ks or ks[0] < 1 or ks[-1] > 50:
        raise ValueError("ks must be integers between 1 and 50")
    unknown = [e for e in expands if e != "none" and e not in EXPANSIONS]
    if unknown or not expands:
        raise ValueError(f"expands must be some of none, {', '.join(EXPANSIONS)}")
    if rerank is not None and rerank not in RERANKERS:
        raise ValueError(f"rerank must be one of {RERANKERS}")
    configs: dict[str, dict[str, Any]] = {}
    for e in dict.fromkeys(expands):
        configs[e] = {"expand": None if e == "none" else e}
        if rerank:
            configs[f"{e}+rerank_{rerank}"] = {**configs[e], "reranker": rerank}
    show = Progress(progress)
    convs = load_locomo(path, limit_conversations)
    questions = [(conv, q) for conv in convs for q in conv.questions]
    if max_questions is not None:
        questions = questions[:max_questions]
    embedder = embedder or embedder_from_env()
    rows: dict[str, Any] = {}
    with scratch_database(dsn) as scratch, MemoryStore(scratch, embedder=embedder,
                                                       gate=None) as store:
        dia_ids: dict[Any, set[str]] = {}
        t0 = time.perf_counter()
        for n, conv in enumerate(convs, start=1):
            items = memory_inputs(conv)
            for item, res in zip(items, store.add_many(items), strict=True):
                dia_ids.setdefault(res.id, set()).add(item.source_id or "")
            show("storing conversations", n, len(convs), t0)
        store_s = time.perf_counter() - t0
        for name, config in configs.items():
            results: list[QuestionResult] = []
            fallbacks = 0
            t_cfg = time.perf_counter()
            for n, (conv, q) in enumerate(questions, start=1):
                t1 = time.perf_counter()
                found = store.documents.retrieve(q.question, k=ks[-1], include_memories=True,
                                       subject=conv.sample_id, llm=llm, n_queries=n_queries,
                                       variant_weight=variant_weight, **config)
                ms = 1000 * (time.perf_counter() - t1)
                fell_back = (found.expansion is not None and found.expansion.fallback) or \
                    (found.rerank is not None and found.rerank.fallback)
                fallbacks += bool(fell_back)
                ranked = [dia_ids.get(_uuid(p.memory_id), set()) for p in found.passages]
                results.append(score_question(q.evidence, ranked, ks, q.category, ms))
                show(f"retrieving [{name}]", n, len(questions), t_cfg)
            rows[name] = {**summarize(results, ks),
                          "fallbacks": fallbacks,
                          "fallback_rate": fallbacks / len(questions) if questions else 0.0}
    return {
        "dataset": str(path), "questions": len(questions), "memories": len(dia_ids), "ks": ks,
        "routes": rows,
        "meta": {"llm": repr(llm) if llm is not None else None,
                 "embedder": getattr(embedder, "model", type(embedder).__name__),
                 "n_queries": n_queries, "variant_weight": variant_weight,
                 "configs": {name: {k: v for k, v in c.items() if v is not None}
                             for name, c in configs.items()},
                 "timings": {"store_s": round(store_s, 3),
                             "total_s": round(time.perf_counter() - started, 3)}},
    }


def _uuid(text: str) -> Any:
    from uuid import UUID

    return UUID(text)


def format_expansion(result: dict[str, Any]) -> str:
    """A plain-text table of a :func:`run_expansion` result (percentages)."""
    ks = result["ks"]
    rows = result["routes"]
    width = max([len("config")] + [len(n) for n in rows]) + 2
    keys = [f"recall@{k}" for k in ks] + ["mrr"]
    header = "config".ljust(width) + "".join(f"{c:>8}" for c in [f"R@{k}" for k in ks] + ["MRR"]) \
        + f"{'p50 ms':>9}{'fallback %':>12}"
    lines = [f"LoCoMo retrieval with expansion: {result['dataset']} ({result['questions']} "
             f"questions, {result['memories']} memories; LLM: {result['meta']['llm']})", "",
             "categories 1-4", header]
    for name, r in rows.items():
        lines.append(name.ljust(width) + "".join(f"{100 * r['overall'][k]:>8.1f}" for k in keys)
                     + f"{r['p50_ms']:>9.1f}{100 * r['fallback_rate']:>12.1f}")
    first = next(iter(rows.values()))["per_category"] if rows else {}
    k_mid = 10 if 10 in ks else ks[0]
    cats = sorted(first, key=int)
    lines += ["", f"recall@{k_mid} per category",
              "config".ljust(width) + "".join(f"{CATEGORY_NAMES.get(int(c), c):>14}"
                                              for c in cats)]
    for name, r in rows.items():
        lines.append(name.ljust(width) + "".join(
            f"{100 * r['per_category'][c][f'recall@{k_mid}']:>14.1f}" for c in cats))
    if any(r["fallback_rate"] for r in rows.values()):
        lines += ["", "note: some questions fell back to the plain query (no or failing LLM): "
                      "those rows do not measure expansion or reranking"]
    return "\n".join(lines)

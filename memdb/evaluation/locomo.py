"""The LoCoMo retrieval evaluation: every dialog turn one memory, every question one search.

:func:`run_locomo` loads a LoCoMo-format file, stores it in a scratch database (one subject per
conversation, the turn's ``dia_id`` as source_id, the session date as created_at, and - by
default - a search_context of the session date and the previous turn), runs each question once
per configuration with ``MemoryStore.search(question, k=max(ks), subject=sample_id, ...)`` and
returns recall@k / MRR per route and category, latency and timings. :func:`format_table`
prints it. Question vectors are computed in one batch first and passed as ``embedding=``, so
the latency figures are the database round trip; embedding time is reported separately.

>>> result = run_locomo("../shared/data/locomo/locomo_dev.json")
>>> print(format_table(result))
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from ..core.embeddings import Embedder, embedder_from_env
from ..core.query_cache import QueryCache
from ..families.store import MemoryInput, MemoryStore
from ..retrieval.search import DEFAULT_OPTIONS, SearchOptions
from ._locomo_data import Conversation, Question, Turn, load_locomo
from ._metrics import QuestionResult, format_table, percentile, score_question, summarize
from ._scratch import scratch_database
from ._vector_cache import PassageVectorCache, embed_passages_cached

__all__ = ["run_locomo", "format_table", "load_locomo", "DEFAULT_CONFIGS", "memory_inputs"]

# name -> search settings: any SearchOptions field (over DEFAULT_OPTIONS), plus "as_of":
# "conversation_end" to search as of the conversation's last session date (which makes
# decay ages relative to when the questions are asked; every turn is valid then). The route
# rows are one route alone: without the default's neighbour expansion and temporal boost.
_ROUTE_ALONE = {"neighbors": 0, "temporal": 0}
DEFAULT_CONFIGS: dict[str, dict[str, Any]] = {
    "vector": {"routes": ["vector"], **_ROUTE_ALONE},
    "bm25": {"routes": ["bm25"], **_ROUTE_ALONE},
    "hybrid": {},
    "hybrid_mmr": {"mmr": 0.7},
    "hybrid_decay": {"decay_weight": 0.3, "half_life_days": 365, "as_of": "conversation_end"},
}


class Progress:
    """Rate-limited progress lines on stderr."""

    def __init__(self, enabled: bool, every: float = 3.0) -> None:
        self.enabled, self.every = enabled, every
        self._last = 0.0

    def __call__(self, what: str, done: int, total: int, started: float) -> None:
        now = time.perf_counter()
        if not self.enabled or (done < total and now - self._last < self.every):
            return
        self._last = now
        rate = done / max(now - started, 1e-9)
        print(f"[locomo] {what}: {done}/{total} ({rate:.1f}/s)", file=sys.stderr, flush=True)


def _date(turn: Turn) -> str:
    return f"{turn.date.day} {turn.date:%B %Y}" if turn.date else ""


def memory_inputs(conv: Conversation, search_context: bool = True) -> list[MemoryInput]:
    """One episodic memory per turn; with ``search_context`` its context is the session date
    and the previous turn of the same session (indexed and embedded, not returned). A turn's
    session_id is its session's ("session_3") and the n-th turn of a session is created n
    seconds after the session's date, so the search option ``neighbors`` finds a turn's
    neighbours in its own session, in order."""
    out, prev, nth = [], None, 0
    for turn in conv.turns:
        nth = nth + 1 if prev is not None and prev.session == turn.session else 0
        context = None
        if search_context:
            before = prev.content if prev is not None and prev.session == turn.session else ""
            context = "\n".join(x for x in (_date(turn), before) if x) or None
        out.append(MemoryInput(content=turn.content, subject=conv.sample_id, kind="episodic",
                               category="events", source_id=turn.dia_id,
                               session_id=f"session_{turn.session}",
                               created_at=turn.date and turn.date + timedelta(seconds=nth),
                               search_context=context))
        prev = turn
    return out


def _search_kwargs(config: Mapping[str, Any], conv: Conversation) -> dict[str, Any]:
    opts = SearchOptions.of({k: v for k, v in config.items() if k != "as_of"})
    kwargs: dict[str, Any] = {"options": opts.over(DEFAULT_OPTIONS)}
    as_of = config.get("as_of")
    if as_of == "conversation_end":  # the last session's last turn (turns are a second apart)
        kwargs["as_of"] = conv.last_date and conv.last_date + timedelta(seconds=len(conv.turns))
    elif as_of is not None:
        kwargs["as_of"] = as_of
    return kwargs


def describe(config: Mapping[str, Any]) -> dict[str, Any]:
    described = dict(DEFAULT_OPTIONS.replace(**{k: v for k, v in config.items() if k != "as_of"})
                     .to_json())
    if "as_of" in config:
        described["as_of"] = str(config["as_of"])
    return described


@dataclass
class Collected:
    """Every question's result under every configuration, from one stored snapshot.

    ``questions[i]`` is ``(sample_id, Question)``; ``results[name][i]`` its
    :class:`~memdb.evaluation._metrics.QuestionResult` under configuration ``name``."""

    questions: list[tuple[str, Question]]
    results: dict[str, list[QuestionResult]]
    memories: int
    turns: int
    unknown_evidence_ids: list[str]
    timings: dict[str, float]
    vector_cache: dict[str, Any] = field(default_factory=dict)  # used, hits, misses, path


@contextlib.contextmanager
def _without_query_cache(embedder: Any) -> Iterator[None]:
    """``embedder`` with its query cache (memdb.core.query_cache, process-wide by default) off for
    the block, so a question another run already asked is embedded again, not looked up."""
    cache = getattr(embedder, "query_cache", None)
    if cache is None:
        yield
        return
    embedder.query_cache = QueryCache(0)
    try:
        yield
    finally:
        embedder.query_cache = cache


def collect(convs: Sequence[Conversation], *, dsn: str | None,
            ks: Sequence[int], configs: Mapping[str, Mapping[str, Any]], progress: bool = True,
            search_context: bool = True, embedder: Embedder | None = None,
            vector_cache: bool = False) -> Collected:
    """Store ``convs`` once in a scratch database (each turn embedded once) and run every
    question once per configuration; per-question results, for any summary or fold split.
    ``vector_cache``: take the turns' vectors from (and add them to) the on-disk
    :class:`~memdb.evaluation._vector_cache.PassageVectorCache`."""
    started = time.perf_counter()
    show = Progress(progress)
    for config in configs.values():  # bad settings fail before any work
        _search_kwargs(config, Conversation(""))
        describe(config)
    questions = [(conv, q) for conv in convs for q in conv.questions]
    embedder = embedder or embedder_from_env()
    timings: dict[str, float] = {}

    # embed every passage (in length order: less padding per batch, ~25% faster on the local
    # model), then every question in one batch
    inputs = [(conv, memory_inputs(conv, search_context)) for conv in convs]
    flat = [item for _, items in inputs for item in items]
    t0 = time.perf_counter()
    cache = PassageVectorCache(embedder) if vector_cache else None
    passage_vectors, cache_stats = embed_passages_cached(
        embedder, [i.embedding_text() for i in flat], cache,
        lambda done, total, t: show("embedding turns", done, total, t))
    for item, vec in zip(flat, passage_vectors, strict=True):
        item.embedding = vec
    if progress and cache is not None:
        print(f"[locomo] vector cache {cache.path}: {cache_stats['hits']} turns cached, "
              f"{cache_stats['misses']} embedded", file=sys.stderr, flush=True)
    timings["embed_turns_s"] = time.perf_counter() - t0
    single = []  # one query at a time, past the query cache: the model's own time
    with _without_query_cache(embedder):
        for _, q in questions[:20]:
            t1 = time.perf_counter()
            embedder.embed_queries([q.question])
            single.append(1000 * (time.perf_counter() - t1))
    timings["embed_single_query_p50_ms"] = percentile(single, 50)
    t0 = time.perf_counter()
    vectors = embedder.embed_queries([q.question for _, q in questions]) if questions else []
    timings["embed_queries_s"] = time.perf_counter() - t0
    timings["embed_ms_per_question"] = 1000 * timings["embed_queries_s"] / max(len(questions), 1)

    results: dict[str, list[QuestionResult]] = {}
    with scratch_database(dsn) as scratch, MemoryStore(scratch, embedder=embedder,
                                                       gate=None) as store:
        t0 = time.perf_counter()
        dia_ids: dict[Any, set[str]] = {}
        for n, (_, items) in enumerate(inputs, start=1):
            for item, res in zip(items, store.add_many(items), strict=True):
                dia_ids.setdefault(res.id, set()).add(item.source_id or "")
            show("storing conversations", n, len(inputs), t0)
        timings["store_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        for name, config in configs.items():
            out: list[QuestionResult] = []
            kwargs = {id(conv): _search_kwargs(config, conv) for conv in convs}
            if questions:  # warm the pool and the plan cache outside the measurement
                store.search(questions[0][1].question, k=ks[-1], subject=questions[0][0].sample_id,
                             embedding=vectors[0], **kwargs[id(questions[0][0])])
            t_route = time.perf_counter()
            for n, ((conv, q), vec) in enumerate(zip(questions, vectors, strict=True), start=1):
                t1 = time.perf_counter()
                hits = store.search(q.question, k=ks[-1], subject=conv.sample_id, embedding=vec,
                                    **kwargs[id(conv)])
                ms = 1000 * (time.perf_counter() - t1)
                ranked = [dia_ids.get(h.memory.id, {h.memory.source_id or ""}) for h in hits]
                out.append(score_question(q.evidence, ranked, ks, q.category, ms))
                show(f"searching [{name}]", n, len(questions), t_route)
            results[name] = out
        timings["search_s"] = time.perf_counter() - t0
    timings["total_s"] = time.perf_counter() - started
    known = {(conv.sample_id, t.dia_id) for conv in convs for t in conv.turns}
    return Collected(
        questions=[(conv.sample_id, q) for conv, q in questions], results=results,
        memories=len(dia_ids), turns=len(flat),
        unknown_evidence_ids=sorted({f"{c.sample_id}/{e}" for c, q in questions
                                     for e in q.evidence if (c.sample_id, e) not in known}),
        timings=timings, vector_cache=cache_stats)


def check_ks(ks: Sequence[int]) -> list[int]:
    """Sorted distinct cut-offs; ValueError outside 1..1000."""
    out = sorted({int(k) for k in ks})
    if not out or out[0] < 1 or out[-1] > 1000:
        raise ValueError("ks must be integers between 1 and 1000")
    return out


def run_locomo(path: str | os.PathLike[str], *, dsn: str | None = None,
               ks: Sequence[int] = (5, 10, 25, 50),
               configs: Mapping[str, Mapping[str, Any]] | None = None, progress: bool = True,
               limit_conversations: int | None = None, search_context: bool = True,
               embedder: Embedder | None = None, vector_cache: bool = False) -> dict[str, Any]:
    """Evaluate retrieval on a LoCoMo-format file; see the module docstring.

    ``dsn``: any database on the server to use (default ``$MEMDB_DSN``, else the embedded
    server); a scratch database ``memdb_eval_<pid>_<random>`` is created there and dropped at
    the end, also on SIGTERM (see :mod:`memdb.evaluation._scratch`). ``configs``: name ->
    search settings (default :data:`DEFAULT_CONFIGS`).
    ``search_context``: index each turn with the session date and the previous turn.
    ``vector_cache``: reuse the turns' vectors of earlier runs (see
    :mod:`memdb.evaluation._vector_cache`; ``meta.vector_cache`` reports hits and misses).
    """
    ks = check_ks(ks)
    configs = dict(DEFAULT_CONFIGS if configs is None else configs)
    convs = load_locomo(path, limit_conversations)
    embedder = embedder or embedder_from_env()
    run = collect(convs, dsn=dsn, ks=ks, configs=configs, progress=progress,
                  search_context=search_context, embedder=embedder, vector_cache=vector_cache)
    return {
        "dataset": str(path),
        "questions": len(run.questions),
        "memories": run.memories,
        "ks": ks,
        "routes": {name: summarize(results, ks) for name, results in run.results.items()},
        "meta": {
            "search_context": search_context,
            "embedder": getattr(embedder, "model", type(embedder).__name__),
            "configs": {name: describe(config) for name, config in configs.items()},
            "turns": run.turns,
            "no_evidence_questions": sum(1 for _, q in run.questions if not q.evidence),
            "unknown_evidence_ids": run.unknown_evidence_ids,
            "timings": {k: round(v, 3) for k, v in run.timings.items()},
            "vector_cache": run.vector_cache,
        },
    }

"""Where the evidence the default search misses on LoCoMo is, per question category.

Stores the turns once (memdb.evaluation.locomo.memory_inputs, the eval's cached vectors) in a
scratch database and runs every question twice with the default options, scoped to its
conversation as the eval searches: k = 10 (what the eval scores) and a deep search (k and
depth 1000: every route ranks every turn it finds). For each evidence turn missing from the
top 10 it records the turn's fused rank in the deep search (bucketed), whether some route ranks
it within the default depth (50: the candidate pool it could be fused from), its vector rank,
and whether it shares a query term with the question (memdb.query_terms against the turn's
stored terms, the conversation's speaker names left out: BM25 drops them as too common). Per
category also: how many sessions a question's evidence spans, and, for questions naming one of
the conversation's two speakers, the share of evidence turns and of top-10 turns spoken by that
speaker. Prints the JSON and writes it.

    python benchmarks/locomo_misses.py ../shared/data/locomo/locomo_dev.json \
        --json benchmarks/baselines/eval_misses_dev.json
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import psycopg
from _server import emit  # noqa: I001  (benchmarks/ sibling module)
from temporal_ab import locomo_turns

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from memdb import MemoryStore  # noqa: E402
from memdb.evaluation._locomo_data import load_locomo  # noqa: E402
from memdb.evaluation._metrics import CATEGORY_NAMES  # noqa: E402
from memdb.evaluation._scratch import scratch_database  # noqa: E402
from memdb.retrieval.search import DEFAULT_OPTIONS  # noqa: E402

POOL = 50  # search_hybrid's default depth at k = 10
BUCKETS = ((20, "11-20"), (50, "21-50"), (100, "51-100"), (300, "101-300"), (1000, ">300"))


def _bucket(rank: int | None) -> str:
    return next((name for top, name in BUCKETS if rank is not None and rank <= top), "not found")


def run(path: str, limit: int | None) -> dict[str, Any]:
    convs = load_locomo(path, limit)
    speaker = {(c.sample_id, t.dia_id): t.speaker for c in convs for t in c.turns}
    people = {c.sample_id: sorted({t.speaker for t in c.turns}) for c in convs}
    embedder, inputs, questions, q_vectors = locomo_turns(path, limit, "locomo_misses")
    cats: dict[int, dict[str, Any]] = {}
    with scratch_database(None) as scratch, \
            MemoryStore(scratch, embedder=embedder, gate=None) as store:
        dia: dict[str, set[str]] = {}  # memory id -> its turns' dia ids (identical turns: one)
        for items in inputs:
            for item, res in zip(items, store.add_many(items), strict=True):
                dia.setdefault(str(res.id), set()).add(item.source_id or "")
        deep = DEFAULT_OPTIONS.replace(depth=1000)
        with psycopg.connect(store.db.admin_dsn) as conn:
            terms = {mid: set(lexemes) for mid, lexemes in conn.execute(
                "SELECT id::text, array(SELECT lexeme FROM unnest(tsv)) FROM memdb.memories")}

            def query_terms(text: str) -> set[str]:
                row = conn.execute("SELECT memdb.query_terms(%s)", (text,)).fetchone()
                return set(row[0] or ())

            names = {sid: set().union(*(query_terms(p) for p in ps)) for sid, ps in people.items()}
            asked = [q for c in convs for q in c.questions]
            for (sid, text), vec, q in zip(questions, q_vectors, asked, strict=True):
                _one(cats, store, sid, text, vec, q, dia, deep, terms, names[sid], speaker,
                     people[sid], query_terms)
    return {"dataset": path, "questions": len(questions), "default_depth": POOL,
            "options": DEFAULT_OPTIONS.to_json(),
            "categories": {CATEGORY_NAMES.get(c, str(c)): _summary(v)
                           for c, v in sorted(cats.items())}}


def _one(cats: dict[int, dict[str, Any]], store: MemoryStore, sid: str, text: str,
         vec: Any, q: Any, dia: dict[str, set[str]], deep: Any, terms: dict[str, set[str]],
         names: set[str], speaker: dict[tuple[str, str], str], people: list[str],
         query_terms: Any) -> None:
    cat = cats.setdefault(q.category, {
        "questions": 0, "with_evidence": 0, "evidence_turns": 0, "recall@10": [],
        "missed_turns": 0, "missed_rank": Counter(), "missed_in_pool": 0,
        "missed_vector_ranks": [], "missed_sharing_a_term": 0, "evidence_sessions": Counter(),
        "one_speaker_named": 0, "evidence_by_named": [0, 0], "top10_by_named": [0, 0]})
    cat["questions"] += 1
    evidence = set(q.evidence)
    if not evidence:
        return
    top = [d for h in store.search(text, k=10, subject=sid, embedding=vec)
           for d in sorted(dia[str(h.memory.id)])]
    hits = store.search(text, k=1000, subject=sid, embedding=vec, options=deep)
    found = {d: (rank, h) for rank, h in enumerate(hits, start=1) for d in dia[str(h.memory.id)]}
    cat["with_evidence"] += 1
    cat["evidence_turns"] += len(evidence)
    cat["recall@10"].append(len(evidence & set(top)) / len(evidence))
    cat["evidence_sessions"][len({e.split(":")[0] for e in evidence})] += 1
    words = query_terms(text) - names
    for e in sorted(evidence - set(top)):
        rank, hit = found.get(e, (None, None))
        cat["missed_turns"] += 1
        cat["missed_rank"][_bucket(rank)] += 1
        if hit is None:
            continue
        d = hit.details
        cat["missed_in_pool"] += any(d[f"{r}_rank"] is not None and d[f"{r}_rank"] <= POOL
                                     for r in ("vector", "bm25", "exact"))
        if d["vector_rank"] is not None:
            cat["missed_vector_ranks"].append(d["vector_rank"])
        cat["missed_sharing_a_term"] += bool(words & terms[str(hit.memory.id)])
    named = [p for p in people if re.search(rf"\b{re.escape(p)}\b", text)]
    if len(named) == 1:
        cat["one_speaker_named"] += 1
        for counts, turns in ((cat["evidence_by_named"], evidence), (cat["top10_by_named"], top)):
            said = [speaker.get((sid, t)) for t in turns if (sid, t) in speaker]
            counts[0] += sum(s == named[0] for s in said)
            counts[1] += len(said)


def _summary(cat: dict[str, Any]) -> dict[str, Any]:
    share = (lambda c: round(c[0] / c[1], 3) if c[1] else None)  # noqa: E731
    ranks = cat["missed_vector_ranks"]
    return {
        "questions": cat["questions"], "with_evidence": cat["with_evidence"],
        "evidence_turns": cat["evidence_turns"],
        "recall@10": round(statistics.fmean(cat["recall@10"]), 4) if cat["recall@10"] else None,
        "missed_turns": cat["missed_turns"],
        "missed_deep_rank": {name: cat["missed_rank"][name]
                             for _, name in BUCKETS + ((0, "not found"),)},
        "missed_in_a_route_top_50": cat["missed_in_pool"],
        "missed_vector_rank_median": statistics.median(ranks) if ranks else None,
        "missed_sharing_a_query_term": cat["missed_sharing_a_term"],
        "evidence_sessions": dict(sorted(cat["evidence_sessions"].items())),
        "one_speaker_named": cat["one_speaker_named"],
        "evidence_by_named_speaker": share(cat["evidence_by_named"]),
        "top10_by_named_speaker": share(cat["top10_by_named"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path")
    parser.add_argument("--limit", type=int, help="only the first N conversations")
    parser.add_argument("--json", default="benchmarks/baselines/eval_misses_dev.json")
    args = parser.parse_args()
    emit(run(args.path, args.limit), Path(args.json))


if __name__ == "__main__":
    main()

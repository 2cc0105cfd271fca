"""The entity graph route on LoCoMo, cross-validated like `memdb eval locomo --folds`.

The entity graph route is meant for questions that name two entities. The graph is a
separate method (`store.graph.search`: `memdb.search_hybrid_graph` fuses the default hybrid
search's list with the graph route's), so the eval's `--mechanism` (a `SearchOptions` field)
cannot switch it; this script measures it on the same data instead. It stores the turns once
(memdb.evaluation.locomo.memory_inputs, the eval's cached vectors) in a scratch database, links
every turn with `store.graph.link` (no LLM: the heuristic extractor), and runs every question
with the default search and with `graph.search` over a grid of the outer fusion's constants
(graph weight x rrf_k; hops 1 and 2), all scoped to the question's conversation as the eval
searches. The grid is the mechanism's candidates in `memdb.evaluation.crossval.cross_validate`
(five folds, one conversation each, the category rule): each fold chooses the graph setting
on its four training conversations. Also reported per setting: recall@10 on the questions
whose text names two or more of the graph's entities (`memdb.query_entities`), the subset the
issue names, and what the heuristic extracted. Prints the JSON and writes it.

The heuristic takes capitalised sentence-initial words for names ("Thanks", "Great", "Have"
in chat turns). `--clean-entities` checks that the verdict does not hang on them: for this run
only, a capitalised word whose lower-case form occurs in lower case in the file's turns is no
name (added to the extractor's sentence-initial stop words in this process; memdb unchanged).

    python benchmarks/locomo_graph_route.py ../shared/data/locomo/locomo_dev.json \
        --json benchmarks/baselines/eval_graph_route.json
    python benchmarks/locomo_graph_route.py ../shared/data/locomo/locomo_dev.json \
        --clean-entities --json benchmarks/baselines/eval_graph_route_clean_entities.json
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path
from typing import Any

from _server import emit  # noqa: I001  (benchmarks/ sibling module)
from psycopg.types.json import Jsonb
from temporal_ab import locomo_turns

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from memdb import MemoryStore  # noqa: E402
from memdb.evaluation._locomo_data import load_locomo  # noqa: E402
from memdb.evaluation._metrics import score_question, summarize  # noqa: E402
from memdb.evaluation._scratch import scratch_database  # noqa: E402
from memdb.evaluation.crossval import cross_validate, won_lost  # noqa: E402
from memdb.families import _graph_extract  # noqa: E402

K = 10
WEIGHTS = (0.1, 0.3, 0.5, 1.0)
RRF_KS = (5, 60)
HOPS = (1, 2)


def grid() -> dict[str, dict[str, Any]]:
    return {
        f"graph w={w} rrf_k={rk} hops={h}": {"weights": {"graph": w}, "rrf_k": rk, "hops": h}
        for w in WEIGHTS
        for rk in RRF_KS
        for h in HOPS
    }


def _summary(results: list, idx: list[int]) -> dict[str, Any]:
    """The eval's own figures (`memdb.evaluation._metrics.summarize`) over questions ``idx``."""
    return summarize([results[i] for i in idx], [5, K]) if idx else {"questions": 0}


def clean_entities(convs: list) -> int:
    """Words that occur in lower case in the turns stop being names (this process only)."""
    lower = {
        w
        for c in convs
        for t in c.turns
        for w in re.findall(r"[A-Za-z']+", t.content)
        if w.islower()
    }
    _graph_extract._STOP_CAPS = set(_graph_extract._STOP_CAPS) | lower
    return len(lower)


def run(path: str, limit: int | None, clean: bool = False) -> dict[str, Any]:
    convs = load_locomo(path, limit)
    cleaned = clean_entities(convs) if clean else None
    evidence = [(c.sample_id, q) for c in convs for q in c.questions]
    embedder, inputs, questions, q_vectors = locomo_turns(path, limit, "locomo_graph_route")
    settings = grid()
    results: dict[str, list] = {}
    timings: dict[str, float] = {}
    with (
        scratch_database(None) as scratch,
        MemoryStore(scratch, embedder=embedder, gate=None) as store,
    ):
        dia: dict[Any, set[str]] = {}
        for items in inputs:
            for item, res in zip(items, store.add_many(items), strict=True):
                dia.setdefault(res.id, set()).add(item.source_id or "")
        t0 = time.perf_counter()
        linked = store.graph.link()
        timings["link_s"] = time.perf_counter() - t0
        with store.core.read() as conn:
            counts = conn.execute(
                "SELECT (SELECT count(*) FROM memdb.entities) AS entities,"
                " (SELECT count(*) FROM memdb.entity_mentions) AS mentions,"
                " (SELECT count(*) FROM memdb.entity_relations) AS relations"
            ).fetchone()
            top = conn.execute(
                "SELECT e.name, count(*) AS memories FROM memdb.entities e"
                " JOIN memdb.entity_mentions m ON m.entity_id = e.id"
                " GROUP BY e.name ORDER BY 2 DESC, 1 LIMIT 20"
            ).fetchall()
            named = [
                conn.execute(
                    "SELECT count(DISTINCT lower(name)) AS n"
                    " FROM memdb.query_entities(%s, %s, NULL, %s)",
                    (store.tenant, q, Jsonb({"subject": s})),
                ).fetchone()["n"]
                for s, q in questions
            ]
        for name, config in [("default", None), *settings.items()]:
            out = []
            t0 = time.perf_counter()
            for (subject, query), vec, (_, q) in zip(questions, q_vectors, evidence, strict=True):
                t1 = time.perf_counter()
                if config is None:
                    hits = store.search(query, k=K, subject=subject, embedding=vec)
                else:
                    hits = store.graph.search(query, k=K, subject=subject, embedding=vec, **config)
                ms = 1000 * (time.perf_counter() - t1)
                ranked = [dia.get(h.memory.id, {h.memory.source_id or ""}) for h in hits]
                out.append(score_question(q.evidence, ranked, [5, K], q.category, ms))
            timings[f"{name}_s"] = time.perf_counter() - t0
            results[name] = out
            print(
                f"[locomo_graph_route] {name}: R@10 "
                f"{100 * summarize(out, [K])['overall_with_adversarial']['recall@10']:.1f}",
                file=sys.stderr,
            )
    everyone = list(range(len(questions)))
    two = [i for i, n in enumerate(named) if n >= 2]
    cv = (
        cross_validate(
            [s for s, _ in questions],
            results,
            folds=min(5, len(convs)),
            default="default",
            base=["default"],
            mechanisms={"graph": list(settings)},
        )
        if len(convs) > 1
        else None
    )
    return {
        "data": str(path),
        "questions": len(questions),
        "turns": sum(map(len, inputs)),
        "clean_entities": clean,
        "lower_case_words_not_names": cleaned,
        "link": {
            "linked": linked.linked,
            "paths": linked.paths,
            **counts,
            "top_entities": [dict(r) for r in top],
        },
        "questions_naming_entities": {str(n): named.count(n) for n in sorted(set(named))},
        "settings": {
            name: {
                "config": settings.get(name),
                "all": _summary(res, everyone),
                "naming_two_or_more": _summary(res, two),
                "won_lost_vs_default": won_lost(results["default"], res, K),
            }
            for name, res in results.items()
        },
        "cv": cv
        and {
            "verdict": cv["mechanisms"]["graph"],
            "per_fold": [
                {
                    "test": r["test_conversations"],
                    "chosen": r["mechanisms"]["graph"]["chosen"],
                    "delta_recall@10": r["mechanisms"]["graph"]["delta_recall@10_vs_without"],
                }
                for r in cv["per_fold"]
            ],
        },
        "timings": timings,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("path")
    ap.add_argument("--limit", type=int, help="only the first N conversations")
    ap.add_argument(
        "--clean-entities",
        action="store_true",
        help="words found in lower case in the turns are no names (this run only)",
    )
    ap.add_argument("--json", default="benchmarks/baselines/eval_graph_route.json")
    args = ap.parse_args()
    emit(run(args.path, args.limit, args.clean_entities), Path(args.json))


if __name__ == "__main__":
    main()

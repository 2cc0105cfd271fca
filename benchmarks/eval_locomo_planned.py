"""The planned-retrieval ablation on LoCoMo (development split by default).

Like ``memdb eval locomo`` (every dialog turn one memory with its session date and previous
turn as search context, one subject per conversation), except that turns are not filed as
``events`` by hand: they are classified at write (``category=None``), as an agent's memories
would be. Every question then runs, same snapshot, same k, as:

- ``flat``: ``store.search`` (tuned hybrid);
- ``+scope``: one typed query in the category the write-time classifier gives the question;
- ``+planner``: the heuristic intent plan;
- ``+planner+hotness``: the same with hotness 0.3 (as of the conversation's last session);
- ``+planner unanchored``: the plan without anchoring (``recall(anchor=False)``): scoped routes
  may pull memories past the flat top k;

scoped rows once per ``--backstops`` weight (default: recall's). Every row runs once per k of
``--k`` with that k requested (recall@k of a k run, so anchoring is judged at its own k; MRR
from the smallest k) and counts the questions whose recall@k rose or fell against flat. Prints
recall@k, MRR, won/lost, empty rate, degraded rate and latency, and writes JSON to
benchmarks/results/locomo_planned.json.

    python benchmarks/eval_locomo_planned.py [PATH] [--limit N] [--k 5,10]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from memdb import MemoryStore  # noqa: E402
from memdb.core.embeddings import embedder_from_env  # noqa: E402
from memdb.evaluation._locomo_data import load_locomo  # noqa: E402
from memdb.evaluation._metrics import score_question, summarize  # noqa: E402
from memdb.evaluation._scratch import scratch_database  # noqa: E402
from memdb.evaluation.locomo import memory_inputs  # noqa: E402
from memdb.retrieval.planner import heuristic_plan  # noqa: E402
from memdb.retrieval.recall import DEFAULT_BACKSTOP  # noqa: E402

sys.path.insert(0, str(HERE))
from eval_intent import scope_plan  # noqa: E402

# EVAL_WITH_GENERAL=0/1 overrides recall's default (memdb.retrieval.recall.WITH_GENERAL)
WITH_GENERAL = {"0": False, "1": True}.get(os.environ.get("EVAL_WITH_GENERAL", ""))
DEFAULT_PATH = HERE.parent.parent / "shared" / "data" / "locomo" / "locomo_dev.json"


def run(path: Path, ks: list[int], limit: int | None, backstops: list[float]) -> dict:
    convs = load_locomo(path, limit)
    questions = [(c, q) for c in convs for q in c.questions]
    embedder = embedder_from_env()
    timings: dict[str, float] = {}
    inputs = [(c, [replace(i, category=None) for i in memory_inputs(c)]) for c in convs]
    flat_items = [i for _, items in inputs for i in items]
    t0 = time.perf_counter()
    ordered = sorted(flat_items, key=lambda i: len(i.embedding_text()))
    for start in range(0, len(ordered), 64):
        batch = ordered[start:start + 64]
        for item, vec in zip(batch, embedder.embed_passages([i.embedding_text() for i in batch]),
                             strict=True):
            item.embedding = vec
        print(f"[locomo] embedded {start + len(batch)}/{len(ordered)}", file=sys.stderr,
              flush=True)
    timings["embed_turns_s"] = time.perf_counter() - t0
    vectors = embedder.embed_queries([q.question for _, q in questions])
    configs: dict[str, tuple | None] = {"flat": None}
    for backstop in backstops:
        label = f"b={backstop:g}"
        configs[f"+scope {label}"] = ("scope", 0.0, backstop)
        configs[f"+planner {label}"] = ("planner", 0.0, backstop)
        configs[f"+planner+hotness {label}"] = ("planner", 0.3, backstop)
        configs[f"+planner unanchored {label}"] = ("planner", 0.0, backstop, False)
    rows: dict[str, dict] = {}
    categories: dict[str, int] = {}
    intents: dict[str, int] = {}
    # gate=None: every turn is stored, as `memdb eval locomo` does (the default gate would
    # refuse hedged or sourceless turns and the questions' evidence with them)
    with scratch_database(None) as scratch, \
            MemoryStore(scratch, embedder=embedder, gate=None) as store:
        store.trace_recall = False
        dia: dict = {}
        for _, items in inputs:
            for item, res in zip(items, store.add_many(items), strict=True):
                dia.setdefault(res.id, set()).add(item.source_id or "")
        for c in convs:
            for m in store.list(subject=c.sample_id, limit=100_000):
                categories[m.category.value] = categories.get(m.category.value, 0) + 1
        for _, q in questions:
            intent = heuristic_plan(q.question).intent
            intents[intent] = intents.get(intent, 0) + 1
        flat_recall: dict[int, list[float]] = {}
        for name, cfg in configs.items():
            t_route = time.perf_counter()
            by_k: dict[int, dict] = {}
            for k in ks:
                results, degraded = [], 0
                for (conv, q), vec in zip(questions, vectors, strict=True):
                    if cfg is None:
                        t1 = time.perf_counter()
                        hits = store.search(q.question, k=k, subject=conv.sample_id,
                                            embedding=vec)
                        ms = 1000 * (time.perf_counter() - t1)
                    else:
                        kind, hot, backstop, *anchor = cfg
                        plan = (scope_plan(q.question) if kind == "scope"
                                else heuristic_plan(q.question))
                        hits = store.recall(q.question, k=k, subject=conv.sample_id,
                                            embedding=vec, plan=plan, hotness=hot,
                                            backstop=backstop, with_general=WITH_GENERAL,
                                            anchor=anchor[0] if anchor else None,
                                            as_of=conv.last_date)
                        ms = hits.timings["db_ms"]
                        degraded += hits.status.value == "degraded"
                    ranked = [dia.get(h.memory.id, {h.memory.source_id or ""}) for h in hits]
                    results.append(score_question(q.evidence, ranked, [k], q.category, ms))
                block = summarize(results, [k])
                block["degraded_rate"] = degraded / max(len(questions), 1)
                per_q = [r.recall[k] for r in results if 1 <= r.category <= 4]
                if cfg is None:
                    flat_recall[k] = per_q
                block["won_lost_vs_flat"] = [
                    sum(b > a + 1e-9 for a, b in zip(flat_recall[k], per_q, strict=True)),
                    sum(b < a - 1e-9 for a, b in zip(flat_recall[k], per_q, strict=True))]
                by_k[k] = block
            first = by_k[ks[0]]
            rows[name] = {**first, "by_k": {str(k): b for k, b in by_k.items()},
                          "overall": {**{f"recall@{k}": by_k[k]["overall"][f"recall@{k}"]
                                         for k in ks},
                                      "mrr": first["overall"]["mrr"]}}
            print(f"[locomo] {name}: {time.perf_counter() - t_route:.0f} s", file=sys.stderr,
                  flush=True)
    return {"dataset": str(path), "conversations": len(convs), "questions": len(questions),
            "ks": ks, "rows": rows, "memory_categories": categories,
            "question_intents": intents, "timings": timings}


def table(result: dict) -> str:
    ks = result["ks"]
    head = ("config".ljust(26) + "".join(f"{f'R@{k}':>8}" for k in ks)
            + f"{f'MRR@{ks[0]}':>8}{'won/lost':>10}{'empty':>8}{'degr':>8}{'p50ms':>8}"
            f"{'p95ms':>8}")
    lines = [f"LoCoMo planned ablation: {result['dataset']} ({result['conversations']} "
             f"conversations, {result['questions']} questions; categories 1-4)", head]
    for name, r in result["rows"].items():
        o = r["overall"]
        lines.append(name.ljust(26) + "".join(f"{100 * o[f'recall@{k}']:>8.1f}" for k in ks)
                     + f"{100 * o['mrr']:>8.1f}"
                     + f"{'{}/{}'.format(*r['won_lost_vs_flat']):>10}"
                     + f"{100 * r['empty_rate']:>8.1f}"
                     f"{100 * r['degraded_rate']:>8.1f}{r['p50_ms']:>8.1f}{r['p95_ms']:>8.1f}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("path", nargs="?", default=str(DEFAULT_PATH))
    parser.add_argument("--k", default="5,10")
    parser.add_argument("--limit", type=int, help="Only the first N conversations.")
    parser.add_argument("--backstops", default=f"{DEFAULT_BACKSTOP:g}",
                        help="Comma-separated backstop weights to compare (0 = strict).")
    parser.add_argument("--json", default=str(HERE / "results" / "locomo_planned.json"))
    args = parser.parse_args()
    if "MEMDB_DSN" not in os.environ and "MEMDB_HOME" not in os.environ:
        os.environ["MEMDB_HOME"] = tempfile.mkdtemp(prefix="memdb-eval-")
    result = run(Path(args.path), sorted(int(k) for k in args.k.split(",")), args.limit,
                 [float(b) for b in args.backstops.split(",") if b.strip()])
    print(table(result))
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, ensure_ascii=False, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()

"""Ablation of directory-organized, intent-aware retrieval on the labeled set.

Loads ``benchmarks/data/intent_memories.jsonl`` (80 memories with stable keys, Chinese and
English, classified at write; ``age_days`` sets created_at, ``uses`` calls mark_used) into a
scratch database as one subject, then runs every query of ``intent_queries.jsonl`` (195
labeled queries, 98 Chinese, with the expected memory keys and intent) once per
configuration, same snapshot, same k:

- ``flat``: ``store.search`` (hybrid, tuned defaults) — the baseline;
- ``+scope``: the query classified by the write-time rules (memdb.write.classify) → one typed query
  in that category (general → all), via ``store.recall`` without hotness;
- ``+planner``: the heuristic intent planner's plan, without hotness;
- ``+hotness``: the same plus hotness (weight 0.3, never on system); recall's defaults leave
  hotness off (it lowered recall@5 on both sets);
- ``+planner unanchored``: the plan with ``recall(anchor=False)``: scoped routes may pull
  memories past the flat top k (anchored rows hold flat's top k, ordered by the plan).

Scoped rows run once per ``--backstops`` weight (default: recall's, memdb.retrieval.recall.
DEFAULT_BACKSTOP, the weight of the all-categories route beside the scoped ones); 0 leaves it
to the fallback (when a route finds nothing) and the anchor. Each row also counts the queries
whose recall@k rose or fell against flat (won/lost). ``EVAL_WITH_GENERAL=0/1``
overrides whether scoped queries also search 'general' (recall's default: yes).

Reports intent accuracy, scope hit (the expected memory's category is among those searched),
top-1 category hit, recall@5, MRR, empty-result rate, degraded rate and p50/p95 database
latency (query vectors are computed beforehand; typed queries whose text differs from the
query are embedded inside recall and reported apart as embed time). Prints a table and writes
JSON to benchmarks/results/intent_ablation.json (or --json OUT).

    python benchmarks/eval_intent.py [--k 5] [--dsn DSN] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from memdb import MemoryStore, QueryPlan, TypedQuery  # noqa: E402
from memdb.core.embeddings import embedder_from_env  # noqa: E402
from memdb.evaluation._metrics import percentile  # noqa: E402
from memdb.evaluation._scratch import scratch_database  # noqa: E402
from memdb.retrieval.planner import heuristic_plan  # noqa: E402
from memdb.retrieval.recall import DEFAULT_BACKSTOP  # noqa: E402
from memdb.write.classify import classify  # noqa: E402

SUBJECT = "me"
# EVAL_WITH_GENERAL=0/1 overrides recall's default (memdb.retrieval.recall.WITH_GENERAL)
WITH_GENERAL = {"0": False, "1": True}.get(os.environ.get("EVAL_WITH_GENERAL", ""))


def load(name: str) -> list[dict]:
    with open(HERE / "data" / name, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def scope_plan(query: str) -> QueryPlan:
    """Category scoping without the planner: the write-time classifier applied to the query."""
    found = classify(query)
    cats = () if found.category.value == "general" else (found.category.value,)
    return QueryPlan(query, "n/a", (TypedQuery(query, cats, "semantic", 1.0),), "heuristic")


def run(k: int, dsn: str | None, backstops: dict[str, float]) -> dict:
    memories, queries = load("intent_memories.jsonl"), load("intent_queries.jsonl")
    embedder = embedder_from_env()
    now = datetime.now(UTC)
    t0 = time.perf_counter()
    qvecs = embedder.embed_queries([q["query"] for q in queries])
    embed_s = time.perf_counter() - t0
    rows: dict[str, dict] = {}
    # gate=None: the labeled memories are a fixed snapshot (sourceless on purpose), not writes
    # the default gate should judge
    with scratch_database(dsn) as scratch, \
            MemoryStore(scratch, embedder=embedder, gate=None) as store:
        store.trace_recall = False
        results = store.add_many([{"content": m["content"], "subject": SUBJECT,
                                   "created_at": now - timedelta(days=m["age_days"])}
                                  for m in memories])
        key_of = {r.id: m["key"] for r, m in zip(results, memories, strict=True)}
        id_of = {m["key"]: r.id for r, m in zip(results, memories, strict=True)}
        category_of = {m.id: m.category.value for m in store.list(subject=SUBJECT, limit=1000)}
        for m in memories:
            for _ in range(m["uses"]):
                store.mark_used([id_of[m["key"]]])
        with store.core.transaction() as conn:
            conn.execute("ANALYZE memdb.memories")

        configs: dict[str, tuple | None] = {"flat": None}
        for label, backstop in backstops.items():
            configs[f"+scope {label}"] = ("scope", 0.0, backstop)
            configs[f"+planner {label}"] = ("planner", 0.0, backstop)
            configs[f"+planner+hotness {label}"] = ("planner", 0.3, backstop)
            configs[f"+planner unanchored {label}"] = ("planner", 0.0, backstop, False)
        flat_recall: list[float] = []
        for name, cfg in configs.items():
            per_q = []
            for q, vec in zip(queries, qvecs, strict=True):
                expected = {id_of[e] for e in q["expected"]}
                if cfg is None:
                    t1 = time.perf_counter()
                    hits = store.search(q["query"], k=k, subject=SUBJECT, embedding=vec)
                    ms, embed_ms = 1000 * (time.perf_counter() - t1), 0.0
                    plan, status, searched = None, "n/a", ()
                else:
                    kind, hot, backstop, *anchor = cfg
                    plan = scope_plan(q["query"]) if kind == "scope" else heuristic_plan(q["query"])
                    hits = store.recall(q["query"], k=k, subject=SUBJECT, embedding=vec,
                                        plan=plan, hotness=hot, backstop=backstop,
                                        with_general=WITH_GENERAL,
                                        anchor=anchor[0] if anchor else None)
                    ms, embed_ms = hits.timings["db_ms"], hits.timings["embed_ms"]
                    status, searched = hits.status.value, plan.categories
                ranked = [h.memory.id for h in hits]
                rr = next((1 / n for n, i in enumerate(ranked, 1) if i in expected), 0.0)
                exp_cats = {category_of[i] for i in expected}
                per_q.append({
                    "id": q["id"], "lang": q["lang"], "intent": q["intent"],
                    "recall": len(expected & set(ranked[:k])) / len(expected), "rr": rr,
                    "empty": not ranked, "ms": ms, "embed_ms": embed_ms, "status": status,
                    "intent_ok": None if plan is None or kind == "scope"
                    else plan.intent == q["intent"],
                    "scope_hit": (not searched) or bool(exp_cats & set(searched)),
                    "top1_cat": bool(ranked) and category_of.get(ranked[0]) in exp_cats,
                    "hits": [key_of.get(i, str(i)) for i in ranked],
                })
            rows[name] = summarize(per_q)
            if cfg is None:
                flat_recall = [x["recall"] for x in per_q]
            rows[name]["won_lost_vs_flat"] = [
                sum(x["recall"] > f + 1e-9 for f, x in zip(flat_recall, per_q, strict=True)),
                sum(x["recall"] < f - 1e-9 for f, x in zip(flat_recall, per_q, strict=True))]
    return {"k": k, "queries": len(queries),
            "zh_queries": sum(q["lang"] == "zh" for q in queries), "memories": len(memories),
            "embed_queries_s": round(embed_s, 3), "rows": rows,
            "memory_categories": _counts(category_of.values())}


def _counts(values) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return dict(sorted(out.items()))


def summarize(per_q: list[dict]) -> dict:
    def block(items: list[dict]) -> dict:
        n = len(items)
        intents = [x["intent_ok"] for x in items if x["intent_ok"] is not None]
        return {
            "n": n,
            "intent_accuracy": sum(intents) / len(intents) if intents else None,
            "scope_hit": sum(x["scope_hit"] for x in items) / n,
            "top1_category_hit": sum(x["top1_cat"] for x in items) / n,
            "recall@k": sum(x["recall"] for x in items) / n,
            "mrr": sum(x["rr"] for x in items) / n,
            "empty_rate": sum(x["empty"] for x in items) / n,
            "degraded_rate": sum(x["status"] == "degraded" for x in items) / n,
            "p50_ms": round(percentile([x["ms"] for x in items], 50), 2),
            "p95_ms": round(percentile([x["ms"] for x in items], 95), 2),
            "embed_p95_ms": round(percentile([x["embed_ms"] for x in items], 95), 2),
        }
    intents = sorted({x["intent"] for x in per_q})
    return {"all": block(per_q), "zh": block([x for x in per_q if x["lang"] == "zh"]),
            "en": block([x for x in per_q if x["lang"] == "en"]),
            "by_intent": {i: block([x for x in per_q if x["intent"] == i]) for i in intents},
            "misses": [{"id": x["id"], "hits": x["hits"][:3]} for x in per_q if x["recall"] < 1]}


def table(result: dict) -> str:
    k = result["k"]
    head = (f"{'config':<25}{'intent':>7}{'scope':>7}{'top1cat':>8}{f'R@{k}':>7}{'R@5 zh':>7}"
            f"{'R@5 en':>7}{'MRR':>7}{'won/lost':>9}{'empty':>7}{'degr':>6}{'p50ms':>7}"
            f"{'p95ms':>7}")
    lines = [f"intent ablation: {result['queries']} queries ({result['zh_queries']} zh), "
             f"{result['memories']} memories, k={k}", head]
    for name, r in result["rows"].items():
        a = r["all"]
        ia = "-" if a["intent_accuracy"] is None else f"{100 * a['intent_accuracy']:.1f}"
        lines.append(f"{name:<25}{ia:>7}{100 * a['scope_hit']:>7.1f}"
                     f"{100 * a['top1_category_hit']:>8.1f}{100 * a['recall@k']:>7.1f}"
                     f"{100 * r['zh']['recall@k']:>7.1f}{100 * r['en']['recall@k']:>7.1f}"
                     f"{100 * a['mrr']:>7.1f}{'{}/{}'.format(*r['won_lost_vs_flat']):>9}"
                     f"{100 * a['empty_rate']:>7.1f}"
                     f"{100 * a['degraded_rate']:>6.1f}{a['p50_ms']:>7.1f}{a['p95_ms']:>7.1f}")
    rows = result["rows"]
    default = f"+planner b={DEFAULT_BACKSTOP:g}"
    planned = default if default in rows else next(
        (name for name in rows if name.startswith("+planner b=")), None)
    if planned:
        lines += ["", f"per labeled intent: queries, intent accuracy, R@{k} and MRR of flat and "
                  f"{planned}",
                  f"{'intent':<22}{'n':>4}{'intent':>8}{'R flat':>8}{'R plan':>8}"
                  f"{'MRR flat':>9}{'MRR plan':>9}"]
        for intent, b in rows[planned]["by_intent"].items():
            f = rows["flat"]["by_intent"][intent]
            lines.append(f"{intent:<22}{b['n']:>4}{100 * b['intent_accuracy']:>8.1f}"
                         f"{100 * f['recall@k']:>8.1f}{100 * b['recall@k']:>8.1f}"
                         f"{100 * f['mrr']:>9.1f}{100 * b['mrr']:>9.1f}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--dsn", default=os.environ.get("MEMDB_DSN"))
    parser.add_argument("--backstops", default=f"{DEFAULT_BACKSTOP:g}",
                        help="Comma-separated backstop weights to compare (0 = strict).")
    parser.add_argument("--json", default=str(HERE / "results" / "intent_ablation.json"))
    args = parser.parse_args()
    if not args.dsn and "MEMDB_HOME" not in os.environ:
        os.environ["MEMDB_HOME"] = tempfile.mkdtemp(prefix="memdb-eval-")
    backstops = {f"b={float(b):g}": float(b) for b in args.backstops.split(",") if b.strip()}
    result = run(args.k, args.dsn, backstops)
    print(table(result))
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, ensure_ascii=False, indent=2), encoding="utf-8")
    print(f"\nwritten to {out}", file=sys.stderr)


if __name__ == "__main__":
    main()

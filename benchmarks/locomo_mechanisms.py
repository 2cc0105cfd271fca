"""Neighbour expansion and pseudo-relevance feedback on LoCoMo, against the default search.

One stored snapshot (memdb.evaluation.locomo.collect: every turn one memory, questions embedded
once beforehand, so the latency columns are the database round trip), every question run once
per configuration: the default hybrid, neighbour-expansion variants, PRF variants, and the
default again at the end (the machine's drift between the first and the last configuration).
Prints recall@5/@10 and MRR overall (categories 1-4) and per category, the questions won and
lost at recall@10 against the default, and p50/p95 database latency; writes the JSON.

This is a single split, not cross-validation: the settings it shows are candidates for
``memdb eval locomo --folds 5 --mechanism neighbors --mechanism prf``, which decides.

    python benchmarks/locomo_mechanisms.py ../shared/data/locomo/locomo_dev.json \
        --json benchmarks/baselines/eval_locomo_mechanisms.json
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from memdb.evaluation._metrics import summarize
from memdb.evaluation.locomo import collect, describe, load_locomo

KS = [5, 10, 25, 50]
CONFIGS: dict[str, dict[str, Any]] = {
    "hybrid": {},
    "nb1_w0.5": {"neighbors": 1, "neighbor_weight": 0.5},
    "nb1_w0.3": {"neighbors": 1, "neighbor_weight": 0.3},
    "nb2_w0.5": {"neighbors": 2, "neighbor_weight": 0.5},
    "prf10_t10_a0.5": {"prf": 10},
    "prf5_t10_a0.7": {"prf": 5, "prf_weight": 0.7},
    "prf10_t20_a0.5": {"prf": 10, "prf_terms": 20},
    "hybrid_again": {},
}
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}


def run(path: str, limit: int | None, configs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    collected = collect(load_locomo(path, limit), dsn=None, ks=KS, configs=configs)
    base = collected.results["hybrid"]
    out: dict[str, Any] = {
        "dataset": path, "questions": len(collected.questions), "memories": collected.memories,
        "ks": KS, "routes": {}, "won_lost_r10_vs_hybrid": {},
        "meta": {"configs": {n: describe(c) for n, c in configs.items()},
                 "timings": {k: round(v, 3) for k, v in collected.timings.items()},
                 "note": "configurations run one after another on one snapshot"}}
    for name, results in collected.results.items():
        out["routes"][name] = summarize(results, KS)
        per_category: dict[str, list[int]] = {}
        for mine, default in zip(results, base, strict=True):
            counts = per_category.setdefault(str(mine.category), [0, 0])
            counts[0] += mine.recall[10] > default.recall[10]
            counts[1] += mine.recall[10] < default.recall[10]
        out["won_lost_r10_vs_hybrid"][name] = {
            "won": sum(c[0] for c in per_category.values()),
            "lost": sum(c[1] for c in per_category.values()), "per_category": per_category}
    return out


def table(out: dict[str, Any]) -> str:
    lines = [f"{'config':16} {'category':12} {'n':>4} {'R@5':>6} {'R@10':>6} {'MRR':>6} "
             f"{'won/lost':>9} {'p50 ms':>7} {'p95 ms':>7}"]
    for name, r in out["routes"].items():
        wl = out["won_lost_r10_vs_hybrid"][name]
        o = r["overall"]
        lines.append(f"{name:16} {'overall 1-4':12} {'':>4} {100 * o['recall@5']:6.1f} "
                     f"{100 * o['recall@10']:6.1f} {100 * o['mrr']:6.1f} "
                     f"{wl['won']:>4}/{wl['lost']:<4} {r['p50_ms']:7.1f} {r['p95_ms']:7.1f}")
        for cat, b in r["per_category"].items():
            won, lost = wl["per_category"].get(cat, [0, 0])
            lines.append(f"{'':16} {CATEGORIES.get(int(cat), cat):12} {b['count']:>4} "
                         f"{100 * b['recall@5']:6.1f} {100 * b['recall@10']:6.1f} "
                         f"{100 * b['mrr']:6.1f} {won:>4}/{lost:<4}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path")
    parser.add_argument("--json", dest="out", help="write the JSON here")
    parser.add_argument("--limit", type=int, help="only the first N conversations")
    parser.add_argument("--configs", help="comma-separated subset of " + ",".join(CONFIGS))
    args = parser.parse_args()
    configs = CONFIGS if not args.configs else {
        k: CONFIGS[k] for k in args.configs.split(",")}
    if "hybrid" not in configs:
        configs = {"hybrid": {}, **configs}
    out = run(args.path, args.limit, configs)
    print(table(out))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump(out, fh, indent=1)
            fh.write("\n")


if __name__ == "__main__":
    main()

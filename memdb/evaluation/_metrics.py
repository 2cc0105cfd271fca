"""Retrieval metrics as the LoCoMo paper defines them, and their summary per route.

recall@k = the fraction of a question's evidence ids among the top-k retrieved ids (1 for a
question without evidence); MRR = 1 / rank of the first evidence hit (0 if none, 1 without
evidence). Headline figures ("overall") exclude category 5 (adversarial);
"overall_with_adversarial" has all five.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["QuestionResult", "score_question", "summarize", "percentile", "format_table"]

CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop",
                  5: "adversarial"}


@dataclass(frozen=True)
class QuestionResult:
    category: int
    recall: dict[int, float]
    rr: float
    empty: bool
    ms: float


def score_question(evidence: Sequence[str], ranked: Sequence[set[str]], ks: Sequence[int],
                   category: int, ms: float) -> QuestionResult:
    """``ranked[i]`` is the set of dia ids behind the i-th hit (more than one when identical
    turns were stored as one memory)."""
    if not evidence:
        return QuestionResult(category, {k: 1.0 for k in ks}, 1.0, not ranked, ms)
    wanted = set(evidence)
    recall, seen, rr = {}, set(), 0.0
    for rank, ids in enumerate(ranked, start=1):
        if rr == 0.0 and ids & wanted:
            rr = 1.0 / rank
        seen |= ids
        if rank in ks:
            recall[rank] = len(seen & wanted) / len(wanted)
    for k in ks:  # fewer hits than k: recall at k is what was found at all
        recall.setdefault(k, len(seen & wanted) / len(wanted))
    return QuestionResult(category, recall, rr, not ranked, ms)


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolation percentile (q in [0, 100]); 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100.0
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def _mean_block(results: Sequence[QuestionResult], ks: Sequence[int]) -> dict[str, float]:
    n = len(results)
    block = {f"recall@{k}": (sum(r.recall[k] for r in results) / n if n else 0.0) for k in ks}
    block["mrr"] = sum(r.rr for r in results) / n if n else 0.0
    return block


def summarize(results: Sequence[QuestionResult], ks: Sequence[int]) -> dict:
    """One route's figures: overall (categories 1-4), overall_with_adversarial, per_category
    (with counts), empty_rate, p50_ms and p95_ms of the search wall time."""
    per_category = {}
    for cat in sorted({r.category for r in results}):
        subset = [r for r in results if r.category == cat]
        per_category[str(cat)] = {"count": len(subset), **_mean_block(subset, ks)}
    times = [r.ms for r in results]
    return {
        "overall": _mean_block([r for r in results if 1 <= r.category <= 4], ks),
        "overall_with_adversarial": _mean_block(results, ks),
        "per_category": per_category,
        "empty_rate": sum(r.empty for r in results) / len(results) if results else 0.0,
        "p50_ms": round(percentile(times, 50), 3),
        "p95_ms": round(percentile(times, 95), 3),
    }


def format_table(result: dict) -> str:
    """A plain-text report of a :func:`memdb.evaluation.run_locomo` result (percentages)."""
    ks = result["ks"]
    routes = result["routes"]
    width = max([len("route")] + [len(name) for name in routes]) + 2
    cols = [f"R@{k}" for k in ks] + ["MRR"]
    keys = [f"recall@{k}" for k in ks] + ["mrr"]

    def row(name: str, block: dict) -> str:
        return name.ljust(width) + "".join(f"{100 * block[key]:>8.1f}" for key in keys)

    header = "route".ljust(width) + "".join(f"{c:>8}" for c in cols)
    lines = [f"LoCoMo retrieval: {result['dataset']} ({result['questions']} questions, "
             f"{result['memories']} memories)"]
    for title, key in (("categories 1-4 (headline)", "overall"),
                       ("all five categories (with adversarial)", "overall_with_adversarial")):
        lines += ["", title, header]
        lines += [row(name, r[key]) for name, r in routes.items()]
    first = next(iter(routes.values()))["per_category"] if routes else {}
    cats = sorted(first, key=int)
    k_mid = 10 if 10 in ks else ks[0]
    labels = [f"{CATEGORY_NAMES.get(int(c), c)}({first[c]['count']})" for c in cats]
    lines += ["", f"recall@{k_mid} per category (question count)",
              "route".ljust(width) + "".join(f"{label:>17}" for label in labels)]
    for name, r in routes.items():
        lines.append(name.ljust(width) + "".join(
            f"{100 * r['per_category'][c][f'recall@{k_mid}']:>17.1f}" for c in cats))
    lines += ["", "route".ljust(width) + f"{'p50 ms':>9}{'p95 ms':>9}{'empty %':>9}"]
    for name, r in routes.items():
        lines.append(name.ljust(width) + f"{r['p50_ms']:>9.1f}{r['p95_ms']:>9.1f}"
                     f"{100 * r['empty_rate']:>9.1f}")
    meta = result.get("meta") or {}
    if meta.get("timings"):
        t = meta["timings"]
        lines += ["", "timings: " + ", ".join(f"{k} {v}" for k, v in t.items())]
    return "\n".join(lines)

"""remember without waiting: what the caller waits for.

``store.remember(turn, wait=False)`` keeps the turn as said (one embedded write) and enqueues
its extraction; this measures the time it returns in against ``add`` of the same text (target:
p95 <= 1.5x add's p95), interleaved so that both see the same machine. Then ``add`` and
``search`` latency with no remember job queued and again with the benchmark's jobs queued
(the queue must not slow them; each phase writes and searches a subject of its own, so both
search the same number of rows). Embedded server in a temporary MEMDB_HOME (or $MEMDB_DSN), the
bundled local embedder with one thread, the default write gate, no LLM.

    python benchmarks/remember_async.py --out benchmarks/baselines/remember_async.json
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time
from datetime import UTC, datetime

from _server import emit  # benchmarks/ sibling module

TURNS = ["I'm allergic to peanuts, case {i}.", "我对花生过敏，第{i}次。",
         "Please always answer in French, note {i}.", "以后都用中文回答，第{i}条。"]


def _summary(times: list[float]) -> dict[str, float]:
    times = sorted(times)
    return {"p50_ms": round(statistics.median(times), 2),
            "p95_ms": round(times[int(0.95 * (len(times) - 1))], 2), "n": len(times)}


def _add_search(store, samples: int, tag: str) -> dict[str, dict[str, float]]:
    add_ms, search_ms = [], []
    for i in range(samples):
        t0 = time.perf_counter()
        store.add(TURNS[i % 4].format(i=f"{tag}{i}"), subject=f"probe-{tag}",
                  source_id=f"{tag}{i}")
        t1 = time.perf_counter()
        store.search("花生 peanuts", 10, subject=f"probe-{tag}")
        t2 = time.perf_counter()
        add_ms.append((t1 - t0) * 1000)
        search_ms.append((t2 - t1) * 1000)
    return {"add": _summary(add_ms), "search": _summary(search_ms)}


def run(samples: int) -> dict:
    from memdb import MemoryStore

    out: dict = {"samples": samples}
    with MemoryStore(tenant="bench") as store:
        store.migrate()
        store.add("warm up 预热", subject="bench", source_id="warm-up")
        out["before"] = _add_search(store, samples, "a")
        add_ms, later_ms = [], []
        for i in range(samples):  # interleaved pairs: the same text shape, fresh each time
            t0 = time.perf_counter()
            store.add(TURNS[i % 4].format(i=f"p{i}"), subject="bench", source_id=f"p{i}")
            t1 = time.perf_counter()
            store.remember(TURNS[i % 4].format(i=f"r{i}"), subject="bench", wait=False)
            t2 = time.perf_counter()
            add_ms.append((t1 - t0) * 1000)
            later_ms.append((t2 - t1) * 1000)
        out["pairs"] = {"add": _summary(add_ms), "remember_wait_false": _summary(later_ms)}
        out["pairs"]["p95_ratio"] = round(out["pairs"]["remember_wait_false"]["p95_ms"]
                                          / out["pairs"]["add"]["p95_ms"], 2)
        out["queued_jobs"] = store.jobs.stats().get("queued")
        out["after"] = _add_search(store, samples, "b")
    out["machine"] = {"cpus": os.cpu_count(), "platform": platform.platform(),
                      "python": platform.python_version(),
                      "omp_threads": os.environ.get("OMP_NUM_THREADS")}
    out["date"] = datetime.now(UTC).isoformat(timespec="seconds")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--out", help="write the JSON here too")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if not os.environ.get("MEMDB_DSN"):
        os.environ.setdefault("MEMDB_HOME", tempfile.mkdtemp(prefix="memdb-remember-bench-"))
    for name in ("MEMDB_LLM_MODEL", "MEMDB_LLM_BASE_URL"):
        os.environ.pop(name, None)
    result = run(args.samples)
    emit(result, args.out)


if __name__ == "__main__":
    main()

"""The job queue's overhead (memdb.jobs, docs/jobs.md): database time of claim + complete per
job with 10,000 jobs queued, and worker throughput per core with a no-op and a heuristic
handler (the keyword classifier, memdb.write.classify: what extraction without a model costs).

Per job the worker runs two transactions: the claim (memdb.claim_jobs) and the handler's
(memdb.start_job, the handler, memdb.complete_job). "claim+complete" is their wall time seen
from the client on loopback (round trips included, no handler work), median and p95 over
``--samples`` jobs taken from a queue that holds 10,000 jobs of one tenant and 100 of each of
ten others. Throughput: jobs per second of one worker thread (one core), and of ``--cores``
threads, draining ``--drain`` jobs.

    python benchmarks/jobs.py --out benchmarks/baselines/jobs.json
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

QUEUED = 10_000


def _summary(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    return {"p50_ms": round(statistics.median(ordered), 3),
            "p95_ms": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 3),
            "n": len(ordered)}


def _fill(store, tenant: str, n: int, kind: str) -> None:
    with store.db.transaction(tenant=tenant) as conn:
        conn.execute("SELECT memdb.enqueue_job(%s, %s, jsonb_build_object('text', "
                     "'Alice prefers green tea; 爱丽丝喜欢绿茶 #' || g), NULL, NULL, 5, %s) "
                     "FROM generate_series(1, %s) AS g", (tenant, kind, n + 1, n))


def run(samples: int, drain: int, cores: int) -> dict:
    from memdb import MemoryStore
    from memdb.families.jobs import Registry, Worker
    from memdb.write.classify import classify

    reg = Registry()
    reg.register("bench.noop", lambda ctx: None)
    reg.register("bench.heuristic",
                 lambda ctx: {"category": classify(ctx.job.payload["text"]).category.value})
    out: dict = {}
    with MemoryStore(tenant="bench") as store:
        store.migrate()
        _fill(store, "bench", QUEUED, "bench.noop")
        for n in range(10):
            _fill(store, f"other{n}", 100, "bench.noop")
        worker = Worker(store.db.dsn, handlers=reg)
        claim_ms, complete_ms, both_ms = [], [], []
        for _ in range(samples):
            t0 = time.perf_counter()
            job = worker.claim(1)[0]
            t1 = time.perf_counter()
            assert worker.handle(job) == "done"
            t2 = time.perf_counter()
            claim_ms.append((t1 - t0) * 1000)
            complete_ms.append((t2 - t1) * 1000)
            both_ms.append((t2 - t0) * 1000)
        worker.stop()
        out["queued"] = {"bench": QUEUED, "others": 10 * 100}
        out["claim"] = _summary(claim_ms)
        out["start_and_complete"] = _summary(complete_ms)
        out["claim_plus_complete"] = _summary(both_ms)
        for kind in ("bench.noop", "bench.heuristic"):
            for threads in sorted({1, cores}):
                _fill(store, "drain", drain, kind)  # (the 10,000 stay queued meanwhile)
                w = Worker(store.db.dsn, handlers=reg, concurrency=threads, tenants=["drain"])
                start = time.perf_counter()
                counts = w.run(until_idle=True)
                took = time.perf_counter() - start
                assert counts["done"] == drain, counts
                out[f"throughput_{kind.split('.')[1]}_{threads}_threads"] = {
                    "jobs_per_s": round(drain / took, 1),
                    "jobs_per_s_per_thread": round(drain / took / threads, 1)}
    out["machine"] = {"cpus": os.cpu_count(), "platform": platform.platform(),
                      "python": platform.python_version()}
    out["date"] = datetime.now(UTC).isoformat(timespec="seconds")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=500)
    parser.add_argument("--drain", type=int, default=2000)
    parser.add_argument("--cores", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--out", help="write the JSON here too")
    args = parser.parse_args()
    if not os.environ.get("MEMDB_DSN"):
        os.environ.setdefault("MEMDB_HOME", tempfile.mkdtemp(prefix="memdb-jobs-bench-"))
    result = run(args.samples, args.drain, args.cores)
    emit(result, args.out)


if __name__ == "__main__":
    main()

"""Worker throughput of ``remember`` jobs, per core: with no model (heuristic extraction) and
with the project's local llama.cpp model (tests/local_llm.py: Gemma 3 270M Q4_K_M, one
server thread, one request at a time).

``store.remember(turn, wait=False)`` keeps each turn and enqueues a ``remember`` job
(memdb/families/jobs/remember.py); a :class:`memdb.families.jobs.Worker` with ``--concurrency``
threads then
drains them (``run(until_idle=True)``, timed; the enqueueing is not). The worker's stores
use the embedded server and the bundled local embedder; with the model they read
``MEMDB_LLM_BASE_URL`` / ``MEMDB_LLM_MODEL`` / ``MEMDB_LLM_API_KEY`` from the running
server (``LocalLLM.env()``). Reported: jobs/s, jobs/s per core (``os.cpu_count()``: the
model server, the database and the embedder share those cores with the worker) and per
worker thread, and how many jobs took each path (``heuristic`` also counts model replies
that were junk or late: the job falls back; ``fallback_reasons`` says why).

The model part is skipped, with the reason, when the server is not prepared
(``python -m tests.local_llm prepare`` builds it; about 10-20 min cold).

    python benchmarks/jobs_remember.py --out benchmarks/baselines/jobs_remember.json
"""

from __future__ import annotations

import argparse
import collections
import os
import platform
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from _server import emit  # benchmarks/ sibling module

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

TURNS = ["I'm allergic to peanuts; note {i}.", "我对花生过敏，第{i}次提到。",
         "My sister Ana lives in Lisbon and works as a nurse ({i}).",
         "以后都用中文回答，我住在杭州，第{i}条。"]
LLM_ENV = ("MEMDB_LLM_BASE_URL", "MEMDB_LLM_MODEL", "MEMDB_LLM_API_KEY")


def _drain(store, jobs: int, concurrency: int, tag: str, use_llm: bool) -> dict:
    from memdb import MemoryStore
    from memdb.families.jobs import Worker

    ids = [store.remember(TURNS[i % 4].format(i=i), subject=f"bench-{tag}",
                          turn_id=f"{tag}-{i}", wait=False,
                          **({} if use_llm else {"llm": None})).job_id
           for i in range(jobs)]
    dsn = store.db.dsn
    worker = Worker(dsn, concurrency=concurrency, tenants=["bench"], kinds=["remember"],
                    store_factory=lambda t: MemoryStore(dsn, tenant=t, pool_size=2))
    start = time.perf_counter()
    counts = worker.run(until_idle=True)
    took = time.perf_counter() - start
    results = [store.jobs.get(i).result or {} for i in ids]
    paths = collections.Counter(r.get("path") for r in results)
    reasons = collections.Counter(str(r.get("fallback_reason"))[:60] for r in results
                                  if r.get("fallback_reason"))
    assert counts["done"] == jobs, counts
    cores = os.cpu_count() or 1
    return {"jobs": jobs, "concurrency": concurrency, "seconds": round(took, 2),
            "jobs_per_s": round(jobs / took, 3),
            "jobs_per_s_per_core": round(jobs / took / cores, 3),
            "jobs_per_s_per_thread": round(jobs / took / concurrency, 3),
            "paths": dict(paths), "fallback_reasons": dict(reasons)}


def run(jobs: int, llm_jobs: int, concurrency: int) -> dict:
    from memdb import MemoryStore

    for name in LLM_ENV:  # the heuristic run has no model, whatever the shell says
        os.environ.pop(name, None)
    out: dict = {}
    with MemoryStore(tenant="bench") as store:
        store.migrate()
        store.add("warm up 预热", subject="bench", source_id="warm-up")
        out["heuristic"] = _drain(store, jobs, concurrency, "h", use_llm=False)
        if llm_jobs:
            from tests.local_llm import LocalLLMUnavailable, running_server

            try:
                with running_server(build=False) as server:
                    os.environ.update(server.env())
                    try:
                        # one request at a time: the server has one slot (-np 1)
                        out["local_llm"] = {"model": server.model,
                                            **_drain(store, llm_jobs, 1, "m", use_llm=True)}
                    finally:
                        for name in LLM_ENV:
                            os.environ.pop(name, None)
            except LocalLLMUnavailable as exc:
                reason = str(exc).splitlines()[0]
                print(f"local model skipped: {reason}", file=sys.stderr)
                out["local_llm"] = {"skipped": reason}
    out["machine"] = {"cpus": os.cpu_count(), "platform": platform.platform(),
                      "python": platform.python_version()}
    out["date"] = datetime.now(UTC).isoformat(timespec="seconds")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=100, help="remember jobs, no model")
    parser.add_argument("--llm-jobs", type=int, default=5,
                        help="remember jobs with the local model (0: skip it)")
    parser.add_argument("--concurrency", type=int, default=os.cpu_count() or 1,
                        help="worker threads for the heuristic run")
    parser.add_argument("--out", help="write the JSON here too")
    args = parser.parse_args()
    if not os.environ.get("MEMDB_DSN"):
        os.environ.setdefault("MEMDB_HOME", tempfile.mkdtemp(prefix="memdb-jobs-remember-"))
    result = run(args.jobs, args.llm_jobs, args.concurrency)
    emit(result, args.out)


if __name__ == "__main__":
    main()

"""Search latency under each shared_buffers size of the embedded server, one run.

For each size (``--sizes``, default ``128MB,default``: PostgreSQL's own default against memdb's,
a quarter of the machine's memory up to 8 GB), stops the embedded server of ``--home``
(memdb.core.embedded.stop_server), starts it again with ``MEMDB_SHARED_BUFFERS`` (unset for
``default``) and measures a database that ``benchmarks/search_latency.py --keep`` loaded there
(``--db``, same ``--n``/``--subjects``/``--seed``) two ways:

- ``search_latency``: ``search_latency.py --reuse`` (new connections, every scenario of a
  query back to back), ``--runs`` times; the last run is reported (the first refills the
  buffers the restart emptied);
- ``steady``: one store (one long-lived connection) searching every query ``--passes`` times,
  the last pass reported: hybrid one subject, hybrid whole tenant and the vector route alone
  whole tenant, each query's three searches back to back (as in search_latency.py);
- ``vector_alone`` (with ``--vector-alone``, instead of the two above): the same store
  searching the vector route alone whole tenant, every query ``--passes`` times, nothing else
  between: no other search of the same query has just read its pages.

Print and write one JSON document (default benchmarks/results/shared_buffers.json). The
server is left running with the last size; restart it as you need it afterwards.

    python benchmarks/search_latency.py --dsn "$(memdb server status --json | jq -r .admin_dsn)" \\
        --keep --hnsw-after-load            # with MEMDB_HOME=HOME: prints the kept database
    python benchmarks/shared_buffers.py --home HOME --db memdb_bench_search_... --n 100000
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import psycopg
from _server import RandomEmbedder, emit, with_db  # noqa: I001  (benchmarks/ sibling module)
from search_latency import TENANT, synthetic_docs, synthetic_queries

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from memdb import MemoryStore  # noqa: E402
from memdb.core.embedded import EmbeddedServer, stop_server  # noqa: E402

DEFAULT_OUT = ROOT / "benchmarks" / "results" / "shared_buffers.json"
ENV = "MEMDB_SHARED_BUFFERS"


def _stats(ms: list[float]) -> dict[str, float]:
    a = np.asarray(ms)
    return {"p50": round(float(np.percentile(a, 50)), 2),
            "p95": round(float(np.percentile(a, 95)), 2),
            "p99": round(float(np.percentile(a, 99)), 2)}


def restart(home: Path, size: str) -> tuple[EmbeddedServer, str]:
    """The embedded server of ``home`` restarted with shared_buffers ``size``."""
    stop_server(home, force=True)
    if size == "default":
        os.environ.pop(ENV, None)
    else:
        os.environ[ENV] = size
    server = EmbeddedServer(home)
    server.start()
    with psycopg.connect(server.dsn(), autocommit=True) as conn:
        shown = conn.execute("SHOW shared_buffers").fetchone()[0]
    return server, shown


def steady(dsn: str, args: argparse.Namespace) -> dict[str, dict[str, float]]:
    subjects = [f"user_{i:04d}" for i in range(args.subjects)]
    docs = synthetic_docs(args.n, subjects, args.seed)
    queries = synthetic_queries(args.queries, docs, subjects, args.seed + 100)
    store = MemoryStore(dsn, tenant=TENANT, embedder=RandomEmbedder("bench-random"), pool_size=1)
    scenarios = {"hybrid_scoped": lambda q: {"subject": q.subject},
                 "hybrid_tenant": lambda q: {},
                 "vector_tenant": lambda q: {"routes": ["vector"]}}
    times: dict[str, list[float]] = {}
    try:
        for n in range(args.passes):
            for q in queries:
                vec = np.asarray(q.vector, dtype=np.float32)
                for name, kwargs in scenarios.items():
                    start = time.perf_counter()
                    store.search(q.text, k=10, embedding=vec, **kwargs(q))
                    if n == args.passes - 1:
                        times.setdefault(name, []).append((time.perf_counter() - start) * 1000)
    finally:
        store.close()
    return {name: _stats(ms) for name, ms in times.items()}


def vector_alone(dsn: str, args: argparse.Namespace) -> dict[str, dict[str, float]]:
    subjects = [f"user_{i:04d}" for i in range(args.subjects)]
    docs = synthetic_docs(args.n, subjects, args.seed)
    queries = synthetic_queries(args.queries, docs, subjects, args.seed + 100)
    store = MemoryStore(dsn, tenant=TENANT, embedder=RandomEmbedder("bench-random"), pool_size=1)
    times: list[float] = []
    try:
        for n in range(args.passes):
            for q in queries:
                vec = np.asarray(q.vector, dtype=np.float32)
                start = time.perf_counter()
                store.search(q.text, k=10, embedding=vec, routes=["vector"])
                if n == args.passes - 1:
                    times.append((time.perf_counter() - start) * 1000)
    finally:
        store.close()
    return {"vector_tenant": _stats(times)}


def latency_runs(dsn: str, args: argparse.Namespace) -> dict:
    out: dict = {}
    for _ in range(args.runs):
        with tempfile.NamedTemporaryFile(suffix=".json") as fh:
            subprocess.run([sys.executable, str(ROOT / "benchmarks" / "search_latency.py"),
                            "--reuse", dsn, "--n", str(args.n), "--subjects",
                            str(args.subjects), "--seed", str(args.seed), "--queries",
                            str(args.queries), "--no-plans", "--json", fh.name],
                           check=True, stdout=subprocess.DEVNULL)
            out = json.loads(Path(fh.name).read_text())["latency_ms"]
    return {name: {k: v[k] for k in ("p50", "p95", "p99")} for name, v in out.items()
            if isinstance(v, dict) and "p50" in v}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, required=True, help="MEMDB_HOME of the server")
    parser.add_argument("--db", required=True, help="the database search_latency.py kept")
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--subjects", type=int, default=100)
    parser.add_argument("--seed", type=int, default=20261129)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--runs", type=int, default=2, help="search_latency runs per size (2)")
    parser.add_argument("--passes", type=int, default=2, help="steady passes per size (2)")
    parser.add_argument("--sizes", default="128MB,default")
    parser.add_argument("--vector-alone", action="store_true",
                        help="only the vector route alone, in a loop (see above)")
    parser.add_argument("--json", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    results = []
    for size in args.sizes.split(","):
        server, shown = restart(args.home, size)
        dsn = with_db(server.dsn(), args.db)
        loads = [os.getloadavg()[0]]
        row: dict = {"size": size, "shared_buffers": shown}
        if args.vector_alone:
            vector_alone(dsn, args)  # refills the buffers the restart emptied
            row["vector_alone"] = vector_alone(dsn, args)
        else:
            row["search_latency"] = latency_runs(dsn, args)
            loads.append(os.getloadavg()[0])
            row["steady"] = steady(dsn, args)
        loads.append(os.getloadavg()[0])
        row["loadavg_1min"] = [round(x, 2) for x in loads]
        results.append(row)
        for part in ("search_latency", "steady", "vector_alone"):
            if part not in row:
                continue
            for name, s in row[part].items():
                print(f"[shared_buffers] {shown:>8s} {part:14s} {name:14s} p50 {s['p50']:7.2f} "
                      f"p95 {s['p95']:7.2f} p99 {s['p99']:7.2f}", file=sys.stderr)
    emit({"benchmark": "shared_buffers", "when": datetime.now(UTC).isoformat(timespec="seconds"),
          "n": args.n, "subjects": args.subjects, "queries": args.queries, "runs": args.runs,
          "passes": args.passes, "vector_alone": args.vector_alone, "cpus": os.cpu_count(),
          "results": results,
          "median_load": round(statistics.median(x for r in results for x in r["loadavg_1min"]),
                               2)}, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

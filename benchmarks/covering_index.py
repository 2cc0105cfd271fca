"""A covering index for one subject's exact vector scan, measured, not adopted: paired on a kept
``search_latency.py`` database, with and without the index.

``--reuse DB_DSN`` names a database that ``benchmarks/search_latency.py --keep`` loaded (same
``--n``/``--subjects``/``--seed``), migrated to head. The script copies it (``CREATE DATABASE
... TEMPLATE``), builds on the copy ``memdb.memories (tenant, space_id, subject) INCLUDE (id,
expires_at, embedding) WHERE valid_to IS NULL`` (the columns the vector route's one-subject
statement reads, so PostgreSQL can answer it from the index alone), VACUUM ANALYZEs the copy,
and drops the copy at the end. Then, per query of ``search_latency.py``'s mix, paired (an
untimed call of both, a timed one, the order alternating), as the admin:

- ``vector_one_subject``: ``memdb.search_vector`` with a filter of one subject (depth 50);
- ``store_search_one_subject``: ``MemoryStore.search`` (k 10, the default options, the
  precomputed vector) with a filter of one subject, as ``memdb_app``;
- ``add_dry_run``: a single ``add_many`` of a new memory with ``dry_run=True`` (the write and
  its index insertions, rolled back), as ``memdb_app`` through ``MemoryStore``.

Reports both sides' p50/p95, the geometric mean of the paired ratios, the index's size and
build time, and how many calls differed (must be 0). Prints and writes one JSON document
(default benchmarks/results/covering_index.json).

    python benchmarks/covering_index.py --reuse DB_DSN --n 100000 --subjects 100
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from _server import RandomEmbedder, database_copy, emit, paired  # noqa: I001
from pgvector.psycopg import register_vector
from psycopg.types.json import Jsonb
from search_latency import synthetic_docs, synthetic_queries  # noqa: I001

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run from a source checkout without installing
    sys.path.insert(0, str(ROOT))

from memdb import MemoryInput, MemoryStore  # noqa: E402

DEFAULT_OUT = ROOT / "benchmarks" / "results" / "covering_index.json"
INDEX = ("CREATE INDEX memories_subject_vectors ON memdb.memories (tenant, space_id, subject)"
         " INCLUDE (id, expires_at, embedding) WHERE valid_to IS NULL")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reuse", required=True, metavar="DB_DSN",
                        help="a kept search_latency.py database at head (superuser DSN)")
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--subjects", type=int, default=100)
    parser.add_argument("--seed", type=int, default=20261129)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--json", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)

    with database_copy(args.reuse, "covering") as after:
        with psycopg.connect(after, autocommit=True) as conn:
            conn.execute("SET maintenance_work_mem = '1GB'")
            start = time.perf_counter()
            conn.execute(INDEX)
            build_s = time.perf_counter() - start
            conn.execute("VACUUM ANALYZE memdb.memories")
            index_mb = conn.execute("SELECT pg_relation_size('memdb.memories_subject_vectors')"
                                    " / 1048576.0").fetchone()[0]
            heap_mb = conn.execute("SELECT pg_relation_size('memdb.memories') / 1048576.0"
                                   ).fetchone()[0]
            database_mb = conn.execute("SELECT pg_database_size(current_database()) / 1048576.0"
                                       ).fetchone()[0]
        with psycopg.connect(args.reuse, autocommit=True) as conn:
            conn.execute("VACUUM ANALYZE memdb.memories")  # both sides freshly vacuumed
        result = run(args, {"before": args.reuse, "after": after})
    result["index"] = {"ddl": INDEX, "build_s": round(build_s, 1),
                       "size_mb": round(float(index_mb), 1), "heap_mb": round(float(heap_mb), 1),
                       "database_mb_with_it": round(float(database_mb), 1)}
    emit(result, args.json)
    return 0


def run(args: argparse.Namespace, dsns: dict[str, str]) -> dict[str, Any]:
    subjects = [f"user_{i:04d}" for i in range(args.subjects)]
    docs = synthetic_docs(args.n, subjects, args.seed)
    queries = synthetic_queries(args.queries, docs, subjects, args.seed + 100)
    conns = {side: psycopg.connect(dsn, autocommit=True) for side, dsn in dsns.items()}
    for conn in conns.values():
        register_vector(conn)
    stores = {side: MemoryStore(dsn, embedder=RandomEmbedder("bench-random-384"), pool_size=1)
              for side, dsn in dsns.items()}
    space = conns["before"].execute("SELECT min(id) FROM memdb.embedding_spaces").fetchone()[0]

    def vector(side: str, q: Any) -> list[tuple]:
        return conns[side].execute(
            "SELECT * FROM memdb.search_vector('default', %s, 50, %s, %s)",
            (q.vector, Jsonb({"subject": q.subject}), space)).fetchall()

    rng = np.random.default_rng(args.seed + 300)
    items = [MemoryInput(content=f"{q.text} {uuid.uuid4().hex[:8]}", subject=q.subject,
                         source_id=f"covering:{i}",
                         embedding=(v := rng.standard_normal(384)) / np.linalg.norm(v))
             for i, q in enumerate(queries)]
    loads = [os.getloadavg()[0]]
    results = {
        "vector_one_subject": paired({s: (lambda q, s=s: vector(s, q)) for s in dsns}, queries),
        "store_search_one_subject": paired({s: (lambda q, s=s: [
            (str(h.memory.id), round(h.score, 12)) for h in stores[s].search(
                q.text, k=10, filter={"subject": q.subject}, embedding=q.vector)]) for s in dsns},
            queries),
        "add_dry_run": paired({s: (lambda item, s=s: [r.outcome for r in stores[s].add_many(
            [item], dry_run=True)]) for s in dsns}, items),
    }
    loads.append(os.getloadavg()[0])
    plan = conns["after"].execute(
        "EXPLAIN (COSTS OFF) SELECT count(*) FROM memdb.memories m WHERE m.tenant = 'default'"
        " AND m.space_id = %s AND m.subject = %s AND m.valid_to IS NULL", (space, subjects[0]),
    ).fetchall()
    for store in stores.values():
        store.close()
    for conn in conns.values():
        conn.close()
    return {
        "benchmark": "covering_index",
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "what": "before = the kept database as memdb builds it; after = a TEMPLATE copy with a "
                "covering index for one subject's vector scan; paired per query",
        "n": args.n, "subjects": args.subjects, "queries": args.queries,
        "loadavg_1min": {"min": min(loads), "max": max(loads), "cpus": os.cpu_count()},
        "plan_after": [r[0] for r in plan],
        "results": results,
    }


if __name__ == "__main__":
    sys.exit(main())

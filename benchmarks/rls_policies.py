"""Row-level-security policies that read their settings once per statement (revision 0026)
against the per-row form of revision 0025, paired, on a kept ``search_latency.py`` database.

``--reuse DB_DSN`` names a database that ``benchmarks/search_latency.py --keep`` loaded (same
``--n``/``--subjects``/``--seed``), migrated to head. The script copies it (``CREATE DATABASE
... TEMPLATE``: the same pages, the same HNSW graph), gives the copy revision 0025's per-row
policies (the statements of alembic/versions/0026's downgrade) and drops it at the end. Then,
per query of ``search_latency.py``'s mix, each case on both databases, an untimed call of both
and a timed one, the order alternating query by query; every call as the application role
(``memdb_app``, ``memdb.tenant`` set in its transaction, as the store does):

- ``vector_one_subject``: ``memdb.search_vector`` (depth 50) with a filter of one subject;
- ``hybrid_one_subject``: ``memdb.search_hybrid`` with the store's default options;
- ``count_one_subject``: ``count(*)`` of one subject's current memories;
- ``store_search_one_subject`` / ``store_search_tenant``: ``MemoryStore.search`` (k 10, the
  default options, precomputed vector), one subject and the whole tenant;
- ``store_add_dry_run``: a single ``add_many`` of a new memory (precomputed vector) with
  ``dry_run=True``: the write, its checks and triggers, rolled back (the kept database is not
  changed).

Results must be the same on both (``differences`` counts calls that differ). Prints and writes
one JSON document (default benchmarks/results/rls_policies.json).

    python benchmarks/rls_policies.py --reuse DB_DSN --n 100000 --subjects 100
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import uuid
from collections.abc import Callable
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
from memdb.core import sql as sql_files  # noqa: E402
from memdb.retrieval.search import DEFAULT_OPTIONS  # noqa: E402

DEFAULT_OUT = ROOT / "benchmarks" / "results" / "rls_policies.json"
TENANT = "default"
AS_APP = ("SELECT set_config('role', 'memdb_app', true), set_config('memdb.tenant', %s, true),"
          " set_config('memdb.subject', '', true)")


def per_row_policies() -> list[str]:
    """Revision 0025's policies: the statements revision 0026's downgrade runs."""
    path = ROOT / "alembic" / "versions" / "0026_policy_settings_once.py"
    spec = importlib.util.spec_from_file_location("rev0026", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module.per_row_policies()


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

    with database_copy(args.reuse, "perrow") as before:
        with psycopg.connect(before, autocommit=True) as conn:
            for statement in per_row_policies():
                conn.execute(statement)
        result = run(args, {"after": args.reuse, "before": before})
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
    options = Jsonb(DEFAULT_OPTIONS.to_json())

    def as_app(side: str, statement: str, params: Any) -> list[tuple]:
        conn = conns[side]
        with conn.transaction():
            conn.execute(AS_APP, (TENANT,))
            return conn.execute(statement, params).fetchall()

    def case(statement: str, params: Callable[[Any], Any]) -> dict[str, Callable[[Any], Any]]:
        return {side: (lambda q, s=side: as_app(s, statement, params(q))) for side in dsns}

    def hits(results: Any) -> list[tuple[str, float]]:
        return [(str(h.memory.id), round(h.score, 12)) for h in results]

    rng = np.random.default_rng(args.seed + 300)
    new_items = [MemoryInput(content=f"{q.text} {uuid.uuid4().hex[:8]}", subject=q.subject,
                             source_id=f"rls:{i}",
                             embedding=(v := rng.standard_normal(384)) / np.linalg.norm(v))
                 for i, q in enumerate(queries)]
    cases: dict[str, tuple[dict[str, Callable[[Any], Any]], list[Any]]] = {
        "vector_one_subject": (case(
            "SELECT * FROM memdb.search_vector(%s, %s, 50, %s)",
            lambda q: (TENANT, q.vector, Jsonb({"subject": q.subject}))), queries),
        "hybrid_one_subject": (case(
            sql_files.query("search_hybrid"),
            lambda q: {"tenant": TENANT, "query": q.text, "embedding": q.vector, "k": 10,
                       "filter": Jsonb({"subject": q.subject}), "options": options,
                       "keyword_routes": None}), queries),
        "count_one_subject": (case(
            "SELECT count(*) FROM memdb.memories WHERE subject = %s AND valid_to IS NULL",
            lambda q: (q.subject,)), queries),
        "store_search_one_subject": ({side: (lambda q, s=side: hits(stores[s].search(
            q.text, k=10, filter={"subject": q.subject}, embedding=q.vector)))
            for side in dsns}, queries),
        "store_search_tenant": ({side: (lambda q, s=side: hits(stores[s].search(
            q.text, k=10, embedding=q.vector))) for side in dsns}, queries),
        "store_add_dry_run": ({side: (lambda item, s=side: [
            r.outcome for r in stores[s].add_many([item], dry_run=True)]) for side in dsns},
            new_items),
    }
    loads = [os.getloadavg()[0]]
    results = {}
    for name, (calls, items) in cases.items():
        results[name] = paired(calls, items)
        loads.append(os.getloadavg()[0])
        print(f"[rls_policies] {name}: {results[name]}", file=sys.stderr)
    for store in stores.values():
        store.close()
    for conn in conns.values():
        conn.close()
    return {
        "benchmark": "rls_policies",
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "what": "revision 0026's policies (settings read once per statement) = after, against "
                "revision 0025's per-row policies on a TEMPLATE copy = before; paired per "
                "query, every call as memdb_app",
        "n": args.n, "subjects": args.subjects, "queries": args.queries,
        "loadavg_1min": {"min": min(loads), "max": max(loads), "cpus": os.cpu_count()},
        "results": results,
    }


if __name__ == "__main__":
    sys.exit(main())

"""The embedded server's planner costs against PostgreSQL's defaults, paired on one database.

memdb starts the embedded server with ``random_page_cost`` 1.1 and ``effective_cache_size``
half the machine's memory (``memdb.core.embedded.planner_settings``: its pages are in
memory or on an SSD); PostgreSQL's defaults are 4 and 4GB (a spinning disk, a small cache).
This script times ``store.search`` (precomputed query vectors, the store's default options)
with both on the same database and the same pages: two stores, each setting its costs on its
own connections (libpq ``options``), every scenario of ``search_latency.py`` (hybrid, and each
route alone, one subject and the whole tenant) for every query of its mix, the two stores
alternating query by query (``_server.paired``). Each search's hits (ids, ranks and scores) are
compared: the costs change plans, never results. Then ``--adds`` single ``store.add`` calls
(a precomputed vector, the default gate, unique text) alternate between the two stores the
same way, into one subject that is deleted at the end (its memories and their history).

Measures a database ``search_latency.py --keep`` loaded (``--reuse DB_DSN`` with the same
``--n``/``--subjects``/``--seed``), or loads ``--n`` memories into a scratch database (embedded
server in a temporary home, or ``--dsn``; the HNSW index built after the load; dropped at the
end). Prints and writes one JSON document (default benchmarks/results/planner_costs.json).

    python benchmarks/planner_costs.py --n 10000 --subjects 10
    python benchmarks/planner_costs.py --reuse DB_DSN --n 100000 --subjects 100
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from _server import NewMemories, RandomEmbedder, delete_subject, emit, paired  # noqa: I001
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from search_latency import (  # noqa: I001
    SCENARIOS,
    TENANT,
    K,
    Query,
    corpus,
    corpus_arguments,
    measured_database,
)

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run from a source checkout without installing
    sys.path.insert(0, str(ROOT))

from memdb import MemoryStore  # noqa: E402
from memdb.core.embedded import planner_settings  # noqa: E402

DEFAULT_OUT = ROOT / "benchmarks" / "results" / "planner_costs.json"
POSTGRES_DEFAULTS = {"random_page_cost": "4", "effective_cache_size": "4GB"}
ADD_SUBJECT = "planner_costs_adds"


def with_settings(dsn: str, settings: dict[str, str]) -> str:
    """``dsn`` whose sessions start with ``settings`` (libpq ``options``, ``-c name=value``)."""
    params = conninfo_to_dict(dsn)
    extra = " ".join(f"-c {name}={value}" for name, value in settings.items())
    params["options"] = f"{params.get('options', '')} {extra}".strip()
    return make_conninfo(**params)


def hits(results: Any) -> list[tuple[str, int, float]]:
    return [(str(h.memory.id), h.rank, h.score) for h in results]


def adds(before_store: MemoryStore, after_store: MemoryStore, n: int, seed: int
         ) -> dict[str, Any]:
    """``n`` paired single adds (new texts: nothing to compare but the time)."""
    new = NewMemories(seed, ADD_SUBJECT)

    def add(store: MemoryStore) -> None:
        text, kwargs = new.args()
        store.add(text, **kwargs)

    return paired({"before": lambda _i: add(before_store), "after": lambda _i: add(after_store)},
                  list(range(n)))


def measure(db: str, queries: list[Query], after: dict[str, str], n_adds: int, seed: int,
            searches: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with MemoryStore(with_settings(db, POSTGRES_DEFAULTS), pool_size=1,
                     embedder=RandomEmbedder("bench-random"), gate=None) as before_store, \
            MemoryStore(with_settings(db, after), pool_size=1,
                        embedder=RandomEmbedder("bench-random"), gate=None) as after_store:
        for name, routes, scoped in SCENARIOS if searches else ():
            def call(store: MemoryStore, q: Query, routes=routes, scoped=scoped) -> Any:
                return hits(store.search(q.text, k=K, embedding=q.vector, routes=routes,
                                         filter={"subject": q.subject} if scoped else None))
            out[name] = paired({"before": lambda q, c=call: c(before_store, q),
                                "after": lambda q, c=call: c(after_store, q)}, queries)
            print(f"[planner_costs] {name}: {out[name]}", file=sys.stderr)
        if n_adds:
            try:
                out["single_add"] = adds(before_store, after_store, n_adds, seed)
            finally:
                delete_subject(db, TENANT, ADD_SUBJECT)
            print(f"[planner_costs] single_add: {out['single_add']}", file=sys.stderr)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    corpus_arguments(parser, n=10_000, subjects=10)
    parser.add_argument("--adds", type=int, default=100,
                        help="paired single adds (default 100; 0: none)")
    parser.add_argument("--no-searches", action="store_true", help="time the adds only")
    parser.add_argument("--json", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    if min(args.n, args.subjects, args.queries) < 1 or args.adds < 0:
        parser.error("--n, --subjects and --queries must be positive, --adds not negative")
    after = planner_settings()
    docs, queries = corpus(args)
    result: dict[str, Any] = {
        "benchmark": "planner_costs", "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "n": args.n, "subjects": args.subjects, "queries": args.queries, "adds": args.adds,
        "seed": args.seed,
        "before": POSTGRES_DEFAULTS, "after": after, "cpus": os.cpu_count(),
        "loadavg_1min_start": os.getloadavg()[0]}
    with measured_database(args, "memdb_bench_planner", docs, hnsw_after=True) as (db, loaded):
        if loaded is not None:
            result["load"] = loaded
        result["measured"] = measure(db, queries, after, args.adds, args.seed,
                                     not args.no_searches)
    result["loadavg_1min_end"] = os.getloadavg()[0]
    emit(result, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

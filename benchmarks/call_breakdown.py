"""Where one search and one add spend their time, database side (no model runs).

Measures a database that ``benchmarks/search_latency.py --keep`` loaded (``--reuse DB_DSN``, the
same ``--n``/``--subjects``/``--seed``), or loads one itself into a scratch database (embedded
server in a temporary home, or ``--dsn``; dropped at the end). The connection must be a
superuser's (the embedded server's is): it reads the functions' own timings and builds a scratch
table.

**Search** (``--queries`` of search_latency.py's query mix, one subject and whole tenant): per
query, each of these once, in an order rotated query by query (the first call of a query reads
its rows into the CPU's caches, the later ones find them there: rotation spreads that over all):

- ``store``: ``store.search(text, k=10, embedding=vec)`` with the store's default options;
- ``pool_sql``: the same statement and parameters through the store's pool (its transaction:
  BEGIN, the isolation settings, the statement, COMMIT in one round trip), no Python around it;
- ``direct_sql``: the statement on a superuser connection, no transaction or row-level security;
- ``direct_no_mechanisms``: the same with neighbours, speaker neighbours and the temporal boost
  off (the routes and their fusion only);
- ``vector`` / ``bm25`` / ``exact``: each route's function alone (``memdb.search_vector``,
  ``memdb.search_bm25``, ``memdb.search_exact``, depth 50, the default options' k1 and b);
- ``round_trip``: ``SELECT 1`` on the superuser connection.

The parts are differences of medians (approximate: medians do not add up exactly): Python
around the call = store - pool_sql; transaction and isolation = pool_sql - direct_sql;
mechanisms = direct_sql - direct_no_mechanisms; the routes inside the server = the three route
calls less a round trip each; fusion and validation = direct_no_mechanisms - round trip - routes.

``--usage-per-memory N`` first gives every memory use counts of N other subjects
(memdb.memory_usage, as an application calling mark_used leaves them), which no search here reads.

**Add**: ``--adds`` calls of ``store.add`` (default gate, a source id, a precomputed vector,
unique text) into subject ``call_breakdown`` with ``track_functions = 'all'`` on the
database, then the functions' own time per add (``pg_stat_user_functions``); and single-row
INSERTs into a scratch copy of ``memdb.memories`` (up to ``--scratch-rows`` of its rows, indexed
after the copy) with no index, every index of the table but the HNSW one, the HNSW index alone,
and all of them: what each index costs a write. The added memories are deleted at the end
(with their history), the scratch table dropped and ``track_functions`` reset.

``--hnsw-min-rows`` sets memdb.hnsw_min_rows on the scratch database before its space is
registered: 0 keeps the space's HNSW index from the start (every insert maintains it), as
memdb did before the index was built on demand; the default leaves memdb's threshold (10,000
memories), so a smaller corpus has no index.

Prints and writes one JSON document (default benchmarks/results/call_breakdown.json).

    python benchmarks/call_breakdown.py --n 1000 --subjects 10 [--hnsw-min-rows 0]
    python benchmarks/call_breakdown.py --reuse DB_DSN --n 100000 --subjects 100
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from _server import NewMemories, RandomEmbedder, delete_subject, emit, set_hnsw_min_rows  # noqa: I001
from pgvector.psycopg import register_vector
from psycopg import sql
from psycopg.types.json import Jsonb
from search_latency import Query, corpus, corpus_arguments, measured_database  # noqa: I001

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run from a source checkout without installing
    sys.path.insert(0, str(ROOT))

from memdb import MemoryStore  # noqa: E402
from memdb.core import sql as sql_files  # noqa: E402
from memdb.retrieval.search import DEFAULT_OPTIONS  # noqa: E402

DEFAULT_OUT = ROOT / "benchmarks" / "results" / "call_breakdown.json"
TENANT = "default"
ADD_SUBJECT = "call_breakdown"
ROUTE_SQL = {
    "vector": "SELECT * FROM memdb.search_vector(%(tenant)s, %(embedding)s, 50, %(filter)s)",
    "bm25": "SELECT * FROM memdb.search_bm25(%(tenant)s, %(query)s, 50, %(filter)s, "
            "%(k1)s, %(b)s)",
    "exact": "SELECT * FROM memdb.search_exact(%(tenant)s, %(query)s, 50, %(filter)s)",
}


def _stats(ms: list[float]) -> dict[str, float]:
    return {"p50": round(float(np.percentile(ms, 50)), 3),
            "p95": round(float(np.percentile(ms, 95)), 3), "n": len(ms)}


def search_breakdown(store: MemoryStore, direct: psycopg.Connection, queries: list[Query],
                     scoped: bool) -> dict[str, Any]:
    options = DEFAULT_OPTIONS.to_json()
    bare = {**options, "neighbors": 0, "speaker_neighbors": 0.0, "temporal": 0.0}
    statement = sql_files.query("search_hybrid")

    def params(q: Query, opts: dict[str, Any]) -> dict[str, Any]:
        return {"tenant": TENANT, "query": q.text, "embedding": q.vector, "k": 10,
                "filter": Jsonb({"subject": [q.subject]} if scoped else {}),
                "options": Jsonb(opts), "keyword_routes": None, "k1": options["k1"],
                "b": options["b"]}

    def pool_sql(q: Query) -> None:
        with store.db.transaction(tenant=TENANT, subject=None, pipelined=True) as conn:
            cur = conn.execute(statement, params(q, options))
        cur.fetchall()

    calls: dict[str, Callable[[Query], Any]] = {
        "store": lambda q: store.search(q.text, k=10, embedding=q.vector,
                                        filter={"subject": q.subject} if scoped else None),
        "pool_sql": pool_sql,
        "direct_sql": lambda q: direct.execute(statement, params(q, options)).fetchall(),
        "direct_no_mechanisms": lambda q: direct.execute(statement, params(q, bare)).fetchall(),
        **{route: (lambda q, s=text: direct.execute(s, params(q, options)).fetchall())
           for route, text in ROUTE_SQL.items()},
        "round_trip": lambda q: direct.execute("SELECT 1").fetchall(),
    }
    names = list(calls)
    for q in queries[:5]:  # warm-up: plans cached, functions compiled
        for name in names:
            calls[name](q)
    times: dict[str, list[float]] = {name: [] for name in names}
    for i, q in enumerate(queries):
        shift = i % len(names)
        for name in names[shift:] + names[:shift]:
            started = time.perf_counter()
            calls[name](q)
            times[name].append((time.perf_counter() - started) * 1000)
    med = {name: statistics.median(t) for name, t in times.items()}
    rtt = med["round_trip"]
    routes = sum(med[r] - rtt for r in ROUTE_SQL)
    parts = {
        "python_around_the_call": med["store"] - med["pool_sql"],
        "transaction_and_isolation": med["pool_sql"] - med["direct_sql"],
        "round_trip": rtt,
        "routes_in_server": routes,
        "fusion_and_validation": med["direct_no_mechanisms"] - rtt - routes,
        "mechanisms": med["direct_sql"] - med["direct_no_mechanisms"],
        **{f"route_{r}": med[r] - rtt for r in ROUTE_SQL},
    }
    return {"calls_ms": {name: _stats(t) for name, t in times.items()},
            "parts_ms_from_medians": {k: round(v, 3) for k, v in parts.items()}}


def _scratch_inserts(direct: psycopg.Connection, rows: int, base: int) -> dict[str, float]:
    """Median ms of a single-row INSERT into a copy of memdb.memories (``base`` of its rows,
    indexed after the copy) per index set."""
    defs = [r[0] for r in direct.execute(
        "SELECT pg_get_indexdef(indexrelid) FROM pg_index "
        "WHERE indrelid = 'memdb.memories'::regclass").fetchall()]
    other = [d for d in defs if " USING hnsw " not in d]
    # the spaces' HNSW indexes as memdb.ensure_vector_index makes them, built or not yet
    hnsw = [f"CREATE INDEX x ON memdb.memories USING hnsw ((embedding::vector({dims})) "
            f"vector_cosine_ops) WHERE (space_id = {sid})"
            for sid, dims in direct.execute(
                "SELECT id, dims FROM memdb.embedding_spaces ORDER BY id").fetchall()]
    defs = other + hnsw
    table = sql.Identifier(f"call_breakdown_{uuid.uuid4().hex[:8]}")
    ids = [r[0] for r in direct.execute(
        "SELECT id FROM memdb.memories WHERE tenant = %s ORDER BY id LIMIT %s",
        (TENANT, rows)).fetchall()]
    insert = sql.SQL("INSERT INTO memdb.{} SELECT * FROM memdb.memories "
                     "WHERE tenant = %s AND id = %s").format(table)
    out: dict[str, float] = {}
    try:
        for label, chosen in (("no_index", []), ("all_but_hnsw", other), ("hnsw_only", hnsw),
                              ("all", defs)):
            direct.execute(sql.SQL("DROP TABLE IF EXISTS memdb.{}").format(table))
            direct.execute(sql.SQL("CREATE TABLE memdb.{} (LIKE memdb.memories)").format(table))
            direct.execute(sql.SQL(
                "INSERT INTO memdb.{} SELECT * FROM memdb.memories WHERE tenant = %s "
                "AND id <> ALL(%s) LIMIT %s").format(table), (TENANT, ids, base))
            direct.execute("SET maintenance_work_mem = '1GB'")
            for d in chosen:  # the same definitions on the copy, under names of its own
                unique = "UNIQUE " if d.startswith("CREATE UNIQUE") else ""
                direct.execute(sql.SQL("CREATE {}INDEX ON memdb.{}").format(
                    sql.SQL(unique), table) + sql.SQL(d[d.index(" USING "):]))
            direct.execute(sql.SQL("VACUUM ANALYZE memdb.{}").format(table))
            ms = []
            for mid in ids:
                started = time.perf_counter()
                direct.execute(insert, (TENANT, mid))
                ms.append((time.perf_counter() - started) * 1000)
            out[label] = round(statistics.median(ms), 3)
    finally:
        direct.execute(sql.SQL("DROP TABLE IF EXISTS memdb.{}").format(table))
    return out


def add_breakdown(db: str, direct: psycopg.Connection, args: argparse.Namespace
                  ) -> dict[str, Any]:
    dbname = sql.Identifier(direct.info.dbname)
    new = NewMemories(args.seed, ADD_SUBJECT)

    def add(store: MemoryStore, _i: int) -> float:
        text, kwargs = new.args()
        started = time.perf_counter()
        store.add(text, **kwargs)
        return (time.perf_counter() - started) * 1000

    direct.execute(sql.SQL("ALTER DATABASE {} SET track_functions = 'all'").format(dbname))
    try:
        with MemoryStore(db, embedder=RandomEmbedder("bench-random"), pool_size=1) as store:
            for i in range(5):  # warm-up, in connections that end before the timings start
                add(store, i)
        time.sleep(1.0)  # an ended backend's statistics are flushed as it exits
        direct.execute("SELECT pg_stat_reset()")
        with MemoryStore(db, embedder=RandomEmbedder("bench-random"), pool_size=1) as store:
            ms = [add(store, 5 + i) for i in range(args.adds)]
        time.sleep(1.0)
        functions = {r[0]: {"total_ms": round(r[1] / args.adds, 3),
                            "self_ms": round(r[2] / args.adds, 3)}
                     for r in direct.execute(
                         "SELECT funcname, total_time, self_time FROM pg_stat_user_functions "
                         "WHERE schemaname = 'memdb' AND total_time > 0 "
                         "ORDER BY total_time DESC LIMIT 15").fetchall()}
    finally:
        direct.execute(sql.SQL("ALTER DATABASE {} RESET track_functions").format(dbname))
        delete_subject(db, TENANT, ADD_SUBJECT)
    return {"store_add_ms": _stats(ms), "functions_per_add": functions,
            "single_row_insert_ms_by_indexes": _scratch_inserts(
                direct, min(args.adds, 300), args.scratch_rows)}


def add_usage(direct: psycopg.Connection, per_memory: int) -> int:
    """Use counts (memdb.mark_used's table) of ``per_memory`` other subjects for every memory
    of the tenant, as an application marking what it used would leave them; none is of a subject
    the searches filter by. Returns the tenant's usage rows."""
    with direct.transaction():
        direct.execute("INSERT INTO memdb.memory_usage (tenant, memory_id, subject, use_count) "
                       "SELECT m.tenant, m.id, 'reader_' || g, 1 + g %% 7 FROM memdb.memories m, "
                       "generate_series(1, %s) g WHERE m.tenant = %s ON CONFLICT DO NOTHING",
                       (per_memory, TENANT))
    direct.execute("ANALYZE memdb.memory_usage")
    return int(direct.execute("SELECT count(*) FROM memdb.memory_usage WHERE tenant = %s",
                              (TENANT,)).fetchone()[0])


def measure(db: str, queries: list[Query], args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    direct = psycopg.connect(db, autocommit=True)
    register_vector(direct)
    try:
        if not direct.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user"
                              ).fetchone()[0]:
            raise SystemExit("call_breakdown.py needs a superuser's connection")
        if args.usage_per_memory:
            out["usage_rows"] = add_usage(direct, args.usage_per_memory)
        with MemoryStore(db, embedder=RandomEmbedder("bench-random"), pool_size=2,
                         gate=None) as store:
            for scope in ("one_subject", "whole_tenant"):
                out[f"search_{scope}"] = search_breakdown(store, direct, queries,
                                                          scope == "one_subject")
                print(f"[call_breakdown] search {scope}: "
                      f"{out[f'search_{scope}']['parts_ms_from_medians']}", file=sys.stderr)
        out["add"] = add_breakdown(db, direct, args)
        print(f"[call_breakdown] add: {out['add']['store_add_ms']} "
              f"{out['add']['single_row_insert_ms_by_indexes']}", file=sys.stderr)
    finally:
        direct.close()
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    corpus_arguments(parser, n=1000, subjects=10)
    parser.add_argument("--adds", type=int, default=200, help="timed adds (default 200)")
    parser.add_argument("--scratch-rows", type=int, default=10_000,
                        help="rows in the scratch table before the timed inserts (10000)")
    parser.add_argument("--hnsw-min-rows", type=int,
                        help="memdb.hnsw_min_rows of the scratch database (0: the HNSW index "
                             "kept from the start; default: memdb's own threshold)")
    parser.add_argument("--usage-per-memory", type=int, default=0,
                        help="use counts of this many other subjects for every memory before "
                             "the searches (memdb.memory_usage; default 0)")
    parser.add_argument("--json", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    result: dict[str, Any] = {
        "benchmark": "call_breakdown", "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "n": args.n, "subjects": args.subjects, "queries": args.queries, "adds": args.adds,
        "seed": args.seed, "hnsw_min_rows": args.hnsw_min_rows,
        "usage_per_memory": args.usage_per_memory, "cpus": os.cpu_count(),
        "loadavg_1min_start": os.getloadavg()[0]}
    if args.reuse and args.hnsw_min_rows is not None:
        raise SystemExit("--hnsw-min-rows applies to a scratch database, not --reuse")
    docs, queries = corpus(args)

    def hnsw_min_rows(db: str) -> None:  # before the space exists: 0 builds it now
        if args.hnsw_min_rows is not None:
            set_hnsw_min_rows(db, args.hnsw_min_rows)

    with measured_database(args, "memdb_bench_breakdown", docs,
                           before_load=hnsw_min_rows) as (db, loaded):
        if loaded is not None:
            result["load"] = loaded
        result["measured"] = measure(db, queries, args)
    result["loadavg_1min_end"] = os.getloadavg()[0]
    emit(result, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""halfvec(384) against today's vector(384): bytes, HNSW build time, search latency, recall.

Two parts, each its own run (one JSON document each):

``scale`` (default): loads N synthetic memories through MemoryStore.add_many with the loader of
benchmarks/search_latency.py (same corpus, seed and random unit vectors; the space's HNSW index
dropped before the load, so the load rate is the table's and its other indexes'), VACUUM
ANALYZE, then in a scratch schema ``halfvec_bench`` of the same scratch database makes two copies
of memdb.memories written the same way (INSERT ... SELECT): ``memories_vector`` with today's
``embedding vector(384)`` and ``memories_halfvec`` with ``embedding halfvec(384)``. It records

- bytes: heap, TOAST and indexes of memdb.memories (every index by name), memdb.bm25_terms and
  memdb.bm25_stats, and of both copies; the mean stored size of one embedding;
- HNSW build time (m 16, ef_construction 64, cosine) on each copy with
  ``max_parallel_maintenance_workers`` 0 and ``--workers`` (default 1: the leader and one worker
  on a 2-core machine), ``maintenance_work_mem`` ``--maintenance-work-mem``, and the index size;
- search latency (``--queries`` random query vectors, interleaved): the tenant-wide HNSW top-10
  under the settings memdb.search_vector uses (ef_search 100, iterative scan relaxed_order,
  re-sorted by distance), and the exact top-10 of one subject (about N/S rows, found through a
  (tenant, space_id, subject) index on each copy) - the two statement shapes of the vector route;
- ANN recall@10 of each HNSW index against the exact float32 top-10 (random vectors in 384
  dimensions have no cluster structure: a hard case for HNSW, lower than real embeddings).

``locomo``: the LoCoMo development set through the eval's own code (memdb.evaluation.locomo
.collect and summarize, the default configurations) twice in one process: with the model's
float32 vectors, and with every turn and question vector rounded to half precision (float16 and
back), which is what halfvec storage keeps (pgvector's halfvec distances are computed in float32
from the stored halves). LoCoMo's subjects hold a few hundred memories each, so memdb's vector
route ranks them by an exact scan, the path on which this rounding is the whole difference; the
HNSW side of halfvec is measured by ``scale``. Uses the eval's vector cache for the turns.

    python benchmarks/halfvec.py [scale] [--n 100000] [--workers 1] [--maintenance-work-mem 1GB]
    python benchmarks/halfvec.py locomo [--data ../shared/data/locomo/locomo_dev.json]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from _server import RandomEmbedder, emit, scratch_database, server  # noqa: I001
from psycopg import sql
from search_latency import (  # noqa: I001  (benchmarks/ sibling module: the scale loader)
    DIMS,
    TENANT,
    K,
    _stats,
    hold_hnsw,
    load,
    server_info,
    synthetic_docs,
    synthetic_queries,
    vacuum_analyze,
)

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from memdb import MemoryStore  # noqa: E402

SCHEMA = "halfvec_bench"
TYPES = {"vector": "vector_cosine_ops", "halfvec": "halfvec_cosine_ops"}


def log(msg: str) -> None:
    print(f"[halfvec] {msg}", file=sys.stderr, flush=True)


# -- sizes ---------------------------------------------------------------------------------------
def relation_bytes(conn: psycopg.Connection, table: str) -> dict[str, Any]:
    """Heap, TOAST (with its index), each index and the total of one table, in bytes."""
    heap, toast, indexes, total, rows = conn.execute(
        """SELECT pg_relation_size(c.oid),
                  coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0),
                  pg_indexes_size(c.oid), pg_total_relation_size(c.oid), c.reltuples::bigint
           FROM pg_class c WHERE c.oid = %s::regclass""",
        (table,),
    ).fetchone()
    by_index = dict(
        conn.execute(
            """SELECT i.indexrelid::regclass::text, pg_relation_size(i.indexrelid)
               FROM pg_index i WHERE i.indrelid = %s::regclass ORDER BY 2 DESC""",
            (table,),
        ).fetchall()
    )
    return {
        "rows": rows,
        "heap": heap,
        "toast": toast,
        "indexes": indexes,
        "total": total,
        "index_bytes": by_index,
    }


def per_row(sizes: dict[str, Any], rows: int) -> dict[str, Any]:
    """Bytes per memory: every figure divided by the memory count."""
    out = {k: round(sizes[k] / rows, 1) for k in ("heap", "toast", "indexes", "total")}
    out["index_bytes"] = {k: round(v / rows, 1) for k, v in sizes["index_bytes"].items()}
    return out


# -- the halfvec variant -------------------------------------------------------------------------
def make_copies(conn: psycopg.Connection, space_id: int) -> dict[str, float]:
    """Two copies of the space's memories, written the same way, differing only in the vector
    column's type; each with the scope index the subject-scoped exact scan reads."""
    conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(SCHEMA)))
    conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(SCHEMA)))
    seconds = {}
    for typ in TYPES:
        table = sql.Identifier(SCHEMA, f"memories_{typ}")
        t0 = time.perf_counter()
        conn.execute(
            sql.SQL(
                "CREATE TABLE {} (LIKE memdb.memories INCLUDING DEFAULTS INCLUDING STORAGE)"
            ).format(table)
        )
        conn.execute(
            # the type change resets the column's storage: keep memdb's (MAIN: in the row)
            sql.SQL(
                "ALTER TABLE {} ALTER COLUMN embedding TYPE {}, "
                "ALTER COLUMN embedding SET STORAGE MAIN"
            ).format(table, sql.SQL(f"{typ}({DIMS})"))
        )
        conn.execute(
            sql.SQL("INSERT INTO {} SELECT * FROM memdb.memories WHERE space_id = {}").format(
                table, sql.Literal(space_id)
            )
        )
        conn.execute(sql.SQL("CREATE INDEX ON {} (tenant, space_id, subject)").format(table))
        conn.execute(sql.SQL("VACUUM (ANALYZE) {}").format(table))
        seconds[typ] = round(time.perf_counter() - t0, 2)
    return seconds


def build_hnsw(dsn: str, typ: str, workers: int, mwm: str) -> dict[str, Any]:
    """CREATE INDEX ... USING hnsw on one copy under the given settings: seconds, bytes and the
    server's notices (pgvector says when the graph no longer fits maintenance_work_mem)."""
    table = sql.Identifier(SCHEMA, f"memories_{typ}")
    index = f"memories_{typ}_hnsw"
    notices: list[str] = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(SCHEMA, index)))
        conn.add_notice_handler(lambda d: notices.append(d.message_primary))
        conn.execute(sql.SQL("SET maintenance_work_mem = {}").format(sql.Literal(mwm)))
        conn.execute(
            sql.SQL("SET max_parallel_maintenance_workers = {}").format(sql.Literal(workers))
        )
        t0 = time.perf_counter()
        conn.execute(
            sql.SQL("CREATE INDEX {} ON {} USING hnsw (embedding {})").format(
                sql.Identifier(index), table, sql.SQL(TYPES[typ])
            )
        )
        seconds = time.perf_counter() - t0
        size = conn.execute(
            "SELECT pg_relation_size(%s::regclass)", (f"{SCHEMA}.{index}",)
        ).fetchone()[0]
    out = {
        "type": typ,
        "max_parallel_maintenance_workers": workers,
        "maintenance_work_mem": mwm,
        "seconds": round(seconds, 2),
        "index_bytes": size,
        "notices": notices,
    }
    log(f"HNSW {typ:8s} workers {workers}: {out['seconds']} s, {size / 2**20:.1f} MiB")
    return out


def _vec(v: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in v) + "]"


def latency(dsn: str, space_id: int, queries: list, warmup: int) -> dict[str, Any]:
    """The vector route's two statement shapes on each copy, interleaved query by query, and
    the HNSW top-10's recall against the exact float32 top-10 of the whole tenant."""
    tenant_sql = {
        typ: sql.SQL(
            """WITH nearest AS MATERIALIZED (
                   SELECT m.id, (m.embedding <=> %(q)s::{t})::float8 AS distance
                   FROM {tbl} m WHERE m.tenant = %(tenant)s AND m.space_id = %(space)s
                   ORDER BY m.embedding <=> %(q)s::{t} LIMIT %(k)s)
               SELECT n.id FROM nearest n ORDER BY n.distance, n.id"""
        ).format(t=sql.SQL(f"{typ}({DIMS})"), tbl=sql.Identifier(SCHEMA, f"memories_{typ}"))
        for typ in TYPES
    }
    scoped_sql = {
        typ: sql.SQL(
            """SELECT m.id FROM {tbl} m
               WHERE m.tenant = %(tenant)s AND m.space_id = %(space)s AND m.subject = %(subject)s
                 AND m.valid_to IS NULL
               ORDER BY m.embedding <=> %(q)s::{t}, m.id LIMIT %(k)s"""
        ).format(t=sql.SQL(f"{typ}({DIMS})"), tbl=sql.Identifier(SCHEMA, f"memories_{typ}"))
        for typ in TYPES
    }
    truth_sql = sql.SQL(  # no index can serve "+ 0": an exact scan in float32
        """SELECT m.id FROM {tbl} m WHERE m.tenant = %(tenant)s AND m.space_id = %(space)s
           ORDER BY (m.embedding <=> %(q)s::vector) + 0, m.id LIMIT %(k)s"""
    ).format(tbl=sql.Identifier(SCHEMA, "memories_vector"))
    times: dict[str, list[float]] = {f"{r}_{t}": [] for r in ("tenant", "scoped") for t in TYPES}
    recall: dict[str, list[float]] = {t: [] for t in TYPES}
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SET hnsw.ef_search = 100")
        conn.execute("SET hnsw.iterative_scan = relaxed_order")
        # the planner may prefer a sequential scan of a small table; the HNSW statement is timed
        # on its index (memdb's search_vector only takes this path above exact_limit rows)
        conn.execute("SET enable_seqscan = off")
        for i, q in enumerate(queries):
            p = {
                "q": _vec(q.vector),
                "tenant": TENANT,
                "space": space_id,
                "k": K,
                "subject": q.subject,
            }
            timed = i >= warmup
            got = {}
            for typ in TYPES:
                for route, stmt in (("tenant", tenant_sql[typ]), ("scoped", scoped_sql[typ])):
                    t0 = time.perf_counter()
                    rows = conn.execute(stmt, p).fetchall()
                    ms = (time.perf_counter() - t0) * 1000
                    if timed:
                        times[f"{route}_{typ}"].append(ms)
                    if route == "tenant":
                        got[typ] = {r[0] for r in rows}
            if timed:
                truth = {r[0] for r in conn.execute(truth_sql, p).fetchall()}
                for typ in TYPES:
                    recall[typ].append(len(got[typ] & truth) / K)
            if i % 50 == 49:
                log(f"{i + 1}/{len(queries)} queries")
        plans = {
            typ: conn.execute(
                sql.SQL("EXPLAIN (FORMAT TEXT) ") + tenant_sql[typ],
                {"q": _vec(queries[0].vector), "tenant": TENANT, "space": space_id, "k": K},
            ).fetchall()
            for typ in TYPES
        }
    out: dict[str, Any] = {name: _stats(ms) for name, ms in times.items()}
    out["ann_recall_at_10"] = {t: round(float(np.mean(r)), 4) for t, r in recall.items()}
    out["index_used"] = {
        t: any(f"memories_{t}_hnsw" in line[0] for line in plan) for t, plan in plans.items()
    }
    out["loadavg_1min"] = round(os.getloadavg()[0], 2)
    return out


def run_scale(args: argparse.Namespace) -> dict[str, Any]:
    subjects = [f"user_{i:04d}" for i in range(args.subjects)]
    docs = synthetic_docs(args.n, subjects, args.seed)
    queries = synthetic_queries(args.queries + args.warmup, docs, subjects, args.seed + 100)
    result: dict[str, Any] = {
        "benchmark": "halfvec",
        "part": "scale",
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "n": args.n,
        "subjects": args.subjects,
        "queries": args.queries,
        "dims": DIMS,
        "seed": args.seed,
        "cpus": os.cpu_count(),
        "loadavg_1min_start": round(os.getloadavg()[0], 2),
    }
    embedder = RandomEmbedder("bench-random")
    with server(args.dsn) as (admin_dsn, how):
        result["server_how"] = how
        with scratch_database(admin_dsn, "memdb_bench_halfvec") as (db, name):
            result["server"] = server_info(db)
            with MemoryStore(db, embedder=embedder, pool_size=2, gate=None) as store:
                hold_hnsw(store, True)  # load without HNSW
                space_id = store.space_id()
                log(f"loading {args.n} memories into {name}")
                result["load"] = load(store, docs, args.seed, args.chunk, args.batch)
            result["load"]["hnsw"] = "none during the load (built below)"
            result["load"]["vacuum_analyze_seconds"] = vacuum_analyze(db)
            with psycopg.connect(db, autocommit=True) as conn:
                result["copy_seconds"] = make_copies(conn, space_id)
                result["embedding_bytes"] = {
                    typ: float(
                        conn.execute(
                            sql.SQL("SELECT avg(pg_column_size(embedding)) FROM {}").format(
                                sql.Identifier(SCHEMA, f"memories_{typ}")
                            )
                        ).fetchone()[0]
                    )
                    for typ in TYPES
                }
            builds = []
            for typ in TYPES:
                for workers in (0, args.workers):
                    builds.append(build_hnsw(db, typ, workers, args.maintenance_work_mem))
            result["hnsw_builds"] = builds
            with psycopg.connect(db, autocommit=True) as conn:
                # memdb.memories has no HNSW index here (held off during the load): today's index
                # is memories_vector_hnsw on the copy, the same rows and definition
                conn.execute("ANALYZE memdb.memories")
                sizes = {
                    t: relation_bytes(conn, t)
                    for t in (
                        "memdb.memories",
                        "memdb.bm25_terms",
                        "memdb.bm25_stats",
                        "memdb.memory_history",
                        f"{SCHEMA}.memories_vector",
                        f"{SCHEMA}.memories_halfvec",
                    )
                }
                result["database_bytes"] = conn.execute(
                    "SELECT pg_database_size(current_database())"
                ).fetchone()[0]
            result["bytes"] = sizes
            result["bytes_per_memory"] = {t: per_row(s, args.n) for t, s in sizes.items()}
            log("timing the vector route's statements on both copies")
            result["latency_ms"] = latency(db, space_id, queries, args.warmup)
    result["loadavg_1min_end"] = round(os.getloadavg()[0], 2)
    return result


# -- LoCoMo --------------------------------------------------------------------------------------
class HalfPrecision:
    """An embedder whose vectors are rounded to float16 and back: what halfvec keeps. Passages
    come from the eval's vector cache of the wrapped embedder when it has them."""

    def __init__(self, inner: Any, cache: Any) -> None:
        self.inner, self.cache = inner, cache
        self.model, self.dims = inner.model, inner.dims

    @staticmethod
    def _half(vectors: Any) -> list[np.ndarray]:
        return [
            np.asarray(v, dtype=np.float32).astype(np.float16).astype(np.float32) for v in vectors
        ]

    def embed_passages(self, texts: Sequence[str]) -> list[np.ndarray]:
        from memdb.evaluation._vector_cache import embed_passages_cached

        return self._half(embed_passages_cached(self.inner, list(texts), self.cache)[0])

    def embed_queries(self, texts: Sequence[str]) -> list[np.ndarray]:
        return self._half(self.inner.embed_queries(list(texts)))


def run_locomo(args: argparse.Namespace) -> dict[str, Any]:
    from memdb.core.embeddings import embedder_from_env
    from memdb.evaluation._metrics import summarize
    from memdb.evaluation._vector_cache import PassageVectorCache
    from memdb.evaluation.locomo import DEFAULT_CONFIGS, collect, load_locomo

    convs = load_locomo(args.data)
    embedder = embedder_from_env()
    ks = [5, 10, 25, 50]
    result: dict[str, Any] = {
        "benchmark": "halfvec",
        "part": "locomo",
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "dataset": str(args.data),
        "embedder": embedder.model,
        "cpus": os.cpu_count(),
        "runs": {},
    }
    for name in ("float32", "float16"):
        log(f"LoCoMo with {name} vectors")
        emb = (
            embedder if name == "float32" else HalfPrecision(embedder, PassageVectorCache(embedder))
        )
        run = collect(
            convs,
            dsn=args.dsn,
            ks=ks,
            configs=DEFAULT_CONFIGS,
            progress=False,
            embedder=emb,
            vector_cache=name == "float32",
        )
        result["runs"][name] = {
            "questions": len(run.questions),
            "memories": run.memories,
            "routes": {r: summarize(res, ks) for r, res in run.results.items()},
            "vector_cache": run.vector_cache,
            "timings": {k: round(v, 2) for k, v in run.timings.items()},
        }
    delta = {}  # in points (the figures are fractions)
    for route, s32 in result["runs"]["float32"]["routes"].items():
        s16 = result["runs"]["float16"]["routes"][route]
        delta[route] = {
            block: {key: round(100 * (s16[block][key] - s32[block][key]), 2) for key in s32[block]}
            for block in ("overall", "overall_with_adversarial")
        }
    result["float16_minus_float32"] = delta
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("part", nargs="?", choices=["scale", "locomo"], default="scale")
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--subjects", type=int, default=100)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--seed", type=int, default=20261129)
    parser.add_argument("--chunk", type=int, default=5000)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="max_parallel_maintenance_workers of the parallel builds (default 1)",
    )
    parser.add_argument("--maintenance-work-mem", default="1GB")
    parser.add_argument("--data", default=str(ROOT.parent / "shared/data/locomo/locomo_dev.json"))
    parser.add_argument("--dsn", help="server to use (default $MEMDB_DSN, else embedded)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    result = run_scale(args) if args.part == "scale" else run_locomo(args)
    emit(result, args.json or ROOT / "benchmarks" / "results" / f"halfvec_{args.part}.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Database time of the search routes, old SQL against new, side by side in one run.

Installs the search functions of a git revision (--ref, default HEAD) under schema memdb_ref
and those of this checkout's sql/functions under memdb_new (each calling its own schema's
routes, each with its revision's plain-PostgreSQL migration step generic_plan_functions), in a
database that benchmarks/search_latency.py loaded and kept (--keep; same --n/--subjects/--seed),
then times every scenario in SQL (clock_timestamp around an EXECUTE,
so no round trip, driver or Python is counted): hybrid, BM25 and exact, each scoped to the
query's subject and across the tenant. Old and new run back to back per query, alternating
which goes first, each pair after one untimed call of both (so neither is timed reading the
query's pages from disk for the other: warm-cache times), so load from other processes falls
on both alike; only ratios from one run mean something on a shared machine. Every pair of
calls must return the same rows (ids, order and scores); differences are listed. The two
schemas are dropped at the end.

    python benchmarks/search_latency.py --dsn DSN --keep --hnsw-after-load --queries 20
    python benchmarks/search_ab.py DB_DSN [--ref REV] [--queries 100] [--options JSON] [--k K]
        [--pruning] [--json OUT]

--pruning also scores every tenant-wide BM25 query unpruned (p_candidate_df_ratio 1: every
document holding a query term) and reports the mean share of that ranking's top 10 and top 50
that each revision's tenant-wide BM25 route returns.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import psycopg
from _server import emit  # noqa: I001  (benchmarks/ sibling module)
from psycopg import sql
from search_latency import TENANT, K, Query, _vec, synthetic_docs, synthetic_queries

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "search_ab.json"
FILES = ["031_check_filter.sql", "080_search_vector.sql", "120_search_bm25.sql",
         "121_search_exact.sql", "122_search_bm25_weighted.sql", "155_search_depth.sql",
         "156_keyword_route_rows.sql", "162_search_neighbors.sql", "160_search_hybrid.sql"]
ROUTES = ["check_filter", "check_filter_keys", "search_vector", "search_bm25", "search_exact",
          "search_bm25_weighted", "search_depth", "keyword_route_rows", "search_neighbors",
          "search_hybrid"]
DEPTH = 50  # search_hybrid's per-route depth for k = 10
DROP = sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE")
TIMER = """
CREATE FUNCTION {schema}.db_ms(q text) RETURNS double precision LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz := clock_timestamp();
BEGIN
    EXECUTE q;
    RETURN extract(epoch FROM clock_timestamp() - t0) * 1000;
END $$"""


def functions_sql(schema: str, ref: str | None, files: list[str] = FILES,
                  names: list[str] = ROUTES) -> str:
    """The functions in sql/functions/``files`` of git revision ref (None: this checkout),
    with every call of memdb.``name`` (for each of ``names``) renamed into schema; a file the
    revision does not have is left out."""
    out = []
    for name in files:
        if ref is None:
            path = ROOT / "sql" / "functions" / name
            if not path.exists():
                continue
            text = path.read_text(encoding="utf-8")
        else:
            shown = subprocess.run(["git", "-C", str(ROOT), "show", f"{ref}:sql/functions/{name}"],
                                   capture_output=True, text=True)
            if shown.returncode != 0:
                continue
            text = shown.stdout
        for fn in names:
            text = text.replace(f"memdb.{fn}(", f"{schema}.{fn}(")
        out.append(text)
    return "\n".join(out)


def generic_plans_sql(schema: str, ref: str | None) -> str | None:
    """The revision's migration step that sets search_hybrid's plan_cache_mode on plain
    PostgreSQL (sql/queries/citus.sql, generic_plan_functions), for schema; None if it has none."""
    if ref is None:
        text = (ROOT / "sql" / "queries" / "citus.sql").read_text(encoding="utf-8")
    else:
        text = subprocess.run(["git", "-C", str(ROOT), "show", f"{ref}:sql/queries/citus.sql"],
                              capture_output=True, text=True, check=True).stdout
    marker = "-- name: generic_plan_functions\n"
    if marker not in text:
        return None
    block = text.split(marker, 1)[1].split("\n-- name: ", 1)[0]
    return block.replace("'memdb'::regnamespace", f"'{schema}'::regnamespace")


def call(conn: psycopg.Connection, schema: str, route: str, q: Query, scoped: bool,
         options: str = "{}", k: int = K) -> str:
    lit = lambda x: sql.Literal(x).as_string(conn)  # noqa: E731
    flt = lit(json.dumps({"subject": q.subject} if scoped else {})) + "::jsonb"
    if route == "hybrid":
        return (f"SELECT * FROM {schema}.search_hybrid({lit(TENANT)}, {lit(q.text)}, "
                f"{lit(_vec(q.vector))}::vector, {k}, {flt}, {lit(options)}::jsonb)")
    return f"SELECT * FROM {schema}.search_{route}({lit(TENANT)}, {lit(q.text)}, {DEPTH}, {flt})"


def pruning_overlap(conn: psycopg.Connection, q: Query, rows: dict[str, list]) -> dict[str, float]:
    """How much of the unpruned BM25 ranking (p_candidate_df_ratio 1: every document holding
    a query term scored) each revision's tenant-wide top 10 and top 50 share."""
    lit = lambda x: sql.Literal(x).as_string(conn)  # noqa: E731
    full = [r[0] for r in conn.execute(
        f"SELECT id FROM memdb_new.search_bm25({lit(TENANT)}, {lit(q.text)}, {DEPTH}, '{{}}', "
        "p_candidate_df_ratio => 1)").fetchall()]
    out = {}
    for schema, tag in (("memdb_ref", "ref"), ("memdb_new", "new")):
        got = [r[0] for r in rows[schema]]
        for top in (10, 50):
            want = set(full[:top])
            out[f"{tag}_top{top}"] = len(want & set(got[:top])) / len(want) if want else 1.0
    return out


def _stats(ms: list[float]) -> dict:
    a = np.asarray(ms)
    return {"p50": round(float(np.percentile(a, 50)), 2),
            "p95": round(float(np.percentile(a, 95)), 2),
            "p99": round(float(np.percentile(a, 99)), 2), "max": round(float(a.max()), 2),
            "mean": round(float(a.mean()), 2)}


def run(args: argparse.Namespace) -> dict:
    subjects = [f"user_{i:04d}" for i in range(args.subjects)]
    docs = synthetic_docs(args.n, subjects, args.seed)
    queries = synthetic_queries(args.queries, docs, subjects, args.seed + 100)
    routes = args.routes.split(",")
    times: dict[str, dict[str, list[float]]] = {}
    diffs: list[dict] = []
    setup: dict[str, dict] = {}
    loads = [os.getloadavg()[0]]
    pruning: list[dict[str, float]] = []
    with psycopg.connect(args.db, autocommit=True) as conn:
        try:
            for schema, ref in (("memdb_ref", args.ref), ("memdb_new", None)):
                conn.execute(DROP.format(sql.Identifier(schema)))
                conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
                conn.execute(functions_sql(schema, ref))
                generic = generic_plans_sql(schema, ref)
                if generic:
                    conn.execute(generic)
                setup[schema] = {"generic_plans": bool(generic)}
            conn.execute(TIMER.format(schema="memdb_ref"))
            for q in queries[: args.warmup]:  # warm caches for both
                for route in routes:
                    for schema in ("memdb_ref", "memdb_new"):
                        conn.execute(call(conn, schema, route, q, True, args.options,
                                          args.k)).fetchall()
            for i, q in enumerate(queries):
                order = ("memdb_ref", "memdb_new") if i % 2 == 0 else ("memdb_new", "memdb_ref")
                for route in routes:
                    for scoped in (True, False):
                        name = f"{route}_{'scoped' if scoped else 'tenant'}"
                        rows = {}
                        for schema in order:  # untimed: both find the query's pages cached
                            text = call(conn, schema, route, q, scoped, args.options, args.k)
                            rows[schema] = conn.execute(text).fetchall()
                        for schema in order:
                            text = call(conn, schema, route, q, scoped, args.options, args.k)
                            ms = conn.execute("SELECT memdb_ref.db_ms(%s)", (text,)).fetchone()[0]
                            times.setdefault(name, {}).setdefault(schema, []).append(ms)
                        if rows["memdb_ref"] != rows["memdb_new"]:
                            diffs.append({"scenario": name, "query": q.text})
                        if args.pruning and name == "bm25_tenant":
                            pruning.append(pruning_overlap(conn, q, rows))
                if i % 20 == 19:
                    loads.append(os.getloadavg()[0])
                    print(f"[search_ab] {i + 1}/{len(queries)} queries, load {loads[-1]:.2f}",
                          file=sys.stderr)
        finally:
            for schema in ("memdb_ref", "memdb_new"):
                conn.execute(DROP.format(sql.Identifier(schema)))
    out: dict = {}
    for name, by in times.items():
        old, new = np.asarray(by["memdb_ref"]), np.asarray(by["memdb_new"])
        # Each pair is timed after an untimed call of both: timed cold, the call that ran
        # second found the first's pages in shared buffers and took half its time or less, and
        # the per-pair ratios were bimodal (about 0.4 and 3) whatever the code.
        out[name] = {"ref": _stats(list(old)), "new": _stats(list(new)),
                     "geomean_ratio_new_to_ref": round(float(np.exp(np.log(new / old).mean())), 3)}
        r, s = out[name]["ref"], out[name]["new"]
        print(f"{name:15s} ref p50 {r['p50']:8.2f} p95 {r['p95']:8.2f} | new p50 {s['p50']:8.2f}"
              f" p95 {s['p95']:8.2f} | new/ref {out[name]['geomean_ratio_new_to_ref']}",
              file=sys.stderr)
    print(f"[search_ab] result differences: {len(diffs)}", file=sys.stderr)
    overlap = {key: round(float(np.mean([p[key] for p in pruning])), 4)
               for key in (pruning[0] if pruning else [])}
    if overlap:
        print(f"[search_ab] BM25 tenant-wide overlap with the unpruned ranking: {overlap}",
              file=sys.stderr)
    return {
        "benchmark": "search_ab",
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "ref": args.ref,
        "new": "working tree sql/functions",
        "setup": setup,
        "n": args.n, "subjects": args.subjects, "queries": args.queries, "depth": DEPTH,
        "k": args.k, "options": json.loads(args.options),
        "db_time_ms": out,
        "result_differences": diffs,
        **({"bm25_tenant_overlap_with_unpruned": overlap} if overlap else {}),
        "loadavg_1min": {"min": round(min(loads), 2), "median": round(float(np.median(loads)), 2),
                         "max": round(max(loads), 2), "cpus": os.cpu_count()},
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("db", metavar="DB_DSN", help="a database search_latency.py loaded (--keep)")
    parser.add_argument("--ref", default="HEAD", help="git revision of the old functions (HEAD)")
    parser.add_argument("--n", type=int, default=100_000, help="memories loaded (default 100000)")
    parser.add_argument("--subjects", type=int, default=100, help="subjects loaded (default 100)")
    parser.add_argument("--seed", type=int, default=20261129)
    parser.add_argument("--queries", type=int, default=100, help="timed queries (default 100)")
    parser.add_argument("--warmup", type=int, default=5, help="untimed queries first (default 5)")
    parser.add_argument("--routes", default="hybrid,bm25,exact", help="comma-separated routes")
    parser.add_argument("--options", default="{}",
                        help="search_hybrid's options, JSON (default {}: every mechanism off)")
    parser.add_argument("--k", type=int, default=K, help=f"search_hybrid's k (default {K})")
    parser.add_argument("--pruning", action="store_true",
                        help="also the tenant-wide BM25 rankings' overlap with the unpruned one")
    parser.add_argument("--json", type=Path, default=DEFAULT_OUT, help="where to write the JSON")
    args = parser.parse_args(argv)
    emit(run(args), args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())

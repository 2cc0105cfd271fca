"""Latency of the entity graph on the real server: linking (heuristic extraction + SQL) and
the graph route (memdb.search_graph, recursive CTE) over a graph of about N entities, alone
and fused with hybrid search (memdb.search_hybrid_graph), against hybrid search alone.

The corpus: N people in a random "works with" graph (about 1.5 N edges, one memory each, half
in English - "Person12 works with Person40." - half in Chinese - "Person12和Person40是同事。")
plus N/10 tools used by people ("Person7 uses Tool3."). Queries name one person. The query
vector is computed once and passed in, so the figures are database time only.

    python benchmarks/graph_route.py [--n 1000] [--repeat 30] [--dsn DSN]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import psycopg
from _server import median_ms, server, with_db  # noqa: I001  (benchmarks/ sibling module)

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from memdb import LocalEmbedder, MemoryStore  # noqa: E402
from memdb.core.embeddings import embed_checked  # noqa: E402
from memdb.core.migrations import upgrade  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--dsn")
    args = parser.parse_args()
    rng = random.Random(7)
    texts, seen = [], []
    for e in range(int(args.n * 1.5)):
        a, b = rng.sample(range(args.n), 2)
        seen.append(a)
        texts.append(f"Person{a} works with Person{b}." if e % 2
                     else f"Person{a}和Person{b}是同事。")
    for t in range(args.n // 10):
        texts.append(f"Person{rng.randrange(args.n)} uses Tool{t}.")
    with server(args.dsn) as (admin, how):
        name = "memdb_bench_graph"
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            conn.execute(f"CREATE DATABASE {name}")
        dsn = with_db(admin, name)
        upgrade(dsn)
        embedder = LocalEmbedder()
        with MemoryStore(dsn, embedder=embedder, gate=None) as store:
            store.add_many([{"content": t, "subject": "u"} for t in texts])
            start = time.perf_counter()
            linked = store.graph.link(llm=None)
            link_s = time.perf_counter() - start
            with store.core.transaction() as conn:
                counts = conn.execute(
                    "SELECT (SELECT count(*) FROM memdb.entities) AS entities, "
                    "(SELECT count(*) FROM memdb.entity_relations) AS relations, "
                    "(SELECT count(*) FROM memdb.entity_mentions) AS mentions").fetchone()
            people = [f"Person{rng.choice(seen)}" for _ in range(args.repeat)]
            queries = [f"who works with {p}?" for p in people]
            vectors = {q: embed_checked(embedder, [q], query=True)[0] for q in queries}
            figures = {}
            for hops in (1, 2, 3):
                figures[f"graph_route_hops{hops}_ms"] = median_ms(
                    lambda i, h=hops: store.graph.search(queries[i], routes=["graph"], hops=h),
                    args.repeat)
            figures["hybrid_ms"] = median_ms(
                lambda i: store.search(queries[i], embedding=vectors[queries[i]]), args.repeat)
            figures["hybrid_plus_graph_hops2_ms"] = median_ms(
                lambda i: store.graph.search(queries[i], embedding=vectors[queries[i]]),
                args.repeat)
            figures["neighbors_hops2_ms"] = median_ms(
                lambda i: store.graph.neighbors(people[i], hops=2), args.repeat)
            hit = store.graph.search(queries[0], routes=["graph"], hops=2, k=1000)
    print(json.dumps({"server": how, "memories": len(texts), **dict(counts),
                      "link_ms_per_memory": round(link_s * 1000 / len(texts), 3),
                      "link_paths": linked.paths, "graph_hits_hops2": len(hit),
                      "repeat": args.repeat, **figures}, indent=2))


if __name__ == "__main__":
    main()

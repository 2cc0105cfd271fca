"""memdb's LangGraph store against LangGraph's own PostgresStore, one paired run.

Both stores run on the same PostgreSQL server (the embedded one, or --dsn), in one database,
with the same embedder: the bundled multilingual-e5-small model, but every text's vector is
computed once up front and served from a cache, so the figures are the stores' own time
(database, SQL, Python), not the model's. The embedding time of one query is reported
separately. PostgresStore gets ``index={"dims": 384, "embed": ..., "fields": ["text"]}``
(HNSW, cosine) and ``setup()``; MemdbStore its defaults (hybrid search: vector + BM25 +
exact, fused).

Workload: --items items in 10 namespaces ("users", "u0".."u9"), English and Chinese texts;
operations timed one at a time, interleaved per step (memdb, then PostgresStore): put of a
new key, put of an existing key (update), ANALYZE (as autovacuum would), get, search with a
query in one namespace (limit 5), search without a query (namespace prefix, limit 10),
list_namespaces.
Median and p95 in ms, and the ratio memdb / PostgresStore of the medians.

    python benchmarks/langgraph_store.py [--items 500] [--dsn DSN] [--json OUT]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _server import emit, server, with_db  # noqa: E402

from memdb import LocalEmbedder, MemoryStore  # noqa: E402
from memdb.integrations import _langgraph_map as lg  # noqa: E402
from memdb.integrations.langgraph import MemdbStore  # noqa: E402

TOPICS_EN = ["green tea", "espresso", "the gym", "Python", "jazz", "hiking", "Tokyo", "chess",
             "sushi", "the violin"]
TOPICS_ZH = ["乌龙茶", "咖啡", "健身房", "数据库", "爵士乐", "爬山", "上海", "围棋", "火锅", "钢琴"]


class CachedEmbedder:
    """multilingual-e5-small, every vector computed once (``warm``), then looked up."""

    model = LocalEmbedder.model
    dims = LocalEmbedder.dims

    def __init__(self) -> None:
        self.local = LocalEmbedder(threads=1)
        self.passages: dict[str, np.ndarray] = {}
        self.queries: dict[str, np.ndarray] = {}

    def warm(self, passages: Sequence[str], queries: Sequence[str]) -> None:
        todo = sorted(set(passages) - set(self.passages))
        for text, vec in zip(todo, self.local.embed_passages(todo), strict=True):
            self.passages[text] = vec
        todo = sorted(set(queries) - set(self.queries))
        for text, vec in zip(todo, self.local.embed_queries(todo), strict=True):
            self.queries[text] = vec

    def _get(self, table: dict[str, np.ndarray], texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in texts if t not in table]
        if missing:
            raise KeyError(f"not warmed: {missing[:2]}")
        return np.stack([table[t] for t in texts])

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._get(self.passages, texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._get(self.queries, texts)

    def for_langgraph(self, texts: Sequence[str]) -> list[list[float]]:
        """PostgresStore's embed function: it embeds documents and queries alike."""
        return [(self.queries.get(t) if t in self.queries else self.passages[t]).tolist()
                for t in texts]


def text(n: int, version: int = 0) -> str:
    user, topic = f"u{n % 10}", n // 10
    if n % 2:
        return f"{user} mentioned {TOPICS_EN[(topic + version) % 10]} on day {topic}: note {n}."
    return f"{user} 第{topic}天提到了{TOPICS_ZH[(topic + version) % 10]}（记录 {n}）。"


def query(i: int) -> tuple[tuple[str, str], str]:
    user = f"u{i % 10}"
    q = (f"what did {user} say about {TOPICS_EN[i % 10]}?" if i % 2
         else f"{user} 关于{TOPICS_ZH[i % 10]}说过什么？")
    return ("users", user), q


def stats(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    return {"p50_ms": round(statistics.median(ordered), 2),
            "p95_ms": round(ordered[max(0, int(len(ordered) * 0.95) - 1)], 2), "n": len(times)}


def timed(fn: Callable[[int], object], n: int) -> list[float]:
    out = []
    for i in range(n):
        start = time.perf_counter()
        fn(i)
        out.append((time.perf_counter() - start) * 1000)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=500)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--dsn")
    parser.add_argument("--json", type=Path,
                        default=Path(__file__).parent / "results" / "langgraph_store.json")
    args = parser.parse_args()
    from langgraph.store.postgres import PostgresStore

    n, nq = args.items, args.queries
    keys = [f"k{i}" for i in range(n)]
    values = [{"text": text(i), "i": i} for i in range(n)]
    updates = [{"text": text(i, 1), "i": i} for i in range(n)]
    spaces = [("users", f"u{i % 10}") for i in range(n)]
    queries = [query(i) for i in range(nq)]
    embedder = CachedEmbedder()
    memdb_texts = [lg.content_for(v, ns, k, None) for v, ns, k in zip(
        values + updates, spaces + spaces, keys + keys, strict=True)]
    print("embedding every text once...", file=sys.stderr, flush=True)
    embedder.warm(memdb_texts + [v["text"] for v in values + updates], [q for _, q in queries])
    start = time.perf_counter()
    LocalEmbedder(threads=1).embed_queries([queries[0][1]])  # model load, untimed
    start = time.perf_counter()
    for _, q in queries[:20]:
        embedder.local.embed_queries([q])
    embed_ms = round((time.perf_counter() - start) * 1000 / 20, 2)

    name = f"memdb_bench_{uuid.uuid4().hex[:8]}"
    with server(args.dsn) as (admin, how):
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        try:
            dsn = with_db(admin, name)
            MemoryStore(dsn, embedder=embedder).migrate()
            index = {"dims": 384, "embed": embedder.for_langgraph, "fields": ["text"]}
            with PostgresStore.from_conn_string(dsn, index=index) as pg, \
                    MemdbStore(dsn, tenant="bench", embedder=embedder) as mem:
                pg.setup()
                stores = {"memdb": mem, "postgres_store": pg}
                steps: dict[str, Callable[[object], Callable[[int], object]]] = {
                    "put_new": lambda s: lambda i: s.put(spaces[i], keys[i], values[i]),
                    "put_update": lambda s: lambda i: s.put(spaces[i], keys[i], updates[i]),
                    "get": lambda s: lambda i: s.get(spaces[i], keys[i]),
                    "search_query": lambda s: lambda i: s.search(queries[i][0],
                                                                 query=queries[i][1], limit=5),
                    "search_prefix": lambda s: lambda i: s.search(("users",), limit=10,
                                                                  offset=i % 5 * 10),
                    "list_namespaces": lambda s: lambda i: s.list_namespaces(prefix=("users",)),
                }
                counts = {"put_new": n, "put_update": n, "get": n, "search_query": nq,
                          "search_prefix": nq, "list_namespaces": 50}
                results: dict[str, dict[str, dict[str, float]]] = {}
                for step, make in steps.items():
                    if step == "get":  # the planner's statistics, as autovacuum would have them
                        with psycopg.connect(dsn, autocommit=True) as conn:
                            conn.execute("ANALYZE")
                    results[step] = {}
                    for label, store in stores.items():
                        print(f"{step}: {label}...", file=sys.stderr, flush=True)
                        results[step][label] = stats(timed(make(store), counts[step]))
                    results[step]["ratio_memdb_over_postgres_store"] = round(
                        results[step]["memdb"]["p50_ms"]
                        / results[step]["postgres_store"]["p50_ms"], 2)
                hits = {label: [h.key for h in s.search(queries[1][0], query=queries[1][1],
                                                        limit=3)]
                        for label, s in stores.items()}
        finally:
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    emit({"benchmark": "langgraph_store", "server": how, "items": n, "queries": nq,
          "embedder": "multilingual-e5-small, vectors precomputed (time outside embedding)",
          "query_embedding_ms_local_1_thread": embed_ms,
          "example_top3": {"query": queries[1][1], **hits},
          "results": results}, args.json)


if __name__ == "__main__":
    main()

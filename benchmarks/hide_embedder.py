"""How much of a search's embedding could its database work hide? Measures, per query, on
one store: the query's embedding alone (E), the search given that embedding (D: database and
Python, embedding excluded), its keyword routes alone (K: routes bm25 and exact, what can run
before the vector exists), the vector route alone, the end-to-end search (embedding included),
and E and K run side by side (the embedding in a thread: the local model releases the GIL).

The best a search that overlaps its keyword routes with the embedding can cost is about
max(E, K) + (D - K); today it costs E + D. Paired per query, p50 and p95 in ms.

    python benchmarks/hide_embedder.py --memories 2000 --queries 200
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peers  # noqa: E402  (its data generator and local embedder; installs its network guard)
import psycopg  # noqa: E402
from _server import emit, server, with_db  # noqa: E402

from memdb import MemoryStore  # noqa: E402
from memdb.core.migrations import upgrade  # noqa: E402


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000


def _stats(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"p50": round(statistics.median(ordered), 2),
            "p95": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 2)}


def measure(store: MemoryStore, facts: list[peers.Fact], n_queries: int) -> dict:
    embedder = store.embedder
    rows: dict[str, list[float]] = {k: [] for k in (
        "embed", "search_given_vector", "keyword_routes", "vector_route", "end_to_end",
        "embed_beside_keyword_routes", "ideal_hidden")}
    for n, fact in enumerate(facts[:n_queries]):
        scope = {"subject": fact.user} if n % 2 == 0 else {}
        q = fact.question
        t = time.perf_counter()
        vec = embedder.embed_queries([q])[0]
        e = _ms(t)
        t = time.perf_counter()
        store.search(q, k=10, embedding=vec, **scope)
        d = _ms(t)
        t = time.perf_counter()
        store.search(q, k=10, routes=["bm25", "exact"], **scope)
        k = _ms(t)
        t = time.perf_counter()
        store.search(q, k=10, routes=["vector"], embedding=vec, **scope)
        v = _ms(t)
        t = time.perf_counter()
        store.search(q, k=10, **scope)  # the embedder has no query cache: embeds again
        full = _ms(t)
        t = time.perf_counter()
        worker = threading.Thread(target=embedder.embed_queries, args=([q],))
        worker.start()
        store.search(q, k=10, routes=["bm25", "exact"], **scope)
        worker.join()
        both = _ms(t)
        for key, value in (("embed", e), ("search_given_vector", d), ("keyword_routes", k),
                           ("vector_route", v), ("end_to_end", full),
                           ("embed_beside_keyword_routes", both),
                           ("ideal_hidden", both + max(d - k, 0.0))):
            rows[key].append(value)
    out = {key: _stats(values) for key, values in rows.items()}
    saved = [a - b for a, b in zip(rows["end_to_end"], rows["ideal_hidden"], strict=True)]
    out["ideal_saving_per_search"] = _stats(saved)
    out["ideal_over_end_to_end_p50"] = round(
        out["ideal_hidden"]["p50"] / out["end_to_end"]["p50"], 3)
    return out


def run(args: argparse.Namespace) -> dict:
    facts = peers.make_facts(args.memories, 10, seed=7)
    with server(args.dsn) as (admin, _how):
        name = f"memdb_hide_{os.getpid()}"
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        try:
            dsn = with_db(admin, name)
            upgrade(dsn)
            with MemoryStore(dsn, embedder=peers.local_embedder(), gate=None) as store:
                t = time.perf_counter()
                for i in range(0, len(facts), 200):
                    store.add_many([{"content": f.text, "subject": f.user,
                                     "source_id": f"chat:{f.i}"} for f in facts[i:i + 200]])
                load_s = _ms(t) / 1000
                for f in facts[:20]:  # warm the plans and caches
                    store.search(f.question, k=10, subject=f.user)
                result = measure(store, facts, args.queries)
        finally:
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    result.update(memories=len(facts), queries=args.queries, load_seconds=round(load_s, 1),
                  note="half the queries within one subject, half tenant-wide; k 10; default "
                       "options; the local embedder with one thread and no query cache",
                  machine={"cpus": os.cpu_count(),
                           "load_average_1min_at_end": round(os.getloadavg()[0], 2)},
                  date=datetime.now(UTC).date().isoformat())
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dsn", help="a server where databases may be created "
                                      "(default $MEMDB_DSN, else an embedded one)")
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--out", default=str(Path(__file__).parent / "baselines"
                                             / "hide_embedder.json"))
    args = parser.parse_args()
    emit(run(args), Path(args.out))


if __name__ == "__main__":
    main()

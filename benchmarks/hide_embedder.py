"""What a search's keyword routes running beside its query's embedding saves. Measures, per
query, on one store: the query's embedding alone (E), the search given that embedding (D:
database and Python, embedding excluded), its keyword routes alone (K: routes bm25 and exact),
the vector route alone, E and K side by side (the embedding in a thread: the local model
releases the GIL), and the end-to-end search (embedding included) both ways, paired and in
alternating order: one statement after the embedding (``MEMDB_OVERLAP_EMBEDDING=0``) and the
keyword routes run while the model embeds (the default).

The best an overlapping search can cost is about max(E, K) + (D - K); one statement after the
embedding costs E + D. p50 and p95 in ms; the paired ratio overlapped / one statement.

    python benchmarks/hide_embedder.py --memories 1000 --queries 150
    python benchmarks/hide_embedder.py --reuse DB_DSN --model bench-random --queries 150

``--reuse`` measures an already loaded database (search_latency.py's, kept with --keep), its
queries the first words of random memories, half within the memory's subject; ``--model``
names its embedding space, whose vectors the local model's stand in for (the timings of a
search do not depend on the vectors' values).
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


def measure(store: MemoryStore, queries: list[tuple[str, str]], n_queries: int) -> dict:
    """Each (question, its subject): even ones within the subject, odd ones tenant-wide."""
    embedder = store.embedder
    rows: dict[str, list[float]] = {k: [] for k in (
        "embed", "search_given_vector", "keyword_routes", "vector_route", "end_to_end",
        "end_to_end_overlapped", "embed_beside_keyword_routes", "ideal_hidden")}
    for n, (q, user) in enumerate(queries[:n_queries]):
        scope = {"subject": user} if n % 2 == 0 else {}
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
        # the embedder has no query cache: each search embeds again
        ways = {}
        for setting in (("0", "1") if (n // 2) % 2 == 0 else ("1", "0")):
            os.environ["MEMDB_OVERLAP_EMBEDDING"] = setting
            t = time.perf_counter()
            store.search(q, k=10, **scope)
            ways[setting] = _ms(t)
        os.environ.pop("MEMDB_OVERLAP_EMBEDDING")
        full, overlapped = ways["0"], ways["1"]
        t = time.perf_counter()
        worker = threading.Thread(target=embedder.embed_queries, args=([q],))
        worker.start()
        store.search(q, k=10, routes=["bm25", "exact"], **scope)
        worker.join()
        both = _ms(t)
        for key, value in (("embed", e), ("search_given_vector", d), ("keyword_routes", k),
                           ("vector_route", v), ("end_to_end", full),
                           ("end_to_end_overlapped", overlapped),
                           ("embed_beside_keyword_routes", both),
                           ("ideal_hidden", both + max(d - k, 0.0))):
            rows[key].append(value)
    out = {key: _stats(values) for key, values in rows.items()}
    saved = [a - b for a, b in zip(rows["end_to_end"], rows["ideal_hidden"], strict=True)]
    out["ideal_saving_per_search"] = _stats(saved)
    out["ideal_over_end_to_end_p50"] = round(
        out["ideal_hidden"]["p50"] / out["end_to_end"]["p50"], 3)
    ratios = [b / a for a, b in zip(rows["end_to_end"], rows["end_to_end_overlapped"],
                                    strict=True)]
    out["overlapped_over_one_statement"] = {
        "paired_median": round(statistics.median(ratios), 3),
        "p50": round(out["end_to_end_overlapped"]["p50"] / out["end_to_end"]["p50"], 3),
        "p95": round(out["end_to_end_overlapped"]["p95"] / out["end_to_end"]["p95"], 3)}
    for part in ("one_subject", "tenant"):
        picked = [r for n, r in enumerate(ratios) if (n % 2 == 0) == (part == "one_subject")]
        out["overlapped_over_one_statement"][f"paired_median_{part}"] = round(
            statistics.median(picked), 3)
    return out


class NamedModel:
    """The local model (peers.local_embedder: one thread, no query cache) under the name of a
    reused database's embedding space."""

    def __init__(self, model: str) -> None:
        self.inner = peers.local_embedder()
        self.model, self.dims = model, self.inner.dims

    def embed_queries(self, texts):
        return self.inner.embed_queries(texts)

    embed_passages = embed_queries


def reuse_queries(dsn: str, n: int) -> list[tuple[str, str]]:
    """The first words (or, for CJK text, characters) of n random current memories, and their
    subjects."""
    with psycopg.connect(dsn) as conn:
        conn.execute("SELECT setseed(0.7)")
        rows = conn.execute("SELECT content, subject FROM memdb.memories WHERE valid_to IS NULL"
                            " ORDER BY random() LIMIT %s", (n,)).fetchall()
    out = []
    for content, subject in rows:
        words = content.split()
        out.append((" ".join(words[:4]) if len(words) >= 3 else content[:12], subject))
    return out


def run_reuse(args: argparse.Namespace) -> dict:
    queries = reuse_queries(args.reuse, args.queries + 20)
    with MemoryStore(args.reuse, embedder=NamedModel(args.model), gate=None) as store:
        memories = store.count()
        for q, user in queries[-20:]:  # warm the plans and caches
            store.search(q, k=10, subject=user)
        result = measure(store, queries, args.queries)
    result.update(memories=memories, queries=args.queries, database="reused",
                  note="half the queries within one subject, half tenant-wide; k 10; default "
                       "options; the local embedder with one thread and no query cache; "
                       "queries: the first words of random memories",
                  machine={"cpus": os.cpu_count(),
                           "load_average_1min_at_end": round(os.getloadavg()[0], 2)},
                  date=datetime.now(UTC).date().isoformat())
    return result


def run(args: argparse.Namespace) -> dict:
    if args.reuse:
        return run_reuse(args)
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
                result = measure(store, [(f.question, f.user) for f in facts], args.queries)
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
    parser.add_argument("--reuse", metavar="DB_DSN",
                        help="measure this already loaded database (no load, no drop)")
    parser.add_argument("--model", default="bench-random",
                        help="with --reuse: the name of its embedding space's model")
    parser.add_argument("--out", default=str(Path(__file__).parent / "baselines"
                                             / "hide_embedder.json"))
    args = parser.parse_args()
    emit(run(args), Path(args.out))


if __name__ == "__main__":
    main()

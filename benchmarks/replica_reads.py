"""Reads on a streaming standby vs the primary, and what read-your-writes costs.

Starts an embedded primary with a streaming hot standby made by pg_basebackup from the same
binaries (tests/replica.py), loads N memories (random unit vectors, no embedding: database
time only), then measures on one machine (both servers share its cores):

* search (``store.search(text, k=10, embedding=vec)``) and get by id, Q calls each, with
  consistency ``primary`` and ``replica``: median and p95 wall time of the store call;
* write-then-read: ``add`` one memory, then ``get`` it at once, W times, with consistency
  ``primary`` and ``read_your_writes`` (the read waits until the standby has replayed the
  write): median and p95 of the read, and how many reads had to wait and for how long.

One JSON document goes to stdout and to benchmarks/baselines/replica_reads.json.

    python benchmarks/replica_reads.py [--n 2000] [--queries 200] [--writes 100]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from _server import RandomEmbedder, emit  # noqa: I001  (benchmarks/ sibling module)

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from memdb import MemoryInput, MemoryStore  # noqa: E402
from tests.replica import replica_pair  # noqa: E402

WORDS = ["tea", "coffee", "Berlin", "Tokyo", "violin", "hiking", "nurse", "PostgreSQL",
         "绿茶", "柏林", "小提琴", "护士"]


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.standard_normal((n, RandomEmbedder.dims)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _ms(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"p50_ms": round(statistics.median(ordered), 3),
            "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))], 3)}


def _timed(fn, repeat: int) -> list[float]:
    out = []
    for i in range(repeat):
        start = time.perf_counter()
        fn(i)
        out.append((time.perf_counter() - start) * 1000)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--writes", type=int, default=100)
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    embedder = RandomEmbedder("bench-random")
    result: dict = {"n": args.n, "queries": args.queries, "writes": args.writes,
                    "machine": f"one machine, {os.cpu_count()} cores shared by the primary, "
                               "the standby and the client (and whatever else runs)",
                    "load_average_at_start": round(os.getloadavg()[0], 2)}
    with replica_pair() as pair:
        with MemoryStore(pair.admin_dsn, embedder=embedder) as admin:
            admin.space_id()
        with MemoryStore(pair.app_dsn, read_dsn=pair.standby_app_dsn, embedder=embedder,
                         tenant="bench", gate=None, read_fallback=False,
                         read_timeout=5) as store:
            vectors = _unit(rng, args.n)
            items = [MemoryInput(content=f"memory {i} about {WORDS[i % len(WORDS)]}",
                                 subject=f"user{i % 20}", embedding=vectors[i])
                     for i in range(args.n)]
            for start in range(0, args.n, 500):
                store.add_many(items[start:start + 500])
            pair.wait_replayed()
            ids = [m.id for m in store.list(limit=args.n)]
            queries = _unit(rng, args.queries)
            reads = {}
            for level in ("primary", "replica"):
                with store.consistency(level):
                    for i in range(20):  # warm-up: pools, plans, caches
                        store.search(WORDS[i % len(WORDS)], k=10, embedding=queries[i])
                    search = _timed(lambda i: store.search(
                        WORDS[i % len(WORDS)], k=10, embedding=queries[i]), args.queries)
                    get = _timed(lambda i: store.get(ids[i % len(ids)]), args.queries)
                reads[level] = {"search": _ms(search), "get": _ms(get)}
            result["reads"] = reads
            writes = {}
            for level in ("primary", "read_your_writes"):
                before = dict(store.replica.stats)
                read_ms = []
                with store.consistency(level):
                    for i in range(args.writes):
                        made = store.add(f"new fact {level} {i}", subject="writer",
                                         embedding=_unit(rng, 1)[0])
                        start = time.perf_counter()
                        assert store.get(made.id).id == made.id
                        read_ms.append((time.perf_counter() - start) * 1000)
                stats = store.replica.stats
                waits = int(stats["waits"] - before["waits"])
                writes[level] = {"get_after_add": _ms(read_ms), "reads_that_waited": waits,
                                 "mean_wait_ms": round((stats["wait_ms"] - before["wait_ms"])
                                                       / waits, 3) if waits else 0.0,
                                 "fallbacks": int(stats["fallback"] - before["fallback"])}
            result["write_then_read"] = writes
    result["load_average_at_end"] = round(os.getloadavg()[0], 2)
    emit(result, ROOT / "benchmarks" / "baselines" / "replica_reads.json")
    print("\n| read | consistency | p50 ms | p95 ms |\n|---|---|---|---|", file=sys.stderr)
    for level, parts in result["reads"].items():
        for name, fig in parts.items():
            print(f"| {name} | {level} | {fig['p50_ms']} | {fig['p95_ms']} |", file=sys.stderr)
    for level, fig in result["write_then_read"].items():
        got = fig["get_after_add"]
        print(f"| get right after add | {level} | {got['p50_ms']} | {got['p95_ms']} |"
              f" waited {fig['reads_that_waited']}/{args.writes}, mean "
              f"{fig['mean_wait_ms']} ms", file=sys.stderr)


if __name__ == "__main__":
    main()

"""Concurrent searches: the async store against the sync store on a thread pool.

N clients (1, 8, 32, 64) issue searches at once from one asyncio program, as an agent service
would: with ``AsyncMemoryStore`` each client awaits ``store.search``; with ``MemoryStore`` each
awaits ``loop.run_in_executor(pool_of_N_threads, store.search, ...)``. Both stores have the
same connection pool size (``--pool``). Two query modes: the local embedder embeds every query
(``local``: CPU-bound, one engine shared by all clients), or the query vector is precomputed
(``vector``: database time only). For each: throughput (searches/s), per-search latency
p50/p95, and the event loop's lag (how late a 5 ms ticker wakes up while the searches run:
p50/p99/max), all measured in one run, the two drivers interleaved per N.

The data: 1,000 memories (Chinese and English, 10 subjects) made by the script, embedded once
with the local model; queries are subject-scoped paraphrases.

    python benchmarks/concurrency.py [--clients 1 8 32 64] [--searches 128] [--pool 8]
                                     [--dsn DSN] [--json OUT]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _server import emit, server, with_db  # noqa: E402

from memdb import AsyncMemoryStore, LocalEmbedder, MemoryStore  # noqa: E402

SUBJECTS = [f"user_{i}" for i in range(10)]
TOPICS_EN = ["tea", "coffee", "the gym", "Python", "jazz", "hiking", "Tokyo", "chess",
             "sushi", "the violin"]
TOPICS_ZH = ["乌龙茶", "咖啡", "健身房", "数据库", "爵士乐", "爬山", "上海", "围棋", "火锅", "钢琴"]


def memories() -> list[dict]:
    items = []
    for n in range(1000):
        subject, topic = SUBJECTS[n % 10], n // 10
        if n % 2:
            text = f"{subject} mentioned {TOPICS_EN[topic % 10]} on day {topic}: note {n}."
        else:
            text = f"{subject} 第{topic}天提到了{TOPICS_ZH[topic % 10]}（记录 {n}）。"
        items.append({"content": text, "subject": subject})
    return items


def queries() -> list[tuple[str, str]]:
    out = []
    for i in range(100):
        subject = SUBJECTS[i % 10]
        text = (f"what did {subject} say about {TOPICS_EN[i % 10]}?" if i % 2
                else f"{subject} 关于{TOPICS_ZH[i % 10]}说过什么？")
        out.append((subject, text))
    return out


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


async def measure(search, clients: int, total: int, qs: list) -> dict:
    """Run ``total`` searches from ``clients`` concurrent clients; latencies and loop lag."""
    latencies: list[float] = []
    lags: list[float] = []
    done = asyncio.Event()

    async def ticker() -> None:
        while not done.is_set():
            expected = time.perf_counter() + 0.005
            await asyncio.sleep(0.005)
            lags.append(max(0.0, time.perf_counter() - expected) * 1000)

    async def client(c: int) -> None:
        for i in range(c, total, clients):
            subject, text, vector = qs[i % len(qs)]
            started = time.perf_counter()
            hits = await search(text, subject, vector)
            latencies.append((time.perf_counter() - started) * 1000)
            if not hits:
                raise AssertionError(f"no hit for {text!r}")

    tick = asyncio.create_task(ticker())
    started = time.perf_counter()
    await asyncio.gather(*(client(c) for c in range(clients)))
    elapsed = time.perf_counter() - started
    done.set()
    await tick
    return {"throughput_per_s": round(total / elapsed, 1),
            "p50_ms": round(pct(latencies, 0.5), 2), "p95_ms": round(pct(latencies, 0.95), 2),
            "loop_lag_p50_ms": round(pct(lags, 0.5), 2),
            "loop_lag_p99_ms": round(pct(lags, 0.99), 2),
            "loop_lag_max_ms": round(max(lags), 2)}


async def run_all(dsn: str, embedder: LocalEmbedder, args) -> dict:
    qs_text = queries()
    vectors = embedder.embed_queries([t for _, t in qs_text])
    results: dict = {}
    async with AsyncMemoryStore(dsn, embedder=embedder, gate=None,
                                pool_size=args.pool) as astore:
        sync_store = MemoryStore(dsn, embedder=embedder, gate=None, pool_size=args.pool)
        sync_store.open()
        loop = asyncio.get_running_loop()
        try:
            for mode in ("vector", "local"):
                qs = [(s, t, vectors[i] if mode == "vector" else None)
                      for i, (s, t) in enumerate(qs_text)]
                for clients in args.clients:
                    pool = ThreadPoolExecutor(max_workers=clients)

                    async def on_async(text, subject, vector):
                        return await astore.search(text, k=5, subject=subject,
                                                   embedding=vector)

                    async def on_threads(text, subject, vector, pool=pool):
                        return await loop.run_in_executor(pool, lambda: sync_store.search(
                            text, k=5, subject=subject, embedding=vector))

                    row = {}
                    for name, search in (("async", on_async), ("threads", on_threads)):
                        await measure(search, clients, min(16, args.searches), qs)  # warm
                        row[name] = await measure(search, clients, args.searches, qs)
                    pool.shutdown()
                    results.setdefault(mode, {})[str(clients)] = row
                    a, t = row["async"], row["threads"]
                    print(f"{mode:6} N={clients:<3} async {a['throughput_per_s']:7.1f}/s "
                          f"p50 {a['p50_ms']:7.2f} p95 {a['p95_ms']:7.2f} lag max "
                          f"{a['loop_lag_max_ms']:6.2f} | threads {t['throughput_per_s']:7.1f}/s "
                          f"p50 {t['p50_ms']:7.2f} p95 {t['p95_ms']:7.2f} lag max "
                          f"{t['loop_lag_max_ms']:6.2f}", file=sys.stderr, flush=True)
        finally:
            sync_store.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 8, 32, 64])
    parser.add_argument("--searches", type=int, default=128, help="searches per measurement")
    parser.add_argument("--pool", type=int, default=8, help="connections per store")
    parser.add_argument("--dsn")
    parser.add_argument("--json", type=Path,
                        default=Path(__file__).parent / "results" / "concurrency.json")
    args = parser.parse_args()
    name = f"memdb_bench_{uuid.uuid4().hex[:8]}"
    embedder = LocalEmbedder(threads=1)
    items = memories()
    print("embedding 1,000 memories once...", file=sys.stderr, flush=True)
    passages = embedder.embed_passages([i["content"] for i in items])
    with server(args.dsn) as (admin, how):
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        try:
            dsn = with_db(admin, name)
            with MemoryStore(dsn, embedder=embedder, gate=None) as store:
                store.migrate()
                store.add_many([{**i, "embedding": v}
                                for i, v in zip(items, passages, strict=True)])
            results = asyncio.run(run_all(dsn, embedder, args))
        finally:
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    ratios = {mode: {n: round(r["async"]["throughput_per_s"]
                              / r["threads"]["throughput_per_s"], 2)
                     for n, r in rows.items()} for mode, rows in results.items()}
    emit({"benchmark": "concurrency", "server": how, "memories": len(items),
          "searches_per_measurement": args.searches, "pool_size": args.pool,
          "embedder": "multilingual-e5-small (local, 1 thread)",
          "throughput_ratio_async_over_threads": ratios, "results": results}, args.json)


if __name__ == "__main__":
    main()

"""The HTTP door's overhead: search through `memdb serve` against the same search on
an in-process ``AsyncMemoryStore``, at 1, 8 and 32 concurrent clients.

The door runs in a process of its own (uvicorn, the app of ``memdb.http``, the key checked on
every request through ``memdb.api_key_lookup``; rate limit off); the clients are one asyncio
program with an ``httpx.AsyncClient`` (one connection per client, keep-alive) posting
``/v1/search`` with a tenant key. The in-process figures are the same program awaiting
``store.search`` on an ``AsyncMemoryStore`` with the same pool size. Both embed every query
with the local model (one thread), as a real request does: the HTTP API takes text, not
vectors. For each N: throughput (searches/s) and per-search latency p50/p95, the two paths
interleaved per N; the overhead is HTTP minus in-process.

The data: 1,000 memories (Chinese and English, 10 subjects, as benchmarks/concurrency.py),
embedded once; queries are subject-scoped paraphrases. The door's data path logs in as the
admin of the benchmark database (the key still selects tenant and subject, under row-level
security as memdb_app).

    python benchmarks/http_door.py [--clients 1 8 32] [--searches 128] [--pool 8]
                                   [--dsn DSN] [--json OUT]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _server import emit, server, with_db  # noqa: E402
from concurrency import memories, pct, queries  # noqa: E402

from memdb import AsyncMemoryStore, LocalEmbedder, MemoryAdmin, MemoryStore  # noqa: E402
from memdb.families.keys import create_key  # noqa: E402


def serve(dsn: str, port: int, pool: int) -> None:
    """The door's process: uvicorn serving memdb.http on 127.0.0.1:port."""
    import uvicorn

    from memdb.http import ServerSettings, create_app

    settings = ServerSettings(dsn=dsn, embedder=LocalEmbedder(threads=1), rate_per_second=0,
                              pool_size=pool)
    uvicorn.run(create_app(settings), host="127.0.0.1", port=port, log_level="warning",
                access_log=False)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def measure(search, clients: int, total: int, qs: list) -> dict:
    latencies: list[float] = []

    async def client(c: int) -> None:
        for i in range(c, total, clients):
            subject, text = qs[i % len(qs)]
            started = time.perf_counter()
            hits = await search(text, subject)
            latencies.append((time.perf_counter() - started) * 1000)
            if not hits:
                raise AssertionError(f"no hit for {text!r}")

    started = time.perf_counter()
    await asyncio.gather(*(client(c) for c in range(clients)))
    elapsed = time.perf_counter() - started
    return {"throughput_per_s": round(total / elapsed, 1),
            "p50_ms": round(pct(latencies, 0.5), 2), "p95_ms": round(pct(latencies, 0.95), 2)}


async def run_all(dsn: str, url: str, key: str, embedder: LocalEmbedder, args) -> dict:
    import httpx

    qs = queries()
    results: dict = {}
    async with AsyncMemoryStore(dsn, embedder=embedder, gate=None,
                                pool_size=args.pool) as store:
        for clients in args.clients:
            limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
            async with httpx.AsyncClient(base_url=url, limits=limits, timeout=120,
                                         headers={"Authorization": f"Bearer {key}"}) as http:

                async def in_process(text: str, subject: str) -> list:
                    return list(await store.search(text, k=5, subject=subject))

                async def over_http(text: str, subject: str) -> list:
                    r = await http.post("/v1/search", json={
                        "query": text, "k": 5, "filter": {"subject": subject}})
                    r.raise_for_status()
                    return r.json()["hits"]

                row = {}
                for name, search in (("in_process", in_process), ("http", over_http)):
                    await measure(search, clients, min(16, args.searches), qs)  # warm
                    row[name] = await measure(search, clients, args.searches, qs)
            i, h = row["in_process"], row["http"]
            row["overhead_p50_ms"] = round(h["p50_ms"] - i["p50_ms"], 2)
            row["overhead_p95_ms"] = round(h["p95_ms"] - i["p95_ms"], 2)
            row["throughput_ratio_http_over_in_process"] = round(
                h["throughput_per_s"] / i["throughput_per_s"], 2)
            results[str(clients)] = row
            print(f"N={clients:<3} in-process {i['throughput_per_s']:7.1f}/s p50 "
                  f"{i['p50_ms']:7.2f} p95 {i['p95_ms']:7.2f} | http "
                  f"{h['throughput_per_s']:7.1f}/s p50 {h['p50_ms']:7.2f} p95 "
                  f"{h['p95_ms']:7.2f}", file=sys.stderr, flush=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--searches", type=int, default=128, help="searches per measurement")
    parser.add_argument("--pool", type=int, default=8, help="connections per store")
    parser.add_argument("--dsn")
    parser.add_argument("--json", type=Path,
                        default=Path(__file__).parent / "results" / "http_door.json")
    parser.add_argument("--serve", nargs=2, metavar=("DSN", "PORT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve[0], int(args.serve[1]), args.pool)
        return
    name = f"memdb_bench_{uuid.uuid4().hex[:8]}"
    embedder = LocalEmbedder(threads=1)
    items = memories()
    print("embedding 1,000 memories once...", file=sys.stderr, flush=True)
    passages = embedder.embed_passages([i["content"] for i in items])
    with server(args.dsn) as (admin, how):
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        door = None
        try:
            dsn = with_db(admin, name)
            with MemoryStore(dsn, embedder=embedder, gate=None) as store:
                store.migrate()
                store.add_many([{**i, "embedding": v}
                                for i, v in zip(items, passages, strict=True)])
            with MemoryAdmin(dsn) as memory_admin:
                key = create_key(memory_admin, tenant="default", name="benchmark").key
            port = free_port()
            env = {**os.environ, "OMP_NUM_THREADS": "1"}
            door = subprocess.Popen([sys.executable, __file__, "--pool", str(args.pool),
                                     "--serve", dsn, str(port)], env=env)
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 120
            import httpx

            while True:
                try:
                    if httpx.get(url + "/v1/health", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if door.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("the door did not start")
                time.sleep(0.2)
            results = asyncio.run(run_all(dsn, url, key, embedder, args))
        finally:
            if door is not None:
                door.terminate()
                door.wait(30)
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    emit({"benchmark": "http_door", "server": how, "memories": len(items),
          "searches_per_measurement": args.searches, "pool_size": args.pool,
          "embedder": "multilingual-e5-small (local, 1 thread, in each process)",
          "query": "text (embedded per search), k=5, subject-scoped",
          "results": results}, args.json)


if __name__ == "__main__":
    main()

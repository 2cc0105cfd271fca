"""Latency of MemoryStore.context over N memories (default 1,000), end to end.

Starts the embedded PostgreSQL in a temporary MEMDB_HOME (or uses --dsn / $MEMDB_DSN), creates
a scratch database, migrates it, loads N mixed Chinese/English memories for one subject (real
embeddings from the bundled local model, 1 thread), 5 system rules, and one session with 40
turns (window: 20 turns, the rest folded into an extractive summary). Then, after a warm-up,
Q timed calls of ``store.context(query, session, budget_tokens=B, k=10)`` with
alternating Chinese and English queries, reporting the median and p95 of the whole call and of
its parts (rules + search including the query embedding, session read, assembly with token
counting). One JSON document goes to stdout. The scratch database is dropped at the end.

    python benchmarks/context_latency.py [--n 1000] [--queries 50] [--budget 1500] [--dsn DSN]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
import uuid
from pathlib import Path

import psycopg
from _server import server, with_db  # noqa: I001  (benchmarks/ sibling module)

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from memdb import LocalEmbedder, MemoryStore  # noqa: E402
from memdb.core.migrations import upgrade  # noqa: E402
from memdb.families.session import SessionWindow  # noqa: E402

EN = ["prefers green tea", "lives in Berlin", "works as a nurse", "plays the violin",
      "decided to use PostgreSQL", "backs up the database nightly", "likes hiking",
      "is allergic to peanuts", "travels to Tokyo in May", "reads science fiction"]
ZH = ["喜欢喝绿茶", "住在柏林", "是一名护士", "会拉小提琴", "决定使用PostgreSQL",
      "每天夜里备份数据库", "喜欢徒步", "对花生过敏", "五月去东京旅行", "喜欢读科幻小说"]
QUERIES = ["What does the user drink?", "用户住在哪里？", "Which database did we choose?",
           "用户对什么过敏？", "Where is the trip in May?", "用户喜欢什么运动？"]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--budget", type=int, default=1500)
    ap.add_argument("--dsn")
    args = ap.parse_args()
    rng = random.Random(7)
    with server(args.dsn) as (admin, how):
        name = f"memdb_bench_ctx_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        dsn = with_db(admin, name)
        try:
            upgrade(dsn)
            store = MemoryStore(dsn, embedder=LocalEmbedder(threads=1), gate=None)
            texts = []
            for n in range(args.n):
                who = f"person {n % 97}" if n % 2 else f"第{n % 97}号用户"
                fact = rng.choice(EN) if n % 2 else rng.choice(ZH)
                texts.append({"content": f"{who} {fact} (note {n}).", "subject": "u"})
            started = time.perf_counter()
            store.add_many(texts)
            load_s = time.perf_counter() - started
            for r in range(5):
                store.add(f"Rule {r}: answer briefly and politely.", subject="u",
                          category="system")
            window = SessionWindow(max_tokens=None, max_messages=20)
            for t in range(40):
                store.sessions.append("s", "user" if t % 2 == 0 else "assistant",
                                  f"Turn {t}: " + rng.choice(EN + ZH) + "。", subject="u",
                                  window=window, llm=None)
            for q in QUERIES:  # warm-up
                store.context(q, "s", args.budget, subject="u")
            total, parts = [], {"rules_and_search": [], "session": [], "assemble": []}
            tokens = []
            for i in range(args.queries):
                q = QUERIES[i % len(QUERIES)]
                t0 = time.perf_counter()
                ctx = store.context(q, "s", args.budget, subject="u", k=10)
                total.append((time.perf_counter() - t0) * 1000)
                for key in parts:
                    parts[key].append(ctx.timings_ms[key])
                tokens.append(ctx.tokens)
                assert ctx.tokens <= args.budget
            store.close()
            print(json.dumps({
                "benchmark": "context_latency", "server": how, "memories": args.n,
                "queries": args.queries, "budget_tokens": args.budget,
                "load_seconds": round(load_s, 2),
                "build_context_ms": {"median": round(statistics.median(total), 2),
                                     "p95": pct(total, 0.95)},
                "parts_median_ms": {k: round(statistics.median(v), 2) for k, v in parts.items()},
                "tokens_median": statistics.median(tokens),
            }, indent=2))
        finally:
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


if __name__ == "__main__":
    main()

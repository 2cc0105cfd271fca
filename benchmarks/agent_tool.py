"""Latency of the agent interface on the real server with the real local embedder: memory
tool dispatch (add, search, summary, a rejected hostile call) and store.remember on the
heuristic path, over a corpus of N mixed Chinese/English memories of one subject.

Medians in ms over R calls; includes embedding (local model, 1 thread) and database time.

    python benchmarks/agent_tool.py [--n 500] [--repeat 20] [--dsn DSN]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import psycopg
from _server import median_ms, server, with_db  # noqa: I001  (benchmarks/ sibling module)

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from memdb import LocalEmbedder, MemoryStore  # noqa: E402
from memdb.core.migrations import upgrade  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--dsn")
    args = parser.parse_args()
    with server(args.dsn) as (admin, how):
        name = "memdb_bench_agent"
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            conn.execute(f"CREATE DATABASE {name}")
        dsn = with_db(admin, name)
        upgrade(dsn)
        with MemoryStore(dsn, embedder=LocalEmbedder()) as store:
            store.add_many([{"content": (f"用户的第{i}个偏好是绿茶{i}号" if i % 2 else
                                         f"User preference number {i}: green tea type {i}"),
                             "subject": "u", "category": "preferences", "source_id": "seed",
                             "importance": (i % 10) / 10} for i in range(args.n)])
            tool = store.tool(subject="u", source_id="turn-b")

            def call(a):
                return {"id": "c", "function": {"name": "memory", "arguments": json.dumps(a)}}

            figures = {
                "tool_add_ms": median_ms(lambda i: tool.dispatch(call(
                    {"action": "add", "content": f"The user visited city number {i} in May"})),
                    args.repeat),
                "tool_search_ms": median_ms(lambda i: tool.dispatch(call(
                    {"action": "search", "query": f"绿茶{i}号", "k": 5})), args.repeat),
                "tool_summary_ms": median_ms(lambda i: tool.dispatch(call(
                    {"action": "summary", "k": 5})), args.repeat),
                "tool_hostile_ms": median_ms(lambda i: tool.dispatch(call(
                    {"action": "update", "id": "1 OR 1=1", "content": "x"})), args.repeat),
                "remember_heuristic_ms": median_ms(lambda i: store.remember(
                    f"记住：我的第{i}辆车是蓝色的。I prefer aisle seat number {i}.",
                    subject="u", llm=None), args.repeat),
            }
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    print(json.dumps({"server": how, "n": args.n, "repeat": args.repeat, **figures}, indent=2))


if __name__ == "__main__":
    main()

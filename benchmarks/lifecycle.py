"""Cost of the lifecycle SQL, database side only (precomputed random vectors, no model).

In a scratch database (embedded server in a temporary MEMDB_HOME, or --dsn / $MEMDB_DSN):

- maintenance: N memories over 100 subjects (mixed Chinese/English): 20% unimportant, 20% a
  year old and never used, 30% working memories in 150 sessions, 5% expired, 5% hypotheses a
  week unconfirmed; then memdb.run_maintenance: a dry run, the real pass (batch_limit large
  enough for one pass), passes of batch_limit 1000 until done on a second copy, and the idle
  pass afterwards (the steady cost of a scheduled call);
- --without-superseded-index: the same after dropping memories_superseded_by_idx (schema
  revision 0006), to show what it saves: without it each deleted row's ON DELETE SET NULL
  check scans memories;
- erasure: one subject with --subject-n memories (a tenth of them updated once, so history
  has two rows each) among the N; export_subject and forget_subject through MemoryStore.

Prints one JSON document and writes it to benchmarks/results/lifecycle.json (or --json OUT).

    python benchmarks/lifecycle.py [--n 10000] [--subject-n 1000] [--dsn DSN] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import psycopg
from _server import RandomEmbedder, server, with_db  # noqa: I001  (benchmarks/ sibling module)

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from memdb import MemoryStore  # noqa: E402
from memdb.core.migrations import upgrade  # noqa: E402

DEFAULT_OUT = ROOT / "benchmarks" / "results" / "lifecycle.json"
TEXTS = ["{s} prefers {x} in the morning", "{s}喜欢在周末去{x}爬山",
         "{s} uses {x} to deploy the backend", "{s}负责{x}项目的前端开发"]


def items(n: int, rng: np.random.Generator, subject_prefix: str = "user") -> list[dict]:
    now = datetime.now(UTC)
    out = []
    for i in range(n):
        vec = rng.standard_normal(384).astype(np.float32)
        item = {"content": TEXTS[i % 4].format(s=f"{subject_prefix}{i % 100}", x=f"x{i}"),
                "subject": f"{subject_prefix}{i % 100}", "embedding": vec / np.linalg.norm(vec)}
        r = i % 20
        if r < 4:
            item["importance"] = 0.05
        elif r < 8:
            item["created_at"] = now - timedelta(days=400)
        elif r < 14:
            item.update(kind="working", scope="session", session_id=f"s{i % 150}")
        elif r == 14:
            item["expires_at"] = now + timedelta(seconds=2)
        out.append(item)
    return out


def timed(fn):
    start = time.perf_counter()
    value = fn()
    return value, round((time.perf_counter() - start) * 1000, 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--subject-n", type=int, default=1_000)
    ap.add_argument("--dsn")
    ap.add_argument("--json", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--without-superseded-index", action="store_true",
                    help="Drop memories_superseded_by_idx (revision 0006) in the scratch "
                         "database, to measure what it saves.")
    args = ap.parse_args()
    rng = np.random.default_rng(7)
    result: dict = {"n": args.n, "subject_n": args.subject_n, "machine": platform.machine(),
                    "superseded_index": not args.without_superseded_index,
                    "started": datetime.now(UTC).isoformat()}
    opts = {"capacity_per_session": 20}
    with server(args.dsn) as (admin, how):
        result["server"] = how
        names = [f"memdb_bench_life_{uuid.uuid4().hex[:8]}" for _ in range(2)]
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {names[0]}")
        try:
            dsn = with_db(admin, names[0])
            upgrade(dsn)
            embedder = RandomEmbedder("bench-random-384")
            with MemoryStore(dsn, embedder=embedder) as store:
                _, ms = timed(lambda: store.add_many(items(args.n, rng)))
                result["insert_ms"] = ms
            with psycopg.connect(dsn, autocommit=True) as conn:
                # two statements: a confidence change moves updated_at to now (trigger)
                conn.execute("UPDATE memdb.memories SET confidence = 0.5 "
                             "WHERE right(id::text, 1) = '0'")  # 1 in 16
                conn.execute("UPDATE memdb.memories SET status = 'hypothesis', "
                             "updated_at = now() - interval '7 days' "
                             "WHERE right(id::text, 1) = '0'")
                if args.without_superseded_index:
                    conn.execute("DROP INDEX memdb.memories_superseded_by_idx")
                conn.execute("VACUUM ANALYZE memdb.memories")
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f"CREATE DATABASE {names[1]} TEMPLATE {names[0]}")
            with MemoryStore(dsn, embedder=embedder) as store:
                time.sleep(2.5)  # let the short TTLs expire
                dry, result["dry_run_ms"] = timed(
                    lambda: store.maintenance.run(dry_run=True, batch_limit=100_000, **opts))
                real, result["one_pass_ms"] = timed(
                    lambda: store.maintenance.run(batch_limit=100_000, **opts))
                assert dry["steps"] == real["steps"], (dry, real)
                result["one_pass_steps"] = real["steps"]
                _, result["idle_pass_ms"] = timed(lambda: store.maintenance.run(**opts))
            with MemoryStore(with_db(admin, names[1]), embedder=embedder) as store:
                passes = []
                while True:
                    out, ms = timed(lambda: store.maintenance.run(batch_limit=1000, **opts))
                    passes.append(ms)
                    if not out["more"]:
                        break
                result["batched_passes_ms"] = passes
                # erasure: one subject with subject_n memories among the rest
                store.add_many([{**i, "subject": "target"}
                                for i in items(args.subject_n, rng, "t")])
                ids = [m.id for m in store.list(subject="target", limit=args.subject_n)]
                for mid in ids[: args.subject_n // 10]:
                    store.update(mid, importance=0.9, reason="bench")
                with tempfile.TemporaryDirectory() as tmp:
                    counts, result["export_subject_ms"] = timed(
                        lambda: store.subjects.export("target", Path(tmp) / "x.json"))
                    erased, result["forget_subject_ms"] = timed(
                        lambda: store.subjects.forget("target"))
                result["forget_subject_counts"] = erased.counts
                result["rows_left"] = store.count()
        finally:
            with psycopg.connect(admin, autocommit=True) as conn:
                for name in names:
                    conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

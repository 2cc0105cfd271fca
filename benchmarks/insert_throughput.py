"""Insert throughput of MemoryStore.add_many, database side only (no embedding model runs).

Starts the embedded PostgreSQL in a temporary MEMDB_HOME (or uses --dsn / $MEMDB_DSN), creates
a scratch database, migrates it, and inserts N synthetic memories (mixed Chinese/English texts
over 100 subjects) with precomputed random unit vectors (384 dims, fixed seed):

- insert:      N new memories, add_many(batch_size=--batch), in a fresh migrated database;
- duplicates:  the same N again into that database (dedup: 0 created);
- batch_sizes: N new memories per batch size (default 100, 500, 2000), each in its own fresh
               migrated database, so every run starts from the same empty table.

The space's HNSW index is built by memdb once the database holds memdb.hnsw_min_rows memories
(default 10,000: during the last batch of a 10,000-memory run) and maintained by every insert
after that; --hnsw-min-rows 0 keeps it from the start (every insert maintains it), as memdb
did before the index was built on demand.

Each figure is the median of --repeat runs. Prints one JSON document and writes it to
benchmarks/results/insert_throughput.json (or --json OUT). Drops the scratch databases.

    python benchmarks/insert_throughput.py [--n 10000] [--batch 500] [--dsn DSN] [--json OUT]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import psycopg
from _server import RandomEmbedder, emit, server, set_hnsw_min_rows, with_db  # noqa: I001
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run from a source checkout without installing
    sys.path.insert(0, str(ROOT))

from memdb import MemoryInput, MemoryStore  # noqa: E402
from memdb.core.migrations import upgrade  # noqa: E402

DIMS = 384
SUBJECTS = 100
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "insert_throughput.json"

_EN = [
    "{s} prefers {x} in the morning before work",
    "{s} asked about the deadline of project {x}",
    "{s} uses {x} to deploy the backend service",
    "Meeting with {s} about the {x} budget was moved to Friday",
    "{s} is allergic to {x} and avoids it at dinners",
]
_ZH = [
    "{s}喜欢在周末去{x}爬山",
    "{s}负责{x}项目的前端开发",
    "{s}昨天提到想学习{x}",
    "{s}的团队下个月要迁移到{x}",
    "{s}每天早上喝一杯{x}",
]
_MIXED = [
    "{s}说 {x} 的 API 文档需要更新",
    "{s} 在 standup 上提到 {x} 的性能问题",
]
_THINGS = ["green tea", "PostgreSQL", "Kubernetes", "React", "咖啡", "乌龙茶", "Rust", "黄山",
           "pgvector", "Vue.js", "Terraform", "北京", "机器学习", "Redis", "oat milk", "上海"]
_NAMES_EN = ["alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy"]
_NAMES_ZH = ["张三", "李四", "王五", "赵六", "陈七", "刘八", "周九", "吴十", "郑一", "孙二"]


def synthetic_inputs(n: int, seed: int) -> list[MemoryInput]:
    """N distinct memories over SUBJECTS subjects, each with a random unit vector."""
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, DIMS)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    templates = _EN + _ZH + _MIXED
    subjects = [f"{(_NAMES_EN + _NAMES_ZH)[i % 20]}_{i:03d}" for i in range(SUBJECTS)]
    categories = ["preferences", "entities", "events", "patterns", "general"]
    out: list[MemoryInput] = []
    for i in range(n):
        subject = subjects[int(rng.integers(SUBJECTS))]
        display = subject.split("_")[0]
        template = templates[int(rng.integers(len(templates)))]
        thing = _THINGS[int(rng.integers(len(_THINGS)))]
        text = template.format(s=display, x=thing) + f" (#{i})"  # distinct: no accidental dedup
        out.append(MemoryInput(
            content=text,
            subject=subject,
            category=categories[i % len(categories)],
            importance=float(rng.uniform(0.1, 0.9)),
            tags=[thing] if i % 3 == 0 else None,
            embedding=vectors[i],
        ))
    return out


class Scratch:
    """Scratch databases on one server: a migrated template and fresh copies of it."""

    def __init__(self, admin_dsn: str) -> None:
        self.admin_dsn = admin_dsn
        self.prefix = f"memdb_bench_{os.getpid()}_{uuid.uuid4().hex[:6]}"
        self.names: list[str] = []
        self.template = self.create(f"{self.prefix}_template")
        try:
            upgrade(self.template)
        except BaseException:
            self.drop_all()
            raise

    def _admin(self, statement: sql.Composable) -> None:
        with psycopg.connect(self.admin_dsn, autocommit=True) as conn:
            conn.execute(statement)

    def create(self, name: str, template: str | None = None) -> str:
        stmt = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
        if template:
            stmt = sql.SQL("{} TEMPLATE {}").format(stmt, sql.Identifier(template))
        self._admin(stmt)
        self.names.append(name)
        return with_db(self.admin_dsn, name)

    def fresh(self) -> str:
        """A new migrated database (a copy of the template)."""
        return self.create(f"{self.prefix}_{len(self.names)}", f"{self.prefix}_template")

    def drop(self, name: str) -> None:
        self._admin(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        if name in self.names:
            self.names.remove(name)

    def drop_all(self) -> None:
        for name in reversed(list(self.names)):
            self.drop(name)


def _loadavg() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def log(message: str) -> None:
    """Progress goes to stderr; stdout carries only the JSON document."""
    print(f"[insert_throughput] {message}", file=sys.stderr, flush=True)


def _timed_add(store: MemoryStore, inputs: list[MemoryInput], batch: int) -> tuple[float, int]:
    start = time.perf_counter()
    results = store.add_many(inputs, batch_size=batch)
    seconds = time.perf_counter() - start
    return seconds, sum(r.created for r in results)


def _figure(seconds: list[float], n: int, created: list[int], **extra: object) -> dict:
    median = statistics.median(seconds)
    return {
        **extra,
        "seconds": round(median, 3),
        "rows_per_s": round(n / median, 1),
        "created": created[0] if len(set(created)) == 1 else created,
        "runs_seconds": [round(s, 3) for s in seconds],
    }


def run(n: int, batch: int, batch_sizes: list[int], repeat: int, seed: int,
        dsn: str | None, hnsw_min_rows: int | None = None) -> dict:
    t0 = time.perf_counter()
    inputs = synthetic_inputs(n, seed)
    data_seconds = time.perf_counter() - t0
    t0 = time.perf_counter()
    for item in inputs:  # what add_many does in Python before the first round trip
        item.to_item()
    validate_seconds = time.perf_counter() - t0
    embedder = RandomEmbedder("bench-random-384")
    load_start = _loadavg()

    with server(dsn) as (admin_dsn, how):
        scratch = Scratch(admin_dsn)
        try:
            with psycopg.connect(scratch.template, autocommit=True) as conn:
                pg_version = conn.execute("SHOW server_version").fetchone()[0]
                vector_version = conn.execute(
                    "SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0]

            def one_run(batch_size: int, with_duplicates: bool) -> tuple:
                db = scratch.fresh()
                try:
                    if hnsw_min_rows is not None:  # before the space is registered
                        set_hnsw_min_rows(db, hnsw_min_rows)
                    with MemoryStore(db, embedder=embedder, pool_size=2, gate=None) as store:
                        store.space_id()  # registers the space (its HNSW index: see below)
                        first = _timed_add(store, inputs, batch_size)
                        log(f"batch {batch_size}: {n} new rows in {first[0]:.2f} s")
                        assert store.count() == n, "every synthetic memory is distinct"
                        second = None
                        if with_duplicates:
                            second = _timed_add(store, inputs, batch_size)
                            log(f"batch {batch_size}: {n} duplicates in {second[0]:.2f} s")
                            assert store.count() == n, "re-adding created no rows"
                    return first, second
                finally:
                    scratch.drop(conninfo_to_dict(db)["dbname"])

            main, dups = [], []
            for _ in range(repeat):
                first, second = one_run(batch, True)
                main.append(first)
                dups.append(second)
            by_size = {}
            for size in batch_sizes:
                runs = [one_run(size, False)[0] for _ in range(repeat)]
                by_size[str(size)] = _figure([s for s, _ in runs], n, [c for _, c in runs])
        finally:
            scratch.drop_all()

    return {
        "benchmark": "insert_throughput",
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "n": n,
        "dims": DIMS,
        "subjects": SUBJECTS,
        "seed": seed,
        "hnsw_min_rows": hnsw_min_rows,
        "repeat": repeat,
        "statistic": "median",
        "server": {"how": how, "postgresql": pg_version, "pgvector": vector_version},
        "machine": {"python": platform.python_version(), "platform": platform.platform(),
                    "cpus": os.cpu_count(),
                    # 1-minute load average: other work on the machine skews the figures
                    "load_average": {"start": load_start, "end": _loadavg()}},
        "client_seconds": {"make_data": round(data_seconds, 3),
                           "validate_inputs": round(validate_seconds, 3)},
        "insert": _figure([s for s, _ in main], n, [c for _, c in main], batch_size=batch),
        "duplicates": _figure([s for s, _ in dups], n, [c for _, c in dups], batch_size=batch),
        "batch_sizes": by_size,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=10_000, help="memories per run (default 10000)")
    parser.add_argument("--batch", type=int, default=500,
                        help="add_many batch_size for the insert and duplicate runs (default 500)")
    parser.add_argument("--batch-sizes", default="100,500,2000",
                        help="comma-separated batch sizes to compare (default 100,500,2000)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs per figure; the median is reported (default 1)")
    parser.add_argument("--seed", type=int, default=20261129)
    parser.add_argument("--dsn", help="server to use (default $MEMDB_DSN, else embedded); "
                                      "the user must be allowed to create databases")
    parser.add_argument("--hnsw-min-rows", type=int,
                        help="memdb.hnsw_min_rows of each scratch database (0: the HNSW index "
                             "kept from the start; default: memdb's own threshold)")
    parser.add_argument("--json", type=Path, default=DEFAULT_OUT,
                        help="where to write the JSON (default benchmarks/results/)")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.batch_sizes.split(",") if s.strip()]
    if args.n < 1 or args.batch < 1 or args.repeat < 1 or any(s < 1 for s in sizes):
        parser.error("--n, --batch, --repeat and batch sizes must be positive")

    result = run(args.n, args.batch, sizes, args.repeat, args.seed, args.dsn, args.hnsw_min_rows)
    emit(result, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())

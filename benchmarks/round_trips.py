"""One round trip per search and per batch: the data path before and after, in one run.

Two worker processes on one server (embedded in a temporary MEMDB_HOME, or --dsn / $MEMDB_DSN):
one runs memdb as of ``--before REV`` (checked out with ``git worktree add`` into a temporary
folder, removed at the end), the other this working tree. Each has a scratch database of its
own, migrated by its own code, with the same synthetic mixed Chinese/English memories
(insert_throughput.py's, precomputed random unit vectors: database time only, no model runs,
``gate=None``). The parent alternates blocks of calls between the two, round by round, so both
see the same machine load, and reports per-call p50 / p95 of each side and the ratios
after / before for:

- ``search``: ``store.search(text, k=10, embedding=vec)``, hybrid over the whole tenant;
- ``search_subject``: the same, filtered to one subject;
- ``add``: one memory; ``add_many``: 10 memories per call (per-call time).

Each side's round trips per call are counted once, untimed, from libpq's trace of the pooled
connection (runs of client messages answered by the server, as tests/test_round_trips.py).
``paired_ratio_p50``: the median over rounds of after's block median / before's adjacent one.

    python benchmarks/round_trips.py [--before REV] [--rounds 10] [--calls 20]
                                     [--memories 1000] [--dsn DSN] [--json OUT]
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "round_trips.json"
OPS = ("search", "search_subject", "add", "add_many")


def log(message: str) -> None:
    print(f"[round_trips] {message}", file=sys.stderr, flush=True)


# -- the worker: one memdb tree, driven over stdin/stdout (one JSON object per line) ----------
def worker(tree: str) -> None:
    # this side's memdb, imported first (insert_throughput puts its own tree on sys.path)
    sys.path.insert(0, tree)
    from psycopg import pq

    import memdb
    from memdb.core.connection import Database
    from memdb.core.migrations import upgrade

    sys.path.insert(1, str(Path(__file__).resolve().parent))
    from _server import RandomEmbedder
    from insert_throughput import synthetic_inputs

    store = None
    rng = np.random.default_rng(7)
    counter = itertools.count()
    queries: list[tuple[str, np.ndarray, str]] = []

    def vector() -> np.ndarray:
        v = rng.standard_normal(384).astype(np.float32)
        return v / np.linalg.norm(v)

    def call(op: str) -> None:
        n = next(counter)
        text, vec, subject = queries[n % len(queries)]
        if op == "search":
            store.search(text, k=10, embedding=vec)
        elif op == "search_subject":
            store.search(text, k=10, embedding=vec, subject=subject)
        elif op == "add":
            store.add(f"round trip probe {n} / 往返探针 {n}", embedding=vector())
        else:
            store.add_many([{"content": f"batch probe {n}.{i} / 批量探针 {n}.{i}",
                             "embedding": vector()} for i in range(10)])

    def count(op: str) -> list[int]:
        counts: list[int] = []
        original = Database._connection

        @contextlib.contextmanager
        def traced(self):
            with original(self) as conn, tempfile.TemporaryFile("w+") as trace:
                conn.pgconn.trace(trace.fileno())
                conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS)
                try:
                    yield conn
                finally:
                    conn.pgconn.untrace()
                    trace.seek(0)
                    sides = [line[0] for line in trace if line[:2] in ("F\t", "B\t")]
                    counts.append(sum(a == "F" and b == "B"
                                      for a, b in itertools.pairwise(sides)))

        Database._connection = traced
        try:
            call(op)
        finally:
            Database._connection = original
        return counts

    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd["op"] == "setup":
            upgrade(cmd["dsn"])
            store = memdb.MemoryStore(cmd["dsn"], embedder=RandomEmbedder("bench-rtt-384"),
                                      gate=None)
            inputs = synthetic_inputs(cmd["memories"], cmd["seed"])
            store.add_many(inputs, batch_size=500)
            queries = [(i.content.split(" (#")[0], i.embedding, i.subject)
                       for i in inputs[: cmd["queries"]]]
            for op in OPS:  # warm: the embedding space, the pool, the plans' caches
                call(op)
            reply = {"memdb": memdb.__file__}
        elif cmd["op"] == "time":
            times = []
            for _ in range(cmd["calls"]):
                start = time.perf_counter()
                call(cmd["what"])
                times.append((time.perf_counter() - start) * 1000)
            reply = {"ms": times}
        elif cmd["op"] == "count":
            reply = {"round_trips": count(cmd["what"])}
        else:
            store.close()
            reply = {}
        print(json.dumps(reply), flush=True)
        if cmd["op"] == "close":
            return


# -- the parent ----------------------------------------------------------------------------------
class Side:
    def __init__(self, name: str, tree: Path) -> None:
        self.name, self.tree = name, tree
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--worker", str(tree)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=str(tree))

    def ask(self, **cmd: object) -> dict:
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the {self.name} worker died (see its stderr above)")
        return json.loads(line)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.ask(op="close")
        self.proc.wait(timeout=60)


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="HEAD", help="git revision of the 'before' side")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--calls", type=int, default=20, help="calls per block")
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=20261202)
    parser.add_argument("--dsn")
    parser.add_argument("--json", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker)
        return
    sys.path.insert(0, str(ROOT))
    sys.path.insert(1, str(Path(__file__).resolve().parent))
    from _server import emit, server
    from insert_throughput import Scratch, _loadavg

    before = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", args.before],
                            capture_output=True, text=True, check=True).stdout.strip()
    after = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                           capture_output=True, text=True, check=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "memdb",
                                 "sql"], capture_output=True, text=True).stdout.strip())
    old_tree = Path(tempfile.mkdtemp(prefix="memdb-rtt-before-"))
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(old_tree),
                    before], check=True, capture_output=True)
    sides: list[Side] = []
    try:
        with server(args.dsn) as (admin_dsn, how):
            scratch = Scratch(admin_dsn)
            try:
                load_start = _loadavg()
                for name, tree in (("before", old_tree), ("after", ROOT)):
                    side = Side(name, tree)
                    sides.append(side)
                    dsn = scratch.create(f"{scratch.prefix}_{name}")
                    found = side.ask(op="setup", dsn=dsn, memories=args.memories,
                                     seed=args.seed, queries=50)
                    log(f"{name}: memdb from {found['memdb']}")
                ms: dict[str, dict[str, list[float]]] = {s.name: {op: [] for op in OPS}
                                                         for s in sides}
                paired: dict[str, list[float]] = {op: [] for op in OPS}
                for r in range(args.rounds):
                    for op in OPS:
                        order = sides if r % 2 == 0 else sides[::-1]
                        block = {}
                        for side in order:
                            block[side.name] = side.ask(op="time", what=op,
                                                        calls=args.calls)["ms"]
                            ms[side.name][op] += block[side.name]
                        paired[op].append(statistics.median(block["after"])
                                          / statistics.median(block["before"]))
                    log(f"round {r + 1}/{args.rounds} done")
                trips = {s.name: {op: s.ask(op="count", what=op)["round_trips"] for op in OPS}
                         for s in sides}
                load_end = _loadavg()
            finally:
                for side in sides:
                    side.close()
                scratch.drop_all()
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                        str(old_tree)], capture_output=True)
        shutil.rmtree(old_tree, ignore_errors=True)

    figures = {}
    for op in OPS:
        row = {}
        for side in ("before", "after"):
            values = ms[side][op]
            row[side] = {"p50_ms": round(statistics.median(values), 3),
                         "p95_ms": round(percentile(values, 95), 3),
                         "round_trips": trips[side][op]}
        row["ratio_p50"] = round(row["after"]["p50_ms"] / row["before"]["p50_ms"], 3)
        row["ratio_p95"] = round(row["after"]["p95_ms"] / row["before"]["p95_ms"], 3)
        # the median over rounds of (after's block median / before's adjacent block median):
        # less moved by load that drifts during the run
        row["paired_ratio_p50"] = round(statistics.median(paired[op]), 3)
        figures[op] = row
    result = {
        "benchmark": "round_trips",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "before": before, "after": after + ("+dirty" if dirty else ""),
        "server": how, "memories": args.memories, "rounds": args.rounds,
        "calls_per_block": args.calls, "calls_per_side": args.rounds * args.calls,
        "machine": {"cpus": os.cpu_count(), "load_average": [load_start, load_end]},
        "figures": figures,
    }
    print("| call | round trips before / after | p50 ms before / after (ratio) "
          "| p95 ms before / after (ratio) | paired p50 ratio |", file=sys.stderr)
    for op, row in figures.items():
        b, a = row["before"], row["after"]
        print(f"| {op} | {b['round_trips']} / {a['round_trips']} | {b['p50_ms']:.2f} / "
              f"{a['p50_ms']:.2f} ({row['ratio_p50']:.2f}) | {b['p95_ms']:.2f} / "
              f"{a['p95_ms']:.2f} ({row['ratio_p95']:.2f}) | {row['paired_ratio_p50']:.2f} |",
              file=sys.stderr)
    emit(result, args.json)


if __name__ == "__main__":
    main()

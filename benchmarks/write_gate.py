"""Cost of the write path's policy: the gate alone, and add_many with the gate on vs off.

In one run, on one server (embedded in a temporary MEMDB_HOME, or --dsn / $MEMDB_DSN), with the
synthetic mixed Chinese/English memories of insert_throughput.py (precomputed random unit
vectors: database time only, no model runs), each figure in a fresh migrated database:

- gate_decisions_per_s: WritePolicy.decide over the N inputs (pure Python);
- legacy:   the set-based memdb.add_memories of revision 9c2ee96 (one INSERT ... ON CONFLICT
            per batch), loaded under another name from git, when git can show it;
- gate_off: add_many(gate=None): memdb.write_memories with no policy (exact dedup, slots);
- gate_on:  add_many with memdb.DEFAULT_POLICY: the gate, TTL defaults, near-duplicate checks
            (a cosine scan of the subject's category per item) and correction detection;
- and, for gate_off and gate_on, the same N again (every item a duplicate).

Prints one JSON document and writes it to benchmarks/results/write_gate.json (or --json OUT).

    python benchmarks/write_gate.py [--n 1000] [--batch 500] [--repeat 1] [--dsn DSN]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import psycopg
from _server import RandomEmbedder, emit, server  # noqa: I001  (benchmarks/ sibling module)
from insert_throughput import Scratch, _loadavg, synthetic_inputs
from psycopg.conninfo import conninfo_to_dict
from psycopg.types.json import Jsonb

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from memdb import DEFAULT_POLICY, MemoryStore  # noqa: E402

DEFAULT_OUT = ROOT / "benchmarks" / "results" / "write_gate.json"
LEGACY_COMMIT = "9c2ee96"


def log(message: str) -> None:
    print(f"[write_gate] {message}", file=sys.stderr, flush=True)


def legacy_function() -> str | None:
    """The pre-gate memdb.add_memories, renamed memdb.legacy_add_memories (None without git)."""
    try:
        text = subprocess.run(["git", "-C", str(ROOT), "show",
                               f"{LEGACY_COMMIT}:sql/functions/060_add_memories.sql"],
                              capture_output=True, text=True, check=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return text.replace("memdb.add_memories(", "memdb.legacy_add_memories(")


def run(n: int, batch: int, repeat: int, seed: int, dsn: str | None) -> dict:
    inputs = [replace(i, source_id=f"turn-{k}") for k, i in enumerate(synthetic_inputs(n, seed))]
    start = time.perf_counter()
    decisions = DEFAULT_POLICY.decide_many(inputs)
    gate_seconds = time.perf_counter() - start
    outcomes = {o: sum(d.outcome == o for d in decisions)
                for o in ("accepted", "hypothesis", "rejected")}
    embedder = RandomEmbedder("bench-random-384")
    legacy_sql = legacy_function()
    load_start = _loadavg()
    figures: dict[str, list[float]] = {}

    def timed(name: str, fn) -> None:
        start = time.perf_counter()
        fn()
        seconds = time.perf_counter() - start
        figures.setdefault(name, []).append(seconds)
        log(f"{name}: {n} items in {seconds:.2f} s")

    with server(dsn) as (admin_dsn, how):
        scratch = Scratch(admin_dsn)
        try:
            for _ in range(repeat):
                for mode, gate in (("gate_off", None), ("gate_on", DEFAULT_POLICY)):
                    db = scratch.fresh()
                    try:
                        with MemoryStore(db, embedder=embedder, pool_size=2, gate=gate) as st:
                            st.space_id()
                            timed(mode, lambda st=st: st.add_many(inputs, batch_size=batch))
                            timed(f"{mode}_duplicates",
                                  lambda st=st: st.add_many(inputs, batch_size=batch))
                    finally:
                        scratch.drop(conninfo_to_dict(db)["dbname"])
                if legacy_sql is not None:
                    db = scratch.fresh()
                    try:
                        with MemoryStore(db, embedder=embedder, pool_size=2, gate=None) as st:
                            space = st.space_id()
                        items = [{**i.to_item(), "subject": i.subject} for i in inputs]
                        vectors = [i.embedding for i in inputs]
                        from pgvector.psycopg import register_vector
                        with psycopg.connect(db, autocommit=True) as conn:
                            register_vector(conn)
                            conn.execute(legacy_sql)

                            def legacy(conn=conn, items=items, vectors=vectors,
                                       space=space) -> None:
                                with conn.transaction():
                                    for s in range(0, len(items), batch):
                                        conn.execute(
                                            "SELECT count(*) FROM memdb.legacy_add_memories("
                                            "%s, %s, %s)",
                                            (Jsonb(items[s:s + batch]), vectors[s:s + batch],
                                             space))
                            timed("legacy", legacy)
                    finally:
                        scratch.drop(conninfo_to_dict(db)["dbname"])
        finally:
            scratch.drop_all()

    def fig(name: str) -> dict | None:
        if name not in figures:
            return None
        median = statistics.median(figures[name])
        return {"seconds": round(median, 3), "items_per_s": round(n / median, 1),
                "runs_seconds": [round(s, 3) for s in figures[name]]}

    result = {
        "benchmark": "write_gate",
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "n": n, "batch_size": batch, "repeat": repeat, "seed": seed, "statistic": "median",
        "server": how,
        "load_average": {"start": load_start, "end": _loadavg()},
        "gate_decisions_per_s": round(n / gate_seconds, 1),
        "gate_outcomes": outcomes,
        **{name: fig(name) for name in ("legacy", "gate_off", "gate_on", "gate_off_duplicates",
                                        "gate_on_duplicates")},
    }
    if result["gate_off"] and result["gate_on"]:
        result["gate_on_over_off"] = round(result["gate_on"]["seconds"]
                                           / result["gate_off"]["seconds"], 3)
    if result["legacy"] and result["gate_off"]:
        result["gate_off_over_legacy"] = round(result["gate_off"]["seconds"]
                                               / result["legacy"]["seconds"], 3)
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--seed", type=int, default=20261129)
    parser.add_argument("--dsn")
    parser.add_argument("--json", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    if args.n < 1 or args.batch < 1 or args.repeat < 1:
        parser.error("--n, --batch and --repeat must be positive")
    result = run(args.n, args.batch, args.repeat, args.seed, args.dsn)
    emit(result, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())

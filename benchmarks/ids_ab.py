"""Time-ordered against random memory ids (revision 0018), paired: write time and index size.

Two fresh migrated databases from one template on one server (the embedded PostgreSQL 18, or
--dsn / $MEMDB_DSN): "random" gets memdb.new_memory_id() replaced by gen_random_uuid() (the
ids before revision 0018), "ordered" keeps it (uuidv7()). The same N synthetic memories
(insert_throughput.synthetic_inputs: Chinese and English, 100 subjects, random unit vectors)
go into both with add_many, batch by batch, the two sides alternating which goes first. Per
side: the total add_many time and that of the last quarter of the batches (the larger table),
and the median over the batches of ordered / random (robust to load spikes); at the end the
size of the primary key index and of every index of memdb.memories. Ratios: ordered / random.
Writes benchmarks/results/ids_ab.json (or --json OUT).

    python benchmarks/ids_ab.py [--n 20000] [--batch 500] [--dsn DSN] [--json OUT]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import psycopg
from _server import RandomEmbedder, emit, server  # noqa: I001  (benchmarks/ sibling module)
from insert_throughput import ROOT, Scratch, synthetic_inputs

from memdb import MemoryStore

DEFAULT_OUT = ROOT / "benchmarks" / "results" / "ids_ab.json"
RANDOM_IDS = ("CREATE OR REPLACE FUNCTION memdb.new_memory_id() RETURNS uuid"
              " LANGUAGE sql VOLATILE PARALLEL SAFE AS $$ SELECT gen_random_uuid() $$")
SIZES = """SELECT sum(pg_relation_size(i.indexrelid)) FILTER (WHERE i.indisprimary),
                  sum(pg_relation_size(i.indexrelid))
           FROM pg_index i WHERE i.indrelid = 'memdb.memories'::regclass"""


def run(n: int, batch: int, seed: int, dsn: str | None) -> dict:
    inputs = synthetic_inputs(n, seed)
    batches = [inputs[i:i + batch] for i in range(0, n, batch)]
    tail = len(batches) - max(1, len(batches) // 4)
    embedder = RandomEmbedder("bench-random-384")
    load_start = os.getloadavg()[0]
    with server(dsn) as (admin_dsn, how):
        scratch = Scratch(admin_dsn)
        try:
            dbs = {"random": scratch.fresh(), "ordered": scratch.fresh()}
            with psycopg.connect(dbs["random"], autocommit=True) as conn:
                conn.execute(RANDOM_IDS)
                version = conn.execute("SHOW server_version_num").fetchone()[0]
            if int(version) < 180000:
                raise SystemExit(f"time-ordered ids need PostgreSQL 18 (server {version})")
            stores = {side: MemoryStore(db, embedder=embedder, pool_size=1, gate=None)
                      for side, db in dbs.items()}
            seconds = {side: [] for side in stores}
            try:
                for store in stores.values():
                    store.space_id()  # registers the space and builds its HNSW index
                for b, items in enumerate(batches):
                    order = ["random", "ordered"] if b % 2 == 0 else ["ordered", "random"]
                    for side in order:
                        start = time.perf_counter()
                        stores[side].add_many(items, batch_size=batch)
                        seconds[side].append(time.perf_counter() - start)
                for store in stores.values():
                    assert store.count() == n, "every synthetic memory is distinct"
            finally:
                for store in stores.values():
                    store.close()
            sizes = {}
            for side, db in dbs.items():
                with psycopg.connect(db, autocommit=True) as conn:
                    pkey, every = conn.execute(SIZES).fetchone()
                sizes[side] = {"pkey_bytes": int(pkey), "indexes_bytes": int(every)}
        finally:
            scratch.drop_all()

    def side(name: str) -> dict:
        return {"seconds": round(sum(seconds[name]), 3),
                "last_quarter_seconds": round(sum(seconds[name][tail:]), 3),
                "rows_per_s": round(n / sum(seconds[name]), 1), **sizes[name]}

    out = {name: side(name) for name in ("random", "ordered")}
    ratio = {key: round(out["ordered"][key] / out["random"][key], 3)
             for key in ("seconds", "last_quarter_seconds", "pkey_bytes", "indexes_bytes")}
    per_batch = [o / r for o, r in zip(seconds["ordered"], seconds["random"], strict=True)]
    ratio["median_of_batch_ratios"] = round(statistics.median(per_batch), 3)
    return {"benchmark": "ids_ab", "when": datetime.now(UTC).isoformat(timespec="seconds"),
            "n": n, "batch": batch, "batches": len(batches), "seed": seed,
            "server": {"how": how, "server_version_num": version},
            "load_average": {"start": round(load_start, 2),
                             "end": round(os.getloadavg()[0], 2)},
            **out, "ratio_ordered_over_random": ratio}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=20_000, help="memories per side (20000)")
    parser.add_argument("--batch", type=int, default=500, help="add_many batch (500)")
    parser.add_argument("--seed", type=int, default=20261202)
    parser.add_argument("--dsn", help="server to use (default $MEMDB_DSN, else embedded)")
    parser.add_argument("--json", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    if args.n < 1 or args.batch < 1:
        parser.error("--n and --batch must be positive")
    emit(run(args.n, args.batch, args.seed, args.dsn), args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())

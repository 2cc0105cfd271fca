"""The search default on LoCoMo against an older revision's default, in one run.

The speed limit: the search DB time p95 of the chosen default stays within 1.5x of the
hybrid of the revision the round started from, at the same k. This stores the LoCoMo turns
once (as benchmarks/temporal_ab.py does, whose helpers it uses), installs the revision's
(--ref) memdb.search_hybrid and memdb.temporal_boost under schema memdb_ref and this
checkout's under memdb_new, and for every question, at each k, times two calls inside the
server (clock_timestamp around an EXECUTE: no round trip, driver or Python): the revision's
search_hybrid with its default options (--ref-options, the old default) and this checkout's
with DEFAULT_OPTIONS, in an order alternating question by question. Reports p50/p95 of each
and the ratios new / ref, and how many questions' results the new default changed.

    python benchmarks/defaults_ab.py ../shared/data/locomo/locomo_dev.json --ref 22568cd \
        [--ref-options JSON] [--new-options JSON] [--ks 10,50] [--limit N] [--json OUT]

With --new-options (SearchOptions fields laid over DEFAULT_OPTIONS) and --ref HEAD
--ref-options set to today's default, it pairs one option against the default on the same SQL.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import psycopg
from _server import emit  # noqa: I001  (benchmarks/ sibling modules)
from psycopg import sql
from temporal_ab import DROP, SIDES, _call, _stats, install_sides, locomo_turns

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from memdb import MemoryStore  # noqa: E402
from memdb.evaluation._scratch import scratch_database  # noqa: E402
from memdb.retrieval.search import DEFAULT_OPTIONS  # noqa: E402

DEFAULT_OUT = ROOT / "benchmarks" / "results" / "defaults_ab.json"
# the default of the revisions before the second round of default tuning (memdb/retrieval/search.py
# DEFAULT_OPTIONS)
OLD_DEFAULT = {"weights": {"vector": 0.5, "bm25": 1.0, "exact": 1.0}, "rrf_k": 5, "k1": 1.2,
               "b": 0.3}


def run(args: argparse.Namespace) -> dict:
    ks = sorted({int(k) for k in args.ks.split(",")})
    embedder, inputs, questions, q_vectors = locomo_turns(args.path, args.limit, "defaults_ab")
    options = {"memdb_ref": json.loads(args.ref_options),
               "memdb_new": DEFAULT_OPTIONS.replace(**json.loads(args.new_options)).to_json()}
    times = {str(k): {side: [] for side in SIDES} for k in ks}
    changed = {str(k): 0 for k in ks}
    loads = [os.getloadavg()[0]]
    with scratch_database(None) as scratch:
        with MemoryStore(scratch, embedder=embedder, gate=None) as store:
            for items in inputs:
                store.add_many(items)
        with psycopg.connect(scratch, autocommit=True) as conn:
            conn.execute("ANALYZE")
            install_sides(conn, args.ref)
            pairs = list(zip(questions, q_vectors, strict=True))
            for (subject, question), vec in pairs[:5]:  # warm caches and plans
                for side in SIDES:
                    conn.execute(_call(conn, side, question, vec, ks[-1], subject,
                                       options[side])).fetchall()
            for i, ((subject, question), vec) in enumerate(pairs):
                order = SIDES if i % 2 == 0 else SIDES[::-1]
                for k in ks:
                    found = {}
                    for side in order:
                        text = _call(conn, side, question, vec, k, subject, options[side])
                        ms, rows = conn.execute("SELECT * FROM memdb_ref.db_call(%s)",
                                                (text,)).fetchone()
                        times[str(k)][side].append(ms)
                        found[side] = [r["id"] for r in rows or []]
                    changed[str(k)] += found["memdb_ref"] != found["memdb_new"]
                if i % 100 == 99:
                    loads.append(os.getloadavg()[0])
                    print(f"[defaults_ab] {i + 1}/{len(pairs)} questions, load {loads[-1]:.2f}",
                          file=sys.stderr)
            for side in SIDES:
                conn.execute(DROP.format(sql.Identifier(side)))
    out: dict = {}
    for k, by_side in times.items():
        ref, new = _stats(by_side["memdb_ref"]), _stats(by_side["memdb_new"])
        paired = np.asarray(by_side["memdb_new"]) / np.asarray(by_side["memdb_ref"])
        out[k] = {"ref_default": ref, "new_default": new,
                  "ratio_new_to_ref": {"p50": round(new["p50"] / ref["p50"], 3),
                                       "p95": round(new["p95"] / ref["p95"], 3),
                                       "median_paired": round(float(np.median(paired)), 3)}}
        ratio = out[k]["ratio_new_to_ref"]
        print(f"k={k:>3} ref default p50 {ref['p50']:7.2f} p95 {ref['p95']:7.2f} | new default"
              f" p50 {new['p50']:7.2f} p95 {new['p95']:7.2f} | new/ref {ratio}", file=sys.stderr)
    return {
        "benchmark": "defaults_ab",
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "dataset": str(args.path), "ref": args.ref, "new": "working tree sql/functions",
        "questions": len(questions), "memories": sum(len(items) for items in inputs), "ks": ks,
        "options": options,
        "db_time_ms": out, "questions_changed": changed,
        "loadavg_1min": {"min": round(min(loads), 2), "median": round(float(np.median(loads)), 2),
                         "max": round(max(loads), 2), "cpus": os.cpu_count()},
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", help="a LoCoMo-format file")
    parser.add_argument("--ref", required=True, help="git revision of the old functions")
    parser.add_argument("--ref-options", default=json.dumps(OLD_DEFAULT),
                        help="the revision's default search options as JSON (the old default)")
    parser.add_argument("--new-options", default="{}",
                        help="SearchOptions fields laid over DEFAULT_OPTIONS for the new side "
                             "(JSON, e.g. '{\"speaker_neighbors\": 0.4}')")
    parser.add_argument("--ks", default="10,50", help="comma-separated k (default 10,50)")
    parser.add_argument("--limit", type=int, help="only the first N conversations")
    parser.add_argument("--json", type=Path, default=DEFAULT_OUT, help="where to write the JSON")
    args = parser.parse_args(argv)
    emit(run(args), args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())

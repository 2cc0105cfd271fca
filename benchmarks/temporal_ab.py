"""The search option temporal on LoCoMo, a git revision's SQL against this checkout's, in one run.

Stores the LoCoMo turns once (memdb.evaluation.locomo: one memory per turn, the turns'
vectors from the eval's cache, the questions embedded first) in a scratch database migrated
by this checkout, installs the revision's (--ref) memdb.search_hybrid, its routes (those
benchmarks/search_ab.py installs) and memdb.temporal_boost under schema memdb_ref and this
checkout's under memdb_new (each with its revision's plain-PostgreSQL plan setting, as
search_ab.py does; both call the same memdb.time_range), then for every question, at each k,
times four calls inside the server (clock_timestamp around an EXECUTE: no round trip, driver
or Python): ref default, ref temporal, new default, new temporal (DEFAULT_OPTIONS with
temporal 0, since the default has it on, and the same with temporal = --weight; --neighbors N
sets both's neighbour window;
scoped to the question's conversation, no as_of, as the eval searches), in an order that
rotates question by question, so load from other processes falls on all alike. Every ref/new
pair must return the same rows (ids, ranks, scores); differences are listed. Reports p50/p95
per setting and the ratios temporal / default of each side, and how long re-deriving the
stored event time of every memory takes (revision 0017's backfill statement), per 100,000.

    python benchmarks/temporal_ab.py ../shared/data/locomo/locomo_dev.json --ref main \
        [--ks 10,50] [--weight 1] [--neighbors N] [--limit N] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import psycopg
from _server import emit  # noqa: I001  (benchmarks/ sibling module)
from psycopg import sql
from search_ab import FILES as AB_FILES
from search_ab import ROUTES as AB_ROUTES
from search_ab import functions_sql as ab_functions_sql
from search_ab import generic_plans_sql

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # this checkout's memdb (migrations, SQL), not an installed one
    sys.path.insert(0, str(ROOT))

from memdb import MemoryStore  # noqa: E402
from memdb.core.embeddings import embedder_from_env  # noqa: E402
from memdb.evaluation._scratch import scratch_database  # noqa: E402
from memdb.evaluation._vector_cache import PassageVectorCache, embed_passages_cached  # noqa: E402
from memdb.evaluation.locomo import load_locomo, memory_inputs  # noqa: E402
from memdb.retrieval.search import DEFAULT_OPTIONS  # noqa: E402

DEFAULT_OUT = ROOT / "benchmarks" / "results" / "temporal_ab.json"
FILES = [*AB_FILES, "168_temporal_boost.sql"]  # search_hybrid and its routes
RENAMED = [*AB_ROUTES, "temporal_boost"]
SIDES = ("memdb_ref", "memdb_new")
DROP = sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE")
# revision 0017's backfill (alembic/versions/0017_event_time.py), which re-derives rows
BACKFILL = ("UPDATE memdb.memories SET names_time = NULL"
            " WHERE memdb.time_range(content, valid_from) IS NOT NULL OR memdb.time_words(content)")
# one call timed inside the server, with its rows (to compare old and new)
TIMER = """
CREATE FUNCTION memdb_ref.db_call(q text, OUT ms double precision, OUT got jsonb)
LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz := clock_timestamp();
BEGIN
    EXECUTE 'SELECT jsonb_agg(to_jsonb(x)) FROM (' || q || ') x' INTO got;
    ms := extract(epoch FROM clock_timestamp() - t0) * 1000;
END $$"""


def functions_sql(schema: str, ref: str | None) -> str:
    """search_hybrid, its routes and temporal_boost of git revision ref (None: this checkout),
    in schema."""
    return ab_functions_sql(schema, ref, FILES, RENAMED)


def _stats(ms: list[float]) -> dict:
    a = np.asarray(ms)
    return {"p50": round(float(np.percentile(a, 50)), 2),
            "p95": round(float(np.percentile(a, 95)), 2), "mean": round(float(a.mean()), 2)}


def _call(conn: psycopg.Connection, schema: str, question: str, vector: np.ndarray,
          k: int, subject: str, options: dict) -> str:
    lit = lambda x: sql.Literal(x).as_string(conn)  # noqa: E731
    vec = "[" + ",".join(f"{float(x):.7g}" for x in vector) + "]"
    return (f"SELECT * FROM {schema}.search_hybrid('default', {lit(question)}, {lit(vec)}::vector,"
            f" {k}, {lit(json.dumps({'subject': subject}))}::jsonb,"
            f" {lit(json.dumps(options))}::jsonb)")


def locomo_turns(path: str, limit: int | None, tag: str):
    """The file's turns as memory inputs per conversation, with the eval's cached vectors, and
    its questions embedded: (embedder, [[MemoryInput]], [(subject, question)], vectors)."""
    convs = load_locomo(path, limit)
    embedder = embedder_from_env()
    inputs = [memory_inputs(conv) for conv in convs]
    flat = [item for items in inputs for item in items]
    vectors, cache_stats = embed_passages_cached(
        embedder, [i.embedding_text() for i in flat], PassageVectorCache(embedder))
    for item, vec in zip(flat, vectors, strict=True):
        item.embedding = vec
    questions = [(conv.sample_id, q.question) for conv in convs for q in conv.questions]
    t0 = time.perf_counter()
    q_vectors = embedder.embed_queries([q for _, q in questions])
    print(f"[{tag}] {len(flat)} turns ({cache_stats}), {len(questions)} questions embedded"
          f" in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return embedder, inputs, questions, q_vectors


def install_sides(conn: psycopg.Connection, ref: str) -> None:
    """Schemas memdb_ref (revision ref's search_hybrid and temporal_boost) and memdb_new (this
    checkout's), each with its revision's plan setting, and the timer memdb_ref.db_call."""
    for side, rev in zip(SIDES, (ref, None), strict=True):
        conn.execute(DROP.format(sql.Identifier(side)))
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(side)))
        conn.execute(functions_sql(side, rev))
        generic = generic_plans_sql(side, rev)
        if generic:
            conn.execute(generic)
    conn.execute(TIMER)


def run(args: argparse.Namespace) -> dict:
    ks = sorted({int(k) for k in args.ks.split(",")})
    embedder, inputs, questions, q_vectors = locomo_turns(args.path, args.limit, "temporal_ab")
    base = DEFAULT_OPTIONS if args.neighbors is None else DEFAULT_OPTIONS.replace(
        neighbors=args.neighbors)
    settings = {"default": base.replace(temporal=0).to_json(),
                "temporal": base.replace(temporal=args.weight).to_json()}
    combos = [(side, name) for side in SIDES for name in settings]
    times: dict[str, dict[str, dict[str, list[float]]]] = {
        str(k): {s: {n: [] for n in settings} for s in SIDES} for k in ks}
    diffs: list[dict] = []
    moved = {str(k): 0 for k in ks}  # questions whose temporal rows differ from the default's
    loads = [os.getloadavg()[0]]
    with scratch_database(None) as scratch:
        with MemoryStore(scratch, embedder=embedder, gate=None) as store:
            for items in inputs:
                store.add_many(items)
        with psycopg.connect(scratch, autocommit=True) as conn:
            conn.execute("ANALYZE")
            install_sides(conn, args.ref)
            for (subject, question), vec in list(zip(questions, q_vectors, strict=True))[:5]:
                for side, name in combos:  # warm caches and plans for all four
                    conn.execute(_call(conn, side, question, vec, ks[-1], subject,
                                       settings[name])).fetchall()
            for i, ((subject, question), vec) in enumerate(zip(questions, q_vectors, strict=True)):
                order = combos[i % 4:] + combos[: i % 4]
                for k in ks:
                    found = {}
                    for side, name in order:
                        text = _call(conn, side, question, vec, k, subject, settings[name])
                        ms, rows = conn.execute("SELECT * FROM memdb_ref.db_call(%s)",
                                                (text,)).fetchone()
                        times[str(k)][side][name].append(ms)
                        found[side, name] = rows
                    for name in settings:
                        if found["memdb_ref", name] != found["memdb_new", name]:
                            diffs.append({"k": k, "setting": name, "question": question})
                    moved[str(k)] += found["memdb_new", "temporal"] != found["memdb_new", "default"]
                if i % 100 == 99:
                    loads.append(os.getloadavg()[0])
                    print(f"[temporal_ab] {i + 1}/{len(questions)} questions, load {loads[-1]:.2f}",
                          file=sys.stderr)
            for side in SIDES:
                conn.execute(DROP.format(sql.Identifier(side)))
            n = conn.execute("SELECT count(*) FROM memdb.memories").fetchone()[0]
            named = conn.execute("SELECT count(*) FILTER (WHERE names_time),"
                                 " count(event_time) FROM memdb.memories").fetchone()
            t0 = time.perf_counter()
            conn.execute(BACKFILL)
            backfill_s = time.perf_counter() - t0
    out: dict = {}
    for k, by_side in times.items():
        out[k] = {}
        for side, by_name in by_side.items():
            d, t = by_name["default"], by_name["temporal"]
            out[k][side] = {"default": _stats(d), "temporal": _stats(t)}
            out[k][side]["ratio_temporal_to_default"] = {
                "p50": round(out[k][side]["temporal"]["p50"] / out[k][side]["default"]["p50"], 3),
                "p95": round(out[k][side]["temporal"]["p95"] / out[k][side]["default"]["p95"], 3),
                "median_paired": round(float(np.median(np.asarray(t) / np.asarray(d))), 3)}
            r = out[k][side]
            print(f"k={k:>3} {side:9s} default p50 {r['default']['p50']:7.2f} p95 "
                  f"{r['default']['p95']:7.2f} | temporal p50 {r['temporal']['p50']:7.2f} p95 "
                  f"{r['temporal']['p95']:7.2f} | temporal/default p50 "
                  f"{r['ratio_temporal_to_default']['p50']} p95 "
                  f"{r['ratio_temporal_to_default']['p95']}", file=sys.stderr)
    print(f"[temporal_ab] result differences ref/new: {len(diffs)}; questions temporal moved:"
          f" {moved}; backfill of {n} memories {backfill_s:.2f} s"
          f" ({100_000 * backfill_s / max(n, 1):.1f} s per 100,000)", file=sys.stderr)
    return {
        "benchmark": "temporal_ab",
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "dataset": str(args.path), "ref": args.ref, "new": "working tree sql/functions",
        "questions": len(questions), "memories": n, "ks": ks, "weight": args.weight,
        "settings": settings, "db_time_ms": out,
        "result_differences": diffs, "questions_temporal_moved": moved,
        "backfill": {"memories": n, "names_time": named[0], "event_time": named[1],
                     "seconds": round(backfill_s, 3),
                     "seconds_per_100k": round(100_000 * backfill_s / max(n, 1), 1)},
        "loadavg_1min": {"min": round(min(loads), 2), "median": round(float(np.median(loads)), 2),
                         "max": round(max(loads), 2), "cpus": os.cpu_count()},
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", help="a LoCoMo-format file")
    parser.add_argument("--ref", default="HEAD", help="git revision of the old functions (HEAD)")
    parser.add_argument("--ks", default="10,50", help="comma-separated k (default 10,50)")
    parser.add_argument("--weight", type=float, default=1.0, help="temporal weight (default 1)")
    parser.add_argument("--limit", type=int, help="only the first N conversations")
    parser.add_argument("--neighbors", type=int,
                        help="the neighbour window of both settings (default: DEFAULT_OPTIONS')")
    parser.add_argument("--json", type=Path, default=DEFAULT_OUT, help="where to write the JSON")
    args = parser.parse_args(argv)
    emit(run(args), args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())

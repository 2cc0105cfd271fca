"""Ingest throughput of store.documents.ingest: documents/s and chunks/s on a generated folder,
with embedding time reported apart from database time, and the cost of re-ingesting it
unchanged.

Generates a deterministic corpus (--seed) of mixed Markdown and plain text files, English and
Chinese, about --mb megabytes, into a temporary folder; starts the embedded PostgreSQL in a
temporary MEMDB_HOME (or uses --dsn / $MEMDB_DSN) and ingests into scratch databases:

- first:     the whole folder into a fresh migrated database;
- reingest:  the unchanged folder again (must take under 5 % of the first run: it only reads,
             hashes and compares);
- local_sample (with --embedder local, or --local-sample-mb > 0): the first --local-sample-mb
             megabytes with the bundled multilingual-e5-small model, into another fresh
             database, for the embedding rate of the real model.

--embedder random gives every chunk a seeded random unit vector (384 dims) instead of running
a model, so the first figures measure the pipeline and the database (reading, tokenizing,
chunking, SQL); the local model on 20 MB would take hours on 2 cores. Prints one JSON document
and writes it to benchmarks/results/ingest_throughput.json (or --json OUT).

    python benchmarks/ingest_throughput.py [--mb 20] [--embedder random|local]
        [--local-sample-mb 0.5] [--dsn DSN] [--json OUT]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import psycopg
from _server import emit, server  # noqa: I001  (benchmarks/ sibling module)
from insert_throughput import Scratch, _loadavg

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from memdb import LocalEmbedder, MemoryStore  # noqa: E402

DEFAULT_OUT = ROOT / "benchmarks" / "results" / "ingest_throughput.json"

_EN_WORDS = ("service deploy release pipeline database index vector query latency budget "
             "tenant memory agent retrieval chunk document heading table cache replica "
             "backup restore schema migration token embedding search ranking fusion policy "
             "security isolation rotation key vault billing invoice customer support").split()
_ZH_PHRASES = ["数据库", "向量检索", "发布流程", "密钥轮换", "计费服务", "客户支持", "性能优化",
               "缓存", "备份与恢复", "多租户隔离", "嵌入模型", "分块策略", "搜索排序", "权限控制",
               "监控告警", "容量规划", "故障演练", "日志分析"]


def log(message: str) -> None:
    print(f"[ingest_throughput] {message}", file=sys.stderr, flush=True)


class SeededRandomEmbedder:
    """Random unit vectors seeded by the text: no model runs (pipeline + database time)."""

    model = "bench-random-384"
    dims = 384

    def _vec(self, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
        v = np.random.default_rng(seed).standard_normal(self.dims).astype(np.float32)
        return v / np.linalg.norm(v)

    def embed_passages(self, texts):
        return np.vstack([self._vec(t) for t in texts]) if texts else np.empty((0, self.dims))

    embed_queries = embed_passages


def _en_sentence(rng: random.Random) -> str:
    words = [rng.choice(_EN_WORDS) for _ in range(rng.randint(8, 20))]
    return " ".join(words).capitalize() + rng.choice([".", ".", ".", "?", "!"])


def _zh_sentence(rng: random.Random) -> str:
    parts = [rng.choice(_ZH_PHRASES) for _ in range(rng.randint(3, 7))]
    return "，".join(parts) + rng.choice(["。", "。", "！", "？"])


def _paragraph(rng: random.Random, zh: bool) -> str:
    make = _zh_sentence if zh else _en_sentence
    return ("" if zh else " ").join(make(rng) for _ in range(rng.randint(2, 6)))


def _markdown(rng: random.Random, n: int, zh: bool) -> str:
    out = [f"# {'文档' if zh else 'Document'} {n}\n"]
    for s in range(rng.randint(3, 8)):
        out.append(f"## {'章节' if zh else 'Section'} {s}\n")
        for _ in range(rng.randint(1, 4)):
            out.append(_paragraph(rng, zh) + "\n")
        if rng.random() < 0.3:
            out.append("```python\n" + "\n".join(f"x{i} = compute({i})" for i in range(
                rng.randint(3, 12))) + "\n```\n")
        if rng.random() < 0.2:
            out.append("| key | value |\n|---|---|\n" + "\n".join(
                f"| {rng.choice(_EN_WORDS)} | {rng.randint(1, 999)} |" for _ in range(5)) + "\n")
    return "\n".join(out)


def generate_corpus(folder: Path, megabytes: float, seed: int) -> tuple[int, int]:
    """Files under folder (~megabytes, 1/3 Chinese, 2/3 Markdown): (files, bytes)."""
    rng = random.Random(seed)
    target, total, n = int(megabytes * 1024 * 1024), 0, 0
    while total < target:
        zh = n % 3 == 2
        sub = folder / f"part{n % 10:02d}"
        sub.mkdir(parents=True, exist_ok=True)
        if n % 3 == 1:
            body = "\n\n".join(_paragraph(rng, zh) for _ in range(rng.randint(6, 30))) + "\n"
            path = sub / f"notes_{n:05d}.txt"
        else:
            body = _markdown(rng, n, zh)
            path = sub / f"doc_{n:05d}.md"
        data = body.encode("utf-8")
        path.write_bytes(data)
        total += len(data)
        n += 1
    return n, total


def _figures(report, seconds: float, files: int, nbytes: int) -> dict:
    data = report.to_dict()
    chunks = data["chunks"]
    return {
        "seconds": round(seconds, 3), "files": files, "megabytes": round(nbytes / 2**20, 2),
        "counts": data["counts"], "chunks": chunks, "embedded": data["embedded"],
        "documents_per_s": round(files / seconds, 1) if seconds else None,
        "chunks_per_s": round(chunks / seconds, 1) if seconds else None,
        "megabytes_per_s": round(nbytes / 2**20 / seconds, 3) if seconds else None,
        "time_split_s": data["seconds"],
        "embed_chunks_per_s": (round(data["embedded"] / data["seconds"]["embed"], 1)
                               if data["seconds"]["embed"] else None),
    }


def _ingest(dsn: str, embedder, folder: Path, chunk_tokens: int) -> tuple[object, float]:
    with MemoryStore(dsn, embedder=embedder) as store:
        store.space_id()  # register the space (and its HNSW index) outside the timing
        started = time.perf_counter()
        report = store.documents.ingest([folder], chunk_tokens=chunk_tokens)
        return report, time.perf_counter() - started


def run(megabytes: float, embedder_kind: str, sample_mb: float, chunk_tokens: int, seed: int,
        dsn: str | None) -> dict:
    load_start = _loadavg()
    work = Path(tempfile.mkdtemp(prefix="memdb-ingest-bench-"))
    try:
        corpus = work / "corpus"
        started = time.perf_counter()
        files, nbytes = generate_corpus(corpus, megabytes, seed)
        log(f"corpus: {files} files, {nbytes / 2**20:.1f} MB in "
            f"{time.perf_counter() - started:.1f} s")
        with server(dsn) as (admin_dsn, how):
            scratch = Scratch(admin_dsn)
            try:
                with psycopg.connect(admin_dsn) as conn:
                    pg_version = conn.execute("SHOW server_version").fetchone()[0]
                result: dict = {
                    "benchmark": "ingest_throughput",
                    "when": datetime.now(UTC).isoformat(timespec="seconds"),
                    "corpus": {"files": files, "megabytes": round(nbytes / 2**20, 2),
                               "seed": seed, "mix": "2/3 Markdown, 1/3 text; 1/3 Chinese"},
                    "chunk_tokens": chunk_tokens, "server": {"how": how,
                                                             "postgresql": pg_version},
                    "machine": {"python": platform.python_version(),
                                "platform": platform.platform(), "cpus": os.cpu_count()},
                }
                main_embedder = (LocalEmbedder() if embedder_kind == "local"
                                 else SeededRandomEmbedder())
                result["embedder"] = main_embedder.model
                db = scratch.fresh()
                log(f"first ingest ({main_embedder.model}) ...")
                report, seconds = _ingest(db, main_embedder, corpus, chunk_tokens)
                result["first"] = _figures(report, seconds, files, nbytes)
                log(json.dumps(result["first"]))
                log("re-ingest unchanged ...")
                again, again_s = _ingest(db, main_embedder, corpus, chunk_tokens)
                result["reingest"] = _figures(again, again_s, files, nbytes)
                result["reingest"]["ratio_to_first"] = round(again_s / seconds, 4)
                result["reingest"]["under_5_percent"] = again_s < 0.05 * seconds
                log(json.dumps(result["reingest"]))
                if sample_mb > 0 and embedder_kind != "local":
                    sample = work / "sample"
                    s_files, s_bytes = generate_corpus(sample, sample_mb, seed + 1)
                    log(f"local model on a {s_bytes / 2**20:.2f} MB sample ({s_files} files) ...")
                    s_report, s_seconds = _ingest(scratch.fresh(), LocalEmbedder(), sample,
                                                  chunk_tokens)
                    result["local_sample"] = _figures(s_report, s_seconds, s_files, s_bytes)
                    result["local_sample"]["embedder"] = LocalEmbedder.model
                    result["local_sample"]["threads"] = LocalEmbedder().threads
                    log(json.dumps(result["local_sample"]))
                result["machine"]["load_average"] = {"start": load_start, "end": _loadavg()}
                return result
            finally:
                scratch.drop_all()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=20.0, help="corpus size (default 20 MB)")
    parser.add_argument("--embedder", choices=("random", "local"), default="random",
                        help="random vectors (pipeline + database) or the local model")
    parser.add_argument("--local-sample-mb", type=float, default=0.5,
                        help="with --embedder random, also ingest a sample this big with the "
                             "local model for its embedding rate (0: skip; default 0.5)")
    parser.add_argument("--chunk-tokens", type=int, default=256)
    parser.add_argument("--seed", type=int, default=20261129)
    parser.add_argument("--dsn", help="server to use (default $MEMDB_DSN, else embedded)")
    parser.add_argument("--json", type=Path, default=DEFAULT_OUT,
                        help="where to write the JSON (default benchmarks/results/)")
    args = parser.parse_args(argv)
    if args.mb <= 0 or args.local_sample_mb < 0:
        parser.error("--mb must be positive and --local-sample-mb not negative")
    result = run(args.mb, args.embedder, args.local_sample_mb, args.chunk_tokens, args.seed,
                 args.dsn)
    emit(result, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())

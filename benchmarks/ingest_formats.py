"""Ingest throughput per file format (files/s, MB/s): Word, PowerPoint, Excel, CSV, EPUB,
JSON, XML and, for comparison, Markdown, on a generated folder.

The files are written by their own libraries (tests/office_files.py: English and Chinese
text, each padded with --size filler units: paragraphs, slides, rows, chapters...), --files
of each format. Two figures per format:

- convert: read, detect by content and convert to Markdown (no database, no embedding): what
  the format's library costs;
- ingest:  ``store.documents.ingest`` of that format's folder into a fresh database, with
  seeded random vectors instead of a model (the embedding model's cost is the same for every
  format: see benchmarks/ingest_throughput.py), so it is conversion + chunking + SQL.

With --markitdown-python PATH (an interpreter where ``markitdown[docx,pptx,xlsx]`` is
installed), the same files are also converted by MarkItDown there, for the choice of
converter (docs/files.md). Prints one JSON document and writes it to
benchmarks/results/ingest_formats.json (or --json OUT).

    python benchmarks/ingest_formats.py [--files 20] [--size 40] [--dsn DSN]
        [--markitdown-python /tmp/mdvenv/bin/python] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import psycopg
from _server import emit, server  # noqa: I001  (benchmarks/ sibling module)
from ingest_throughput import SeededRandomEmbedder
from insert_throughput import Scratch

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from memdb import MemoryStore  # noqa: E402
from memdb.write.ingest._formats import extract  # noqa: E402
from memdb.write.ingest._sniff import detect  # noqa: E402
from tests import office_files  # noqa: E402

DEFAULT_OUT = ROOT / "benchmarks" / "results" / "ingest_formats.json"
_MARKITDOWN = """
import json, sys, time
from markitdown import MarkItDown
md = MarkItDown()
out = {}
for fmt, paths in json.loads(sys.argv[1]).items():
    started = time.perf_counter()
    try:
        for p in paths:
            md.convert(p)
        out[fmt] = time.perf_counter() - started
    except Exception as exc:
        out[fmt] = f"{type(exc).__name__}: {str(exc).strip().splitlines()[-1]}"
print(json.dumps(out))
"""


def log(message: str) -> None:
    print(f"[ingest_formats] {message}", file=sys.stderr, flush=True)


def _markdown(path: Path, size: int) -> Path:
    parts = ["# Notes 笔记"]
    for i in range(size + 2):
        parts.append(f"## Part {i}\n\nRoutine paragraph number {i} about maintenance windows. "
                     f"第 {i} 段：例行维护窗口说明。")
    path.write_text("\n\n".join(parts) + "\n", encoding="utf-8")
    return path


def generate(folder: Path, files: int, size: int) -> dict[str, list[Path]]:
    """``files`` files of each format under ``folder/<format>/``."""
    out: dict[str, list[Path]] = {}
    for fmt, (writer, suffix) in {**office_files.WRITERS, "markdown": (_markdown, ".md")}.items():
        sub = folder / fmt
        sub.mkdir(parents=True)
        out[fmt] = [writer(sub / f"f{i:03d}{suffix}", size) for i in range(files)]
    return out


def _rate(n: float, seconds: float) -> float:
    return round(n / seconds, 2) if seconds > 0 else 0.0


def convert_only(paths: list[Path]) -> dict:
    nbytes = sum(p.stat().st_size for p in paths)
    runs = []
    for _ in range(3):
        started = time.perf_counter()
        chars = 0
        for p in paths:
            data = p.read_bytes()
            chars += len(extract(data, detect(data, p.name), p.name).text)
        runs.append(time.perf_counter() - started)
    seconds = statistics.median(runs)
    return {"seconds": round(seconds, 4), "files_per_s": _rate(len(paths), seconds),
            "mb_per_s": _rate(nbytes / 2**20, seconds), "markdown_chars": chars}


def ingest(dsn: str, folder: Path, nfiles: int) -> dict:
    nbytes = sum(p.stat().st_size for p in folder.iterdir())
    with MemoryStore(dsn, embedder=SeededRandomEmbedder()) as store:
        store.space_id()  # register the space outside the timing
        started = time.perf_counter()
        report = store.documents.ingest([folder])
        seconds = time.perf_counter() - started
    assert report.ok and report.counts == {"created": nfiles}, report.to_dict()["counts"]
    return {"seconds": round(seconds, 3), "files_per_s": _rate(nfiles, seconds),
            "mb_per_s": _rate(nbytes / 2**20, seconds), "chunks": report.chunks,
            "db_seconds": round(report.db_seconds, 3),
            "chunk_seconds": round(report.chunk_seconds, 3)}


def markitdown(python: str, corpus: dict[str, list[Path]]) -> dict:
    wanted = {f: [str(p) for p in ps] for f, ps in corpus.items()
              if f in ("docx", "pptx", "xlsx", "csv", "epub", "json", "xml")}
    done = subprocess.run([python, "-c", _MARKITDOWN, json.dumps(wanted)], check=True,
                          capture_output=True, text=True, timeout=600)
    seconds = json.loads(done.stdout.strip().splitlines()[-1])
    return {f: {"failed": s} if isinstance(s, str) else {
        "seconds": round(s, 4), "files_per_s": _rate(len(wanted[f]), s),
        "mb_per_s": _rate(sum(Path(p).stat().st_size for p in wanted[f]) / 2**20, s)}
        for f, s in seconds.items()}


def run(files: int, size: int, dsn: str | None, markitdown_python: str | None) -> dict:
    work = Path(tempfile.mkdtemp(prefix="memdb-formats-bench-"))
    try:
        started = time.perf_counter()
        corpus = generate(work, files, size)
        log(f"corpus: {files} files x {len(corpus)} formats in "
            f"{time.perf_counter() - started:.1f} s")
        result: dict = {
            "benchmark": "ingest_formats",
            "when": datetime.now(UTC).isoformat(timespec="seconds"),
            "corpus": {"files_per_format": files, "filler_units": size,
                       "bytes_per_file": {f: round(statistics.mean(p.stat().st_size
                                                                   for p in ps))
                                          for f, ps in corpus.items()}},
            "embedder": SeededRandomEmbedder.model,
            "machine": {"python": platform.python_version(), "platform": platform.platform(),
                        "cpus": os.cpu_count()},
            "convert": {}, "ingest": {},
        }
        for fmt, paths in corpus.items():
            result["convert"][fmt] = convert_only(paths)
            log(f"convert {fmt}: {result['convert'][fmt]}")
        with server(dsn) as (admin_dsn, how):
            scratch = Scratch(admin_dsn)
            try:
                with psycopg.connect(admin_dsn) as conn:
                    result["server"] = {"how": how, "postgresql": conn.execute(
                        "SHOW server_version").fetchone()[0]}
                for fmt in corpus:
                    result["ingest"][fmt] = ingest(scratch.fresh(), work / fmt, files)
                    log(f"ingest {fmt}: {result['ingest'][fmt]}")
            finally:
                scratch.drop_all()
        if markitdown_python:
            result["markitdown_convert"] = markitdown(markitdown_python, corpus)
            log(f"markitdown: {result['markitdown_convert']}")
        return result
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=20, help="files of each format")
    parser.add_argument("--size", type=int, default=40, help="filler units in each file")
    parser.add_argument("--dsn", default=None, help="a server (default: an embedded one)")
    parser.add_argument("--markitdown-python", default=None,
                        help="an interpreter with markitdown installed, to compare with")
    parser.add_argument("--json", type=Path, default=DEFAULT_OUT, help="where to write")
    args = parser.parse_args()
    emit(run(args.files, args.size, args.dsn, args.markitdown_python), args.json)


if __name__ == "__main__":
    main()

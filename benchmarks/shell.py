"""Wall time of `memdb search` and `memdb add` from a shell: cold (MEMDB_KEEP_ALIVE=0, every
command starts Python, imports memdb, joins or starts the embedded server and loads the model)
against warm (the shell daemon, memdb.shell, already holds all of it).

Each command is a real process (`python -m memdb.shell`, the console script's code) on an
embedded server in a temporary home, run one after the other; medians and p95 in ms.

    python benchmarks/shell.py --runs 10 --out benchmarks/baselines/shell.json
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


def _memdb(env: dict[str, str], *args: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "memdb.shell", *args], env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return (time.perf_counter() - start) * 1000


def _summary(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    return {"p50_ms": round(statistics.median(ordered), 1),
            "p95_ms": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 1),
            "n": len(ordered)}


def run(runs: int) -> dict:
    home = tempfile.mkdtemp(prefix="memdb-shell-bench-")
    base = {k: v for k, v in os.environ.items() if k != "MEMDB_DSN"}
    cold = {**base, "MEMDB_HOME": home, "MEMDB_KEEP_ALIVE": "0"}
    warm = {**base, "MEMDB_HOME": home, "MEMDB_KEEP_ALIVE": "120"}
    commands = {
        "search": lambda i: ("search", ["what does Alice drink?", "爱丽丝喝什么茶？"][i % 2],
                             "--subject", "alice"),
        "add": lambda i: ("add", f"Alice tried tea number {i} / 爱丽丝试了第{i}种茶",
                          "--subject", "alice", "--no-gate"),
    }
    out: dict = {"first_command_new_home_ms": round(_memdb(cold, *commands["add"](-1)), 1)}
    try:
        for mode, env in (("cold", cold), ("warm", warm)):
            if mode == "warm":
                out["daemon_start_ms"] = round(_memdb(env, "count"), 1)  # starts the daemon
            for name, make in commands.items():
                out[f"{mode}_{name}"] = _summary([_memdb(env, *make(i)) for i in range(runs)])
    finally:
        subprocess.run([sys.executable, "-m", "memdb.cli", "server", "stop", "--force"],
                       env=cold, capture_output=True)
        shutil.rmtree(home, ignore_errors=True)
    for name in commands:
        out[f"speedup_{name}"] = round(out[f"cold_{name}"]["p50_ms"]
                                       / out[f"warm_{name}"]["p50_ms"], 1)
    out["machine"] = {"cpus": os.cpu_count(), "platform": platform.platform(),
                      "python": platform.python_version(),
                      "load_average_1min_at_end": round(os.getloadavg()[0], 2)}
    out["date"] = datetime.now(UTC).date().isoformat()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--out", help="write the JSON here too")
    args = parser.parse_args()
    result = run(args.runs)
    text = json.dumps(result, indent=2, ensure_ascii=False)
    print(text)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text + "\n")


if __name__ == "__main__":
    main()

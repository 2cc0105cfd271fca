"""docs/http.md's session on a fresh data folder: `memdb keys create`, `memdb serve`, then
`POST /v1/memories` writes at once (no `memdb migrate` first), as the other doors do: the door's
stores open on the embedded server itself, which registers a store's embedding space on first
use. Real processes in a temporary MEMDB_HOME (no MEMDB_DSN), never the user's data."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator

import httpx
import pytest


@pytest.fixture
def env() -> Iterator[dict[str, str]]:
    path = tempfile.mkdtemp(prefix="memdb-serve-")
    os.chmod(path, 0o755)
    env = {k: v for k, v in os.environ.items()
           if k not in ("MEMDB_DSN", "MEMDB_ADMIN_DSN", "MEMDB_READ_DSN")}
    env.update(MEMDB_HOME=path, OMP_NUM_THREADS="1")
    yield env
    subprocess.run([sys.executable, "-m", "memdb.cli", "server", "stop", "--force"], env=env,
                   capture_output=True, timeout=120)
    shutil.rmtree(path, ignore_errors=True)


def test_documented_session_writes_on_a_fresh_home(env):
    made = subprocess.run([sys.executable, "-m", "memdb.cli", "keys", "create", "--tenant",
                           "acme", "--subject", "alice", "--name", "docs example"], env=env,
                          capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stderr
    key = made.stdout.splitlines()[0].strip()
    proc = subprocess.Popen([sys.executable, "-m", "memdb.cli", "serve", "--port", "0",
                             "--json"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        lines: list[str] = []
        while not lines or lines[-1].strip() != "}":
            line = proc.stdout.readline()
            assert line, proc.stderr.read()
            lines.append(line)
        url = json.loads("".join(lines))["url"]
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, proc.stderr.read()
            try:
                if httpx.get(f"{url}/v1/health", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "memdb serve did not answer"
            time.sleep(0.2)
        headers = {"Authorization": f"Bearer {key}"}
        for text in ("Alice prefers green tea, no sugar", "爱丽丝喜欢喝不加糖的绿茶"):
            added = httpx.post(f"{url}/v1/memories", headers=headers, timeout=120, json={
                "content": text, "category": "preferences", "source_id": "chat-1"})
            assert added.status_code in (200, 201), added.text
            assert added.json()["outcome"] == "created"
        found = httpx.post(f"{url}/v1/search", headers=headers, timeout=120,
                           json={"query": "绿茶", "k": 3})
        assert found.status_code == 200, found.text
        assert any("绿茶" in hit["memory"]["content"] for hit in found.json()["hits"])
    finally:
        proc.terminate()
        proc.wait(60)

"""remember without waiting at every door (real PostgreSQL, real embedder): `memdb remember
--no-wait`, POST /v1/remember with wait false (202 and the job's id), the MCP tool
remember_turn with wait false; then a worker runs the job and the facts are there."""

from __future__ import annotations

import pytest

from memdb import MemoryStore
from memdb.families.jobs import Worker
from tests.cli_helpers import ok_json, run
from tests.http_server import make_keys, served_door


def _drain(dsn: str, embedder, tenant: str) -> None:
    factory = lambda t: MemoryStore(dsn, tenant=t, embedder=embedder, pool_size=2)  # noqa: E731
    Worker(dsn, tenants=[tenant], store_factory=factory).run(until_idle=True)


def test_cli_no_wait(fresh_db, embedder):
    out = ok_json(fresh_db, "--tenant", "acme", "remember", "--no-wait", "--no-llm",
                  "--subject", "li", "我对花生过敏。以后都用中文回答。")
    assert out["state"] == "queued" and out["outcome"] == "created" and out["job_id"]
    with MemoryStore(fresh_db, tenant="acme", embedder=embedder) as acme:
        assert [str(h.memory.id) for h in acme.search("花生", 3, subject="li")][:1] == \
            [out["memory_id"]]
        text = run(fresh_db, "--tenant", "acme", "remember", "--no-wait", "--no-llm",
                   "--subject", "li", "I prefer green tea.")
        assert text.exit_code == 0 and text.output.startswith("job ") and "queued" in text.output
        ran = ok_json(fresh_db, "worker", "--until-idle", "--tenant", "acme")
        assert ran["done"] == 2, ran
        job = acme.jobs.get(out["job_id"])
        assert job.state == "done"
        contents = [m.content for m in acme.list(subject="li")]
        assert any("花生" in c and not c.startswith("user:") for c in contents), contents
        assert any("green tea" in c and not c.startswith("user:") for c in contents), contents
    refused = run(fresh_db, "remember", "--no-wait", "--dry-run", "hello")
    assert refused.exit_code == 1 and "dry_run" in refused.output


@pytest.fixture(scope="module")
def door(module_db, embedder):
    keys = make_keys(module_db, embedder)
    with served_door(module_db, embedder, mcp=True) as running:
        yield running, keys


def test_http_wait_false_is_202_with_the_job(door, module_db, embedder):
    running, keys = door
    with running.client(keys["alice"]) as a:
        got = a.post("/v1/remember", json={"messages": "I'm allergic to peanuts. 我不吃香菜。",
                                           "wait": False})
        assert got.status_code == 202, got.text
        body = got.json()
        assert body["state"] == "queued" and body["memory_id"]
        hits = a.post("/v1/search", json={"query": "香菜", "k": 3}).json()["hits"]
        assert body["memory_id"] in [h["memory"]["id"] for h in hits]
        assert a.get(f"/v1/jobs/{body['job_id']}").json()["kind"] == "remember"
        bad = a.post("/v1/remember", json={"messages": "hi", "wait": False, "dry_run": True})
        assert bad.status_code == 400 and "dry_run" in bad.text
        waited = a.post("/v1/remember", json={"messages": "I prefer tea.", "dry_run": True})
        assert waited.status_code == 200 and waited.json()["dry_run"] is True
    _drain(module_db, embedder, "acme")
    with running.client(keys["alice"]) as a:
        job = a.get(f"/v1/jobs/{body['job_id']}").json()
        assert job["state"] == "done" and job["result"]["raw_memory_id"] == body["memory_id"]
        assert any("peanut" in d["content"] and d["action"] == "add"
                   for d in job["result"]["decisions"]), job["result"]
    with running.client(keys["globex"]) as b:
        assert b.get(f"/v1/jobs/{body['job_id']}").status_code == 404


def test_mcp_remember_turn_wait_false(door, module_db, embedder):
    import anyio

    from tests.test_mcp import call, http_session

    running, keys = door

    async def scenario():
        async with http_session(f"{running.url}/mcp", keys["alice"]) as session:
            return await call(session, "remember_turn", wait=False,
                              text="记住：我住在上海。I live in Shanghai.")
    try:
        out = anyio.run(scenario)
    except Exception as exc:  # the door serves MCP only when configured with it
        pytest.fail(f"MCP over HTTP: {exc!r}")
    assert out["state"] == "queued" and out["memory_id"] and out["job_id"]
    with MemoryStore(module_db, tenant="acme", embedder=embedder) as acme:
        assert acme.get(out["memory_id"]).subject == "alice"
        _drain(module_db, embedder, "acme")
        assert acme.jobs.get(out["job_id"]).state == "done"


@pytest.mark.parametrize("flag", ["--worker", "--no-worker"])
def test_serve_runs_a_worker_unless_told_not_to(fresh_db, embedder, flag):
    import json
    import os
    import subprocess
    import sys
    import time

    import httpx

    key = make_keys(fresh_db, embedder)["alice"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "memdb.cli", "--dsn", fresh_db, "serve",
                             "--port", "0", "--json", flag], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        lines: list[str] = []
        while not lines or lines[-1].strip() != "}":
            line = proc.stdout.readline()
            assert line, proc.stderr.read()
            lines.append(line)
        url = json.loads("".join(lines))["url"]
        headers = {"Authorization": f"Bearer {key}"}
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, proc.stderr.read()
            try:
                sent = httpx.post(f"{url}/v1/remember", headers=headers, timeout=120,
                                  json={"messages": "我对花生过敏。", "wait": False})
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "memdb serve did not answer"
                time.sleep(0.2)
        assert sent.status_code == 202, sent.text
        job_url = f"{url}/v1/jobs/{sent.json()['job_id']}"
        deadline = time.monotonic() + (60 if flag == "--worker" else 3)
        state = "queued"
        while state not in ("done", "dead") and time.monotonic() < deadline:
            state = httpx.get(job_url, headers=headers, timeout=30).json()["state"]
            time.sleep(0.2)
        assert state == ("done" if flag == "--worker" else "queued")
    finally:
        proc.terminate()
        proc.wait(timeout=30)

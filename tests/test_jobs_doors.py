"""The job queue's doors on a real PostgreSQL: `memdb jobs ...` and `memdb worker`, and
GET /v1/jobs[/{id}] under the API key's tenant."""

from __future__ import annotations

import pytest

from memdb import MemoryStore
from tests.cli_helpers import ok_json, run
from tests.http_server import make_keys, served_door


def test_cli_jobs_and_worker(fresh_db, embedder):
    with MemoryStore(fresh_db, tenant="acme", embedder=embedder, gate=None) as acme, \
            MemoryStore(fresh_db, tenant="globex", embedder=embedder, gate=None) as globex:
        good = acme.jobs.enqueue("test.cli", {"text": "你好, world"})
        bad = acme.jobs.enqueue("test.cli", {})
        theirs = globex.jobs.enqueue("test.cli", {"text": "globex"})
    listed = ok_json(fresh_db, "--tenant", "acme", "jobs", "list")
    assert [j["id"] for j in listed] == [str(bad.id), str(good.id)]
    assert ok_json(fresh_db, "--tenant", "acme", "jobs", "get", str(good.id))["state"] == \
        "queued"
    assert run(fresh_db, "--tenant", "globex", "jobs", "get", str(good.id)).exit_code == 1
    no_handler = run(fresh_db, "worker", "--until-idle", "--kind", "nothing.here")
    assert no_handler.exit_code == 0 and "done 0" in no_handler.output
    drained = ok_json(fresh_db, "worker", "--until-idle", "--tenant", "acme",
                      "--import", "tests.jobs_handlers", "--concurrency", "2")
    assert drained == {"done": 1, "failed": 0, "dead": 1, "lost": 0}
    done = ok_json(fresh_db, "--tenant", "acme", "jobs", "wait", str(good.id))
    assert (done["state"], done["result"]) == ("done", {"chars": 9})
    waited = run(fresh_db, "--tenant", "acme", "jobs", "wait", str(bad.id))
    assert waited.exit_code == 1 and "没有文本" in waited.output  # dead: not done
    assert ok_json(fresh_db, "--tenant", "globex", "jobs", "get",
                   str(theirs.id))["state"] == "queued"  # --tenant acme only
    assert ok_json(fresh_db, "--tenant", "acme", "jobs", "retry",
                   str(bad.id))["state"] == "queued"
    assert ok_json(fresh_db, "--tenant", "acme", "jobs", "cancel",
                   str(bad.id))["state"] == "cancelled"
    stats = ok_json(fresh_db, "--tenant", "acme", "jobs", "stats")
    assert (stats["done"], stats["cancelled"], stats["queued"]) == (1, 1, 0)
    text = run(fresh_db, "--tenant", "acme", "jobs", "list", "--state", "done").output
    assert "test.cli" in text and "done" in text and str(bad.id) not in text


def test_cli_jobs_as_a_subject(fresh_db, embedder):
    """--as-subject confines `memdb jobs` by row-level security: a subject lists, reads and
    cancels only its own jobs; the tenant sees each job's subject."""
    with MemoryStore(fresh_db, tenant="acme", embedder=embedder, gate=None) as acme:
        alice = acme.jobs.enqueue("test.cli", {"subject": "alice", "text": "爱丽丝"})
        bob = acme.jobs.enqueue("test.cli", {"subject": "bob", "text": "bob"})
    as_bob = ("--tenant", "acme", "--as-subject", "bob")
    assert [j["id"] for j in ok_json(fresh_db, *as_bob, "jobs", "list")] == [str(bob.id)]
    assert run(fresh_db, *as_bob, "jobs", "get", str(alice.id)).exit_code == 1
    assert run(fresh_db, *as_bob, "jobs", "cancel", str(alice.id)).exit_code == 1
    assert ok_json(fresh_db, *as_bob, "jobs", "stats")["queued"] == 1
    text = run(fresh_db, "--tenant", "acme", "jobs", "list").output
    assert "alice" in text and "bob" in text
    assert ok_json(fresh_db, "--tenant", "acme", "jobs", "get", str(alice.id))["state"] == \
        "queued"


@pytest.fixture(scope="module")
def door(module_db, embedder):
    keys = make_keys(module_db, embedder)
    with served_door(module_db, embedder) as running:
        yield running, keys


def test_http_jobs_of_the_keys_tenant_only(door, module_db, embedder):
    running, keys = door
    with MemoryStore(module_db, tenant="acme", embedder=embedder, gate=None) as acme:
        job = acme.jobs.enqueue("test.http", {"text": "秘密 secret of acme"})
    with running.client(keys["acme"]) as a:
        got = a.get(f"/v1/jobs/{job.id}")
        assert got.status_code == 200, got.text
        assert (got.json()["state"], got.json()["payload"]) == (
            "queued", {"text": "秘密 secret of acme"})
        listed = a.get("/v1/jobs", params={"state": "queued"})
        assert [j["id"] for j in listed.json()["items"]] == [str(job.id)]
        assert a.get("/v1/jobs", params={"state": "sleeping"}).status_code == 422
        assert a.get("/v1/jobs/not-a-uuid").status_code == 400
    with running.client(keys["globex"]) as b:
        other = b.get(f"/v1/jobs/{job.id}")
        assert other.status_code == 404 and "secret" not in other.text
        assert b.get("/v1/jobs").json()["items"] == []
    with running.client(None) as anonymous:
        assert anonymous.get("/v1/jobs").status_code == 401


def test_http_a_key_bound_to_a_subject_reads_its_subjects_jobs_only(door, module_db, embedder):
    running, keys = door
    with MemoryStore(module_db, tenant="acme", embedder=embedder, gate=None) as acme:
        bob = acme.remember("Bob 的银行卡密码藏在抽屉里。Bob hides his PIN in a drawer.",
                            subject="bob", wait=False)
    with running.client(keys["alice"]) as alice:
        r = alice.post("/v1/remember", json={"wait": False, "messages": [
            {"role": "user", "content": "我喜欢绿茶。I like green tea."}]})
        assert r.status_code == 202, r.text
        own = r.json()["job_id"]
        listed = [(j["id"], j["subject"]) for j in alice.get("/v1/jobs").json()["items"]]
        assert listed == [(own, "alice")]
        other = alice.get(f"/v1/jobs/{bob.job_id}")
        assert other.status_code == 404 and "PIN" not in other.text and "抽屉" not in other.text
    with running.client(keys["acme"]) as team:  # the tenant-wide key still sees both
        listed = {j["id"] for j in team.get("/v1/jobs").json()["items"]}
        assert {own, str(bob.job_id)} <= listed

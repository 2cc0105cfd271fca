"""Document ingestion through the queue: POST /v1/documents answers 202 with a
documents.ingest job when asked (wait false) or when the texts are big, the MCP tool
add_document does the same for a big text, and a worker runs the job (the existing ingestion:
searchable afterwards, in English and Chinese)."""

from __future__ import annotations

import uuid

import pytest

from memdb import MemoryStore
from memdb.families.jobs import Worker
from memdb.families.jobs.builtin import QUEUE_INGEST_CHARS
from tests.http_server import make_keys, served_door

BIG = "\n\n".join(f"## Part {n}\n\nThe pump of line {n} is checked every {n + 2} days. "
                  f"第{n}号线的水泵每{n + 2}天检查一次。" for n in range(210))


def _drain(dsn: str, embedder) -> dict[str, int]:
    worker = Worker(dsn, store_factory=lambda t: MemoryStore(dsn, tenant=t, embedder=embedder,
                                                             gate=None, pool_size=2),
                    kinds=["documents.ingest"])
    try:
        return worker.run(until_idle=True)
    finally:
        worker.stop()


@pytest.fixture(scope="module")
def door(module_db, embedder):
    keys = make_keys(module_db, embedder)
    with served_door(module_db, embedder, max_body_bytes=400_000) as running:
        yield running, keys


def test_http_ingest_returns_a_job_when_asked_or_big(door, module_db, embedder):
    assert len(BIG) > QUEUE_INGEST_CHARS
    running, keys = door
    small = {"id": "kb:tea",
             "text": "# Tea\n\nGreen tea is brewed at 80 °C. 绿茶用八十度的水冲泡。"}
    with running.client(keys["acme"]) as a:
        inline = a.post("/v1/documents", json={"documents": [small]})
        assert inline.status_code == 201 and inline.json()["counts"] == {"created": 1}
        queued = a.post("/v1/documents", json={"documents": [{**small, "id": "kb:tea2"}],
                                               "wait": False})
        assert queued.status_code == 202, queued.text
        big = a.post("/v1/documents", json={"documents": [{"id": "kb:pumps", "text": BIG}],
                                            "tags": ["plant"]})
        assert big.status_code == 202 and big.json()["kind"] == "documents.ingest"
        forced = a.post("/v1/documents", json={"documents": [{"id": "kb:pumps", "text": BIG}],
                                               "wait": True})
        assert forced.status_code == 413  # inline: the request's chunk bound still holds
        ids = [queued.json()["job_id"], big.json()["job_id"]]
        assert a.get(f"/v1/jobs/{ids[1]}").json()["state"] == "queued"
    with running.client(keys["alice"]) as alice:  # a key bound to a subject keeps it
        theirs = alice.post("/v1/documents", json={"documents": [small], "subject": "bob",
                                                   "wait": False})
        assert theirs.status_code == 403
    assert _drain(module_db, embedder)["done"] == 2
    with running.client(keys["acme"]) as a:
        for job_id in ids:
            job = a.get(f"/v1/jobs/{job_id}").json()
            assert job["state"] == "done" and job["result"]["counts"] == {"created": 1}
        assert a.get(f"/v1/jobs/{ids[1]}").json()["result"]["chunks"] > 64
        found = a.post("/v1/documents/search", json={"query": "第7号线的水泵", "k": 3}).json()
        assert any("第7号线" in str(h) for h in found["hits"]), found
    with running.client(keys["globex"]) as b:
        assert b.get(f"/v1/jobs/{ids[0]}").status_code == 404


def test_mcp_add_document_of_a_big_text_is_a_job(module_db, embedder):
    from tests.test_mcp import call, run, stdio_session

    tenant = f"mcp_{uuid.uuid4().hex[:8]}"

    async def scenario() -> dict:
        async with stdio_session(module_db, "--tenant", tenant) as s:
            small = await call(s, "add_document", subject="dave", document_id="short.md",
                               text="# Cello\n\nLoosen the bow. 琴弓用完后要放松弓毛。")
            assert small["counts"] == {"created": 1}
            return await call(s, "add_document", subject="dave", document_id="pumps.md",
                              text=BIG)

    queued = run(scenario)
    assert queued["kind"] == "documents.ingest" and queued["state"] == "queued"
    assert _drain(module_db, embedder)["done"] >= 1
    with MemoryStore(module_db, tenant=tenant, subject="dave", embedder=embedder,
                     gate=None) as store:
        job = store.jobs.get(queued["job_id"])
        assert job.state == "done" and job.payload["options"]["subject"] == "dave"
        hits = store.documents.search("pump of line 12", 3)
        assert any("line 12" in h.hit.memory.content for h in hits)

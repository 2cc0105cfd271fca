"""remember without waiting against the real local model (tests/local_llm.py: llama.cpp's
server with a 270M base model, slow and junk): the call returns while the model works, the job
finishes, and the turn is never lost, including the peanut case through the queue."""

from __future__ import annotations

import time

import pytest

from memdb import MemoryStore
from memdb.core.llm import ChatLLM, PathLimits
from memdb.families.jobs import Worker
from memdb.write.grounding import grounded

pytest.importorskip("tests.local_llm", reason="tests/local_llm.py (the server fixture) is absent")
pytestmark = pytest.mark.local_llm


@pytest.fixture(scope="module")
def llm(local_llm) -> ChatLLM:
    return ChatLLM(local_llm.base_url, api_key=local_llm.api_key, model=local_llm.model,
                   timeout=120, limits={"remember": PathLimits(20.0, 120)})


def _worker(store: MemoryStore, llm: ChatLLM) -> Worker:
    def factory(tenant: str) -> MemoryStore:
        s = MemoryStore(store.db.dsn, tenant=tenant, embedder=store.embedder, pool_size=2)
        s.llm = llm
        return s
    return Worker(store.db.dsn, tenants=[store.tenant], store_factory=factory)


def test_returns_before_the_model_finishes_and_the_job_ends(gated_store, llm):
    turn = "My name is Bob and I live in Paris. 我对花生过敏，以后都用中文回答。"
    with _worker(gated_store, llm).start():
        started = time.monotonic()
        r = gated_store.remember(turn, subject="bob", wait=False)
        returned = time.monotonic() - started
        assert "花生" in gated_store.get(r.memory_id).content  # kept before the model ran
        job = gated_store.jobs.wait(r.job_id, timeout=120)
        finished = time.monotonic() - started
    print(f"\n[real model] returned after {returned:.3f} s, job finished after {finished:.3f} s,"
          f" path={job.result['path']}, fallback={job.result['fallback_reason']!r}, "
          f"llm_ms={job.result['llm_ms']}")
    assert job.state == "done" and job.result["llm_ms"] is not None  # the model was asked
    assert returned < finished and returned < job.result["llm_ms"] / 1000
    assert job.result["path"] == "llm" or job.result["fallback_reason"]
    stored = {str(m.id): m.content for m in gated_store.list(subject="bob")}
    assert r.memory_id in stored  # the turn, whatever the model said
    for mid, content in stored.items():  # and nothing ungrounded beside it
        assert mid == r.memory_id or grounded(content, turn, 0.5) or content in turn, content


@pytest.mark.parametrize("turns, word", [
    (["Hi! My name is Bob and I live in Paris.", "I'm allergic to peanuts."], "peanut"),
    (["你好，我叫李雷，住在北京。", "我对花生过敏。"], "花生"),
])
def test_peanut_case_through_the_queue(gated_store, llm, turns, word):
    """A junk extraction of the first turn must not make the second turn's fact a no-op (nor
    may the first turn, kept as said, swallow it)."""
    with _worker(gated_store, llm).start():
        sent = [gated_store.remember(t, subject="bob", wait=False) for t in turns]
        jobs = [gated_store.jobs.wait(r.job_id, timeout=120) for r in sent]
    assert [j.state for j in jobs] == ["done", "done"]
    last = jobs[1].result
    print(f"\n[real model] peanut via queue: path={last['path']}, "
          f"decisions={[(d['content'], d['action'], d['path']) for d in last['decisions']]}")
    kept = {r.memory_id for r in sent}
    facts = [d for d in last["decisions"] if word in d["content"].lower()]
    assert facts and all(d["action"] != "noop" and d["memory_id"] not in kept
                         for d in facts), last["decisions"]
    stored = {str(m.id): m.content for m in gated_store.list(subject="bob")}
    assert kept <= set(stored)
    assert any(word in c.lower() for i, c in stored.items() if i not in kept), stored

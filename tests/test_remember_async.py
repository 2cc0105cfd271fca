"""remember without waiting (memdb.families.jobs.remember): ``store.remember(turn, wait=False)``
keeps
the turn as said at once and a ``remember`` job does the extraction. Real database, real
embedder; the LLM is tests/canned_openai.py (a server failing or too slow) here, the real local
model in tests/test_remember_async_llm.py."""

from __future__ import annotations

import time

import pytest

from memdb import MemoryStore
from memdb.core.errors import InvalidInput
from memdb.core.llm import ChatLLM
from memdb.families.jobs import RememberJob, Worker
from memdb.write.remember import RAW_TURN_CREATOR
from tests.canned_openai import CannedOpenAI, Delay, Status

CASES = [("I'm allergic to peanuts.", "peanuts", "allergic"),
         ("我对花生过敏。", "花生", "过敏")]


def _worker(store: MemoryStore, llm: ChatLLM | None = None) -> Worker:
    def factory(tenant: str) -> MemoryStore:
        s = MemoryStore(store.db.dsn, tenant=tenant, embedder=store.embedder, pool_size=2)
        s.llm = llm
        return s
    return Worker(store.db.dsn, tenants=[store.tenant], store_factory=factory, backoff=0.1)


@pytest.mark.parametrize("turn, word, other", CASES)
def test_wait_false_keeps_the_turn_then_the_job_extracts(gated_store, turn, word, other):
    r = gated_store.remember(turn, subject="bob", llm=None, wait=False)
    assert isinstance(r, RememberJob) and r.state == "queued" and r.outcome == "created"
    # the turn is searchable at once (keyword and vector routes), before any worker ran
    hits = gated_store.search(word, 5, subject="bob")
    assert [h.memory.id for h in hits][:1] and str(hits[0].memory.id) == r.memory_id
    raw = gated_store.get(r.memory_id)
    assert raw.content == f"user: {turn}" and raw.created_by == RAW_TURN_CREATOR
    assert raw.source_id == r.turn_id and raw.source_type.value == "user_statement"
    vector = gated_store.search(other, 5, subject="bob", routes=["vector"])
    assert r.memory_id in [str(h.memory.id) for h in vector]

    with _worker(gated_store).start() as w:
        job = gated_store.jobs.wait(r.job_id, timeout=30)
    assert w is not None and job.state == "done" and job.kind == "remember"
    result = job.result
    assert result["raw_memory_id"] == r.memory_id and result["path"] == "heuristic"
    facts = [d for d in result["decisions"] if word in d["content"]]
    # the kept turn is not a memory to reconcile with: the fact is written, not a no-op
    assert facts and all(d["action"] == "add" and d["memory_id"] != r.memory_id
                         for d in facts), result["decisions"]
    stored = {str(m.id): m.content for m in gated_store.list(subject="bob")}
    assert r.memory_id in stored and any(word in c for i, c in stored.items()
                                         if i != r.memory_id)


def test_the_same_turn_twice_is_one_job_and_one_kept_turn(gated_store):
    first = gated_store.remember("记住：以后都用中文回答。", subject="li", wait=False, llm=None)
    again = gated_store.remember("记住：以后都用中文回答。", subject="li", wait=False, llm=None)
    assert again.job_id == first.job_id and again.memory_id == first.memory_id
    assert again.outcome == "duplicate"
    assert len(gated_store.jobs.list(kind="remember")) == 1


def test_wait_false_checks_its_arguments(gated_store):
    with pytest.raises(InvalidInput, match="dry_run"):
        gated_store.remember("I like tea", wait=False, dry_run=True)
    with pytest.raises(InvalidInput, match="wait"):
        gated_store.remember("I like tea", wait="no")
    with pytest.raises(InvalidInput):
        gated_store.remember([], wait=False)
    assert gated_store.jobs.list() == [] and gated_store.list() == []


@pytest.mark.parametrize("step", [Status(500), Delay(3.0, '{"facts": []}')],
                         ids=["http-500", "timeout"])
@pytest.mark.parametrize("turn, word, other", CASES)
def test_a_failing_model_ends_in_the_fallback_and_the_turn_stays(gated_store, step, turn,
                                                                 word, other):
    with CannedOpenAI([step]) as srv:
        llm = ChatLLM(srv.base_url, model="canned", timeout=0.5, max_retries=0)
        r = gated_store.remember(turn, subject="eve", wait=False, timeout=0.5)
        with _worker(gated_store, llm).start():
            job = gated_store.jobs.wait(r.job_id, timeout=30)
        assert srv.requests, "the job asked the model"
    assert job.state == "done" and job.result["path"] == "heuristic"
    reason = job.result["fallback_reason"]
    assert reason and reason != "no LLM configured", reason
    hits = gated_store.search(word, 5, subject="eve")
    assert r.memory_id in [str(h.memory.id) for h in hits]
    assert any(word in d["content"] and d["action"] == "add" for d in job.result["decisions"])


def test_a_job_that_cannot_run_is_dead_with_its_error_and_the_turn_stays(gated_store):
    r = gated_store.remember("Alice prefers green tea 绿茶", subject="alice", wait=False,
                             llm=None)

    def broken(tenant: str) -> MemoryStore:
        raise RuntimeError("no database for the worker")
    worker = Worker(gated_store.db.dsn, tenants=[gated_store.tenant], store_factory=broken,
                    backoff=0.01)
    deadline = time.monotonic() + 30
    while not gated_store.jobs.get(r.job_id).finished and time.monotonic() < deadline:
        worker.run_pending()
        time.sleep(0.05)
    job = gated_store.jobs.get(r.job_id)
    assert job.state == "dead" and job.attempts == 3
    assert "no database for the worker" in job.last_error
    assert r.memory_id in [str(h.memory.id) for h in gated_store.search("绿茶", 5)]

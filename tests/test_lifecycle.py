"""The lifecycle API of MemoryStore (memdb.families.lifecycle) against the real embedded server:
maintenance and each forgetting strategy (dry run = real run, same ids), system memories never
forgotten, hypothesis decay, consolidation, session summaries (a canned OpenAI-compatible
server for the LLM path; offline fallback), sedimentation (idempotent, dry run), the review
queue, meta memory (the agent as subject), and history reasons with the store's actor.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from memdb import InvalidInput, MemoryStore, NotFound
from memdb.core.llm import ChatLLM, llm_from_env
from tests.canned_openai import CannedOpenAI, Delay, Reply, Status

SESSION_EN = [
    ("We decided to use PostgreSQL for the memory store.", 0.9),
    ("Alice prefers green tea over coffee.", 0.7),
    ("hello there, how are you", 0.1),
    ("Never deploy on Fridays.", 0.8),
    ("Lesson learned: back up the database before migrations.", 0.8),
]
SESSION_ZH = [
    ("我们决定下周三发布新版本。", 0.9),
    ("李四喜欢喝绿茶，不喜欢咖啡。", 0.7),
    ("今天天气不错。", 0.1),
    ("部署前必须先跑完所有测试。", 0.8),
    ("教训：迁移之前一定要备份数据库。", 0.8),
]


@pytest.fixture
def janitor(fresh_db, embedder):
    with MemoryStore(fresh_db, gate=None, embedder=embedder, actor="janitor") as s:
        yield s


def admin(dsn: str, sql: str, params: tuple = ()) -> list:
    with psycopg.connect(dsn, autocommit=True) as conn:
        cur = conn.execute(sql, params)
        return cur.fetchall() if cur.description else []


def working(store, session: str, notes, subject: str = "alice") -> list:
    return [r.id for r in store.add_many([
        {"content": text, "importance": imp, "kind": "working", "scope": "session",
         "session_id": session, "subject": subject} for text, imp in notes])]


# -- maintenance and forgetting ------------------------------------------------------------------
def test_each_strategy_dry_run_equals_real_run(janitor, fresh_db):
    low = [janitor.add(f"trivial {i}", importance=0.05).id for i in range(3)]
    system = janitor.add("system: answer in the user's language", importance=0.0,
                         category="system").id
    old = [janitor.add(f"旧笔记 {i}").id for i in range(2)]
    admin(fresh_db, "UPDATE memdb.memories SET created_at = now() - interval '400 days' "
                    "WHERE id = ANY(%s)", (old + [system],))
    session = working(janitor, "s1", [(f"note {i}", 0.2 + i / 10) for i in range(5)])
    jm = janitor.maintenance
    for name, call in (("importance", lambda d: jm.forget_by_importance(0.1, dry_run=d)),
                       ("age", lambda d: jm.forget_by_age(180, dry_run=d)),
                       ("capacity", lambda d: jm.forget_by_capacity(2, dry_run=d))):
        planned = call(True)
        assert planned, name
        assert sorted(call(False)) == sorted(planned), name
        assert call(True) == [], name
    assert janitor.get(system).content.startswith("system:")
    left = {m.id for m in janitor.list(limit=100)}
    assert left == {system, *session[3:]}
    for mid in low + old:
        with pytest.raises(NotFound):
            janitor.get(mid)
        last = janitor.history(mid)[-1]
        assert last.op == "delete" and last.actor == "janitor"
        assert last.reason.startswith("forget: ")


def test_maintain_dry_run_equals_real_run_and_is_idempotent(janitor, fresh_db):
    janitor.add("short-lived note", ttl=1)
    janitor.add("noise", importance=0.01)
    working(janitor, "s1", [(f"working note {i}", 0.5) for i in range(4)])
    guess = janitor.add("user might be vegetarian", confidence=0.6).id
    admin(fresh_db, "UPDATE memdb.memories SET status = 'hypothesis', "
                    "updated_at = now() - interval '7 days' WHERE id = %s", (guess,))
    admin(fresh_db, "UPDATE memdb.memories SET expires_at = now() - interval '1 second' "
                    "WHERE content = 'short-lived note'")
    options = {"capacity_per_session": 3}
    dry = janitor.maintenance.run(dry_run=True, **options)
    real = janitor.maintenance.run(**options)
    assert dry["steps"] == real["steps"] == {
        "purge_expired": 1, "forget_importance": 1, "forget_age": 0, "forget_capacity": 1,
        "hypotheses": {"decayed": 1, "forgotten": 0}}
    assert janitor.get(guess).confidence == pytest.approx(0.3, abs=1e-3)
    assert [h.reason for h in janitor.history(guess)][-1].startswith("decay: unconfirmed")
    again = janitor.maintenance.run(**options)
    assert all(v in (0, {"decayed": 0, "forgotten": 0}) for v in again["steps"].values())
    with pytest.raises(InvalidInput):
        janitor.maintenance.run(unknown_option=1)


def test_maintain_every_tenant_is_the_admins(fresh_db, embedder):
    """A store maintains its own tenant only (all_tenants is Forbidden, nothing changes);
    MemoryAdmin maintains every tenant."""
    from memdb import Forbidden, MemoryAdmin

    stores = [MemoryStore(fresh_db, gate=None, tenant=t, embedder=embedder)
              for t in ("acme", "globex")]
    try:
        for s in stores:
            s.add("noise", importance=0.01)
        assert stores[0].maintenance.run()["steps"]["forget_importance"] == 1  # own tenant only
        assert stores[1].count() == 1
        with pytest.raises(Forbidden):
            stores[0].maintenance.run(all_tenants=True)
        assert stores[1].count() == 1
        stores[0].add("noise", importance=0.01)
        with MemoryAdmin(fresh_db) as admin:
            out = admin.maintain()
        assert out["tenant"] is None and out["steps"]["forget_importance"] == 2
        assert stores[0].count() == stores[1].count() == 0
    finally:
        for s in stores:
            s.close()


def test_decay_hypotheses_api(janitor, fresh_db):
    a = janitor.add("用户可能是素食者", confidence=0.8).id
    admin(fresh_db, "UPDATE memdb.memories SET status = 'hypothesis', "
                    "updated_at = now() - interval '21 days' WHERE id = %s", (a,))
    [plan] = janitor.maintenance.decay_hypotheses(7, 0.2, dry_run=True)
    assert plan.action == "forget" and plan.new_confidence == pytest.approx(0.1, abs=1e-3)
    [done] = janitor.maintenance.decay_hypotheses(7, 0.2)  # a moment later: the same row and action
    assert (done.id, done.action) == (plan.id, plan.action)
    assert done.new_confidence == pytest.approx(plan.new_confidence, abs=1e-4)
    with pytest.raises(NotFound):
        janitor.get(a)


# -- consolidation --------------------------------------------------------------------------------
def test_consolidate_moves_important_working_memories(janitor):
    ids = working(janitor, "s-zh", SESSION_ZH)
    planned = janitor.sessions.consolidate("s-zh", threshold=0.7, dry_run=True)
    moved = janitor.sessions.consolidate("s-zh", threshold=0.7)
    assert [c.id for c in planned] == [c.id for c in moved]
    assert {c.id for c in moved} == {ids[0], ids[1], ids[3], ids[4]}
    for c in moved:
        m = janitor.get(c.id)
        assert m.kind.value == "episodic"
        assert m.importance == pytest.approx(min(1, c.old_importance * 1.1))
        assert janitor.history(c.id)[-1].reason == "consolidate: session s-zh"
    assert janitor.get(ids[2]).kind.value == "working"


# -- session summaries -----------------------------------------------------------------------------
def test_summary_offline_extractive_in_chinese_and_english(janitor, monkeypatch):
    monkeypatch.delenv("MEMDB_LLM_MODEL", raising=False)
    assert llm_from_env() is None  # nothing configured: no network at all
    working(janitor, "en", SESSION_EN)
    working(janitor, "zh", SESSION_ZH)
    en = janitor.sessions.summarize("en", max_sentences=3)
    zh = janitor.sessions.summarize("zh", max_sentences=3)
    for s, notes in ((en, SESSION_EN), (zh, SESSION_ZH)):
        assert s.path == "extractive" and s.fallback_reason == "no LLM configured"
        assert s.memory_id is not None and s.created
        kept = [text for text, _ in notes if text.rstrip("。.") in s.content]
        assert len(kept) == 3 and notes[2][0] not in kept  # small talk is dropped
        m = janitor.get(s.memory_id)
        assert m.kind.value == "episodic" and m.category.value == "events"
        assert m.source_type.value == "system" and m.source_id == s.session_id
        assert "session-summary" in m.tags and m.metadata["path"] == "extractive"
    assert "决定下周三发布新版本" in zh.content
    # the same session summarized again is the same memory (dedup), not a second one
    assert janitor.sessions.summarize("zh", max_sentences=3).memory_id == zh.memory_id


def test_summary_through_a_canned_llm(janitor):
    """The LLM is a canned OpenAI-compatible server (tests/canned_openai.py) answering the
    real openai client: good JSON, plain text, HTTP 500, a timeout."""
    working(janitor, "s", SESSION_EN)
    script = [Reply('```json\n{"summary": "Team chose PostgreSQL; Alice likes green tea."}\n```'),
              Reply("Session summary: decided to use PostgreSQL; never deploy on Fridays."),
              Reply('{"no_summary": true}'),
              Status(500),
              Delay(3.0, '{"summary": "late"}')]
    with CannedOpenAI(script) as server:
        llm = ChatLLM(server.base_url, api_key="sk-test-secret", model="canned", timeout=1.0)
        assert "sk-test-secret" not in repr(llm)
        good = janitor.sessions.summarize("s", llm=llm)
        assert (good.path, good.fallback_reason) == ("llm", None)
        assert good.content == "Team chose PostgreSQL; Alice likes green tea."
        m = janitor.get(good.memory_id)
        assert m.source_type.value == "model_inference" and m.metadata["path"] == "llm"
        text = janitor.sessions.summarize("s", llm=llm, dry_run=True)
        assert (text.path, text.memory_id) == ("llm", None)
        assert text.content == \
            "Session summary: decided to use PostgreSQL; never deploy on Fridays."
        bad = janitor.sessions.summarize("s", llm=llm, dry_run=True)
        assert bad.path == "extractive" and "no \"summary\"" in bad.fallback_reason
        error = janitor.sessions.summarize("s", llm=llm, dry_run=True)
        assert error.path == "extractive" and error.fallback_reason == "LLM http: status 500"
        late = janitor.sessions.summarize("s", llm=llm, dry_run=True)
        assert late.path == "extractive" and late.fallback_reason.startswith("LLM timeout")
        assert "PostgreSQL" in late.content
        request = server.requests[0]
        assert request["authorization"] == "Bearer sk-test-secret"
        assert request["body"]["model"] == "canned"
        assert "Never deploy on Fridays." in request["body"]["messages"][1]["content"]
    assert len(server.requests) == 5  # max_retries=0: one request per call


def test_summary_llm_from_environment(janitor, monkeypatch):
    """MEMDB_LLM_* configure the LLM; the canned OpenAI-compatible server answers."""
    working(janitor, "s", SESSION_ZH)
    with CannedOpenAI([Reply('{"summary": "决定下周三发布。"}')]) as server:
        monkeypatch.setenv("MEMDB_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("MEMDB_LLM_MODEL", "canned-zh")
        monkeypatch.setenv("MEMDB_LLM_TIMEOUT", "5")
        s = janitor.sessions.summarize("s")
        assert (s.path, s.content) == ("llm", "决定下周三发布。")
        assert server.requests[0]["body"]["model"] == "canned-zh"
        offline = janitor.sessions.summarize("s", llm=None, dry_run=True)
        assert offline.path == "extractive" and len(server.requests) == 1


def test_summary_of_an_empty_or_mixed_session(janitor):
    assert janitor.sessions.summarize("nothing-here").path == "none"
    working(janitor, "mixed", SESSION_EN[:1], subject="alice")
    working(janitor, "mixed", SESSION_EN[1:2], subject="bob")
    with pytest.raises(InvalidInput, match="several subjects"):
        janitor.sessions.summarize("mixed")
    assert janitor.sessions.summarize("mixed", subject="bob", llm=None).subject == "bob"


# -- sedimentation and review ----------------------------------------------------------------------
def _summaries(store, subject: str = "alice") -> None:
    working(store, "d1", SESSION_EN, subject)
    working(store, "d2", SESSION_ZH, subject)
    working(store, "d3", [("We decided to keep PostgreSQL backups for 30 days.", 0.9),
                          ("PostgreSQL upgrade went fine.", 0.5),
                          ("我们决定下周三发布新版本。", 0.9)], subject)
    for session in ("d1", "d2", "d3"):
        store.sessions.summarize(session, llm=None, max_sentences=5)


def test_sediment_classes_review_queue_idempotency_and_dry_run(janitor):
    _summaries(janitor)
    [dry] = janitor.maintenance.sediment(min_sessions=2, dry_run=True)
    assert dry.summaries == 3 and not dry.skipped
    classes = {m["content"]: m["class"] for m in dry.memories}
    assert classes["Alice prefers green tea over coffee."] == "preference"
    assert classes["李四喜欢喝绿茶，不喜欢咖啡。"] == "preference"
    assert classes["We decided to use PostgreSQL for the memory store."] == "decision"
    assert classes["Lesson learned: back up the database before migrations."] == "lesson"
    assert classes["教训：迁移之前一定要备份数据库。"] == "lesson"
    assert classes["Recurring topic in recent sessions: postgresql"] == "pattern"
    # "我们决定下周三发布新版本。" is in two summaries: extracted once, with both sources
    [twice] = [m for m in dry.memories if m["content"] == "我们决定下周三发布新版本。"]
    assert len(twice["source_ids"]) == 2
    assert {p["content"] for p in dry.proposed} == {"Never deploy on Fridays.",
                                                    "部署前必须先跑完所有测试。"}
    assert janitor.review.list() == []  # the dry run wrote nothing

    [real] = janitor.maintenance.sediment(min_sessions=2)
    assert [m["content"] for m in real.memories] == [m["content"] for m in dry.memories]
    assert [p["content"] for p in real.proposed] == [p["content"] for p in dry.proposed]
    stored = janitor.list(tags=["sediment"], limit=100)
    assert len(stored) == len(real.memories)
    pref = next(m for m in stored if m.content == "Alice prefers green tea over coffee.")
    assert pref.category.value == "preferences" and pref.source_type.value == "system"
    assert pref.source_id.startswith("summary:")
    # rules only count once approved: none is a long-term memory yet (the working notes they
    # came from are classified `system` at write, but stay working memories)
    assert not janitor.list(category="system", kind=["semantic", "procedural", "episodic"],
                            limit=100)

    [again] = janitor.maintenance.sediment(min_sessions=2)
    assert again.skipped and again.source_hash == real.source_hash
    assert len(janitor.list(tags=["sediment"], limit=100)) == len(stored)
    # a new summary changes the sources: the run happens, but nothing is written twice
    working(janitor, "d4", [("Bob likes jazz.", 0.6)])
    janitor.sessions.summarize("d4", llm=None)
    [fresh] = janitor.maintenance.sediment(min_sessions=2)
    assert not fresh.skipped
    assert [m["content"] for m in fresh.memories] == ["Bob likes jazz."]
    assert fresh.proposed == ()


def test_review_approve_and_reject(janitor):
    _summaries(janitor)
    janitor.maintenance.sediment()
    pending = janitor.review.list()
    assert {p.content for p in pending} == {"Never deploy on Fridays.",
                                            "部署前必须先跑完所有测试。"}
    rule, other = sorted(pending, key=lambda p: p.content)
    memory_id = janitor.review.approve(rule.id, decided_by="lead")
    m = janitor.get(memory_id)
    assert (m.content, m.category.value, m.kind.value) == (rule.content, "system", "procedural")
    assert "rule" in m.tags and m.source_id == f"review:{rule.id}"
    assert janitor.search("deploy Fridays", k=3, category="system",
                          kind="procedural")[0].memory.id == memory_id
    janitor.review.reject(other.id, decided_by="lead")
    approved = janitor.review.list("approved")
    assert [(a.id, a.memory_id, a.decided_by) for a in approved] == [(rule.id, memory_id, "lead")]
    assert approved[0].decided_at is not None
    assert [r.id for r in janitor.review.list("rejected")] == [other.id]
    assert janitor.review.list() == []
    with pytest.raises(InvalidInput, match="already approved"):
        janitor.review.reject(rule.id)
    with pytest.raises(NotFound):
        janitor.review.approve("00000000-0000-0000-0000-000000000000")
    # a rejected rule is not proposed again
    working(janitor, "d9", [("部署前必须先跑完所有测试。", 0.9), ("Carol likes tea.", 0.5)])
    janitor.sessions.summarize("d9", llm=None)
    assert all(r.proposed == () for r in janitor.maintenance.sediment())


def test_meta_memory_the_agent_as_subject(janitor):
    """The agent's memories about itself (subject = the agent) go through the same lifecycle."""
    agent = "agent:helper"
    working(janitor, "self-1", [("I prefer answering in Chinese when the user does.", 0.8),
                                ("我总是先确认需求再写代码。", 0.9)], subject=agent)
    summary = janitor.sessions.summarize("self-1", llm=None)
    assert summary.subject == agent and janitor.get(summary.memory_id).subject == agent
    [run] = janitor.maintenance.sediment(subject=agent)
    assert run.subject == agent
    assert any(m["class"] == "preference" for m in run.memories)
    assert {p["content"] for p in run.proposed} == {"我总是先确认需求再写代码。"}
    hits = janitor.search("answering in Chinese", k=3, subject=agent)
    assert hits and all(h.memory.subject == agent for h in hits)
    moved = janitor.sessions.consolidate("self-1", subject=agent)
    assert len(moved) == 2


def test_old_summaries_are_outside_the_window(janitor, fresh_db):
    _summaries(janitor)
    admin(fresh_db, "UPDATE memdb.memories SET created_at = %s WHERE 'session-summary' = ANY(tags)",
          (datetime.now(UTC) - timedelta(days=60),))
    assert janitor.maintenance.sediment(days=30) == []

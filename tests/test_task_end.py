"""``store.task_end`` / ``memdb task-end``: patterns and proposed rules on success, an
actionable reflection on failure, all through the write gate, on the real embedded PostgreSQL;
Chinese and English. The LLM is faked only by tests/canned_openai.py behind the real openai
client (memdb.core.llm.ChatLLM), never the database."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from memdb.core.errors import InvalidInput
from memdb.core.llm import ChatLLM
from memdb.families.task_end import ACTIONABLE
from tests.canned_openai import CannedOpenAI, Reply, Status
from tests.cli_helpers import ok_json, run


def _llm(api):
    return ChatLLM(api.base_url, model="canned", timeout=30)


def test_success_zh_pattern_and_rules_into_the_review_queue(gated_store):
    s = gated_store
    summary = "服务部署成功。必须先在预发环境验证。下次部署之前先备份数据库。用户很满意。"
    r = s.task_end("s1", outcome="success", summary=summary, task="部署服务", llm=None)
    pattern, *rules = r.writes
    assert pattern.role == "pattern" and pattern.outcome == "created"
    memory = s.get(pattern.id)
    assert memory.content == f"成功完成「部署服务」的做法：{summary}"
    assert memory.category.value == "patterns" and memory.source_type.value == "system"
    assert memory.source_id == r.source_id and memory.session_id == "s1"
    assert {"task-end", "success"} <= set(memory.tags) and memory.expires_at is None
    assert [(w.content, w.outcome) for w in rules] == [
        ("必须先在预发环境验证。", "proposed"), ("下次部署之前先备份数据库。", "proposed")]
    queue = s.review.list()
    assert {q.content for q in queue} == {"必须先在预发环境验证。", "下次部署之前先备份数据库。"}
    assert all(q.source_ids == (memory.id,) and q.category == "system" for q in queue)
    assert s.list(category="system") == []  # proposed, not written as rules
    rule_id = s.review.approve(rules[0].id)
    assert s.get(rule_id).category.value == "system"
    again = s.task_end("s1", outcome="success", summary=summary, task="部署服务", llm=None)
    assert again.source_id == r.source_id  # the same call is the same task
    assert [w.outcome for w in again.writes] == ["duplicate", "already_proposed",
                                                 "already_proposed"]


def test_success_en_explicit_rules_pass_the_gate_as_rules(gated_store):
    s = gated_store
    r = s.task_end("s2", outcome="success", llm=None,
                   summary="Shipped the billing fix. Users were happy with it.",
                   rules=["Always run the migrations before deploying",
                          "Billing is important stuff"])
    assert r.writes[0].content == "What worked: Shipped the billing fix. Users were happy with it."
    assert [(w.role, w.outcome) for w in r.writes[1:]] == [("rule", "proposed"),
                                                           ("rule", "rejected")]
    assert any(x.startswith("not_generalizable") for x in r.writes[2].reasons)
    assert [q.content for q in s.review.list()] == ["Always run the migrations before deploying"]


def test_failure_zh_with_fix_is_an_actionable_reflection(gated_store):
    s = gated_store
    r = s.task_end("s3", outcome="failure", summary="部署失败：没有先备份数据库，迁移出错。",
                   task="部署服务", fix="备份数据库", llm=None, subject="xm")
    [w] = r.writes
    assert w.role == "reflection" and w.outcome == "created" and r.path == "fix"
    assert w.content == ("下次部署服务时，先备份数据库，再继续。"
                         "（上次：部署失败：没有先备份数据库，迁移出错。）")
    m = s.get(w.id)
    assert ACTIONABLE.search(m.content)
    assert m.category.value == "patterns" and "reflection" in m.tags
    assert any(x.startswith("ttl_default: 180 days for reflection") for x in w.reasons)
    expected = datetime.now(UTC) + timedelta(days=180)
    assert abs(m.expires_at - expected) < timedelta(minutes=5)
    assert s.profile("xm")["lessons"][0]["memory_ids"] == [w.id]  # the agent's lessons


def test_failure_en_template_and_summary_sentence(gated_store):
    s = gated_store
    s.sessions.update_state("s4", goal="Deploy the billing service")
    r = s.task_end("s4", outcome="failure", llm=None,
                   summary="The deploy failed because the config was stale.")
    assert r.task == "Deploy the billing service" and r.path == "template"
    assert r.fallback_reason == "no LLM configured"
    assert r.writes[0].content == ("Next time, check what went wrong last time before you "
                                   "deploy the billing service: The deploy failed because "
                                   "the config was stale.")
    said = s.task_end("s4", outcome="failure", llm=None,
                      summary="Tests broke in CI. Next time, run the linter before pushing.")
    assert said.path == "summary"
    assert said.writes[0].content == "Next time, run the linter before pushing."


def test_failure_report_is_not_taken_for_a_correction(gated_store):
    s = gated_store
    s.add("The cache layer is fine", category="patterns", source_id="t0")
    r = s.task_end("s5", outcome="failure", llm=None, fix="check the DNS config",
                   summary="It was not the cache, it was the DNS config.")
    assert r.writes[0].outcome == "created"
    assert not any(x.startswith("correction") for x in r.writes[0].reasons)
    assert s.list(category="patterns", limit=10)[-1].content == "The cache layer is fine"


def test_failure_phrased_by_the_llm_zh(gated_store):
    s = gated_store
    rule = "下次迁移数据库时，先在副本上演练一遍。"
    reply = f"好的：```json\n{json.dumps({'rule': rule}, ensure_ascii=False)}\n```"
    with CannedOpenAI([Reply(reply)]) as api:
        r = s.task_end("s6", outcome="failure", summary="迁移把生产库锁住了十分钟。",
                       task="迁移数据库", llm=_llm(api))
        body = [q["body"] for q in api.requests if q["path"].endswith("/chat/completions")][0]
    assert r.path == "llm" and r.fallback_reason is None
    assert r.writes[0].content == rule
    assert "迁移把生产库锁住了十分钟" in body["messages"][-1]["content"]
    assert s.get(r.writes[0].id).metadata["task_end"]["path"] == "llm"


@pytest.mark.parametrize(("step", "reason"), [
    (Reply('{"rule": "Be more careful."}'), "bad_response"),   # not actionable
    (Reply("no JSON here"), "bad_response"),
    (Status(500), ""),
])
def test_unusable_llm_falls_back_to_the_template(gated_store, step, reason):
    with CannedOpenAI([step]) as api:
        r = gated_store.task_end("s7", outcome="failure", task="rotate the API keys",
                                 summary="The old key was revoked too early.", llm=_llm(api))
    assert r.path == "template" and r.fallback_reason and r.fallback_reason.startswith(reason)
    assert r.writes[0].content.startswith("Next time, check what went wrong last time before "
                                          "you rotate the API keys")


def test_dry_run_writes_nothing(gated_store):
    s = gated_store
    before = s.count()
    r = s.task_end("s8", outcome="success", llm=None, dry_run=True,
                   summary="完成了报表。以后每次都要先确认数据口径。")
    assert r.dry_run and r.writes[0].outcome == "created" and r.writes[0].id is None
    assert [w.outcome for w in r.writes[1:]] == ["would_propose"]
    assert s.count() == before and s.review.list() == []


@pytest.mark.parametrize("kwargs", [
    {"outcome": "partial", "summary": "done"},
    {"outcome": "success", "summary": "   "},
    {"outcome": "failure", "summary": "x" * 9000},
    {"outcome": "success", "summary": "ok then", "rules": "Always test"},
    {"outcome": "failure", "summary": "failed", "fix": ""},
])
def test_bad_input_is_refused_before_anything_is_written(gated_store, kwargs):
    with pytest.raises(InvalidInput):
        gated_store.task_end("s9", llm=None, **kwargs)
    assert gated_store.count() == 0


def test_cli_task_end(fresh_db, monkeypatch):
    monkeypatch.delenv("MEMDB_LLM_MODEL", raising=False)
    out = ok_json(fresh_db, "task-end", "--session", "s1", "--outcome", "failure",
                  "--summary", "上线失败，没有先跑冒烟测试。", "--task", "上线新版本",
                  "--fix", "跑冒烟测试")
    assert out["outcome"] == "failure" and out["path"] == "fix"
    assert out["writes"][0]["content"].startswith("下次上线新版本时，先跑冒烟测试")
    ok = run(fresh_db, "task-end", "--session", "s1", "--outcome", "success",
             "--summary", "Released v2. Never skip the smoke tests.")
    assert ok.exit_code == 0
    assert "pattern" in ok.stdout and "proposed" in ok.stdout
    queue = ok_json(fresh_db, "review", "list")
    assert [q["content"] for q in queue] == ["Never skip the smoke tests."]
    bad = run(fresh_db, "task-end", "--session", "s1", "--outcome", "meh", "--summary", "x")
    assert bad.exit_code != 0

"""Meta memory (issue 15, gaps): what an agent knows about itself - persona, abilities,
limits, lessons - written and read through ``store.meta`` / ``memdb meta`` under the reserved
subject ``agent:<name>``, the same document from SQL (memdb.agent_meta), and rendered by the
context builder in its own section under the token budget. Chinese and English."""

from __future__ import annotations

import pytest
from cli_helpers import ok_json, run

from memdb import Forbidden, InvalidInput, MemoryStore
from memdb.core.tokens import message_tokens

META = [  # (content, aspect)
    ("我是小安，一个说话简洁的中文助手", "persona"),
    ("I am Ann, a concise assistant for the Acme team", "persona"),
    ("我不能访问互联网，也不能打开链接", "limits"),
    ("I cannot send email on the user's behalf", "limit"),            # singular alias
    ("擅长把 SQL 查询改写得更快", "abilities"),
    ("I can summarize long PDF reports", "ability"),
    ("部署前先确认数据库已经备份", "lessons"),
    ("Ask for the ticket number before touching production", "lesson"),
]


def _seed(store: MemoryStore, agent: str = "ann") -> dict[str, str]:
    return {text: str(store.meta.add(text, aspect=aspect, agent=agent).id)
            for text, aspect in META}


def test_write_and_read_by_aspect(gated_store):
    s = gated_store
    ids = _seed(s)  # through the default write gate: no source id needed, limits are rules
    s.add("用户Alice喜欢绿茶", subject="alice", source_id="t1")
    s.meta.add("I am Bob's planner", agent="bob")
    doc = s.meta.read("ann")
    assert (doc["agent"], doc["subject"]) == ("ann", "agent:ann")
    got = {aspect: {i["content"] for i in doc[aspect]}
           for aspect in ("persona", "abilities", "limits", "lessons")}
    assert got == {
        "persona": {"我是小安，一个说话简洁的中文助手",
                    "I am Ann, a concise assistant for the Acme team"},
        "limits": {"我不能访问互联网，也不能打开链接", "I cannot send email on the user's behalf"},
        "abilities": {"擅长把 SQL 查询改写得更快", "I can summarize long PDF reports"},
        "lessons": {"部署前先确认数据库已经备份",
                    "Ask for the ticket number before touching production"}}
    assert sorted(doc["memory_ids"]) == sorted(ids.values())
    assert doc["counts"] == {"persona": 2, "abilities": 2, "limits": 2, "lessons": 2}
    memory = s.get(ids["我不能访问互联网，也不能打开链接"])  # an ordinary memory underneath
    assert (memory.subject, memory.category.value, memory.expires_at) == \
        ("agent:ann", "system", None)
    assert {"meta", "meta:limits"} <= set(memory.tags)
    assert s.meta.read("agent:ann") == doc  # the prefix may be given
    assert s.meta.read("nobody")["memory_ids"] == []
    assert s.meta.read("ann", limit=1)["counts"] == {"persona": 1, "abilities": 1, "limits": 1,
                                                     "lessons": 1}


def test_hand_written_agent_memories_count(store, raw):
    """The older convention (subject "agent:<name>") is read too, aspect by category."""
    skill = store.add("Knows the billing API", subject="agent:ann", category="skills").id
    note = store.add("上次忘了先跑测试", subject="agent:ann", category="patterns").id
    doc = store.meta.read("ann")
    assert [i["id"] for i in doc["abilities"]] == [str(skill)]
    assert [i["id"] for i in doc["lessons"]] == [str(note)]
    via_sql = raw.execute("SELECT memdb.agent_meta('default', 'ann')").fetchone()[0]
    assert via_sql == doc


def test_bad_input_is_refused_and_writes_nothing(store):
    for call in (lambda: store.meta.add("I am Ann", aspect="mood"),
                 lambda: store.meta.add("I am Ann", agent=""),
                 lambda: store.meta.add("I am Ann", agent="agent:"),
                 lambda: store.meta.add("I am Ann", subject="alice"),
                 lambda: store.meta.add("I am Ann", category="events"),
                 lambda: store.meta.read("ann", limit=0)):
        with pytest.raises(InvalidInput):
            call()
    assert store.count() == 0


def test_subject_confined_store_sees_no_meta_and_cannot_write_it(store, fresh_db, embedder):
    _seed(store)
    with MemoryStore(fresh_db, subject="alice", embedder=embedder, gate=None) as alice:
        assert alice.meta.read("ann")["memory_ids"] == []
        with pytest.raises(Forbidden):
            alice.meta.add("I am Ann", agent="ann")


def test_context_renders_meta_in_its_own_section(gated_store):
    s = gated_store
    ids = _seed(s)
    s.add("总是先说结论，再给理由", subject="default", category="system", source_id="r1")
    s.add("我对花生过敏", source_id="t1")
    plain = s.context("帮我部署服务", budget_tokens=3000, include_profile=True)
    assert "meta" not in plain.included and plain.meta_ids == ()
    ctx = s.context("帮我部署服务", budget_tokens=3000, include_profile=True, agent="ann")
    head = ctx.messages[0]["content"]
    assert head.index("规则：") < head.index("关于你（助手）：") < head.index("用户画像：")
    limit = "我不能访问互联网，也不能打开链接"
    assert f"[mem:{ids[limit]}] (限制) {limit}" in head
    assert set(ctx.meta_ids) == set(ids.values()) and ctx.included["meta"] == 8
    assert ctx.dropped["meta"] == 0 and ctx.tokens <= ctx.budget
    assert ctx.to_dict()["meta_ids"] == list(ctx.meta_ids)
    en = s.context("deploy the service", budget_tokens=3000, agent="ann")
    assert "About you (the assistant):" in en.messages[0]["content"]
    assert "(limit) I cannot send email on the user's behalf" in en.messages[0]["content"]
    # under the budget: whole items, persona and limits first, the rest dropped, never cut
    smallest = message_tokens(s.context("deploy", budget_tokens=3000).messages[0])
    seen = set()
    for budget in range(smallest, en.tokens + 40, 15):
        small = s.context("deploy", budget_tokens=budget, agent="ann")
        assert small.tokens <= budget
        assert small.included["meta"] + small.dropped["meta"] == 8
        lines = [ln for ln in small.messages[0]["content"].splitlines() if "[mem:" in ln]
        assert len([ln for ln in lines if ln.split("]")[0][7:] in ids.values()]) \
            == small.included["meta"]
        seen.add(small.included["meta"])
    assert 0 in seen and 8 in seen and len(seen) > 2
    capped = s.context("deploy", budget_tokens=3000, agent="ann", max_meta_tokens=60)
    assert 0 < capped.included["meta"] < 8
    first = capped.meta_ids[0]
    assert first in {ids["我是小安，一个说话简洁的中文助手"],
                     ids["I am Ann, a concise assistant for the Acme team"]}


def test_cli_meta(fresh_db):
    out = ok_json(fresh_db, "meta", "add", "我不能访问互联网", "--aspect", "limits",
                  "--agent", "ann")
    assert out["created"] is True
    ok_json(fresh_db, "meta", "add", "I am Ann, a concise assistant", "--agent", "ann")
    doc = ok_json(fresh_db, "meta", "show", "--agent", "ann")
    assert [i["content"] for i in doc["limits"]] == ["我不能访问互联网"]
    assert [i["id"] for i in doc["limits"]] == [out["id"]]
    text = run(fresh_db, "meta", "show", "--agent", "ann").stdout
    assert "limits (限制):" in text and out["id"] in text
    assert "no meta memory" in run(fresh_db, "meta", "show", "--agent", "bob").stdout
    ctx = ok_json(fresh_db, "context", "deploy", "--agent", "ann")
    assert ctx["meta_ids"] and out["id"] in ctx["meta_ids"]
    # the aspect is checked by the declaration (memdb.core.ops.families.META_ADD), as over HTTP
    refused = run(fresh_db, "meta", "add", "心情不错", "--aspect", "mood")
    assert refused.exit_code == 1 and "aspect must be one of" in refused.output

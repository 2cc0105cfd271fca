"""The user profile (``memdb.subject_profile`` / ``store.profile`` / ``memdb profile``) and its
rendering by the context builder, on the real embedded PostgreSQL; Chinese and English."""

from __future__ import annotations

import json

import pytest

from memdb import MemoryStore
from memdb.core.errors import InvalidInput
from memdb.core.tokens import message_tokens
from memdb.families.context import assemble
from memdb.retrieval.profile import profile_items
from tests.cli_helpers import ok_json, run

SECTIONS = ("preferences", "habits", "expertise", "communication_style", "lessons", "facts")

ZH = [  # (content, category, kind, expected section or None)
    ("我喜欢喝绿茶", "preferences", "semantic", "preferences"),
    ("回答请用中文，简洁一点", "preferences", "semantic", "communication_style"),
    ("我每天早上六点跑步", "preferences", "semantic", "habits"),
    ("我是后端工程师，精通 PostgreSQL", "entities", "semantic", "expertise"),
    ("熟悉 Rust 和 Go 语言开发", "skills", "semantic", "expertise"),
    ("周五下午不要部署生产环境", "system", "procedural", None),   # a rule, not a profile item
    ("上周五去杭州出差了", "events", "episodic", None),
    ("我住在上海浦东", "entities", "semantic", "facts"),          # a stable personal fact
]
EN = [
    ("Alice prefers green tea over coffee", "preferences", "semantic", "preferences"),
    ("Please keep answers concise and use bullet points", "preferences", "semantic",
     "communication_style"),
    ("I usually code late at night", "general", "semantic", "habits"),
    ("I am a senior data engineer at Acme", "entities", "semantic", "expertise"),
    ("Kubernetes cluster administration", "skills", "semantic", "expertise"),
    ("Runs the test suite before every commit", "patterns", "semantic", "habits"),
    ("Never deploy on Fridays", "system", "procedural", None),
    ("Alice went to Berlin last May", "events", "episodic", None),
]


def _seed(store: MemoryStore, subject: str, rows) -> dict[str, str]:
    ids = {}
    for n, (content, category, kind, _section) in enumerate(rows):
        ids[content] = str(store.add(content, subject=subject, category=category, kind=kind,
                                     source_id=f"{subject}-turn-{n}").id)
    return ids


def _sections(doc) -> dict[str, set[str]]:
    return {s: {item["content"] for item in doc[s]} for s in SECTIONS}


@pytest.mark.parametrize(("subject", "rows"), [("xiaoming", ZH), ("alice", EN)])
def test_profile_sections_and_traceability(gated_store, subject, rows):
    s = gated_store
    ids = _seed(s, subject, rows)
    _seed(s, "bob", [("Bob prefers black coffee", "preferences", "semantic", None)])
    doc = s.profile(subject)
    assert doc["subject"] == subject and doc["tenant"] == "default"
    want = {sec: {c for c, _, _, section in rows if section == sec} for sec in SECTIONS}
    assert _sections(doc) == want
    listed = set()
    for section in SECTIONS:
        for item in doc[section]:
            assert item["memory_ids"] == [ids[item["content"]]]
            memory = s.get(item["memory_ids"][0])  # every line traces back to its memory
            assert memory.content == item["content"] and memory.subject == subject
            assert item["category"] == memory.category.value
            assert item["importance"] == pytest.approx(memory.importance, abs=0.01)
            listed.update(item["memory_ids"])
    assert set(doc["memory_ids"]) == listed
    assert doc["counts"] == {sec: len(v) for sec, v in want.items() if v}
    assert "Bob prefers black coffee" not in json.dumps(doc)


def test_profile_follows_the_memories(gated_store):
    s = gated_store
    first = s.add("我喜欢喝绿茶", category="preferences", source_id="t1",
                  norm_key="drink", subject="xm").id
    doc = s.profile("xm")
    assert [i["content"] for i in doc["preferences"]] == ["我喜欢喝绿茶"]
    second = s.add("我喜欢喝乌龙茶", category="preferences", source_id="t2",
                   norm_key="drink", subject="xm")
    assert second.outcome == "superseded"
    doc = s.profile("xm")
    assert [i["content"] for i in doc["preferences"]] == ["我喜欢喝乌龙茶"]
    assert str(first) not in doc["memory_ids"]  # the superseded version is not in it
    s.delete(second.id)
    assert s.profile("xm")["preferences"] == [] and s.profile("xm")["memory_ids"] == []


def test_duplicates_are_one_item_hypotheses_and_session_notes_are_left_out(gated_store):
    s = gated_store
    a = s.add("I prefer dark mode in every editor", category="preferences", source_id="t1")
    b = s.add("I prefer dark mode in every editor", category="preferences", source_id="t2",
              scope="global")
    assert a.id != b.id
    s.add("The user maybe prefers tabs", category="preferences", source_id="t3",
          source_type="model_inference")                         # a hypothesis
    s.add("I prefer short meetings this sprint", category="preferences", source_id="t4",
          scope="session", session_id="s1")                      # session-scoped
    doc = s.profile()
    [item] = doc["preferences"]
    assert sorted(item["memory_ids"]) == sorted([str(a.id), str(b.id)])


FACTS = [  # (content, category, kind, source_type, a fact?)
    ("我对花生过敏", None, "semantic", "user_statement", True),
    ("I am allergic to peanuts", None, "semantic", "user_statement", True),
    ("我的生日是5月3日", None, "semantic", "user_statement", True),        # classified events
    ("My name is Alice Chen", None, "semantic", "user_statement", True),
    ("Alice has two cats, Mochi and Tofu", "entities", "semantic", "user_statement", True),
    ("老家在四川成都", "general", "semantic", "user_statement", True),
    ("我喜欢喝绿茶", "preferences", "semantic", "user_statement", False),  # a preference
    ("I am a senior data engineer at Acme", "entities", "semantic", "user_statement", False),
    ("上周五去杭州出差了", "events", "episodic", "user_statement", False),
    ("对坚果过敏的人不要吃这款蛋糕", "general", "semantic", "document", False),  # a chunk
    ("我对猫毛过敏，" + "细节" * 300, "general", "semantic", "user_statement", False),  # long
    ("Only answer allergy questions with a source", "system", "procedural", "system", False),
    ("临时：我今天对花粉有点过敏", "general", "working", "user_statement", False),
]


def test_facts_section_has_the_stable_facts_with_their_ids(store, raw):
    """Remembered "我对花生过敏" appears in the profile (issue 15), in a facts section of its
    own: stable facts other sections did not take, each with its memory ids."""
    ids = {}
    for n, (content, category, kind, source_type, _fact) in enumerate(FACTS):
        ids[content] = str(store.add(content, subject="alice", category=category, kind=kind,
                                     source_type=source_type, source_id=f"t{n}").id)
    store.add("Bob is allergic to shellfish", subject="bob")
    doc = store.profile("alice")
    facts = {i["content"]: i["memory_ids"] for i in doc["facts"]}
    assert set(facts) == {c for c, *_, fact in FACTS if fact}
    for content, memory_ids in facts.items():
        assert memory_ids == [ids[content]] and memory_ids[0] in doc["memory_ids"]
    assert doc["counts"]["facts"] == len(facts)
    others = {i["content"] for s in SECTIONS if s != "facts" for i in doc[s]}
    assert not others & set(facts)  # never in two sections
    assert "我喜欢喝绿茶" in others and "I am a senior data engineer at Acme" in others
    assert "Bob" not in json.dumps(doc)
    # bounded: at most `limit` facts, the ones with a stable personal cue first
    two = store.profile("alice", limit=2)["facts"]
    assert len(two) == 2 and all(i["content"] != "Alice has two cats, Mochi and Tofu"
                                 for i in two)
    assert raw.execute("SELECT memdb.subject_profile('default', 'alice')").fetchone()[0] == doc
    # rendered into the context with its id, and by the CLI
    ctx = store.context("我能吃花生酱吗？", subject="alice", include_profile=True)
    assert f"[mem:{ids['我对花生过敏']}] (事实) 我对花生过敏" in ctx.messages[0]["content"]
    assert ids["我对花生过敏"] in ctx.profile_ids


def test_cli_profile_shows_facts(fresh_db):
    mid = ok_json(fresh_db, "add", "我对花生过敏", "--no-gate", "--subject", "xm")["id"]
    ok_json(fresh_db, "add", "I live in Berlin", "--no-gate", "--subject", "xm")
    doc = ok_json(fresh_db, "profile", "xm")
    assert {i["content"] for i in doc["facts"]} == {"我对花生过敏", "I live in Berlin"}
    text = run(fresh_db, "profile", "xm").stdout
    assert "facts (事实):" in text and "我对花生过敏" in text and mid in text


def test_limit_keeps_the_most_important(store):
    store.add_many([{"content": f"我喜欢第{n}种茶", "category": "preferences",
                     "importance": n / 10} for n in range(1, 6)])
    doc = store.profile(limit=2)
    assert [i["content"] for i in doc["preferences"]] == ["我喜欢第5种茶", "我喜欢第4种茶"]
    with pytest.raises(InvalidInput):
        store.profile(limit=0)
    with pytest.raises(InvalidInput):
        store.profile(" ")


def test_profile_from_sql_is_the_same_document(store, raw):
    store.add("I usually review pull requests every morning", subject="alice")
    via_sql = raw.execute("SELECT memdb.subject_profile('default', 'alice')").fetchone()[0]
    assert via_sql == store.profile("alice")
    assert via_sql["habits"][0]["content"] == "I usually review pull requests every morning"


def test_profile_respects_tenant_isolation(fresh_db, embedder):
    with MemoryStore(fresh_db, embedder=embedder, gate=None, tenant="t1") as one, \
            MemoryStore(fresh_db, embedder=embedder, gate=None, tenant="t2") as two:
        one.add("我喜欢喝咖啡", category="preferences", subject="u")
        assert len(one.profile("u")["preferences"]) == 1
        assert two.profile("u")["preferences"] == [] and two.profile("u")["memory_ids"] == []


def test_cli_profile(fresh_db):
    ok_json(fresh_db, "add", "我喜欢喝绿茶", "--category", "preferences", "--no-gate",
            "--subject", "xm")
    ok_json(fresh_db, "add", "回答请用中文", "--category", "preferences", "--no-gate",
            "--subject", "xm")
    doc = ok_json(fresh_db, "profile", "xm")
    assert [i["content"] for i in doc["preferences"]] == ["我喜欢喝绿茶"]
    assert [i["content"] for i in doc["communication_style"]] == ["回答请用中文"]
    text = run(fresh_db, "profile", "xm")
    assert text.exit_code == 0
    assert "preferences" in text.stdout and "我喜欢喝绿茶" in text.stdout
    assert doc["preferences"][0]["memory_ids"][0] in text.stdout
    empty = run(fresh_db, "profile", "nobody")
    assert empty.exit_code == 0 and "no profile" in empty.stdout


def test_cli_profile_without_a_subject_reads_default_as_over_http(fresh_db):
    """The subject is optional at every door (memdb.core.ops.families.PROFILE): without it, the
    store's subject, else 'default'."""
    ok_json(fresh_db, "add", "I prefer green tea.", "--category", "preferences", "--no-gate")
    ok_json(fresh_db, "add", "我喜欢喝乌龙茶", "--category", "preferences", "--no-gate",
            "--subject", "xm")
    doc = ok_json(fresh_db, "profile")
    assert doc["subject"] == "default"
    assert [i["content"] for i in doc["preferences"]] == ["I prefer green tea."]
    assert ok_json(fresh_db, "--as-subject", "xm", "profile")["subject"] == "xm"


# -- rendering into the context --------------------------------------------------------------
def _store_with_profile(s: MemoryStore) -> dict[str, str]:
    return _seed(s, "default", ZH + EN)


def test_build_context_renders_the_profile_into_the_system_message(gated_store):
    s = gated_store
    ids = _store_with_profile(s)
    plain = s.context("我喜欢喝什么？", budget_tokens=2000)
    assert "profile" not in plain.included and plain.profile_ids == ()
    ctx = s.context("我喜欢喝什么？", budget_tokens=2000, include_profile=True)
    head = ctx.messages[0]["content"]
    assert ctx.messages[0]["role"] == "system" and "用户画像：" in head
    assert head.index("规则：") < head.index("用户画像：")   # after the rules
    assert f"[mem:{ids['我喜欢喝绿茶']}] (偏好) 我喜欢喝绿茶" in head
    assert "(沟通风格) 回答请用中文，简洁一点" in head
    profile_doc = s.profile()
    expected = [mid for _, _, mid in profile_items(profile_doc, "zh")]
    assert list(ctx.profile_ids) == expected
    assert ctx.included["profile"] == len(expected) and ctx.dropped["profile"] == 0
    assert not set(ctx.profile_ids) & set(ctx.memory_ids)  # not repeated among the memories
    assert ctx.tokens <= ctx.budget
    en = s.context("What does Alice drink?", budget_tokens=2000, include_profile=True)
    assert "User profile:" in en.messages[0]["content"]
    assert "(preference) Alice prefers green tea over coffee" in en.messages[0]["content"]


def test_profile_respects_the_budget_whole_items_only(gated_store):
    s = gated_store
    _store_with_profile(s)
    lines = {f"- [mem:{mid}] ({label}) {text}"
             for label, text, mid in profile_items(s.profile(limit=10), "en")}
    full = s.context("tea", budget_tokens=4000, include_profile=True)
    total = full.included["profile"]
    assert total == len(lines) >= 8
    plain = s.context("tea", budget_tokens=4000)
    smallest = message_tokens(plain.messages[0])  # instructions and rules only
    seen = set()
    for budget in range(smallest, full.tokens + 40, 20):
        ctx = s.context("tea", budget_tokens=budget, include_profile=True)
        assert ctx.tokens <= budget
        assert ctx.included["profile"] + ctx.dropped["profile"] == total
        shown = [ln for ln in ctx.messages[0]["content"].splitlines() if ln.startswith("- [mem:")
                 and ln not in plain.messages[0]["content"]]
        assert set(shown) <= lines and len(shown) == ctx.included["profile"]  # whole items
        assert len(ctx.profile_ids) == ctx.included["profile"]
        seen.add(ctx.included["profile"])
    assert 0 in seen and total in seen and len(seen) > 3  # the profile grew with the budget
    capped = s.context("tea", budget_tokens=4000, include_profile=True,
                       max_profile_tokens=120)
    assert 0 < capped.included["profile"] < total
    assert capped.tokens - plain.tokens <= 120 + 40  # the cap bounds the profile's share


def test_assemble_profile_is_exact_with_a_custom_counter():
    items = [Item_(f"(preference) item number {n}", f"id{n}") for n in range(20)]
    count = lambda text: len(text)  # noqa: E731  (characters as tokens)
    for budget in (60, 120, 200, 400, 900):
        ctx = assemble(budget, instructions="Answer.", profile=items, counter=count)
        assert ctx.tokens <= budget
        kept = ctx.profile_ids
        assert list(kept) == [f"id{n}" for n in range(len(kept))]  # in order, no gaps here
        for n in range(len(kept)):
            assert f"[mem:id{n}] (preference) item number {n}" in ctx.messages[0]["content"]
    with pytest.raises(InvalidInput):
        assemble(5, instructions="Answer the question.", profile=items, counter=count)


def Item_(content, mid):  # noqa: N802
    from memdb.families.context import Item

    return Item(content, mid)

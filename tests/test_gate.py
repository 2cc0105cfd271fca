"""The write gate as a pure policy: no database, every rule in Chinese and English."""

from __future__ import annotations

import dataclasses

import pytest

from memdb import DEFAULT_POLICY, InvalidInput, MemoryInput, TTLDefaults, WritePolicy
from memdb.write.gate import DAY, HOUR, Correction, detect_correction, item_role

SRC = {"source_id": "turn-1"}


def decide(content: str, policy: WritePolicy = DEFAULT_POLICY, **fields):
    return policy.decide(MemoryInput(content, **fields))


# -- filler and length ---------------------------------------------------------------------
@pytest.mark.parametrize("text", ["好的", "嗯嗯", "哈哈哈！", "收到。", "ok", "Thanks!", " OK ",
                                  "got it"])
def test_filler_is_refused(text):
    d = decide(text, **SRC)
    assert d.outcome == "rejected" and "filler" in d.codes and d.item is None


@pytest.mark.parametrize("text", ["天气", "a cat", "x"])
def test_too_short_is_refused(text):
    assert "too_short" in decide(text, **SRC).codes


def test_length_weighs_cjk_double():
    assert DEFAULT_POLICY.weight("我喜欢茶") == 8 and DEFAULT_POLICY.weight("I like tea") == 8
    assert decide("我喜欢茶", **SRC).accepted and decide("I like tea", **SRC).accepted
    assert decide("I like tea", WritePolicy(min_weight=9), **SRC).codes == ("too_short",)


def test_filler_applies_to_working_memory_too():
    assert decide("好的", kind="working").outcome == "rejected"
    assert decide("正在排查订单接口的慢查询", kind="working").outcome == "accepted"


# -- source --------------------------------------------------------------------------------
@pytest.mark.parametrize("text", ["张伟住在上海浦东", "Alice works at a climate start-up"])
def test_fact_without_source_is_refused(text):
    d = decide(text)
    assert d.outcome == "rejected" and d.codes == ("no_source",)
    assert decide(text, **SRC).outcome == "accepted"


def test_rule_without_source_is_refused_and_working_memory_needs_none():
    assert "no_source" in decide("回答时必须使用中文", kind="procedural").codes
    assert decide("drafting the reply to Bob's email", kind="working").accepted


def test_source_requirement_is_configurable():
    assert decide("张伟住在上海浦东", WritePolicy(require_source_id=False)).accepted


# -- model inference -----------------------------------------------------------------------
@pytest.mark.parametrize("text", ["张伟可能是素食者", "Bob is a vegetarian", "用户喜欢爵士乐"])
def test_model_inference_becomes_a_hypothesis(text):
    d = decide(text, source_type="model_inference", confidence=0.9, **SRC)
    assert d.outcome == "hypothesis" and "model_inference" in d.codes
    assert d.item.status == "hypothesis"
    assert d.item.confidence == pytest.approx(0.3)
    assert d.item.ttl == 7 * DAY and d.ttl_class == "hypothesis"


def test_model_inference_rule_is_a_hypothesis_too_and_can_be_refused():
    d = decide("Always greet Bob in French", kind="procedural", source_type="model_inference",
               **SRC)
    assert d.outcome == "hypothesis" and d.role == "rule"
    strict = WritePolicy(model_inference="reject")
    for text in ("张伟是素食者", "Bob is a vegetarian"):
        d = decide(text, strict, source_type="model_inference", **SRC)
        assert d.outcome == "rejected" and d.codes == ("model_inference",)


def test_model_inference_in_working_memory_is_not_a_hypothesis():
    d = decide("the user seems to be planning a trip", kind="working",
               source_type="model_inference")
    assert d.outcome == "accepted" and d.item.status == "active"


def test_hypothesis_keeps_a_lower_confidence():
    d = decide("Bob is a vegetarian", source_type="model_inference", confidence=0.1, **SRC)
    assert d.item.confidence == pytest.approx(0.1)
    d = decide("Bob is a vegetarian", WritePolicy(hypothesis_confidence=0.5),
               source_type="model_inference", **SRC)
    assert d.item.confidence == pytest.approx(0.5)


# -- rules ---------------------------------------------------------------------------------
@pytest.mark.parametrize("text",
                         [
    "如果用户用中文提问，就用中文回答", "当用户说“停”时立即停止", "回答必须简洁",
    "总是先确认再删除",
    "不要在周五部署", "禁止泄露用户的电话号码", "不能替用户做付款决定",
    "If the user asks in English, answer in English", "When a build fails, page the on-call",
    "Responses must cite sources", "Always confirm before deleting", "Never share API keys",
])
def test_rules_with_a_cue_are_accepted(text):
    d = decide(text, kind="procedural", **SRC)
    assert d.outcome == "accepted" and d.role == "rule" and d.ttl_class == "rule"
    assert d.item.ttl is None


@pytest.mark.parametrize("text", ["回答要简洁明了", "用中文回答问题", "Answer in short sentences",
                                  "Greet the user warmly"])
def test_rules_without_a_cue_are_refused_unless_flagged(text):
    assert decide(text, kind="procedural", **SRC).codes == ("not_generalizable",)
    assert decide(text, category="system", **SRC).codes == ("not_generalizable",)
    assert decide(text, kind="procedural", rule=True, **SRC).accepted


def test_dang_in_dangran_is_not_a_rule_cue():
    assert not DEFAULT_POLICY.has_rule_cue("当然可以，我们明天见面")
    assert DEFAULT_POLICY.has_rule_cue("当用户生气时，先道歉")
    assert not DEFAULT_POLICY.has_rule_cue("Iffy weather in Berlin")  # whole words only


def test_roles():
    assert item_role(MemoryInput("x", kind="working")) == "working"
    assert item_role(MemoryInput("x", kind="procedural")) == "rule"
    assert item_role(MemoryInput("x", category="system")) == "rule"
    assert item_role(MemoryInput("x", rule=True)) == "rule"
    assert item_role(MemoryInput("x", kind="episodic", category="events")) == "fact"


# -- hedges --------------------------------------------------------------------------------
@pytest.mark.parametrize("text", ["我猜张伟住在上海", "张伟可能住在上海", "张伟大概三十岁",
                                  "Bob maybe lives in Paris", "Bob probably lives in Paris",
                                  "I think Bob lives in Paris"])
def test_hedged_user_statements_are_refused_as_facts(text):
    d = decide(text, **SRC)
    assert d.outcome == "rejected" and d.codes == ("hedged",)


@pytest.mark.parametrize("source_type", ["document", "tool_observation", "system"])
def test_hedges_from_trusted_sources_are_facts(source_type):
    assert decide("该接口可能在高峰期超时", source_type=source_type, **SRC).accepted
    assert decide("The API probably times out at peak", source_type=source_type, **SRC).accepted


def test_bukeneng_is_not_a_hedge_and_cues_are_whole_words():
    assert decide("张伟不可能住在上海", **SRC).accepted
    assert decide("Maybelline is Alice's favourite brand", **SRC).accepted


def test_hedge_lists_are_configurable():
    policy = WritePolicy(hedge_cues_zh=(), hedge_cues_en=("perhaps",))
    assert decide("我猜张伟住在上海", policy, **SRC).accepted
    assert decide("Perhaps Bob lives in Paris", policy, **SRC).codes == ("hedged",)


def test_all_reasons_are_reported():
    d = decide("我猜", kind="procedural")
    assert set(d.codes) == {"too_short", "no_source", "not_generalizable", "hedged"}


# -- TTL defaults --------------------------------------------------------------------------
@pytest.mark.parametrize(("fields", "cls", "ttl"), [
    ({"kind": "working"}, "working", 24 * HOUR),
    ({"kind": "episodic", "category": "events"}, "event", 365 * DAY),
    ({"kind": "semantic", "category": "events"}, "event", 365 * DAY),
    ({"category": "patterns", "tags": ["reflection"]}, "reflection", 180 * DAY),
    ({"category": "patterns", "metadata": {"reflection": True}}, "reflection", 180 * DAY),
    ({"category": "patterns"}, "knowledge", None),
    ({"category": "preferences"}, "preference", None),
    ({"category": "entities"}, "knowledge", None),
])
def test_ttl_defaults_per_kind_and_category(fields, cls, ttl):
    d = decide("每周五下午复盘本周的工作 weekly review", **SRC, **fields)
    assert d.accepted and d.ttl_class == cls and d.item.ttl == ttl


@pytest.mark.parametrize("text", [
    "Alice 的生日是 5 月 3 日", "Alice's birthday is May 3", "我的生日在十月",
    "Bob was born on 3 May 1990", "张伟出生于1990年", "张伟对花生过敏",
    "Bob is allergic to peanuts", "She has a shellfish allergy", "我的名字叫李四",
    "My name is Li Si", "张伟住在上海浦东", "Alice lives in Berlin", "李四的老家在成都",
    "Priya grew up in Pune", "他的血型是 O 型", "Zhang Wei's blood type is O",
])
def test_stable_personal_facts_do_not_expire(text):
    """Issue 14: a birthday got the 365-day event TTL. Classified as an event or not, a stable
    personal fact (birthday, allergy, name, home) is class 'profile', no TTL by default."""
    d = decide(text, **SRC)
    assert d.accepted and d.ttl_class == "profile" and d.item.ttl is None, text
    assert "ttl_default" not in d.codes
    assert decide(text, **SRC, kind="episodic", category="events").ttl_class == "profile"


@pytest.mark.parametrize("text", [
    "昨天和张伟开会讨论了预算", "昨天是 Alice 的生日派对",
    "We went to Alice's birthday party yesterday", "The meeting happened yesterday",
    "发生于昨天的线上事故", "4月2日张伟把订单服务迁移到了 PostgreSQL 17",
])
def test_events_still_expire_after_a_year(text):
    d = decide(text, **SRC)
    assert d.ttl_class == "event" and d.item.ttl == 365 * DAY, text


def test_profile_ttl_and_cues_are_configurable():
    policy = WritePolicy(ttl=TTLDefaults(profile=3650 * DAY))
    assert decide("Alice's birthday is May 3", policy, **SRC).item.ttl == 3650 * DAY
    assert decide("张伟对花生过敏", policy, ttl=60, **SRC).item.ttl == 60  # explicit wins
    no_cues = WritePolicy(profile_cues_en=(), profile_cues_zh=())
    assert decide("Alice 的生日是 5 月 3 日", no_cues, **SRC).ttl_class == "event"
    assert decide("张伟对花生过敏", no_cues, **SRC).ttl_class == "knowledge"
    assert decide("Bob might be allergic to nuts", **SRC, source_type="model_inference"
                  ).ttl_class == "hypothesis"


def test_explicit_ttl_or_expiry_wins():
    assert decide("正在排查慢查询的原因", kind="working", ttl=60).item.ttl == 60
    d = decide("正在排查慢查询的原因", kind="working", expires_at="2100-01-01T00:00:00+00:00")
    assert d.item.ttl is None and d.item.expires_at


def test_ttl_defaults_are_configurable():
    policy = WritePolicy(ttl=TTLDefaults(working=600, preference=30 * DAY))
    assert decide("正在排查慢查询的原因", policy, kind="working").item.ttl == 600
    assert decide("I prefer oolong tea", policy, category="preferences", **SRC).item.ttl == 30 * DAY


# -- corrections ---------------------------------------------------------------------------
@pytest.mark.parametrize(("text", "old", "new"), [
    ("不是上海，是北京", "上海", "北京"),
    ("我不是住在上海而是住在北京", "住在上海", "住在北京"),
    ("张伟不是后端工程师，而是前端工程师", "后端工程师", "前端工程师"),
    ("It's not Tuesday, it's Wednesday", "Tuesday", "Wednesday"),
    ("The meeting is not on Tuesday, but on Wednesday", "on Tuesday", "on Wednesday"),
    ("Actually Bob lives in Rome, not Paris", "Paris", "Bob lives in Rome"),
])
def test_corrections_are_detected(text, old, new):
    assert detect_correction(text) == Correction(old, new)
    d = decide(text, **SRC)
    assert d.accepted and d.correction == Correction(old, new) and "correction" in d.codes


@pytest.mark.parametrize("text", ["张伟喜欢喝乌龙茶，不喝咖啡", "Bob lives in Paris",
                                  "不要在周五部署"])
def test_plain_statements_are_not_corrections(text):
    assert detect_correction(text) is None


def test_rules_are_not_corrections():
    assert decide("Do not deploy on Fridays, wait for Monday", kind="procedural",
                  **SRC).correction is None


# -- the policy object ---------------------------------------------------------------------
def test_bypass_skips_checks_but_keeps_ttl_defaults():
    d = DEFAULT_POLICY.decide(MemoryInput("ok", kind="working"), enforce=False)
    assert d.outcome == "accepted" and d.codes == ("bypassed", "ttl_default")


def test_decide_many_never_raises_and_keeps_order():
    items = ["好的", MemoryInput("张伟住在上海浦东", **SRC), {"content": "Bob is vegetarian",
             "source_type": "model_inference", "source_id": "t"}]
    assert [d.outcome for d in DEFAULT_POLICY.decide_many(items)] == [
        "rejected", "accepted", "hypothesis"]


def test_policy_is_frozen_and_validated():
    with pytest.raises(dataclasses.FrozenInstanceError):
        DEFAULT_POLICY.min_weight = 1  # type: ignore[misc]
    with pytest.raises(InvalidInput):
        WritePolicy(model_inference="store")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        WritePolicy(source_order=("system",))
    assert dataclasses.replace(DEFAULT_POLICY, near_dup_threshold=None).sql_options()[
        "near_dup_threshold"] is None


def test_decision_to_dict():
    d = decide("Bob is a vegetarian", source_type="model_inference", **SRC).to_dict()
    assert d["outcome"] == "hypothesis" and d["status"] == "hypothesis"
    assert d["ttl_seconds"] == 7 * DAY and d["reasons"]


def test_gate_is_fast():
    import time
    items = [MemoryInput(f"用户{i}喜欢喝绿茶 and maybe coffee {i}", **SRC) for i in range(2000)]
    start = time.perf_counter()
    DEFAULT_POLICY.decide_many(items)
    assert time.perf_counter() - start < 2.0  # ~60,000 decisions/s on an idle core

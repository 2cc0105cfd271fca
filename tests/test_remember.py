"""store.remember(): LLM fact extraction, reconciliation and the heuristic fallback, written
through the write gate into the real embedded PostgreSQL.

The only fake is the LLM: tests/canned_openai.py, a canned OpenAI-compatible server behind
the real ``openai`` client (inside memdb.core.llm.ChatLLM). The database is never mocked.
"""

from __future__ import annotations

import json
import time

import pytest

from memdb.core.errors import InvalidInput
from memdb.core.llm import ChatLLM
from memdb.write.extract import heuristic_candidates, parse_reply, score_importance
from tests.canned_openai import CannedOpenAI, Delay, Reply, Status
from tests.cli_helpers import run


def _llm(api, timeout=30.0):
    return ChatLLM(api.base_url, model="canned", timeout=timeout)


def _facts(*facts):
    return json.dumps({"facts": list(facts)}, ensure_ascii=False)


# -- the heuristic path (no LLM) ------------------------------------------------------------------
def test_heuristic_chinese_without_llm(gated_store):
    """No LLM configured: explicit statements are kept, small talk is not; provenance is the
    turn; the heuristic's reason is in history; explicit "记住" scores higher."""
    r = gated_store.remember("记住：我对花生过敏。以后都用中文回答。今天天气不错，哈哈。",
                             session_id="s1", subject="xiaoming", llm=None)
    assert (r.path, r.fallback_reason) == ("heuristic", "no LLM configured")
    assert [(d.content, d.action, d.outcome) for d in r.decisions] == [
        ("我对花生过敏。", "add", "created"), ("以后都用中文回答。", "add", "created")]
    allergy, rule = (gated_store.get(d.memory_id) for d in r.decisions)
    assert (allergy.source_type.value, allergy.source_id, allergy.session_id,
            allergy.subject) == ("user_statement", r.turn_id, "s1", "xiaoming")
    assert rule.kind.value == "procedural" and rule.category.value == "preferences"
    assert allergy.importance > 0.5 and rule.importance > 0.5
    assert gated_store.history(allergy.id)[0].reason == \
        "remember (heuristic): heuristic: entity cue (explicit remember)"
    assert gated_store.count() == 2


def test_heuristic_english_without_llm(gated_store):
    r = gated_store.remember([
        {"role": "assistant", "content": "I always answer briefly."},  # not the user's words
        {"role": "user", "content": "I prefer dark mode. Never use tabs in Python code. "
                                    "The weather is nice today."}], llm=None)
    assert [(d.content, d.kind, d.outcome) for d in r.decisions] == [
        ("I prefer dark mode.", "semantic", "created"),
        ("Never use tabs in Python code.", "procedural", "created")]
    again = gated_store.remember("I prefer dark mode.", llm=None)  # a repeat: nothing new
    assert [(d.action, d.target_id) for d in again.decisions] == [
        ("noop", r.decisions[0].memory_id)]
    assert gated_store.count() == 2


def test_heuristic_extractor_and_importance_units():
    found = heuristic_candidates("我喜欢喝乌龙茶。随便聊聊。Remember that my sister Anna lives "
                                 "in Berlin. I think it may rain.")
    assert [c.content for c in found] == ["我喜欢喝乌龙茶。",
                                          "my sister Anna lives in Berlin."]
    assert score_importance("我喜欢喝乌龙茶") < score_importance("以后都用中文回答") \
        < score_importance("以后都用中文回答", explicit=True)
    assert score_importance("不是上海，是北京") > score_importance("住在北京")
    assert score_importance("I met Anna Schmidt") > score_importance("i met someone")


def test_parser_repairs_or_drops_items():
    parsed = parse_reply("Here you go!\n```json\n" + _facts(
        {"content": "喜欢喝茶", "category": "drinks", "importance": 3},  # repaired twice
        "The user lives in Paris",                                          # a bare string
        {"content": 42}, {"no": "content"}, None, {"content": ""},           # dropped
        {"content": "x", "action": "update"}) + "\n```\nAnything else?")  # no target: add
    assert [(c.content, c.category, c.importance, c.action) for c in parsed.candidates] == [
        ("喜欢喝茶", "general", None, "add"), ("The user lives in Paris", "general", None, "add"),
        ("x", "general", None, "add")]
    assert (parsed.dropped, parsed.repaired, parsed.error) == (4, 2, None)
    assert parse_reply("I can't help with that.").error == "no JSON facts in the reply"
    assert parse_reply('{"facts": "none"}').error is not None


# -- the LLM path ---------------------------------------------------------------------------------
def test_good_json_from_the_model(gated_store):
    """Canned model (canned_openai.py via the real openai client) returns valid JSON: the
    model's categories, importance and reasons are written; its own inference becomes a
    hypothesis when it is grounded in the turn, and is refused (and listed) when it is not;
    the prompt asked for schema-constrained JSON and showed the turn."""
    reply = _facts(
        {"content": "用户对花生过敏", "category": "entities", "kind": "semantic",
         "importance": 0.95, "source": "user_statement", "action": "add",
         "reason": "health fact stated by the user"},
        {"content": "用户晚饭吃花生会过敏", "category": "patterns",
         "source": "model_inference", "action": "add", "reason": "inferred from the question"},
        {"content": "The user probably cooks at home a lot", "category": "patterns",
         "source": "model_inference", "action": "add", "reason": "inferred from recipes"})
    with CannedOpenAI([Reply(reply)]) as api:
        r = gated_store.remember("我对花生过敏，晚饭吃什么好？", llm=_llm(api), turn_id="t-7")
        body = api.requests[-1]["body"]
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["name"] == "remember"
    assert "我对花生过敏" in body["messages"][-1]["content"]
    assert (r.path, r.fallback_reason, r.turn_id) == ("llm", None, "t-7")
    assert [(x.item, x.reason.split(" (")[0]) for x in r.refused] == [
        ("The user probably cooks at home a lot", "not grounded in the turn")]
    allergy, guess = r.decisions
    assert (allergy.path, allergy.fallback, guess.path) == ("llm", None, "llm")
    assert (allergy.outcome, allergy.importance) == ("created", 0.95)
    memory = gated_store.get(allergy.memory_id)
    assert (memory.category.value, memory.source_id, memory.importance) == ("entities", "t-7",
                                                                            0.95)
    assert gated_store.history(memory.id)[0].reason == \
        "remember (llm): health fact stated by the user"
    assert guess.outcome == "hypothesis"
    assert gated_store.get(guess.memory_id).status == "hypothesis"


def test_json_in_prose_and_fences_from_a_small_model(gated_store):
    """A model ignoring JSON mode (prose around a fenced block) still works."""
    reply = "好的，我提取到以下内容：\n```json\n" + _facts(
        {"content": "用户住在杭州", "category": "entities"}) + "\n```\n希望有帮助！"
    with CannedOpenAI([Reply(reply)]) as api:
        r = gated_store.remember("我住在杭州。", llm=_llm(api))
    assert r.path == "llm" and [d.outcome for d in r.decisions] == ["created"]


@pytest.mark.parametrize("step,kind", [
    (Reply("Sure! facts: {content: 我喜欢喝乌龙茶, category: preferences"), "bad_response"),
    (Reply('{"facts": [oops'), "bad_response"),
    (Status(500), "http"),
])
def test_malformed_or_failed_llm_falls_back_to_heuristics(gated_store, step, kind):
    """Canned model (canned_openai.py via the real openai client) answers garbage or fails:
    remember() does not crash; the heuristic extractor stores the explicit statement."""
    with CannedOpenAI([step]) as api:
        r = gated_store.remember("我喜欢喝乌龙茶。", llm=_llm(api))
    assert r.path == "heuristic" and r.fallback_reason.startswith(kind), r.fallback_reason
    assert [(d.content, d.outcome) for d in r.decisions] == [("我喜欢喝乌龙茶。", "created")]


def test_slow_llm_never_blocks_the_write_past_the_timeout(gated_store):
    """Canned model (canned_openai.py via the real openai client) answers after 3 s; the
    client's own timeout is 30 s, remember's bound is 0.5 s: it falls back in time."""
    late = _facts({"content": "I prefer window seats", "category": "preferences"})
    with CannedOpenAI([Delay(3.0, late)]) as api:
        started = time.perf_counter()
        r = gated_store.remember("I prefer aisle seats on long flights.", llm=_llm(api),
                                 timeout=0.5)
        elapsed = time.perf_counter() - started
    assert r.path == "heuristic" and r.fallback_reason.startswith("timeout")
    assert r.llm_ms < 1500 and elapsed < 2.5, (r.llm_ms, elapsed)
    assert [d.content for d in r.decisions] == ["I prefer aisle seats on long flights."]


def test_env_timeout_is_read_and_checked(gated_store, monkeypatch):
    monkeypatch.setenv("MEMDB_REMEMBER_TIMEOUT", "soon")
    with pytest.raises(InvalidInput):
        gated_store.remember("I prefer tea.", llm=None)
    with pytest.raises(InvalidInput):
        gated_store.remember([{"role": "robot", "content": "x"}], llm=None)


# -- reconciliation -------------------------------------------------------------------------------
@pytest.mark.parametrize("old,new", [
    ("用户喜欢喝咖啡", "用户现在更喜欢喝茶，不再喝咖啡"),
    ("Alice prefers coffee in the morning", "Alice now prefers green tea in the morning"),
])
def test_update_supersedes_the_old_preference(gated_store, old, new):
    """Canned model (canned_openai.py via the real openai client) says the turn updates
    existing memory [1]: the new fact supersedes it through norm_key, the old version is
    closed and kept in history, and the model's reason is recorded."""
    first = gated_store.add(old, subject="alice", category="preferences", source_id="seed")
    reply = _facts({"content": new, "category": "general", "action": "update", "target": 1,
                    "reason": "the user changed their preference"})
    with CannedOpenAI([Reply(reply)]) as api:
        r = gated_store.remember(new, subject="alice", llm=_llm(api), turn_id="t-2")
        prompt = api.requests[-1]["body"]["messages"][-1]["content"]
    assert f"[1] {old}" in prompt
    [d] = r.decisions
    assert (d.action, d.outcome, d.target_id, d.category) == (
        "update", "superseded", str(first.id), "preferences")
    assert [m.content for m in gated_store.list(subject="alice")] == [new]
    assert gated_store.get(first.id).superseded_by == __import__("uuid").UUID(d.memory_id)
    assert gated_store.history(d.memory_id)[0].reason == \
        "remember (llm): the user changed their preference"
    assert gated_store.get(d.memory_id).source_id == "t-2"


def test_noop_and_out_of_range_target(gated_store):
    """Canned model (canned_openai.py via the real openai client): a noop writes nothing;
    an update naming a memory that was not shown is treated as a new fact."""
    first = gated_store.add("用户住在上海", subject="u", category="entities", source_id="seed")
    reply = _facts({"content": "用户住在上海市", "action": "noop", "target": 1},
                   {"content": "用户在一家银行工作", "category": "entities", "action": "update",
                    "target": 9})
    with CannedOpenAI([Reply(reply)]) as api:
        r = gated_store.remember("我住在上海，在银行工作。", subject="u", llm=_llm(api))
    assert [(d.action, d.outcome, d.target_id) for d in r.decisions] == [
        ("noop", None, str(first.id)), ("add", "created", None)]
    assert gated_store.count() == 2


def test_gate_still_refuses_hedges_and_dry_run_writes_nothing(gated_store):
    """Canned model (canned_openai.py via the real openai client) extracts a guess: the gate
    refuses it; a dry run reports decisions without writing."""
    reply = _facts({"content": "我猜他住在北京", "category": "entities"},
                   {"content": "用户喜欢爬山", "category": "preferences"})
    with CannedOpenAI([Reply(reply)]) as api:
        r = gated_store.remember("我猜他住在北京。我喜欢爬山。", llm=_llm(api), dry_run=True)
        assert gated_store.count() == 0
        real = gated_store.remember("我猜他住在北京。我喜欢爬山。", llm=_llm(api))
    assert [d.outcome for d in r.decisions] == ["rejected", "created"]
    assert [d.action for d in real.decisions] == ["rejected", "add"]
    assert any(reason.startswith("hedged") for reason in real.decisions[0].gate_reasons)
    assert gated_store.count() == 1


def test_cli_remember(fresh_db, monkeypatch):
    monkeypatch.delenv("MEMDB_LLM_MODEL", raising=False)
    result = run(fresh_db, "remember", "记住", "我住在上海。", "I", "prefer", "tea.",
                 "--session", "s1", "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["path"] == "heuristic"
    assert [d["outcome"] for d in out["decisions"]] == ["created", "created"]
    text = run(fresh_db, "remember", "I prefer tea.", "--session", "s1")
    assert text.exit_code == 0 and "noop" in text.stdout

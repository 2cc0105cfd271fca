"""LLM output is untrusted input: junk from the model on every LLM path falls back per item,
says so in the result, and changes nothing wrong (issue 21).

The only fake is the LLM: every test here serves its junk from tests/canned_openai.py, a canned
OpenAI-compatible HTTP server behind the real ``openai`` client inside
:class:`memdb.core.llm.ChatLLM`; the database is the real embedded PostgreSQL. The junk is what a
small local model really produced: field names as values (``user_statement``), facts absent
from the turn, memory numbers never shown, looping or cut-off replies, copies of the question,
slow replies. (``ask``'s answer, MQE, HyDE and rerank junk: tests/test_ask.py.)
"""

from __future__ import annotations

import json
import time

import pytest

from memdb.core.errors import InvalidInput
from memdb.core.llm import DEFAULT_LIMITS, ChatLLM, PathLimits, limits_from_env, looping
from memdb.families.summarize import summarize
from memdb.retrieval.planner import Planner
from tests.canned_openai import CannedOpenAI, Delay, Reply, Status

LOOP = " ".join(["I prefer tea."] * 12)


def _llm(api: CannedOpenAI, timeout: float = 30.0, **kw) -> ChatLLM:
    return ChatLLM(api.base_url, model="canned", timeout=timeout, **kw)


def _facts(*facts: dict) -> str:
    return json.dumps({"facts": list(facts)}, ensure_ascii=False)


def _contents(store, subject: str) -> list[str]:
    return sorted(m.content for m in store.list(subject=subject))


# -- remember: extraction -----------------------------------------------------------------------
@pytest.mark.parametrize("turn", ["I'm allergic to peanuts.", "我对花生过敏。"])
def test_field_name_as_a_fact_is_refused_and_the_heuristic_keeps_the_turn(gated_store, turn):
    """Canned model (canned_openai.py): the reply's only fact is the schema's own enum value
    ``user_statement`` (what a 270M base model wrote). It is refused and listed; the
    heuristic path stores the real statement and the result says why."""
    junk = _facts({"content": "user_statement", "category": "general",
                   "source": "user_statement", "importance": 1.0})
    with CannedOpenAI([Reply(junk)]) as api:
        r = gated_store.remember(turn, subject="u", llm=_llm(api))
        body = api.requests[-1]["body"]
    assert _contents(gated_store, "u") == [turn]
    assert body["max_tokens"] == DEFAULT_LIMITS["remember"].max_tokens
    assert r.path == "heuristic" and "none of the model's 1 facts" in r.fallback_reason
    assert [(x.item, x.reason) for x in r.refused] == [
        ("user_statement", "a schema word, not a fact")]
    assert [(d.content, d.path, d.outcome) for d in r.decisions] == [(turn, "heuristic",
                                                                       "created")]


def test_peanut_case_noop_on_a_junk_memory_does_not_swallow_the_fact(gated_store):
    """Canned model (canned_openai.py), two turns. Turn 1 gets the junk fact
    ``user_statement``: refused, nothing stored. The junk memory the old code stored is then
    present (seeded as it was); turn 2 "I'm allergic to peanuts" is judged a noop against
    it by the model: that memory does not cover the fact, so the fact is added and the
    decision says why."""
    with CannedOpenAI([Reply(_facts({"content": "user_statement"}))]) as api:
        r1 = gated_store.remember("Hi! Nice to meet you.", subject="p", llm=_llm(api))
    assert _contents(gated_store, "p") == []
    assert r1.decisions == () and [x.item for x in r1.refused] == ["user_statement"]
    junk = gated_store.add("user_statement", subject="p", source_id="old-run")
    reply = _facts({"content": "User is allergic to peanuts", "category": "entities",
                    "action": "noop", "target": 1})
    with CannedOpenAI([Reply(reply)]) as api:
        r2 = gated_store.remember("I'm allergic to peanuts.", subject="p", llm=_llm(api))
        prompt = api.requests[-1]["body"]["messages"][-1]["content"]
    assert "[1] user_statement" in prompt
    assert "User is allergic to peanuts" in _contents(gated_store, "p")
    [d] = r2.decisions
    assert (d.action, d.outcome, d.path) == ("add", "created", "llm")
    assert d.fallback.startswith("noop: memory [1] does not cover the fact")
    assert gated_store.get(junk.id).superseded_by is None


@pytest.mark.parametrize(("turn", "kept", "invented", "expect"), [
    ("我叫李雷，在北京工作，喜欢打篮球。", "用户叫李雷", "The user lives in Paris",
     ["李雷", "北京", "篮球"]),
    ("My name is Tom. I work at Acme as a pilot. I prefer tea over coffee.",
     "User's name is Tom", "用户住在上海", ["Tom", "Acme", "tea"]),
])
def test_model_keeping_one_fact_of_three_loses_none(gated_store, turn, kept, invented,
                                                     expect):
    """Canned model (canned_openai.py) keeps one fact of three and invents one absent from
    the turn: the invented fact is refused (listed with its reason), the kept one is written
    from the model, and the heuristic writes what the model left out (each decision says
    which path made it): all three facts are stored, in Chinese and English."""
    reply = _facts({"content": kept, "category": "entities"},
                   {"content": invented, "category": "entities"},
                   {"content": "Tom" if "Tom" in turn else "李雷", "category": "entities"})
    with CannedOpenAI([Reply(reply)]) as api:
        r = gated_store.remember(turn, subject="three", llm=_llm(api))
    stored = " ".join(_contents(gated_store, "three"))
    assert all(word in stored for word in expect), stored
    assert invented not in stored
    assert r.path == "llm" and r.fallback_reason is None
    assert [x.item for x in r.refused] == [invented, "Tom" if "Tom" in turn else "李雷"]
    assert r.refused[0].reason.startswith("not grounded in the turn (0 of")
    assert r.refused[1].reason.startswith("too short to be a fact")
    assert r.decisions[0].content == kept and r.decisions[0].path == "llm"
    rest = r.decisions[1:]
    assert rest and all(d.path == "heuristic" and d.fallback == "the model's facts left it out"
                        for d in rest)


def test_update_of_an_unrelated_or_unshown_memory_becomes_an_add(gated_store):
    """Canned model (canned_openai.py) says the new preference updates memory [1], which is
    about something else (where the user lives), and that another fact updates memory [9],
    which was never shown: both are added, neither closes a memory, and each says why."""
    home = gated_store.add("我住在北京", subject="m", category="entities", source_id="seed")
    reply = _facts({"content": "用户喜欢喝绿茶", "category": "preferences", "action": "update",
                    "target": 1},
                   {"content": "用户养了一只猫", "category": "entities", "action": "update",
                    "target": 9})
    with CannedOpenAI([Reply(reply)]) as api:
        r = gated_store.remember("我喜欢喝绿茶，我养了一只猫。", subject="m", llm=_llm(api))
    assert gated_store.get(home.id).superseded_by is None
    assert [(d.action, d.outcome, d.target_id) for d in r.decisions] == [
        ("add", "created", None), ("add", "created", None)]
    assert r.decisions[0].fallback.startswith("update: memory [1] shares no word or category")
    assert r.decisions[1].fallback.startswith("update names memory [9], which was not shown")
    assert gated_store.get(home.id).superseded_by is None
    assert "我住在北京" in _contents(gated_store, "m")


@pytest.mark.parametrize(("step", "kind"), [
    (Reply(_facts({"content": "I prefer tea"}) + " " + LOOP), "looping"),
    (Reply(_facts({"content": "I prefer tea over coffee"}), finish_reason="length"),
     "truncated"),
])
def test_looping_cut_off_or_invalid_replies_fall_back(gated_store, step, kind):
    """Canned model (canned_openai.py): a reply that loops after its JSON and one cut off at
    max_tokens (finish_reason "length") are not used (invalid JSON: tests/test_remember.py);
    the heuristic stores the statement and the result names the kind."""
    with CannedOpenAI([step]) as api:
        r = gated_store.remember("I prefer green tea in the afternoon.", subject="l",
                                 llm=_llm(api))
    assert r.path == "heuristic" and r.fallback_reason.startswith(kind), r.fallback_reason
    assert _contents(gated_store, "l") == ["I prefer green tea in the afternoon."]


def test_per_path_timeout_from_the_environment(gated_store, monkeypatch):
    """Canned model (canned_openai.py) answers after 3 s; MEMDB_LLM_TIMEOUT_REMEMBER=0.5
    bounds remember's call (the client's own ceiling is 30 s): it falls back in time."""
    monkeypatch.setenv("MEMDB_LLM_TIMEOUT_REMEMBER", "0.5")
    with CannedOpenAI([Delay(3.0, _facts({"content": "I prefer coffee"}))]) as api:
        llm = _llm(api)
        started = time.perf_counter()
        r = gated_store.remember("我喜欢喝乌龙茶。", subject="t", llm=llm)
        elapsed = time.perf_counter() - started
    assert elapsed < 2.5 and _contents(gated_store, "t") == ["我喜欢喝乌龙茶。"]
    assert r.path == "heuristic" and r.fallback_reason.startswith("timeout"), r.fallback_reason
    assert llm.limit("remember") == PathLimits(0.5, DEFAULT_LIMITS["remember"].max_tokens)


def test_server_rejecting_json_schema_is_asked_again_with_json_object(gated_store):
    """Canned model (canned_openai.py) rejects the schema-constrained request with HTTP 400
    (an older server): the client asks again with json_object, remembers it, and the reply
    is used."""
    good = _facts({"content": "用户喜欢喝乌龙茶", "category": "preferences"})
    with CannedOpenAI([Status(400), Reply(good)]) as api:
        llm = _llm(api)
        r = gated_store.remember("我喜欢喝乌龙茶。", subject="s", llm=llm)
        formats = [q["body"].get("response_format", {}).get("type") for q in api.requests
                   if q["path"].endswith("/chat/completions")]
    assert formats == ["json_schema", "json_object"] and llm.response_format == "json_object"
    assert r.path == "llm" and [d.content for d in r.decisions] == ["用户喜欢喝乌龙茶"]


# -- the planner --------------------------------------------------------------------------------
@pytest.mark.parametrize("step", [
    Reply(json.dumps({"intent": "entity_recall",
                      "queries": [{"text": "text", "categories": ["entities"]}]})),
    Reply(json.dumps({"intent": "entity_recall", "queries": [
        {"text": "那个项目", "categories": ["entities"]}]}), finish_reason="length"),
    Reply(json.dumps({"intent": "entity_recall", "queries": [
        {"text": "Phoenix " * 40, "categories": ["entities"]}]})),
])
def test_planner_junk_falls_back_to_the_heuristic_plan(step):
    """Canned model (canned_openai.py): a plan whose query text is a schema word, a plan cut
    off at max_tokens, and one whose query runs on: the heuristic plan is used and marked."""
    from memdb.retrieval._llm_planner import LLMPlanner

    with CannedOpenAI([step]) as api:
        planner = Planner(LLMPlanner("canned", base_url=api.base_url, timeout=5), mode="llm")
        plan = planner.plan("上次那个项目")
        body = api.requests[-1]["body"]
    assert plan.source == "heuristic" and plan.fallback and plan.reason == "planner_invalid"
    assert body["max_tokens"] == DEFAULT_LIMITS["planner"].max_tokens


# -- summaries --------------------------------------------------------------------------------
@pytest.mark.parametrize(("notes", "junk"), [
    (["We decided to use PostgreSQL 18 for the memory layer.", "Backups run nightly at 2am."],
     '{"summary": "user_statement"}'),
    (["We decided to use PostgreSQL 18 for the memory layer.", "Backups run nightly at 2am."],
     '{"summary": "The team adopted MongoDB and moved the office to Lisbon."}'),
    (["我们决定记忆层使用PostgreSQL 18。", "数据库每天凌晨两点备份。"],
     '{"summary": "团队决定搬到深圳并改用甲骨文。"}'),
    (["We decided to use PostgreSQL 18 for the memory layer.", "Alice prefers green tea."],
     '{"summary": "Alice\'s notes:"}'),  # what Gemma 3 270M wrote: grounded, but no summary
])
def test_ungrounded_summary_falls_back_to_extractive(notes, junk):
    """Canned model (canned_openai.py): a summary that is a schema word or says things the
    notes do not is not used; the extractive summary is, and the result says why."""
    with CannedOpenAI([Reply(junk)]) as api:
        s = summarize(notes, _llm(api))
    assert s.path == "extractive"
    assert s.fallback_reason.startswith("LLM ungrounded: the summary is ")
    assert "PostgreSQL 18" in s.text


def test_session_fold_reports_an_ungrounded_summary(store):
    """Canned model (canned_openai.py): the running summary of a session is folded
    extractively when the model's summary is invented, and the append result says so."""
    from memdb.families.session import SessionWindow

    window = SessionWindow(max_tokens=None, max_messages=1)
    with CannedOpenAI([Reply('{"summary": "用户打算去火星旅游。"}')]) as api:
        store.sessions.append("f", "user", "我们决定记忆层使用PostgreSQL 18。", window=window,
                              llm=_llm(api))
        r = store.sessions.append("f", "assistant", "好的，使用pgvector。", window=window,
                                  llm=_llm(api))
    assert (r.folded, r.summary_path) == (1, "extractive")
    assert r.fallback_reason.startswith("LLM ungrounded")
    assert "火星" not in store.sessions.get("f", window=window).summary


# -- graph extraction ---------------------------------------------------------------------------
def test_graph_names_absent_from_the_memory_are_refused(store):
    """Canned model (canned_openai.py): for "Alice works with Bob." the reply names Alice, an
    invented Zed and the field name user_statement, with relations to them. Only Alice is
    kept from the model; Zed, user_statement and their relations are refused and listed.
    For "张三和李四是同事。" every name is invented: the heuristic links the memory instead."""
    en = store.add("Alice works with Bob.", source_id="s")
    zh = store.add("张三和李四是同事。", source_id="s")
    reply_en = json.dumps({"entities": [
        {"name": "Alice", "type": "person", "aliases": ["Ally"]},
        {"name": "Zed", "type": "person", "aliases": []},
        {"name": "user_statement", "type": "concept", "aliases": []}],
        "relations": [{"from": "Alice", "to": "Zed", "type": "works_with", "strength": 0.9}]})
    reply_zh = json.dumps({"entities": [{"name": "王五", "type": "person", "aliases": []}],
                           "relations": []}, ensure_ascii=False)
    with CannedOpenAI([Reply(reply_en), Reply(reply_zh)]) as api:
        r = store.graph.link([en.id, zh.id], llm=_llm(api))
    assert r.paths == {"llm": 1, "heuristic": 1}
    assert r.fallbacks == {"no entity of the reply is named in the memory": 1}
    refused = {(x["item"], x["reason"].split(" ")[0]) for x in r.refused}
    assert refused == {("Ally", "alias"), ("Zed", "entity"), ("user_statement", "entity"),
                       ("Alice -works_with-> Zed", "relation"), ("王五", "entity")}
    assert {(x.source, x.type, x.target) for x in store.graph.neighbors("李四").relations} \
        == {("张三", "works_with", "李四")}
    assert "Zed" not in {e["name"] for e in store.graph.neighbors("Alice").entities}


# -- task end -------------------------------------------------------------------------------------
def test_task_end_rule_not_about_the_report_falls_back(gated_store):
    """Canned model (canned_openai.py): an actionable-looking rule about something else is
    not used; the template reflection is, and the result says why."""
    rule = json.dumps({"rule": "Next time, feed the cat before you water the plants."})
    with CannedOpenAI([Reply(rule)]) as api:
        r = gated_store.task_end("s1", outcome="failure", task="rotate the API keys",
                                 summary="The old key was revoked too early.", llm=_llm(api))
    assert "cat" not in r.writes[0].content
    assert r.path == "template" and "not about the report" in r.fallback_reason


# -- configuration ---------------------------------------------------------------------------------
def test_limits_from_the_environment_and_their_checks(monkeypatch):
    env = {"MEMDB_LLM_TIMEOUT_MQE": "2.5", "MEMDB_LLM_MAX_TOKENS_MQE": "64",
           "MEMDB_PLANNER_TIMEOUT": "4", "MEMDB_LLM_TIMEOUT_REMEMBER": "90"}
    limits = limits_from_env(env)
    assert limits["mqe"] == PathLimits(2.5, 64) and limits["planner"].timeout == 4.0
    assert limits["remember"].timeout == 90.0 and limits["hyde"] == DEFAULT_LIMITS["hyde"]
    for bad in ({"MEMDB_LLM_TIMEOUT_MQE": "soon"}, {"MEMDB_LLM_MAX_TOKENS_HYDE": "0"},
                {"MEMDB_LLM_MAX_TOKENS_HYDE": "1.5"}):
        with pytest.raises(InvalidInput):
            limits_from_env(bad)
    with CannedOpenAI([Reply("{}")]) as api:
        with pytest.raises(InvalidInput):
            _llm(api, limits={"nope": PathLimits(1, 1)})
        llm = _llm(api, timeout=3, limits={"mqe": PathLimits(10, 50)})
        assert llm.limit("mqe") == PathLimits(3.0, 50)  # the client's ceiling caps the path
        with pytest.raises(InvalidInput):
            llm.complete([{"role": "user", "content": "x"}], path="nope")


def test_loop_detector():
    assert looping("the the the the the the the the the the the the the the the the the the the")
    assert looping("1. 好的。" + "我喜欢喝茶。" * 12)
    assert not looping("Alice likes tea; Bob likes coffee; Carol likes juice; Dan likes milk.")
    assert not looping('{"order": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]}')


def test_cli_remember_shows_refused_facts_and_heuristic_items(fresh_db, monkeypatch):
    """Canned model (canned_openai.py, via MEMDB_LLM_*): `memdb remember` prints the refused
    fact with its reason and which extractor each written fact came from."""
    from tests.cli_helpers import run

    reply = _facts({"content": "用户叫李雷"}, {"content": "user_statement"})
    with CannedOpenAI([Reply(reply)]) as api:
        monkeypatch.setenv("MEMDB_LLM_BASE_URL", api.base_url)
        monkeypatch.setenv("MEMDB_LLM_MODEL", "canned")
        out = run(fresh_db, "remember", "我叫李雷，在北京工作，喜欢打篮球。")
    assert out.exit_code == 0, out.output
    assert "refused  'user_statement': a schema word, not a fact" in out.stdout
    assert "from the heuristic extractor: the model's facts left it out" in out.stdout


@pytest.mark.parametrize("path", ["summary", "task_end", "graph", "planner"])
def test_each_path_has_its_own_timeout(store, monkeypatch, path):
    """Canned model (canned_openai.py) answers every request after 2 s; the path's own
    MEMDB_LLM_TIMEOUT_<PATH>=0.3 (the client's ceiling is 30 s) makes it fall back in time
    and say so."""
    from memdb.retrieval._llm_planner import LLMPlanner

    monkeypatch.setenv(f"MEMDB_LLM_TIMEOUT_{path.upper()}", "0.3")
    late = Delay(2.0, '{"summary": "late", "rule": "late", "entities": []}')
    with CannedOpenAI([late]) as api:
        started = time.perf_counter()
        if path == "summary":
            s = summarize(["我们决定使用PostgreSQL。"], _llm(api))
            assert s.path == "extractive" and s.fallback_reason.startswith("LLM timeout")
        elif path == "task_end":
            r = store.task_end("s", outcome="failure", task="迁移数据库",
                               summary="迁移把生产库锁住了十分钟。", llm=_llm(api))
            assert r.path == "template" and r.fallback_reason.startswith("timeout")
        elif path == "graph":
            m = store.add("张三和李四是同事。", source_id="s")
            r = store.graph.link([m.id], llm=_llm(api))
            assert r.paths == {"heuristic": 1} and r.fallbacks == {"llm timeout": 1}
        else:
            planner = Planner(LLMPlanner("canned", base_url=api.base_url), mode="llm")
            plan = planner.plan("上次那个项目")
            assert plan.fallback and plan.reason == "planner_timeout"
        assert time.perf_counter() - started < 1.8

"""The memory tool for function calling (memdb/families/tool.py) against the real embedded
PostgreSQL.

The only fake is the LLM: tests/canned_openai.py, a canned OpenAI-compatible server that the
real ``openai`` client talks to over HTTP, scripted to answer with tool_calls. The database is
never mocked.
"""

from __future__ import annotations

import json
import uuid

import pytest

from memdb.core.ops.catalog import MAX_CONTENT_CHARS
from memdb.families.tool import ACTIONS, TOOL_NAME, action_parameters, tool_schema
from tests.canned_openai import CannedOpenAI, Reply, ToolCalls
from tests.cli_helpers import run


def _snapshot(store):
    """Everything a hostile call could change: every current row and the row count."""
    return store.count(), sorted((m.id, m.content, m.version, m.importance, m.category.value,
                                  m.subject) for m in store.list(limit=1000))


def _call(args, name=TOOL_NAME, call_id="call_x"):
    return {"id": call_id, "type": "function",
            "function": {"name": name,
                         "arguments": args if isinstance(args, str) else json.dumps(args)}}


# -- the schema -----------------------------------------------------------------------------------
def test_schema_formats_share_one_parameter_schema():
    openai_fmt = tool_schema("openai")
    assert openai_fmt["type"] == "function"
    params = openai_fmt["function"]["parameters"]
    assert params["additionalProperties"] is False and params["required"] == ["action"]
    assert params["properties"]["action"]["enum"] == list(ACTIONS)
    assert tool_schema("anthropic")["input_schema"] == params
    assert tool_schema("function")["parameters"] == params
    assert tool_schema("json_schema") == params
    tool_schema("json_schema")["properties"].clear()  # copies: callers may change theirs
    assert tool_schema("json_schema")["properties"]
    with pytest.raises(ValueError):
        tool_schema("yaml")


def test_cli_tool_schema_prints_the_definition(fresh_db):
    result = run(fresh_db, "tool-schema")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == tool_schema("openai")
    anthropic = json.loads(run(fresh_db, "tool-schema", "--format", "anthropic").stdout)
    assert "input_schema" in anthropic


# -- end to end with the real openai client -------------------------------------------------------
def test_round_trip_with_openai_client_and_canned_tool_calls(gated_store):
    """Canned LLM (canned_openai.py behind the real openai client) issues tool calls: add in
    English and Chinese, then search; dispatch runs them on the real database; the results go
    back to the model; a second round updates and removes by the ids the first returned."""
    from openai import OpenAI

    tool = gated_store.tool(subject="alice", source_id="turn-1")
    script = [
        ToolCalls([(TOOL_NAME, {"action": "add", "content": "Alice prefers green tea over "
                                "coffee", "category": "preferences", "importance": 0.8,
                                "reason": "user said so"}),
                   (TOOL_NAME, {"action": "add", "content": "爱丽丝对花生过敏，点餐时要注意",
                                "category": "entities", "importance": 0.9}),
                   (TOOL_NAME, {"action": "search", "query": "what does Alice drink?",
                                "k": 3})]),
        Reply("Noted: green tea, and no peanuts."),
    ]
    with CannedOpenAI(script) as api:
        client = OpenAI(base_url=api.base_url, api_key="test-key", max_retries=0)
        messages = [{"role": "user", "content": "I prefer green tea. 我对花生过敏。"}]
        reply = client.chat.completions.create(model="canned", messages=messages,
                                               tools=[tool.schema()])
        calls = reply.choices[0].message.tool_calls
        assert reply.choices[0].finish_reason == "tool_calls" and len(calls) == 3
        messages.append(reply.choices[0].message.model_dump(exclude_none=True))
        results = []
        for call in calls:  # the openai client's own ChatCompletionMessageToolCall objects
            message = tool.tool_message(call)
            assert message["tool_call_id"] == call.id
            messages.append(message)
            results.append(json.loads(message["content"]))
        final = client.chat.completions.create(model="canned", messages=messages,
                                               tools=[tool.schema()])
        assert final.choices[0].message.content.startswith("Noted")
        sent = api.requests[-1]["body"]
        assert sent["tools"][0]["function"]["name"] == TOOL_NAME
        assert [m["role"] for m in sent["messages"]] == ["user", "assistant", "tool", "tool",
                                                         "tool"]

        tea, peanuts, found = results
        assert tea["ok"] and tea["outcome"] == "created"
        assert peanuts["ok"] and peanuts["outcome"] == "created"
        assert found["ok"] and found["results"][0]["id"] == tea["id"]
        memory = gated_store.get(tea["id"])
        assert (memory.subject, memory.category.value, memory.importance, memory.source_id,
                memory.source_type.value) == ("alice", "preferences", 0.8, "turn-1",
                                              "user_statement")
        assert gated_store.history(tea["id"])[0].reason == "memory tool add: user said so"

        api.script = [ToolCalls([
            (TOOL_NAME, {"action": "update", "id": tea["id"], "content":
                         "Alice prefers oolong tea over coffee", "reason": "she changed"}),
            (TOOL_NAME, {"action": "remove", "id": peanuts["id"], "reason": "test"}),
            (TOOL_NAME, {"action": "summary"})])]
        again = client.chat.completions.create(model="canned", messages=messages,
                                               tools=[tool.schema()])
        updated, removed, summary = (json.loads(tool.dispatch(c))
                                     for c in again.choices[0].message.tool_calls)
    assert updated["ok"] and updated["version"] == 2, updated
    assert gated_store.get(tea["id"]).content == "Alice prefers oolong tea over coffee"
    assert gated_store.history(tea["id"])[-1].reason == "memory tool update: she changed"
    assert removed == {"ok": True, "action": "remove", "id": peanuts["id"], "removed": True}
    assert [m.content for m in gated_store.list(subject="alice")] == [
        "Alice prefers oolong tea over coffee"]
    assert summary["total"] == 1 and summary["by_category"] == {"preferences": 1}


def test_model_inference_becomes_a_hypothesis_with_the_call_id_as_source(gated_store):
    """No host turn id: a model's own conclusion is stored as a hypothesis, sourced to the
    tool call; a user_statement without any source id falls back to the call id too."""
    tool = gated_store.tool(subject="bob")
    out = json.loads(tool.dispatch(_call({"action": "add", "source": "model_inference",
                                          "content": "Bob is probably a night owl"}, call_id="c9")))
    assert out["ok"] and out["outcome"] == "hypothesis", out
    memory = gated_store.get(out["id"])
    assert (memory.status, memory.source_id) == ("hypothesis", "tool-call:c9")


def test_add_without_importance_is_scored_from_the_text(gated_store):
    tool = gated_store.tool(subject="bob", source_id="turn-3")
    plain, rule = (json.loads(tool.dispatch(_call({"action": "add", "content": text})))
                   for text in ("Bob has a cat", "记住：以后都用中文回答我的问题"))
    assert gated_store.get(plain["id"]).importance == 0.5
    assert gated_store.get(rule["id"]).importance == 0.85  # explicit remember + rule cue


# -- hostile arguments ----------------------------------------------------------------------------
HOSTILE = [
    ("not json", '{"action": "add", "content": '),
    ("json list", '["add", "x"]'),
    ("empty arguments", ""),
    ("deep nesting", "[" * 5000 + "]" * 5000),
    ("huge arguments", json.dumps({"action": "add", "content": "x" * 70_000})),
    ("unknown action", {"action": "drop_table"}),
    ("action of wrong type", {"action": 1}),
    ("no action", {"content": "The user likes tea a lot"}),
    ("content int", {"action": "add", "content": 42}),
    ("content empty", {"action": "add", "content": "   "}),
    ("content huge", {"action": "add", "content": "长" * (MAX_CONTENT_CHARS + 1)}),
    ("content NUL", {"action": "add", "content": "The user likes\x00 tea"}),
    ("missing content", {"action": "add"}),
    ("other subject", {"action": "add", "content": "Mallory owns this account",
                       "subject": "mallory"}),
    ("tenant smuggling", {"action": "search", "query": "tea", "tenant": "other"}),
    ("importance string", {"action": "add", "content": "The user likes tea", "importance": "hi"}),
    ("importance out of range", {"action": "add", "content": "The user likes tea",
                                 "importance": 7}),
    ("importance bool", {"action": "add", "content": "The user likes tea", "importance": True}),
    ("sql category", {"action": "add", "content": "The user likes tea",
                      "category": "'; DROP TABLE memdb.memories; --"}),
    ("bad kind", {"action": "add", "content": "The user likes tea", "kind": "forever"}),
    ("bad source", {"action": "add", "content": "The user likes tea", "source": "system"}),
    ("tags not list", {"action": "add", "content": "The user likes tea", "tags": "a,b"}),
    ("too many tags", {"action": "add", "content": "The user likes tea",
                       "tags": [str(i) for i in range(11)]}),
    ("sql id update", {"action": "update", "id": "1 OR 1=1", "content": "x is y for sure"}),
    ("int id", {"action": "update", "id": 12345, "importance": 0.1}),
    ("sql id remove", {"action": "remove", "id": "'; DELETE FROM memdb.memories; --"}),
    ("unknown id", {"action": "remove", "id": str(uuid.uuid4())}),
    ("update nothing", {"action": "update", "id": str(uuid.uuid4())}),
    ("k zero", {"action": "search", "query": "tea", "k": 0}),
    ("k string", {"action": "search", "query": "tea", "k": "5"}),
    ("k huge", {"action": "search", "query": "tea", "k": 10**9}),
    ("query object", {"action": "search", "query": {"$ne": None}}),
    ("forget too much", {"action": "forget", "threshold": 0.9}),
    ("forget dry_run string", {"action": "forget", "dry_run": "no"}),
    ("consolidate no session", {"action": "consolidate"}),
    ("filler rejected by gate", {"action": "add", "content": "Thanks!!"}),
    ("hedge rejected by gate", {"action": "add", "content": "我猜他住在北京的某个地方"}),
    ("working without session", {"action": "add", "content": "Draft the weekly report",
                                 "kind": "working"}),
]


@pytest.mark.parametrize("label,args", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_arguments_are_error_results_and_change_nothing(gated_store, label, args):
    gated_store.add("Alice prefers green tea over coffee", subject="alice",
                    category="preferences", source_id="seed")
    gated_store.add("Mallory's secret plan", subject="mallory", source_id="seed")
    before = _snapshot(gated_store)
    tool = gated_store.tool(subject="alice", source_id="turn-1")
    text = tool.dispatch(_call(args))
    result = json.loads(text)
    assert result["ok"] is False, (label, result)
    assert set(result["error"]) >= {"type", "message"}
    assert len(text) < 2000
    assert _snapshot(gated_store) == before


@pytest.mark.parametrize("call", [None, 42, "memory", {"function": "x"},
                                  {"function": {"name": "shell", "arguments": "{}"}},
                                  {"name": TOOL_NAME, "arguments": None}])
def test_malformed_tool_call_objects_are_error_results(store, call):
    result = json.loads(store.dispatch(call))
    assert result["ok"] is False and result["error"]["type"] == "InvalidInput", result


def test_sql_ish_search_and_content_are_plain_text(gated_store):
    """Injection-looking strings are data: the search finds nothing odd and changes nothing;
    an add stores the text verbatim (it is what the user said)."""
    tool = gated_store.tool(subject="alice", source_id="turn-1")
    gated_store.add("Alice prefers green tea over coffee", subject="alice",
                    category="preferences", source_id="seed")
    before = _snapshot(gated_store)
    found = json.loads(tool.dispatch(_call({"action": "search",
                                            "query": "'; DROP TABLE memdb.memories; --"})))
    assert found["ok"] and _snapshot(gated_store) == before
    text = "Robert'); DROP TABLE memdb.memories;-- is the user's nickname"
    added = json.loads(tool.dispatch(_call({"action": "add", "content": text})))
    assert added["ok"] and gated_store.get(added["id"]).content == text
    assert gated_store.count() == before[0] + 1


def test_cannot_touch_another_subjects_memory(gated_store):
    theirs = gated_store.add("Mallory's secret plan is in the vault", subject="mallory",
                             source_id="seed").id
    tool = gated_store.tool(subject="alice", source_id="turn-1")
    before = _snapshot(gated_store)
    for args in ({"action": "remove", "id": str(theirs)},
                 {"action": "update", "id": str(theirs), "importance": 0.0}):
        result = json.loads(tool.dispatch(_call(args)))
        assert result["ok"] is False and result["error"]["type"] == "NotFound", result
    found = json.loads(tool.dispatch(_call({"action": "search", "query": "secret plan vault"})))
    assert found["results"] == []
    assert _snapshot(gated_store) == before


def test_disallowed_action(store):
    tool = store.tool(allow=("search", "summary"))
    assert tool.schema()["function"]["parameters"]["properties"]["action"]["enum"] == [
        "search", "summary"]
    result = json.loads(tool.dispatch(_call({"action": "forget"})))
    assert result["ok"] is False and "not allowed" in result["error"]["message"]


# -- summary, forget, consolidate -----------------------------------------------------------------
def test_summary_forget_and_consolidate(store):
    store.add("用户喜欢乌龙茶", subject="u", category="preferences", importance=0.9)
    store.add("The user lives in Berlin", subject="u", category="entities", importance=0.7)
    store.add("Trivia nobody needs", subject="u", importance=0.05)
    store.add("Another user's memory", subject="v", importance=0.01)
    store.add("Draft the weekly report", subject="u", kind="working", category="general",
              scope="session",
              session_id="s1", importance=0.8)
    tool = store.tool(subject="u")
    summary = json.loads(tool.dispatch(_call({"action": "summary", "k": 2})))
    assert summary["total"] == 4
    assert summary["by_kind"] == {"semantic": 3, "working": 1}
    assert summary["by_category"] == {"preferences": 1, "entities": 1, "general": 2}
    assert [t["content"] for t in summary["top"]] == ["用户喜欢乌龙茶",
                                                      "Draft the weekly report"]

    preview = json.loads(tool.dispatch(_call({"action": "forget", "threshold": 0.1,
                                              "dry_run": True})))
    assert preview["would_forget"] == 1 and store.count() == 5
    done = json.loads(tool.dispatch(_call({"action": "forget", "threshold": 0.1})))
    assert done["forgotten"] == 1
    assert [m.content for m in store.list(subject="v")] == ["Another user's memory"]

    moved = json.loads(tool.dispatch(_call({"action": "consolidate", "session_id": "s1"})))
    assert moved["consolidated"] == 1
    assert store.get(moved["ids"][0]).kind.value == "episodic"


# -- remember: at once, a job doing the extraction -------------------------------------------------
@pytest.mark.parametrize("turn, word, other", [("I'm allergic to peanuts.", "peanuts", "allergic"),
                                               ("我对花生过敏。", "花生", "过敏")])
def test_remember_returns_a_job_and_the_turn_is_searchable_at_once(gated_store, turn, word,
                                                                   other):
    """No worker runs here: the call returns with the job still queued, and the turn is found
    at once by the keyword and vector routes (and by the tool's own search)."""
    tool = gated_store.tool(subject="bob")
    assert "remember" in tool.schema()["function"]["parameters"]["properties"]["action"]["enum"]
    assert set(tool_schema("json_schema")["properties"]) >= {"text", "session_id", "turn_id"}
    assert set(action_parameters("remember")["properties"]) == {"text", "session_id", "turn_id"}
    assert "wait" not in tool_schema("json_schema")["properties"]
    result = json.loads(tool.dispatch(_call({"action": "remember", "text": turn,
                                             "session_id": "s1"})))
    assert result["ok"] is True and result["action"] == "remember", result
    assert result["state"] == "queued" and result["outcome"] == "created"
    job = gated_store.jobs.get(result["job_id"])
    assert job.kind == "remember" and job.state == "queued"
    hits = gated_store.search(word, 5, subject="bob")
    assert hits and str(hits[0].memory.id) == result["memory_id"]
    assert gated_store.get(result["memory_id"]).source_id == result["turn_id"]
    vector = gated_store.search(other, 5, subject="bob", routes=["vector"])
    assert result["memory_id"] in [str(h.memory.id) for h in vector]
    found = json.loads(tool.dispatch(_call({"action": "search", "query": word})))
    assert found["results"][0]["id"] == result["memory_id"]
    # the model can neither make it wait, dry-run it nor name another subject
    for extra in ({"wait": True}, {"dry_run": True}, {"subject": "eve"}):
        refused = json.loads(tool.dispatch(_call({"action": "remember", "text": turn,
                                                  **extra})))
        assert refused["ok"] is False and refused["error"]["type"] == "InvalidInput", extra
    assert [j.id for j in gated_store.jobs.list(kind="remember")] == [job.id]
    assert gated_store.list(subject="eve") == []


def test_cli_tool_call(fresh_db):
    result = run(fresh_db, "tool-call", '{"action": "summary"}', "--subject", "u")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["total"] == 0
    bad = run(fresh_db, "tool-call", '{"action": "explode"}')
    assert bad.exit_code == 1 and json.loads(bad.stdout)["ok"] is False

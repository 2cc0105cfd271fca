"""``memdb context`` and ``memdb session add/show/state/list/delete`` through click's runner on
a fresh database (offline: local embedder, no LLM), in Chinese and English."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memdb.core.tokens import message_tokens
from tests.cli_helpers import add, ok_json, run


@pytest.fixture(autouse=True)
def _offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No user data folder, no MEMDB_DSN, no LLM: everything here is offline."""
    monkeypatch.setenv("MEMDB_HOME", str(tmp_path / "memdb-home"))
    for var in ("MEMDB_DSN", "MEMDB_LLM_MODEL", "MEMDB_LLM_BASE_URL"):
        monkeypatch.delenv(var, raising=False)


def test_session_add_show_and_fold(fresh_db: str) -> None:
    turns = [("user", "我们决定使用PostgreSQL 18。"), ("assistant", "好的。"),
             ("user", "Backups run nightly at 02:00."), ("assistant", "Noted.")]
    for role, text in turns:
        out = ok_json(fresh_db, "session", "append", "s1", role, text, "--max-messages", "2")
        assert out["tokens"] > 0
    assert out["folded"] == 1 and out["summary_path"] == "extractive"
    view = ok_json(fresh_db, "session", "show", "s1", "--max-messages", "2")
    assert [m["content"] for m in view["messages"]] == [t for _, t in turns[2:]]
    assert "PostgreSQL 18" in view["summary"] and view["state"]["version"] == 0
    text = run(fresh_db, "session", "show", "s1")
    assert text.exit_code == 0 and "summary (extractive" in text.stdout
    piped = run(fresh_db, "session", "append", "s1", "user", "-", "--json", input="来自标准输入")
    assert piped.exit_code == 0 and json.loads(piped.stdout)["tokens"] > 0
    bad = run(fresh_db, "session", "append", "s1", "robot", "hi")
    # the declared role's check (memdb.core.ops.families): InvalidInput, exit 1, as at every door
    assert bad.exit_code == 1 and "role must be one of system" in bad.stderr
    missing = run(fresh_db, "session", "show", "nope")
    assert missing.exit_code == 1 and missing.stderr.startswith("error: no session")
    listed = ok_json(fresh_db, "session", "list")
    assert [r["session_id"] for r in listed] == ["s1"]
    assert ok_json(fresh_db, "session", "delete", "s1") == {"deleted": "s1"}


def test_session_state_conflict_exits_1(fresh_db: str) -> None:
    assert ok_json(fresh_db, "session", "state", "job") == {
        "goal": None, "constraints": [], "steps_done": [], "plan": [], "budget": {},
        "notes": {}, "version": 0}
    s = ok_json(fresh_db, "session", "state", "job", "--set",
                '{"goal": "发布 v1", "plan": ["写表", "写测试"]}', "--expected-version", "0")
    assert s["version"] == 1 and s["plan"] == ["写表", "写测试"]
    u = ok_json(fresh_db, "session", "state", "job", "--update", '{"steps_done": ["写表"]}')
    assert u["version"] == 2 and u["goal"] == "发布 v1"
    stale = run(fresh_db, "session", "state", "job", "--set", "{}", "--expected-version", "1")
    assert stale.exit_code == 1 and "version 2, not 1" in stale.stderr
    for args in (["--set", "{}"], ["--set", "[1]", "--expected-version", "2"],
                 ["--update", '{"colour": 1}'], ["--update", "{nope"]):
        res = run(fresh_db, "session", "state", "job", *args)
        assert res.exit_code == 1 and res.stderr.startswith("error:"), args
    assert ok_json(fresh_db, "session", "state", "job")["version"] == 2


def test_context_command(fresh_db: str) -> None:
    rule = add(fresh_db, "回答时使用用户的语言。", "--category", "system", "--subject", "alice")
    tea = add(fresh_db, "爱丽丝喜欢喝不加糖的绿茶。", "--category", "preferences",
              "--subject", "alice")
    ok_json(fresh_db, "session", "append", "trip", "user", "我想给爱丽丝带礼物。",
            "--subject", "alice")
    ctx = ok_json(fresh_db, "context", "爱丽丝喜欢喝什么？", "--session", "trip",
                  "--budget", "500", "--subject", "alice")
    assert ctx["tokens"] <= 500 and ctx["rule_ids"] == [rule] and tea in ctx["memory_ids"]
    assert sum(message_tokens(m) for m in ctx["messages"]) == ctx["tokens"]
    assert f"[mem:{rule}]" in ctx["messages"][0]["content"]
    assert ctx["messages"][-1] == {"role": "user", "content": "我想给爱丽丝带礼物。"}
    text = run(fresh_db, "context", "What does Alice drink?", "--budget", "400",
               "--subject", "alice", "--no-instructions", "--include-query")
    assert text.exit_code == 0 and "--- user\nWhat does Alice drink?" in text.stdout
    assert "/400 tokens" in text.stderr
    small = run(fresh_db, "context", "tea", "--budget", "5", "--subject", "alice")
    assert small.exit_code == 1 and "budget_tokens must be within 50–32000" in small.stderr
    both = run(fresh_db, "context", "tea", "--instructions", "x", "--no-instructions")
    assert both.exit_code == 1
    for cmd in (["context"], ["session"], ["session", "append"], ["session", "show"],
                ["session", "state"], ["session", "list"], ["session", "delete"]):
        helped = run(fresh_db, *cmd, "--help")
        assert helped.exit_code == 0 and "--json" in helped.stdout or cmd == ["session"]

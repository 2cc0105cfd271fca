"""The ``memdb`` command line, run through click's runner against a fresh database per test."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid
from pathlib import Path

import click
import psycopg
import pytest
from click.testing import CliRunner, Result

from memdb.cli import cli
from memdb.core.migrations import head
from memdb.demo import MEMORIES, SEARCHES
from tests.cli_helpers import add, ok_json, run

INJECTION = "'); DROP TABLE memdb.memories; --"


@pytest.fixture(autouse=True)
def _no_user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing here may start a server in the user's data folder or read their MEMDB_DSN."""
    monkeypatch.setenv("MEMDB_HOME", str(tmp_path / "memdb-home"))
    monkeypatch.delenv("MEMDB_DSN", raising=False)


def failed(result: Result, message: str) -> None:
    """Exit status 1, ``error: ...`` on stderr, no traceback."""
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith("error: "), result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.output
    assert isinstance(result.exception, SystemExit)


def rows(dsn: str) -> int:
    with psycopg.connect(dsn) as conn:
        return conn.execute("SELECT count(*) FROM memdb.memories").fetchone()[0]


# -- help and usage ------------------------------------------------------------------------
def _commands(group: click.Group = cli, prefix: tuple[str, ...] = ()):
    """Every command path, subcommands of groups (memdb eval locomo) included."""
    for name, command in sorted(group.commands.items()):
        yield (*prefix, name), command
        if isinstance(command, click.Group):
            yield from _commands(command, (*prefix, name))


@pytest.mark.parametrize("path", [(), *(p for p, _ in _commands())], ids=" ".join)
def test_help_on_every_command(path: tuple[str, ...]) -> None:
    result = CliRunner().invoke(cli, [*path, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.stdout
    target = dict(_commands()).get(path, cli)
    assert target.help
    for param in target.params:
        if isinstance(param, click.Option):
            assert param.help, f"{path} {param.opts} has no help text"


def test_every_command_has_json_output() -> None:
    for path, command in _commands():
        if path == ("server", "psql"):  # hands the terminal to psql: its output is psql's
            continue
        if not isinstance(command, click.Group):
            assert any("--json" in p.opts for p in command.params), path


def test_usage_error_exits_2() -> None:
    result = CliRunner().invoke(cli, ["add"])
    assert result.exit_code == 2
    assert "Missing argument" in result.stderr


def test_console_script_is_installed() -> None:
    script = Path(sys.executable).with_name("memdb")
    done = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "Usage: memdb" in done.stdout
    for command in ("demo", "add", "search", "history", "maintenance", "mark-used"):
        assert command in done.stdout


def test_console_script_error_has_no_traceback(fresh_db: str) -> None:
    script = Path(sys.executable).with_name("memdb")
    done = subprocess.run([str(script), "--dsn", fresh_db, "get", str(uuid.uuid4())],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr.startswith("error: no memory")
    assert "Traceback" not in done.stderr


# -- writes and reads ----------------------------------------------------------------------
def test_add_get_and_text_output(fresh_db: str) -> None:
    result = run(fresh_db, "add", "张伟喜欢喝乌龙茶，不喝咖啡。", "--subject", "zhangwei",
                 "--kind", "semantic", "--category", "preferences", "--tag", "饮品",
                 "--tag", "tea", "--metadata", '{"lang": "zh"}', "--importance", "0.8",
                 "--source-type", "user_statement", "--source-id", "chat-1#2",
                 "--created-by", "tester", "--norm-key", "zhangwei.drink")
    assert result.exit_code == 0, result.output
    memory_id, status = result.stdout.split()
    assert status == "created"
    uuid.UUID(memory_id)

    memory = ok_json(fresh_db, "get", memory_id)
    assert memory["content"] == "张伟喜欢喝乌龙茶，不喝咖啡。"
    assert (memory["subject"], memory["kind"], memory["category"]) == (
        "zhangwei", "semantic", "preferences")
    assert memory["tags"] == ["tea", "饮品"]
    assert memory["metadata"] == {"lang": "zh"}
    assert memory["importance"] == pytest.approx(0.8)
    assert (memory["source_type"], memory["source_id"], memory["created_by"]) == (
        "user_statement", "chat-1#2", "tester")
    assert memory["norm_key"] == "zhangwei.drink"

    text = run(fresh_db, "get", memory_id)
    assert text.exit_code == 0
    assert "张伟喜欢喝乌龙茶" in text.stdout
    assert re.search(r"^kind\s+semantic$", text.stdout, re.MULTILINE)


def test_add_twice_deduplicates(fresh_db: str) -> None:
    first = add(fresh_db, "Alice prefers green tea.", "--subject", "alice")
    again = ok_json(fresh_db, "add", "--no-gate", "Alice prefers green tea.", "--subject",
                    "alice")
    assert (again["id"], again["created"], again["outcome"]) == (first, False, "duplicate")
    text = run(fresh_db, "add", "--no-gate", "Alice prefers green tea.", "--subject", "alice")
    assert f"{first} duplicate" in text.stdout
    assert rows(fresh_db) == 1


def test_add_reads_stdin(fresh_db: str) -> None:
    result = run(fresh_db, "add", "--no-gate", "-", "--json", input="Bob 住在北京。\n")
    memory_id = json.loads(result.stdout)["id"]
    assert ok_json(fresh_db, "get", memory_id)["content"] == "Bob 住在北京。\n"


def test_add_with_scope_and_expiry(fresh_db: str) -> None:
    memory_id = add(fresh_db, "Deploy on Fridays is forbidden", "--scope", "project",
                    "--project-id", "orders", "--agent", "planner", "--ttl", "3600")
    memory = ok_json(fresh_db, "get", memory_id)
    assert (memory["scope"], memory["project_id"], memory["agent"]) == (
        "project", "orders", "planner")
    assert memory["expires_at"] is not None
    failed(run(fresh_db, "add", "--no-gate", "no project", "--scope", "project"),
           "needs a project_id")
    failed(run(fresh_db, "add", "--no-gate", "both", "--ttl", "5", "--expires-at",
               "2100-01-01"),
           "not both")


def test_sql_injection_text_is_stored_literally(fresh_db: str) -> None:
    memory_id = add(fresh_db, INJECTION, "--subject", INJECTION, "--tag", INJECTION)
    memory = ok_json(fresh_db, "get", memory_id)
    assert memory["content"] == INJECTION
    assert memory["subject"] == INJECTION
    assert memory["tags"] == [INJECTION]
    listed = ok_json(fresh_db, "list", "--subject", INJECTION)
    assert [m["content"] for m in listed] == [INJECTION]
    hits = ok_json(fresh_db, "search", INJECTION, "--subject", INJECTION)["hits"]
    assert hits[0]["memory"]["content"] == INJECTION
    assert rows(fresh_db) == 1  # the table is still there


def test_list_filters(fresh_db: str) -> None:
    a = add(fresh_db, "Alice uses Neovim", "--subject", "alice", "--category", "tools",
            "--tag", "editor", "--tag", "daily", "--importance", "0.9",
            "--metadata", '{"source": "chat", "n": 1}')
    b = add(fresh_db, "Alice 去年去了东京旅行", "--subject", "alice", "--kind", "episodic",
            "--category", "events", "--tag", "travel")
    c = add(fresh_db, "张伟 uses VS Code", "--subject", "zhangwei", "--category", "tools",
            "--tag", "editor")

    def ids(*args: str) -> set[str]:
        return {m["id"] for m in ok_json(fresh_db, "list", *args)}

    assert ids() == {a, b, c}
    assert ids("--subject", "alice") == {a, b}
    assert ids("--kind", "episodic") == {b}
    assert ids("--kind", "episodic", "--kind", "semantic") == {a, b, c}
    assert ids("--category", "tools", "--category", "events") == {a, b, c}
    assert ids("--tag", "editor") == {a, c}
    assert ids("--tag", "editor", "--tag", "daily") == {a}
    assert ids("--any-tag", "daily", "--any-tag", "travel") == {a, b}
    assert ids("--min-importance", "0.8") == {a}
    assert ids("--min-importance", "0") == {a, b, c}
    assert ids("--metadata", '{"source": "chat"}') == {a}
    assert ids("--source-type", "user_statement") == {a, b, c}
    assert ids("--created-after", "2000-01-01T00:00:00Z") == {a, b, c}
    assert ids("--created-before", "2000-01-01T00:00:00Z") == set()
    assert len(ok_json(fresh_db, "list", "--limit", "2")) == 2
    assert len(ok_json(fresh_db, "list", "--limit", "2", "--offset", "2")) == 1

    text = run(fresh_db, "list", "--subject", "alice")
    assert text.exit_code == 0
    assert "东京" in text.stdout and "Neovim" in text.stdout
    assert text.stdout.splitlines()[0].split() == [
        "id", "kind", "category", "subject", "provenance", "content"]
    empty = run(fresh_db, "list", "--subject", "nobody")
    assert empty.exit_code == 0 and empty.stdout == ""
    failed(run(fresh_db, "list", "--kind", "banana"), "unknown kind 'banana'")
    failed(run(fresh_db, "list", "--metadata", "[1]"), "must be a JSON object")
    failed(run(fresh_db, "list", "--created-after", "yesterday"), "ISO 8601")


def test_search(fresh_db: str) -> None:
    tea = add(fresh_db, "张伟喜欢喝乌龙茶。", "--subject", "zhangwei", "--category", "preferences",
              "--source-type", "user_statement", "--source-id", "chat-7")
    add(fresh_db, "Alice drinks green tea every morning.", "--subject", "alice",
        "--category", "preferences")
    add(fresh_db, "The deploy script lives in ops/deploy.sh", "--subject", "alice",
        "--kind", "procedural", "--category", "skills")

    out = ok_json(fresh_db, "search", "张伟喜欢喝什么？", "-k", "2")
    assert out["query"] == "张伟喜欢喝什么？" and out["explain"] is None
    hits = out["hits"]
    assert len(hits) == 2
    assert hits[0]["memory"]["id"] == tea
    assert [h["rank"] for h in hits] == [1, 2] and hits[0]["score"] >= hits[1]["score"]
    assert hits[0]["details"]["vector_rank"] == 1

    english = ok_json(fresh_db, "search", "what does Alice drink", "--subject", "alice")["hits"]
    assert english[0]["memory"]["content"] == "Alice drinks green tea every morning."
    assert {h["memory"]["subject"] for h in english} == {"alice"}
    procedural = ok_json(fresh_db, "search", "how to deploy", "--kind", "procedural")["hits"]
    assert [h["memory"]["kind"] for h in procedural] == ["procedural"]

    text = run(fresh_db, "search", "乌龙茶", "-k", "1")
    assert text.exit_code == 0
    lines = text.stdout.splitlines()
    assert lines[0].split() == ["#", "id", "score", "kind", "category", "subject",
                                "provenance", "routes", "content"]
    assert re.match(rf"^1\s+{tea}\s+\d\.\d{{3}}\s+semantic\s+preferences\s+zhangwei\s+"
                    r"user_statement:chat-7\s+vector:1\b.*张伟喜欢喝乌龙茶。$", lines[1])
    assert ok_json(fresh_db, "search", "   ")["hits"] == []
    failed(run(fresh_db, "search", "tea", "-k", "0"), "k must be")


def test_search_options_and_explain(fresh_db: str) -> None:
    tea = add(fresh_db, "Alice drinks oolong tea", "--subject", "alice")
    add(fresh_db, "张伟每天早上跑步", "--subject", "zhangwei")
    bm25 = ok_json(fresh_db, "search", "oolong", "--route", "bm25")["hits"]
    assert [h["memory"]["id"] for h in bm25] == [tea]
    assert bm25[0]["details"]["vector_rank"] is None and bm25[0]["details"]["bm25_rank"] == 1
    weighted = ok_json(fresh_db, "search", "tea", "--weight", "bm25=0.5", "--weight",
                       "vector=2", "--mmr", "0.7", "--decay", "importance_weight=0.2",
                       "--explain")
    assert weighted["hits"][0]["memory"]["id"] == tea
    assert weighted["explain"]["params"]["options"]["weights"] == {"bm25": 0.5, "vector": 2.0,
                                                                   "exact": 1.0}
    assert "search_hybrid" in weighted["explain"]["sql"]
    text = run(fresh_db, "search", "tea", "--sql")
    assert text.exit_code == 0
    assert "memdb.search_hybrid" in text.stdout and "-- embed" in text.stdout
    failed(run(fresh_db, "search", "tea", "--weight", "bm25"), "--weight takes NAME=NUMBER")
    failed(run(fresh_db, "search", "tea", "--route", "graph"), "unknown or no routes")
    failed(run(fresh_db, "search", "tea", "--decay", "speed=1"), "decay must be")


def test_mark_used(fresh_db: str) -> None:
    a = add(fresh_db, "Alice likes jazz", "--subject", "alice")
    b = add(fresh_db, "张伟喜欢古典音乐", "--subject", "zhangwei")
    assert ok_json(fresh_db, "mark-used", a, b) == {"marked": 2}
    assert run(fresh_db, "mark-used", a, "--subject", "bob").stdout.strip() == (
        "marked 1 memories as used")
    assert CliRunner().invoke(cli, ["--dsn", fresh_db, "mark-used"]).exit_code == 2
    failed(run(fresh_db, "mark-used", "nope"), "not a memory id")


def test_update_delete_history(fresh_db: str) -> None:
    memory_id = add(fresh_db, "Alice lives in Berlin", "--subject", "alice",
                    "--source-id", "chat-9#1")
    updated = ok_json(fresh_db, "update", memory_id, "--content", "Alice 住在慕尼黑",
                      "--importance", "0.9", "--tag", "city", "--reason", "she moved")
    assert updated["content"] == "Alice 住在慕尼黑"
    assert updated["version"] == 2 and updated["tags"] == ["city"]
    assert updated["has_embedding"] is True
    hits = ok_json(fresh_db, "search", "慕尼黑", "-k", "1")["hits"]
    assert hits[0]["memory"]["id"] == memory_id
    failed(run(fresh_db, "update", memory_id), "nothing to update")

    result = run(fresh_db, "delete", memory_id, "--reason", "asked to forget")
    assert result.exit_code == 0 and result.stdout.strip() == f"deleted {memory_id}"
    failed(run(fresh_db, "get", memory_id), "no memory")
    failed(run(fresh_db, "delete", memory_id), "no memory")

    history = ok_json(fresh_db, "history", memory_id)
    assert [h["op"] for h in history] == ["insert", "update", "delete"]
    assert history[1]["reason"] == "she moved" and history[2]["reason"] == "asked to forget"
    assert history[1]["before"]["content"] == "Alice lives in Berlin"
    assert history[1]["after"]["content"] == "Alice 住在慕尼黑"
    text = run(fresh_db, "history", memory_id).stdout
    assert "reason=she moved" in text and "changed:" in text and "慕尼黑" in text
    failed(run(fresh_db, "history", str(uuid.uuid4())), "no history")


def test_purge_and_count(fresh_db: str) -> None:
    add(fresh_db, "an old note", "--expires-at", "2000-01-01T00:00:00+00:00")
    add(fresh_db, "a current note")
    assert len(ok_json(fresh_db, "list")) == 1
    assert len(ok_json(fresh_db, "list", "--include-expired")) == 2
    assert ok_json(fresh_db, "count") == {"count": 2}
    assert ok_json(fresh_db, "maintenance", "purge") == {"purged": 1}
    assert run(fresh_db, "maintenance", "purge").stdout.strip() == "purged 0 expired memories"
    assert run(fresh_db, "count").stdout.strip() == "1"


def test_migrate(fresh_db: str) -> None:
    assert ok_json(fresh_db, "migrate") == {"revision": head()}
    assert run(fresh_db, "migrate").stdout.strip() == f"schema at revision {head()}"


def test_unmigrated_database_says_migrate(empty_db: str) -> None:
    failed(run(empty_db, "list"), "memdb migrate")
    failed(run(empty_db, "add", "--no-gate", "hello"), "memdb migrate")
    assert ok_json(empty_db, "migrate") == {"revision": head()}
    add(empty_db, "hello")


def test_tenant_isolation(fresh_db: str) -> None:
    memory_id = ok_json(fresh_db, "--tenant", "acme", "add", "--no-gate", "acme secret")["id"]
    assert ok_json(fresh_db, "--tenant", "acme", "get", memory_id)["tenant"] == "acme"
    failed(run(fresh_db, "get", memory_id), "no memory")


def test_tenant_option_is_passed(fresh_db: str) -> None:
    result = CliRunner().invoke(cli, ["--dsn", fresh_db, "--tenant", "", "list"])
    failed(result, "tenant must be a non-empty string")


# -- errors --------------------------------------------------------------------------------
def test_bad_kind_is_a_typed_error_and_writes_nothing(fresh_db: str) -> None:
    # the declared operation's messages (memdb.core.ops: add), as at every door
    failed(run(fresh_db, "add", "Alice 喜欢猫", "--kind", "banana"),
           "kind must be one of semantic, episodic, procedural, working")
    failed(run(fresh_db, "add", "x", "--category", "misc"), "category must be one of")
    failed(run(fresh_db, "add", "x", "--importance", "2"), "importance must be within 0–1")
    assert rows(fresh_db) == 0


def test_bad_metadata_json(fresh_db: str) -> None:
    failed(run(fresh_db, "add", "x", "--metadata", "{bad json"), "--metadata is not valid JSON")
    failed(run(fresh_db, "add", "x", "--metadata", '["a"]'), "--metadata must be a JSON object")
    assert rows(fresh_db) == 0


def test_unknown_and_malformed_ids(fresh_db: str) -> None:
    missing = str(uuid.uuid4())
    failed(run(fresh_db, "get", missing), f"no memory {missing}")
    failed(run(fresh_db, "get", "not-a-uuid"), "not a memory id")


def test_unreachable_server_is_an_error() -> None:
    result = CliRunner().invoke(
        cli, ["--dsn", "postgresql://nobody@127.0.0.1:1/none?connect_timeout=2", "count"])
    failed(result, "")


# -- demo ----------------------------------------------------------------------------------
def test_demo_twice_adds_nothing_the_second_time(fresh_db: str) -> None:
    assert rows(fresh_db) == 0
    report = ok_json(fresh_db, "demo")
    assert rows(fresh_db) == len(MEMORIES) == report["memories"] == report["new"] == 12
    assert report["already_stored"] == 0
    assert set(report["timings_ms"]) == {"start_and_migrate", "embedder_load", "writes",
                                         "graph_link", "searches"}
    # the entity graph of the demo's memories, by the heuristic (no LLM): quick
    assert report["graph"]["linked"] == 12 and report["graph"]["mentions"] >= 10
    assert report["timings_ms"]["graph_link"] < 5000
    assert [s["query"] for s in report["searches"]] == [s["query"] for s in SEARCHES]
    for search in report["searches"]:
        assert 1 <= len(search["hits"]) <= search["k"]
        for key, value in search["filter"].items():
            allowed = value if isinstance(value, list) else [value]
            assert all(h[key] in allowed for h in search["hits"])
    # 张伟's own preference first: the system rule about answering 张伟 in Chinese is boosted
    # (system_boost) but not past a memory that ranks above it on every route
    first = report["searches"][0]["hits"]
    assert [h["category"] for h in first][:2] == ["preferences", "system"]
    assert first[0]["subject"] == "zhangwei"

    second = run(fresh_db, "demo")
    assert second.exit_code == 0, second.output
    assert rows(fresh_db) == 12
    out = second.stdout
    assert "12 memories: 0 new, 12 already stored" in out
    assert "entity graph: 12 memories linked" in out
    assert "张伟喜欢喝乌龙茶" in out and "Alice prefers green tea" in out
    assert re.search(r"^1\s+\d\.\d{3}\s+semantic\s+preferences\s+zhangwei\s+"
                     r"user_statement:chat-0305#2\s+vector:\d.*张伟喜欢喝乌龙茶", out, re.MULTILINE)
    assert "timings: server start + migrate" in out


def test_demo_data_covers_the_vocabulary() -> None:
    assert len(MEMORIES) >= 12
    assert {m["kind"] for m in MEMORIES} == {"working", "episodic", "semantic", "procedural"}
    assert {"preferences", "entities", "events", "tools", "skills", "system", "general"} <= {
        m["category"] for m in MEMORIES}
    assert len({m["subject"] for m in MEMORIES}) >= 3
    assert all(m.get("source_type") and m.get("source_id") for m in MEMORIES)
    assert any(re.search(r"[\u4e00-\u9fff]", m["content"]) for m in MEMORIES)
    assert any(re.fullmatch(r"[ -~]+", m["content"]) for m in MEMORIES)


def test_tenant_and_subject_isolation(fresh_db: str) -> None:
    """--tenant and --as-subject confine every command (row-level security): another tenant's
    id is not found, another subject is invisible and cannot be written."""
    alice = add(fresh_db, "Alice 喜欢绿茶", "--subject", "alice")
    add(fresh_db, "Bob 喜欢绿茶", "--subject", "bob")
    other = CliRunner().invoke(cli, ["--dsn", fresh_db, "--tenant", "globex", "get", alice])
    assert other.exit_code == 1 and "error:" in other.stderr
    listed = CliRunner().invoke(cli, ["--dsn", fresh_db, "--as-subject", "alice",
                                      "list", "--json"], catch_exceptions=False)
    assert listed.exit_code == 0
    assert [m["subject"] for m in json.loads(listed.stdout)] == ["alice"]
    refused = CliRunner().invoke(cli, ["--dsn", fresh_db, "--as-subject", "alice",
                                       "add", "--no-gate", "planted", "--subject", "bob"])
    assert refused.exit_code == 1 and "error:" in refused.stderr
    assert "row-level security" in refused.stderr or "permission" in refused.stderr.lower()
    assert rows(fresh_db) == 2


# -- the write gate ------------------------------------------------------------------------
def test_add_through_the_gate_prints_outcome_and_reasons(fresh_db: str) -> None:
    refused = run(fresh_db, "add", "我猜张伟住在上海", "--source-id", "chat-1")
    failed(refused, "the write gate refused")
    assert "hedged" in refused.stderr and rows(fresh_db) == 0
    sourceless = run(fresh_db, "add", "Alice works at a start-up", "--source-type", "document")
    failed(sourceless, "no_source")
    assert "--source-id" in sourceless.stderr
    guess = ok_json(fresh_db, "add", "Bob is a vegetarian", "--source-type", "model_inference",
                    "--source-id", "s-1#4")
    assert guess["outcome"] == "hypothesis" and guess["created"] is True
    assert any(r.startswith("model_inference") for r in guess["reasons"])
    rule = run(fresh_db, "add", "回答要简洁明了", "--kind", "procedural", "--source-id", "p-1")
    failed(rule, "not_generalizable")
    flagged = ok_json(fresh_db, "add", "回答要简洁明了", "--kind", "procedural",
                      "--source-id", "p-1", "--rule")
    assert flagged["outcome"] == "created"
    text = run(fresh_db, "add", "正在排查订单接口的慢查询", "--kind", "working")
    assert text.exit_code == 0 and " created" in text.stdout
    assert "ttl_default: 24 h for working" in text.stdout
    assert rows(fresh_db) == 3


def test_add_dry_run_writes_nothing(fresh_db: str) -> None:
    out = ok_json(fresh_db, "add", "张伟住在上海浦东", "--source-id", "c-1", "--dry-run")
    assert (out["outcome"], out["id"], out["dry_run"]) == ("created", None, True)
    result = run(fresh_db, "add", "好的", "--dry-run", "--json")
    assert result.exit_code == 1 and json.loads(result.stdout)["outcome"] == "rejected"
    assert rows(fresh_db) == 0


def test_add_supersedes_by_norm_key(fresh_db: str) -> None:
    first = add(fresh_db, "我喜欢喝咖啡", "--category", "preferences", "--norm-key", "drink")
    out = ok_json(fresh_db, "add", "我现在喜欢喝乌龙茶", "--category", "preferences",
                  "--norm-key", "drink", "--source-id", "c-2")
    assert out["outcome"] == "superseded" and out["superseded_id"] == first
    assert [m["content"] for m in ok_json(fresh_db, "list")] == ["我现在喜欢喝乌龙茶"]


def test_gate_command_only_prints_decisions(fresh_db: str) -> None:
    out = ok_json(fresh_db, "gate", "好的", "我猜他三十岁", "张伟不是住在上海，是住在北京",
                  "--source-id", "c-1")
    assert [d["outcome"] for d in out] == ["rejected", "rejected", "accepted"]
    assert out[2]["correction"] == {"old": "住在上海", "new": "住在北京"}
    text = run(fresh_db, "gate", "Always answer in English", "--category", "system",
               "--source-id", "p")
    assert text.exit_code == 0 and text.stdout.startswith("accepted")
    assert rows(fresh_db) == 0


def test_update_content_passes_the_gate(fresh_db: str) -> None:
    mid = add(fresh_db, "张伟住在上海浦东新区", "--source-id", "chat-1#2")
    refused = run(fresh_db, "update", mid, "--content", "好的")
    assert refused.exit_code == 1 and "write gate refused the update" in refused.stderr
    assert ok_json(fresh_db, "get", mid)["content"] == "张伟住在上海浦东新区"
    forced = ok_json(fresh_db, "update", mid, "--content", "好的", "--no-gate")
    assert forced["content"] == "好的" and forced["version"] == 2

"""``memdb plan``, ``recall``, ``traces`` and ``maintenance reclassify`` through click's runner
against a fresh database (the real embedded PostgreSQL and the local embedder)."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner, Result

from memdb.cli import cli


@pytest.fixture(autouse=True)
def _no_user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMDB_HOME", str(tmp_path / "memdb-home"))
    for var in ("MEMDB_DSN", "MEMDB_LLM_MODEL"):
        monkeypatch.delenv(var, raising=False)


def run(dsn: str, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--dsn", dsn, *args], catch_exceptions=False)


def ok_json(dsn: str, *args: str) -> object:
    result = run(dsn, *args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_plan_command(fresh_db):
    plan = ok_json(fresh_db, "plan", "上次那个项目")
    assert plan["intent"] == "entity_recall" and plan["source"] == "heuristic"
    assert plan["queries"][0]["categories"] == ["entities", "events"]
    text = run(fresh_db, "plan", "How do I deploy Phoenix-2?").output
    assert "intent skill_request" in text and "exact_match" in text and "Phoenix-2" in text
    bad = run(fresh_db, "plan", "  ")
    assert bad.exit_code == 1 and bad.stderr.startswith("error: ")


def test_recall_trace_stats_classify(fresh_db):
    added = ok_json(fresh_db, "add", "--no-gate", "王五喜欢喝乌龙茶", "--subject", "wangwu")
    assert added["created"]
    ok_json(fresh_db, "add", "--no-gate", "不能把密钥提交到git", "--subject", "wangwu")
    ok_json(fresh_db, "add", "--no-gate", "plain words", "--subject", "wangwu",
            "--category", "general")
    got = ok_json(fresh_db, "get", added["id"])
    assert got["category"] == "preferences"

    res = ok_json(fresh_db, "recall", "王五喜欢喝什么茶", "--subject", "wangwu", "-k", "2")
    assert res["status"] in ("ok", "degraded") and res["hits"][0]["memory"]["id"] == added["id"]
    assert res["plan"]["intent"] == "preference_query" and res["trace_id"]
    # scoped routes leave 'general' out unless --general; anchored at k unless --no-anchor
    assert res["notes"]["routes"][0]["categories"] == ["preferences"]
    assert res["notes"]["anchor_k"] == 2
    wide = ok_json(fresh_db, "recall", "王五喜欢喝什么茶", "--subject", "wangwu", "-k", "2",
                   "--general", "--no-anchor", "--no-trace")
    assert wide["notes"]["routes"][0]["categories"] == ["preferences", "general"]
    assert wide["notes"]["anchor_k"] == 0
    narrow = ok_json(fresh_db, "recall", "王五喜欢喝什么茶", "--subject", "wangwu", "-k", "2",
                     "--no-general", "--no-trace")
    assert narrow["notes"]["routes"][0]["categories"] == ["preferences"]
    text = run(fresh_db, "recall", "量子纠错码", "--subject", "nobody").output
    assert "status no_relevant_memory" in text

    traces = ok_json(fresh_db, "traces", "list")
    assert len(traces) == 2
    one = ok_json(fresh_db, "traces", "show", res["trace_id"])
    assert one["intent"] == "preference_query" and one["chosen_ids"]
    shown = run(fresh_db, "traces", "show", res["trace_id"]).output
    assert "candidates:" in shown and "q1:" in shown
    assert run(fresh_db, "traces", "show", "not-a-uuid").exit_code == 1

    stats = ok_json(fresh_db, "traces", "stats")
    assert stats["searches"] == 2 and stats["empty_rate"] == 0.5
    assert "p95_ms" in run(fresh_db, "traces", "stats").output

    with psycopg.connect(fresh_db, autocommit=True) as conn:  # as if written before 0006
        conn.execute("UPDATE memdb.memories SET category = 'general', tag_version = NULL")
    report = ok_json(fresh_db, "maintenance", "reclassify", "--dry-run")
    assert report["moves"] == {"general->preferences": 1, "general->system": 1}
    assert ok_json(fresh_db, "get", added["id"])["category"] == "general"
    assert "would move 2" in run(fresh_db, "maintenance", "reclassify", "--dry-run").output
    report = ok_json(fresh_db, "maintenance", "reclassify")
    assert report["moved"] == 2
    assert ok_json(fresh_db, "get", added["id"])["category"] == "preferences"

    assert ok_json(fresh_db, "traces", "erase", "wangwu") == {"erased": 1}
    assert ok_json(fresh_db, "traces", "purge", "--days", "0") == {"purged": 1}

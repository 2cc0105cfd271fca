"""The lifecycle commands of the ``memdb`` CLI (maintain, consolidate, summarize, sediment,
review, forget-subject, export-subject), through click's runner on a fresh database."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from tests.cli_helpers import add, ok_json, run


@pytest.fixture(autouse=True)
def _offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No user data folder, no MEMDB_DSN, no LLM: everything here is offline."""
    monkeypatch.setenv("MEMDB_HOME", str(tmp_path / "memdb-home"))
    for var in ("MEMDB_DSN", "MEMDB_LLM_MODEL", "MEMDB_LLM_BASE_URL"):
        monkeypatch.delenv(var, raising=False)


def test_maintain_dry_run_then_real(fresh_db: str) -> None:
    for i in range(3):
        add(fresh_db, f"noise {i}", "--importance", "0.01")
    add(fresh_db, "system rule", "--importance", "0", "--category", "system")
    dry = ok_json(fresh_db, "maintenance", "run", "--dry-run")
    assert dry["dry_run"] is True and dry["steps"]["forget_importance"] == 3
    text = run(fresh_db, "maintenance", "run", "--step", "forget_importance", "--set",
               "batch_limit=2", "--until-done")
    assert text.exit_code == 0, text.output
    assert "pass 1:" in text.stdout and "pass 2:" in text.stdout
    assert "(more to do)" in text.stderr
    assert ok_json(fresh_db, "count")["count"] == 1
    bad = run(fresh_db, "maintenance", "run", "--set", "nope=1")
    assert bad.exit_code == 1 and bad.stderr.startswith("error: unknown --set key")


def test_consolidate_summarize_sediment_review(fresh_db: str) -> None:
    notes = [("我们决定下周三发布新版本。", "0.9"), ("部署前必须先跑完所有测试。", "0.8"),
             ("Alice prefers green tea.", "0.7"), ("hello", "0.1")]
    for text, imp in notes:
        add(fresh_db, text, "--kind", "working", "--scope", "session", "--session-id", "s1",
            "--importance", imp, "--subject", "alice")
    summary = ok_json(fresh_db, "session", "summarize", "s1")
    assert summary["path"] == "extractive" and summary["fallback_reason"] == "no LLM configured"
    assert "我们决定下周三发布新版本" in summary["content"]
    moved = ok_json(fresh_db, "session", "consolidate", "s1", "--threshold", "0.75", "--dry-run")
    assert len(moved["moved"]) == 2 and moved["dry_run"] is True
    moved = ok_json(fresh_db, "session", "consolidate", "s1", "--threshold", "0.75")
    assert len(moved["moved"]) == 2

    dry = ok_json(fresh_db, "maintenance", "sediment", "--dry-run")
    [run1] = ok_json(fresh_db, "maintenance", "sediment")
    assert [m["content"] for m in run1["memories"]] == [m["content"] for m in dry[0]["memories"]]
    assert {p["content"] for p in run1["proposed"]} == {"部署前必须先跑完所有测试。"}
    assert ok_json(fresh_db, "maintenance", "sediment")[0]["skipped"] is True
    text = run(fresh_db, "maintenance", "sediment")
    assert "already done today" in text.stdout

    [pending] = ok_json(fresh_db, "review", "list")
    assert ok_json(fresh_db, "review") == [pending]  # bare `memdb review` lists pending
    listing = run(fresh_db, "review", "list")
    assert pending["id"] in listing.stdout
    approved = ok_json(fresh_db, "review", "approve", pending["id"], "--by", "lead")
    memory = ok_json(fresh_db, "get", approved["memory_id"])
    assert memory["category"] == "system" and memory["content"] == "部署前必须先跑完所有测试。"
    assert ok_json(fresh_db, "review", "list") == []
    [done] = ok_json(fresh_db, "review", "list", "--status", "approved")
    assert done["decided_by"] == "lead" and done["memory_id"] == approved["memory_id"]
    again = run(fresh_db, "review", "reject", pending["id"])
    assert again.exit_code == 1 and "already approved" in again.stderr
    missing = run(fresh_db, "review", "approve", "00000000-0000-0000-0000-000000000000")
    assert missing.exit_code == 1 and missing.stderr.startswith("error: no review entry")


def test_forget_subject_asks_first(fresh_db: str, tmp_path: Path) -> None:
    alice = add(fresh_db, "Alice's secret: Zqxmarker7", "--subject", "alice")
    add(fresh_db, "Bob likes jazz", "--subject", "bob")
    refused = run(fresh_db, "subject", "forget", "alice", input="n\n")
    assert refused.exit_code == 1 and "nothing was deleted" in refused.stderr
    assert "Erase every memory" in refused.stderr
    assert ok_json(fresh_db, "get", alice)["subject"] == "alice"

    dry = ok_json(fresh_db, "subject", "forget", "alice", "--dry-run")
    assert dry["dry_run"] is True and dry["counts"]["memories"] == 1

    path = tmp_path / "alice.json"
    exported = ok_json(fresh_db, "subject", "export", "alice", str(path))
    assert exported["rows"]["memories"] == 1 and "Zqxmarker7" in path.read_text()
    overwrite = run(fresh_db, "subject", "export", "alice", str(path))
    assert overwrite.exit_code == 1 and "refusing to overwrite" in overwrite.stderr

    confirmed = run(fresh_db, "subject", "forget", "alice", "--export", str(tmp_path / "b.json"),
                    input="y\n")
    assert confirmed.exit_code == 0, confirmed.output
    assert "erased subject 'alice'" in confirmed.stdout
    assert (tmp_path / "b.json").exists()
    gone = run(fresh_db, "history", alice)
    assert gone.exit_code == 1 and "no history" in gone.stderr
    out = ok_json(fresh_db, "subject", "forget", "bob", "--yes")
    assert out["counts"]["memories"] == 1
    with psycopg.connect(fresh_db) as conn:
        assert conn.execute("SELECT count(*) FROM memdb.memories").fetchone()[0] == 0

"""The CLI grouped as the store's families (``memdb documents|graph|maintenance|traces|subject
...``), a short ``memdb --help``, and the old flat commands as hidden, working aliases that say
where the command went."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from memdb.cli import cli
from tests.cli_helpers import add, ok_json, run

GROUPS = {"documents", "graph", "maintenance", "traces", "subject", "session", "review"}
OLD = {"ingest", "remove-document", "search-documents", "ask", "link", "trace", "stats",
       "maintain", "purge", "reembed", "pending-embeddings", "export-subject", "forget-subject",
       "sediment", "classify", "consolidate", "summarize"}


def test_help_shows_the_core_verbs_and_the_groups_only() -> None:
    out = CliRunner().invoke(cli, ["--help"]).output
    listed = {line.split()[0] for line in out.split("Commands:")[1].splitlines() if line.strip()}
    assert GROUPS <= listed and {"add", "search", "recall", "get", "context"} <= listed
    assert not OLD & listed  # hidden, still callable
    assert len(listed) <= 36  # (+ the doors of issue 16: mcp, serve, keys; issue 20: ui, report)
    assert set(cli.commands) >= OLD


def test_family_commands(fresh_db: str, tmp_path) -> None:
    doc = tmp_path / "keys.md"
    doc.write_text("# 运维\n\n## 密钥轮换\n\n密钥每九十天轮换一次。\n\n"
                   "Rotate keys every 90 days.\n", encoding="utf-8")
    assert ok_json(fresh_db, "documents", "ingest", str(doc))["counts"] == {"created": 1}
    [listed] = ok_json(fresh_db, "documents", "list")
    hit = ok_json(fresh_db, "documents", "search", "密钥多久轮换？")["hits"][0]
    mid = hit["memory"]["id"]
    cited = ok_json(fresh_db, "documents", "citations", mid, "--parents")[mid][0]
    assert cited["uri"] == listed["uri"] and cited["heading_path"][-1] == "密钥轮换"
    assert "密钥轮换" in run(fresh_db, "documents", "citations", mid).stdout

    add(fresh_db, "张三和李四是同事。", "--subject", "u1")
    assert ok_json(fresh_db, "graph", "link", "--heuristic")["linked"] >= 1
    graph_hits = ok_json(fresh_db, "graph", "search", "谁和李四一起工作？", "--route", "graph")
    assert "张三和李四是同事。" in [h["memory"]["content"] for h in graph_hits["hits"]]

    summary = ok_json(fresh_db, "subject", "summary", "u1")
    assert summary["total"] == 1 and summary["top"][0]["content"] == "张三和李四是同事。"
    assert "total 1" in run(fresh_db, "subject", "summary", "u1").stdout

    low = add(fresh_db, "a passing thought", "--importance", "0.01")
    dry = ok_json(fresh_db, "maintenance", "forget-by-importance", "--dry-run")
    assert dry == {"dry_run": True, "ids": [low]}
    assert ok_json(fresh_db, "maintenance", "forget-by-age", "--days", "0", "--dry-run")["ids"]
    assert ok_json(fresh_db, "maintenance", "forget-by-capacity", "--dry-run")["ids"] == []
    assert ok_json(fresh_db, "maintenance", "decay-hypotheses", "--dry-run")["changes"] == []
    assert ok_json(fresh_db, "maintenance", "forget-by-importance") == {"dry_run": False,
                                                                       "ids": [low]}
    assert ok_json(fresh_db, "maintenance", "pending") == {"pending": 0}


def test_old_commands_warn_on_stderr_and_still_work(fresh_db: str) -> None:
    old = run(fresh_db, "ingest", "-", "--id", "kb:one", "--json", input="# T\n\n一段文字。")
    assert old.exit_code == 0, old.output
    assert old.stderr.strip() == "deprecated: use `memdb documents ingest`"
    assert json.loads(old.stdout)["counts"] == {"created": 1}

    listing = run(fresh_db, "documents", "--json")  # the group took the old command's name
    assert listing.stderr.strip() == "deprecated: use `memdb documents list`"
    assert [d["uri"] for d in json.loads(listing.stdout)] == ["kb:one"]

    add(fresh_db, "张三和李四是同事。")
    run(fresh_db, "graph", "link", "--heuristic")
    neighbours = run(fresh_db, "graph", "李四", "--json")
    assert neighbours.stderr.strip() == "deprecated: use `memdb graph neighbors`"
    assert json.loads(neighbours.stdout)["entities"][0]["name"] == "李四"

    turn = run(fresh_db, "session", "add", "s1", "user", "hello", "--json")
    assert turn.stderr.strip() == "deprecated: use `memdb session append`"
    assert json.loads(turn.stdout)["id"] >= 1
    purge = run(fresh_db, "purge", "--json")
    assert purge.stderr.strip() == "deprecated: use `memdb maintenance purge`"
    assert json.loads(purge.stdout) == {"purged": 0}
    assert run(fresh_db, "trace", "--json").stderr.strip() == \
        "deprecated: use `memdb traces list`"


@pytest.mark.parametrize(("old", "new"), [
    (["remove-document", "kb:none"], "documents remove"),
    (["search-documents", "密钥"], "documents search"),
    (["ask", "多久轮换一次密钥？", "--no-llm"], "documents ask"),
    (["link", "--heuristic"], "graph link"),
    (["stats"], "traces stats"),
    (["trace", "--purge"], "traces purge` / `memdb traces erase"),
    (["maintain", "--dry-run"], "maintenance run"),
    (["reembed"], "maintenance reembed"),
    (["pending-embeddings"], "maintenance pending"),
    (["sediment", "--dry-run"], "maintenance sediment"),
    (["classify", "--backfill", "--dry-run"], "maintenance reclassify"),
    (["consolidate", "s1", "--dry-run"], "session consolidate"),
    (["summarize", "s1", "--dry-run"], "session summarize"),
    (["forget-subject", "nobody", "--dry-run"], "subject forget"),
    (["export-subject", "nobody", "EXPORT"], "subject export"),
])
def test_every_old_command_still_runs(module_db: str, tmp_path, old: list[str],
                                      new: str) -> None:
    args = [str(tmp_path / "x.json") if a == "EXPORT" else a for a in old]
    result = run(module_db, *args, "--json")
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines()[0] == f"deprecated: use `memdb {new}`"
    json.loads(result.stdout)

"""The CLI grouped as the store's families (``memdb documents|graph|maintenance|traces|subject
...``), a short ``memdb --help``; the old flat commands are gone (no hidden aliases), and a
mistyped command is answered with suggestions of real, listed commands only."""

from __future__ import annotations

import re

import click
import pytest
from click.testing import CliRunner

from memdb.cli import cli
from memdb.cli._app import Group
from tests.cli_helpers import add, ok_json, run

GROUPS = {"documents", "graph", "maintenance", "traces", "subject", "session", "review"}
OLD = {"ingest", "remove-document", "search-documents", "ask", "link", "trace", "stats",
       "maintain", "purge", "reembed", "pending-embeddings", "export-subject", "forget-subject",
       "sediment", "classify", "consolidate", "summarize"}


def test_help_shows_the_core_verbs_and_the_groups_only() -> None:
    out = CliRunner().invoke(cli, ["--help"]).output
    listed = {line.split()[0] for line in out.split("Commands:")[1].splitlines() if line.strip()}
    assert GROUPS <= listed and {"add", "search", "recall", "get", "context"} <= listed
    assert not OLD & listed
    # (+ the doors of issue 16: mcp, serve, keys; issue 20: ui, report; the job queue: jobs,
    # worker); an image is remembered by `memdb add --file`, not by a command of its own
    assert len(listed) <= 38 and "perceive" not in listed
    assert not OLD & set(cli.commands)  # gone, not hidden


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


def _commands(group: click.Group) -> dict[str, click.Command]:
    found = {}
    for name, command in group.commands.items():
        found[name] = command
        if isinstance(command, click.Group):
            found.update({f"{name} {sub}": c for sub, c in _commands(command).items()})
    return found


def test_no_hidden_commands_are_left() -> None:
    hidden = [name for name, command in _commands(cli).items() if command.hidden]
    assert hidden == []


def suggestions(*args: str) -> list[str]:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 2, result.output
    assert "No such command" in result.stderr
    found = re.search(r"Did you mean (?:one of: )?(.*?)\?\)?$", result.stderr.strip())
    return re.findall(r"'([^']+)'", found.group(1)) if found else []


@pytest.mark.parametrize("args", [["forget"], ["ingest"], ["export-subject"], ["maintain"],
                                  ["trace"], ["classify"], ["session", "add"],
                                  ["documents", "serch"], ["graph", "李四"], ["subjects"]])
def test_typos_and_old_names_suggest_real_listed_commands(args: list[str]) -> None:
    *groups, name = args
    group: click.Group = cli
    for part in groups:
        group = group.commands[part]  # type: ignore[assignment]
    listed = {n for n, c in group.commands.items() if not c.hidden}
    offered = suggestions(*args)
    assert set(offered) <= listed, offered
    assert "forget-subject" not in offered
    if args == ["documents", "serch"]:
        assert offered == ["search"]


def test_suggestions_leave_out_hidden_commands() -> None:
    """Even a hidden command (none is left in memdb) is never offered as a correction."""
    group = Group("tool")
    group.add_command(click.Command("forget-subject", hidden=True, callback=lambda: None))
    group.add_command(click.Command("forget-all", callback=lambda: None))
    sub = group.group("inner")(lambda: None)
    sub.add_command(click.Command("apend", hidden=True, callback=lambda: None))
    sub.add_command(click.Command("append", callback=lambda: None))
    result = CliRunner().invoke(group, ["forget-subjec"])
    assert result.exit_code == 2
    assert "Did you mean 'forget-all'?" in result.stderr and "forget-subject" not in \
        result.stderr
    inner = CliRunner().invoke(group, ["inner", "apen"])
    assert "Did you mean 'append'?" in inner.stderr and "apend'" not in inner.stderr

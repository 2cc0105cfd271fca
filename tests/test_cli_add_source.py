"""`memdb add TEXT` without --source-id: a user_statement (the default) typed on the command
line is recorded as coming from the command line (source_id cli:<UTC time>), so the first
natural `memdb add` is stored; any other source type still needs a source, and the refusal
names --source-id. English and Chinese."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.cli_helpers import ok_json, run

CLI_SOURCE = re.compile(r"cli:(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)\Z")


@pytest.fixture(autouse=True)
def _offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMDB_HOME", str(tmp_path / "memdb-home"))
    for var in ("MEMDB_DSN", "MEMDB_LLM_MODEL", "MEMDB_LLM_BASE_URL"):
        monkeypatch.delenv(var, raising=False)


@pytest.mark.parametrize("text", ["Grace has a dog named Lucky.", "格蕾丝养了一只叫幸运的狗。"])
def test_add_without_a_source_records_the_command_line(fresh_db: str, text: str) -> None:
    before = datetime.now(UTC).replace(microsecond=0)
    added = ok_json(fresh_db, "add", text, "--subject", "grace")
    assert added["outcome"] == "created" and added["created"] is True
    memory = ok_json(fresh_db, "get", added["id"])
    assert memory["content"] == text and memory["source_type"] == "user_statement"
    stamp = CLI_SOURCE.match(memory["source_id"])
    assert stamp, memory["source_id"]
    when = datetime.strptime(stamp.group(1), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    assert before <= when <= datetime.now(UTC)
    plain = run(fresh_db, "add", text, "--subject", "bob")  # the text output too
    assert plain.exit_code == 0 and " created" in plain.stdout, plain.output


def test_a_given_source_id_is_kept(fresh_db: str) -> None:
    added = ok_json(fresh_db, "add", "Grace walks Lucky at seven", "--source-id", "chat-9:1")
    assert ok_json(fresh_db, "get", added["id"])["source_id"] == "chat-9:1"


@pytest.mark.parametrize("text", ["The API rotates keys every 90 days.",
                                  "接口每九十天轮换一次密钥。"])
def test_another_source_type_still_needs_a_source_named_by_the_error(fresh_db: str,
                                                                    text: str) -> None:
    refused = run(fresh_db, "add", text, "--source-type", "document")
    assert refused.exit_code == 1
    assert "no_source" in refused.stderr and "--source-id" in refused.stderr
    assert ok_json(fresh_db, "list") == []


def test_the_gate_command_meets_text_as_add_does(fresh_db: str) -> None:
    decisions = json.loads(run(fresh_db, "gate", "Grace has a dog named Lucky.",
                               "格蕾丝养了一只狗", "--json").stdout)
    assert [d["outcome"] for d in decisions] == ["accepted", "accepted"]
    documents = json.loads(run(fresh_db, "gate", "格蕾丝养了一只狗", "--source-type",
                               "document", "--json").stdout)
    assert documents[0]["outcome"] == "rejected"

"""Helpers for tests of the ``memdb`` CLI: run a command through click's runner against a
database, and read its ``--json`` output."""

from __future__ import annotations

import json
from typing import Any

from click.testing import CliRunner, Result

from memdb.cli import cli


def run(dsn: str, *args: str, input: str | None = None) -> Result:
    """``memdb --dsn DSN ARGS...``; exceptions other than exits propagate."""
    return CliRunner().invoke(cli, ["--dsn", dsn, *args], input=input, catch_exceptions=False)


def ok_json(dsn: str, *args: str) -> Any:
    """The parsed output of ``memdb --dsn DSN ARGS... --json``, which must exit 0."""
    result = run(dsn, *args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def add(dsn: str, text: str, *args: str) -> str:
    """``memdb add --no-gate TEXT ARGS...``, which must create a memory; its id."""
    out = ok_json(dsn, "add", "--no-gate", text, *args)
    assert out["created"] is True
    return out["id"]

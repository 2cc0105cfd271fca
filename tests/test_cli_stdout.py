"""`-` as the output path of every CLI command that writes a file means standard output:
`subject export SUBJECT -`, `subject forget SUBJECT --export -`, `report --out -` (and the
evaluations' `--json -`). The document comes alone on standard output, what the command says
beside it goes to standard error, and no file named `-` is made."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_helpers import add, ok_json, run


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run in an empty folder (a file named `-` would show there), offline."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MEMDB_HOME", str(tmp_path / "memdb-home"))
    for var in ("MEMDB_DSN", "MEMDB_LLM_MODEL", "MEMDB_LLM_BASE_URL"):
        monkeypatch.delenv(var, raising=False)


def test_subject_export_dash_prints_json(fresh_db: str, tmp_path: Path) -> None:
    add(fresh_db, "Grace has a dog named Lucky.", "--subject", "grace")
    add(fresh_db, "格蕾丝的狗叫幸运", "--subject", "grace")
    add(fresh_db, "Bob has a cat", "--subject", "bob")
    result = run(fresh_db, "subject", "export", "grace", "-")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)  # the export alone
    contents = sorted(row["content"] for row in data["tables"]["memories"])
    assert contents == ["Grace has a dog named Lucky.", "格蕾丝的狗叫幸运"]
    assert "exported to standard output" in result.stderr
    assert "memories" in result.stderr  # the counts, beside the document
    as_json = run(fresh_db, "subject", "export", "grace", "-", "--json")
    assert as_json.exit_code == 0, as_json.output
    assert len(json.loads(as_json.stdout)["tables"]["memories"]) == 2
    assert json.loads(as_json.stderr)["rows"]["memories"] == 2
    assert not (tmp_path / "-").exists()
    assert list(tmp_path.iterdir()) == []  # and nothing else left behind


def test_subject_export_to_a_file_is_unchanged(fresh_db: str, tmp_path: Path) -> None:
    add(fresh_db, "Grace walks Lucky at seven", "--subject", "grace")
    out = ok_json(fresh_db, "subject", "export", "grace", "grace.json")
    assert out["path"] == "grace.json" and out["rows"]["memories"] == 1
    assert "Lucky" in (tmp_path / "grace.json").read_text(encoding="utf-8")


def test_subject_forget_export_dash(fresh_db: str, tmp_path: Path) -> None:
    add(fresh_db, "格蕾丝住在上海", "--subject", "grace")
    result = run(fresh_db, "subject", "forget", "grace", "--export", "-", "--yes")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [row["content"] for row in data["tables"]["memories"]] == ["格蕾丝住在上海"]
    assert "erased subject 'grace'" in result.stderr
    assert ok_json(fresh_db, "list", "--subject", "grace") == []
    assert not (tmp_path / "-").exists()


def test_report_out_dash_prints_the_html(fresh_db: str, tmp_path: Path) -> None:
    add(fresh_db, "Grace has a dog named Lucky.", "--subject", "grace")
    result = run(fresh_db, "report", "--out", "-")
    assert result.exit_code == 0, result.output
    assert result.stdout.lstrip().lower().startswith("<!doctype html")
    assert "data:image/png;base64," in result.stdout  # self-contained
    assert "report.html on standard output" in result.stderr
    assert list(tmp_path.iterdir()) == []

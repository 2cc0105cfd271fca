"""Ingest never follows a symlink out of the folder it was given (unless told to): a link to a
secret file, a link to a secret folder and a chain of links that ends outside are skipped and
reported ``outside_root``; a link that stays inside is read. The secret's marker (English and
Chinese) is then in no column of any table of schema memdb. Through the Python API and the CLI.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import psycopg
import pytest

from memdb import MemoryStore
from tests.cli_helpers import run
from tests.test_ingest import HashEmbedder

MARK_EN = "Qzvsecretmarker42"
MARK_ZH = "机密钥匙獬豸"


@pytest.fixture
def hstore(fresh_db):
    with MemoryStore(fresh_db, embedder=HashEmbedder()) as s:
        yield s


def _secret_text(name: str) -> str:
    return (f"# {name}\n\nPRIVATE KEY {MARK_EN} do not share.\n\n"
            f"## 私钥\n\n这是私钥，{MARK_ZH}，不要外传。\n")


def _layout(tmp: Path) -> dict[str, Path]:
    """notes/ (the folder ingested) with regular files in English and Chinese, and links:
    key.md -> a secret file outside; 机密/ -> a secret folder outside; chain.md -> hop.md
    (outside) -> the secret file; 笔记链接.md -> a file inside notes/sub; deep/sub-link ->
    the secret folder, one level down."""
    secrets = tmp / "secrets"
    (secrets / "vault").mkdir(parents=True)
    secret_file = secrets / "id_ed25519.md"
    secret_file.write_text(_secret_text("id_ed25519"), encoding="utf-8")
    (secrets / "vault" / "密码.md").write_text(_secret_text("密码本"), encoding="utf-8")
    (secrets / "vault" / "passwords.txt").write_text(_secret_text("passwords"), encoding="utf-8")

    notes = tmp / "notes"
    (notes / "sub").mkdir(parents=True)
    (notes / "deep").mkdir()
    (notes / "plan.md").write_text("# Plan\n\nShip the billing service on Friday.\n",
                                   encoding="utf-8")
    (notes / "sub" / "会议.md").write_text("# 会议记录\n\n周五发布计费服务。\n", encoding="utf-8")
    os.symlink(secret_file, notes / "key.md")
    os.symlink(secrets / "vault", notes / "机密")
    hop = tmp / "hop.md"
    os.symlink(secret_file, hop)
    os.symlink(hop, notes / "chain.md")
    os.symlink(notes / "sub" / "会议.md", notes / "笔记链接.md")
    os.symlink(secrets / "vault", notes / "deep" / "vault-link")
    return {"notes": notes, "secret": secret_file, "vault": secrets / "vault"}


def _marker_columns(dsn: str) -> dict[str, int]:
    """{"table.column": rows} where the secret's marker occurs (any text-like column)."""
    found: dict[str, int] = {}
    with psycopg.connect(dsn) as conn:
        cols = conn.execute("""
            SELECT c.table_name, c.column_name FROM information_schema.columns c
            JOIN information_schema.tables t USING (table_schema, table_name)
            WHERE c.table_schema = 'memdb' AND t.table_type = 'BASE TABLE'
              AND c.udt_name IN ('text', 'jsonb', 'json', '_text', 'tsvector', 'varchar')
            """).fetchall()
        for table, column in cols:
            n = conn.execute(
                f'SELECT count(*) FROM memdb."{table}" WHERE "{column}"::text ILIKE %s '
                f'OR "{column}"::text LIKE %s',
                (f"%{MARK_EN}%", f"%{MARK_ZH}%")).fetchone()[0]
            if n:
                found[f"{table}.{column}"] = n
    return found


def _documents(dsn: str) -> set[str]:
    with psycopg.connect(dsn) as conn:
        return {r[0].rsplit("/", 1)[-1] for r in
                conn.execute("SELECT uri FROM memdb.documents").fetchall()}


def test_links_out_of_the_folder_are_skipped_and_reported(hstore, fresh_db, tmp_path):
    paths = _layout(tmp_path)
    report = hstore.documents.ingest(paths["notes"])
    by_name = {f.uri.rsplit("/", 1)[-1]: f for f in report.files}
    for name in ("key.md", "机密", "chain.md", "vault-link"):
        assert by_name[name].status == "error", by_name[name]
        assert by_name[name].error_kind == "outside_root", by_name[name]
        assert "outside" in by_name[name].error
    # nothing under the linked folders was even listed
    assert not any("密码" in f.uri or "passwords" in f.uri for f in report.files)
    for name in ("plan.md", "会议.md", "笔记链接.md"):  # a link that stays inside is read
        assert by_name[name].status == "created", by_name[name]
    assert _documents(fresh_db) == {"plan.md", "会议.md", "笔记链接.md"}
    assert _marker_columns(fresh_db) == {}
    kinds = [f["error_kind"] for f in report.to_dict()["files"] if "error_kind" in f]
    assert kinds.count("outside_root") == 4


def test_a_link_named_directly_is_confined_to_its_own_folder(hstore, fresh_db, tmp_path):
    paths = _layout(tmp_path)
    notes = paths["notes"]
    report = hstore.documents.ingest([notes / "key.md", notes / "chain.md",
                                      notes / "plan.md"])
    kinds = {f.uri.rsplit("/", 1)[-1]: f.error_kind for f in report.files}
    assert kinds == {"key.md": "outside_root", "chain.md": "outside_root", "plan.md": None}
    # a link to a sibling in its own folder is fine (the folder is the root)
    os.symlink(notes / "plan.md", notes / "plan-link.md")
    again = hstore.documents.ingest(notes / "plan-link.md")
    assert again.files[0].status == "created", again.files[0]
    assert _marker_columns(fresh_db) == {}


def test_following_outside_links_is_an_explicit_option(hstore, fresh_db, tmp_path):
    paths = _layout(tmp_path)
    # an explicit root confines, whatever follow_outside_links says
    confined = hstore.documents.ingest(paths["notes"], root=str(paths["notes"]),
                                       follow_outside_links=True)
    assert {f.error_kind for f in confined.files if f.status == "error"} == {"outside_root"}
    assert _marker_columns(fresh_db) == {}
    report = hstore.documents.ingest(paths["notes"], follow_outside_links=True)
    names = {f.uri.rsplit("/", 1)[-1]: f.status for f in report.files}
    assert names["key.md"] == "created" and names["chain.md"] == "created"
    assert names["密码.md"] == "created" and names["passwords.txt"] == "created"
    assert _marker_columns(fresh_db)  # now the secret is stored, as asked


def test_cli_skips_links_out_of_the_folder(fresh_db, tmp_path, monkeypatch):
    monkeypatch.setenv("MEMDB_HOME", str(tmp_path / "home"))
    paths = _layout(tmp_path)
    result = run(fresh_db, "documents", "ingest", str(paths["notes"]), "--json",
                 "--chunk-tokens", "64")
    assert result.exit_code == 1  # files were refused: reported, and the status says so
    out = json.loads(result.stdout)
    by_name = {f["uri"].rsplit("/", 1)[-1]: f for f in out["files"]}
    assert {n for n, f in by_name.items() if f.get("error_kind") == "outside_root"} == {
        "key.md", "机密", "chain.md", "vault-link"}
    assert by_name["笔记链接.md"]["status"] == "created"
    assert _marker_columns(fresh_db) == {}
    assert _documents(fresh_db) == {"plan.md", "会议.md", "笔记链接.md"}
    table = run(fresh_db, "documents", "ingest", str(paths["notes"]))
    assert "outside_root" in table.stdout
    followed = run(fresh_db, "documents", "ingest", str(paths["notes"]), "--json",
                   "--follow-outside-links", "--chunk-tokens", "64")
    assert followed.exit_code == 0, followed.output
    assert _marker_columns(fresh_db)

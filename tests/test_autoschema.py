"""The embedded server migrates itself on first use (issue 15, gaps): with no DSN and no
$MEMDB_DSN, the first store or CLI command on a fresh data folder creates the schema and says
so once; two processes starting at once on a fresh folder both work and only one migrates; a
server given by $MEMDB_DSN is still never migrated implicitly. Fresh MEMDB_HOMEs of their own
(slow: each starts a new cluster), never the user's data."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner

from memdb import MemoryStore, NotMigrated
from memdb.cli import cli
from memdb.core.migrations import current, head

NOTICE = "memdb: created the schema in {home} (first use)"


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh MEMDB_HOME with no DSN in the environment."""
    path = Path(tempfile.mkdtemp(prefix="memdb-auto-"))
    os.chmod(path, 0o755)
    monkeypatch.setenv("MEMDB_HOME", str(path))
    for var in ("MEMDB_DSN", "MEMDB_ADMIN_DSN"):
        monkeypatch.delenv(var, raising=False)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_first_use_creates_the_schema_once(home, embedder, caplog):
    caplog.set_level(logging.INFO, logger="memdb.schema")
    with MemoryStore(gate=None, embedder=embedder) as store:  # no `memdb migrate` first
        added = store.add("我对花生过敏", subject="alice")       # the space registers itself too
        assert added.created
        assert [m.content for m in store.list()] == ["我对花生过敏"]
        notices = [r.getMessage() for r in caplog.records if r.name == "memdb.schema"]
        assert notices == [NOTICE.format(home=home)]
        assert current(store.db.admin_dsn) == head()
        with MemoryStore(gate=None, embedder=embedder) as again:  # said once
            assert again.count() == 1
        result = CliRunner().invoke(cli, ["count"], catch_exceptions=False)
        assert result.exit_code == 0 and result.stdout.strip() == "1"
        assert "created the schema" not in result.stderr
        assert [r.getMessage() for r in caplog.records if r.name == "memdb.schema"] == notices
        assert store.migrate() == head()  # explicit migrations still work


def test_two_processes_on_a_fresh_folder(home):
    """Two CLI processes start at once on a fresh folder: both write, one migrates and says
    so on stderr, the other waits for it."""
    memdb = shutil.which("memdb") or pytest.skip("the memdb console script is not installed")
    env = {**os.environ, "MEMDB_HOME": str(home)}
    procs = [subprocess.Popen([memdb, "add", "--no-gate", text, "--subject", who],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for text, who in (("我对花生过敏", "alice"), ("I am allergic to peanuts", "bob"))]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert all(" created" in out for out, _err in outs)
    notices = [line for _out, err in outs for line in err.splitlines()
               if "created the schema" in line]
    assert notices == [NOTICE.format(home=home)]
    later = subprocess.run([memdb, "count"], capture_output=True, text=True, env=env,
                           timeout=300)
    assert later.returncode == 0 and later.stdout.strip() == "2"
    assert "created the schema" not in later.stderr


def test_a_memdb_dsn_server_is_never_migrated_implicitly(empty_db, embedder, monkeypatch):
    monkeypatch.setenv("MEMDB_DSN", empty_db)
    with MemoryStore(gate=None, embedder=embedder) as store:
        with pytest.raises(NotMigrated, match="memdb migrate"):
            store.list()
    result = CliRunner().invoke(cli, ["list"], catch_exceptions=False)
    assert result.exit_code == 1 and "memdb migrate" in result.stderr
    with psycopg.connect(empty_db) as conn:
        assert conn.execute("SELECT to_regnamespace('memdb')").fetchone()[0] is None

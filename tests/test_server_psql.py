"""`memdb server psql` sets the tenant it is given (default `default`) for the session, so the
SQL of docs/sql.md runs as pasted as memdb_user: writes pass row-level security and reads find
the rows. A server of its own, in a temporary MEMDB_HOME, never the user's data."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[1] / "docs" / "sql.md"


@pytest.fixture(scope="module")
def env() -> Iterator[dict[str, str]]:
    path = tempfile.mkdtemp(prefix="memdb-psql-")
    os.chmod(path, 0o755)
    env = {k: v for k, v in os.environ.items()
           if k not in ("MEMDB_DSN", "MEMDB_ADMIN_DSN", "MEMDB_TENANT", "PGOPTIONS")}
    env["MEMDB_HOME"] = path
    made = memdb(env, "migrate")
    assert made.returncode == 0, made.stderr
    yield env
    subprocess.run([sys.executable, "-m", "memdb.cli", "server", "stop", "--force"], env=env,
                   capture_output=True, timeout=120)
    shutil.rmtree(path, ignore_errors=True)


def memdb(env: dict[str, str], *args: str, sql: str | None = None
          ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memdb.cli", *args], env=env, input=sql,
                          capture_output=True, text=True, timeout=300)


def doc_statements() -> list[str]:
    """The first SQL block of docs/sql.md, one statement each, without those it marks for
    the admin (run_maintenance over every tenant)."""
    block = re.search(r"```sql\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert block is not None
    statements = re.split(r";[^\n]*\n", block.group(1))
    return [s.strip() for s in statements if s.strip() and "run_maintenance" not in s]


def test_docs_sql_examples_run_as_pasted(env):
    statements = doc_statements()
    assert any("add_memories" in s for s in statements)  # writes
    assert any("list_memories" in s for s in statements)  # reads
    result = memdb(env, "server", "psql", "--", "-X", "-v", "ON_ERROR_STOP=1", "-f", "-",
                   sql=";\n".join(statements) + ";\n")
    assert result.returncode == 0, result.stderr
    assert "row-level security" not in result.stderr
    assert "Alice prefers green tea" in result.stdout  # list_memories('default', ...) finds it
    assert " insert " in result.stdout  # memory_history: the write's history row
    read = memdb(env, "server", "psql", "--", "-XAtc",
                 "SELECT current_setting('memdb.tenant'), content FROM memdb.memories "
                 "WHERE subject = 'a' ORDER BY content")
    assert read.returncode == 0, read.stderr
    assert read.stdout.splitlines() == ["default|我喜欢喝咖啡", "default|我喜欢喝茶"]


def test_tenant_option_confines_the_session(env):
    write = memdb(env, "server", "psql", "--tenant", "acme 公司", "--", "-XAtc",
                  "SELECT outcome FROM memdb.write_memories("
                  "'[{\"tenant\": \"acme 公司\", \"content\": \"acme 的秘密 secret\", "
                  "\"subject\": \"s\"}]')")
    assert write.returncode == 0, write.stderr
    assert write.stdout.split() == ["created"]
    count = "SELECT current_setting('memdb.tenant') || ':' || count(*) FROM memdb.memories " \
            "WHERE content LIKE 'acme%'"
    mine = memdb(env, "server", "psql", "--tenant", "acme 公司", "--", "-XAtc", count)
    assert mine.stdout.strip() == "acme 公司:1", mine.stderr
    other = memdb(env, "server", "psql", "--", "-XAtc", count)  # default tenant: not visible
    assert other.stdout.strip() == "default:0", other.stderr
    globally = memdb(env, "--tenant", "acme 公司", "server", "psql", "--", "-XAtc", count)
    assert globally.stdout.strip() == "acme 公司:1", globally.stderr

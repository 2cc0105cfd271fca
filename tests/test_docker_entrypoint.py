"""docker/entrypoint.sh, the memdb container's start (docker-compose.yml's `memdb` service), run
for real against the test server: it migrates as the admin login, creates the application login
confined to memdb_app, is idempotent, and refuses an application login that would bypass
row-level security. (Docker itself does not run here; the script is what the image runs.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "docker" / "entrypoint.sh"

CHECK = """
import psycopg, os
from memdb import MemoryStore
with MemoryStore(tenant="acme", gate=None) as store:
    store.add(os.environ["NOTE"], subject="ops")
    print("count", store.count())
    with store.db.transaction() as conn:
        print("user", conn.execute("SELECT current_user AS u").fetchone()["u"])
"""


def _login(dsn: str, user: str) -> str:
    params = conninfo_to_dict(dsn)
    params["user"], params["password"] = user, "s3cret-pw"
    return make_conninfo(**params)


def _run(env: dict[str, str], *command: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **env,
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run(["sh", str(SCRIPT), *command], env=full, capture_output=True,
                          text=True, timeout=300, check=False)


def test_the_entrypoint_migrates_and_confines_the_server_login(empty_db):
    login = f"memdb_srv_{os.getpid()}"
    env = {"MEMDB_ADMIN_DSN": empty_db, "MEMDB_DSN": _login(empty_db, login)}
    first = _run({**env, "NOTE": "容器里的记忆"}, sys.executable, "-c", CHECK)
    assert first.returncode == 0, first.stderr
    assert "count 1" in first.stdout and f"user {login}" in first.stdout
    assert "s3cret-pw" not in first.stdout + first.stderr
    with psycopg.connect(empty_db) as conn:
        role = conn.execute("SELECT rolsuper, rolbypassrls, rolcreaterole, "
                            "pg_has_role(rolname, 'memdb_app', 'member') FROM pg_roles "
                            "WHERE rolname = %s", [login]).fetchone()
    assert role == (False, False, False, True)
    again = _run({**env, "NOTE": "a memory written after a restart"},  # each start runs it
                 sys.executable, "-c", CHECK)
    assert again.returncode == 0, again.stderr
    assert "count 2" in again.stdout


def test_the_entrypoint_refuses_a_privileged_server_login(empty_db):
    env = {"MEMDB_ADMIN_DSN": empty_db, "MEMDB_DSN": empty_db}  # the superuser itself
    result = _run(env, "true")
    assert result.returncode != 0
    assert "superuser or bypasses row-level security" in result.stderr


def test_the_entrypoint_needs_both_logins(empty_db):
    result = _run({"MEMDB_ADMIN_DSN": "", "MEMDB_DSN": empty_db}, "true")
    assert result.returncode != 0 and "MEMDB_ADMIN_DSN" in result.stderr

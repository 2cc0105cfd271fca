"""Who the embedded default connects as (issue 14, item 3): with no DSN the data path logs in
as memdb_user (not a superuser, a member of memdb_app), so RESET ROLE inside a store's
transaction gains nothing; migrations run as the superuser. A server of its own, in a
temporary MEMDB_HOME, never the user's data."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator

import psycopg
import pytest
from click.testing import CliRunner
from psycopg.conninfo import conninfo_to_dict
from psycopg.types.json import Jsonb

from memdb import MemoryStore
from memdb.cli import cli
from memdb.core.embedded import EmbeddedServer
from memdb.core.migrations import current, head


@pytest.fixture(scope="module")
def home() -> Iterator[str]:
    """A fresh MEMDB_HOME (no MEMDB_DSN) for this module; its server stops with the last
    handle."""
    path = tempfile.mkdtemp(prefix="memdb-login-")
    os.chmod(path, 0o755)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MEMDB_HOME", path)
        for var in ("MEMDB_DSN", "MEMDB_ADMIN_DSN"):
            mp.delenv(var, raising=False)
        yield path
    shutil.rmtree(path, ignore_errors=True)


def role(conn: psycopg.Connection, name: str) -> dict:
    row = conn.execute(
        "SELECT rolsuper, rolcreatedb, rolcreaterole, rolbypassrls, rolcanlogin, "
        "pg_has_role(rolname, 'memdb_app', 'MEMBER') AS app FROM pg_roles WHERE rolname = %s",
        (name,)).fetchone()
    return dict(zip(("super", "createdb", "createrole", "bypassrls", "login", "app"), row,
                    strict=True))


def test_default_store_is_not_a_superuser(home):
    """The newcomer's path on a fresh home: open (migrates itself), write; then the issue's
    probe."""
    with MemoryStore(gate=None) as store:
        assert conninfo_to_dict(store.db.dsn)["user"] == "memdb_user"
        assert conninfo_to_dict(store.db.admin_dsn)["user"] == "postgres"
        assert store.list() == []  # the embedded server made its schema on first use
        store.migrate()  # still works: as the admin; memdb_app stays granted to memdb_user
        assert current() == head()  # migrations: the superuser, resolved on their own
        admin = store.db._server.dsn()
        with psycopg.connect(admin, autocommit=True) as conn:
            assert role(conn, "memdb_user") == {"super": False, "createdb": False,
                                                "createrole": False, "bypassrls": False,
                                                "login": True, "app": True}
            conn.execute("SELECT memdb.add_memories(%s)", (Jsonb([
                {"tenant": "acme", "subject": "s", "content": "acme 的秘密 secret"},
                {"tenant": "default", "subject": "s", "content": "default 的笔记 note"}]),))
        assert [m.content for m in store.list()] == ["default 的笔记 note"]
        with store.core.transaction() as conn:  # a DAL transaction, then the attacker's move
            conn.execute("RESET ROLE")
            row = conn.execute("SELECT current_user, rolsuper FROM pg_roles "
                               "WHERE rolname = current_user").fetchone()
            assert (row["current_user"], row["rolsuper"]) == ("memdb_user", False)
            tenants = conn.execute("SELECT tenant FROM memdb.memories").fetchall()
            assert [r["tenant"] for r in tenants] == ["default"]  # row-level security holds
            conn.execute("SELECT set_config('memdb.tenant', '', true)")
            assert conn.execute("SELECT count(*) AS n FROM memdb.memories").fetchone()["n"] == 0
            conn.execute("SET LOCAL row_security = off")
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute("SELECT count(*) FROM memdb.memories")


def test_cli_migrate_and_login_keep_working(home):
    """`memdb migrate` with no DSN migrates as the admin and leaves memdb_user a member of
    memdb_app, also when the grant was lost; the data commands then log in as memdb_user."""
    server = EmbeddedServer()
    server.start()
    try:
        with psycopg.connect(server.dsn(), autocommit=True) as conn:
            conn.execute("REVOKE memdb_app FROM memdb_user")
            assert role(conn, "memdb_user")["app"] is False
        result = CliRunner().invoke(cli, ["migrate", "--json"], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        with psycopg.connect(server.dsn(), autocommit=True) as conn:
            assert role(conn, "memdb_user")["app"] is True
        result = CliRunner().invoke(cli, ["count", "--json"], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        with psycopg.connect(server.app_dsn(), autocommit=True) as conn:
            assert conn.execute("SELECT current_user").fetchone()[0] == "memdb_user"
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute("CREATE DATABASE memdb_not_allowed")
    finally:
        server.stop()


def test_memdb_user_is_kept_unprivileged(home):
    """A memdb_user someone made a superuser is put back at the next start."""
    server = EmbeddedServer()
    server.start()
    try:
        with psycopg.connect(server.dsn(), autocommit=True) as conn:
            conn.execute("ALTER ROLE memdb_user SUPERUSER BYPASSRLS")
        server.ensure_login()
        with psycopg.connect(server.dsn(), autocommit=True) as conn:
            assert role(conn, "memdb_user")["super"] is False
            assert role(conn, "memdb_user")["bypassrls"] is False
    finally:
        server.stop()


@pytest.mark.parametrize(("args", "user"), [([], "memdb_user"), (["--admin"], "postgres")])
def test_server_psql_reaches_each_login(home, args, user):
    """`memdb server psql [--admin] -- ARGS` runs the bundled psql as either login."""
    memdb = shutil.which("memdb") or pytest.skip("the memdb console script is not installed")
    out = subprocess.run([memdb, "server", "psql", *args, "--", "-Atc",
                          "SELECT current_user || ' ' || current_database()"],
                         capture_output=True, text=True, timeout=120, env=os.environ.copy())
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"{user} memdb"

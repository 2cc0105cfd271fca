"""Where memdb's PostgreSQL is and how to talk to it.

Two logins. The data path (:func:`resolve_dsn`, ``MemoryStore``): an explicit ``dsn``
argument, else ``$MEMDB_DSN``, else the embedded server's non-superuser login ``memdb_user``.
The admin (:func:`resolve_admin_dsn`: migrations, :class:`memdb.MemoryAdmin`): an explicit
``dsn``, else ``$MEMDB_ADMIN_DSN``, else ``$MEMDB_DSN``, else the embedded server's superuser.
The pool owns every connection setting memdb relies on (pgvector types, dict rows, custom
plans), so callers never configure a connection themselves.
"""

from __future__ import annotations

import contextlib
import functools
import os
import select
import threading
from collections.abc import Iterator
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from . import bridge
from . import sql as sql_files
from ._async_pg import AsyncPool
from ._async_pg import Connection as AsyncBackedConnection
from ._novector import refuse_vectors
from .embedded import EmbeddedServer
from .errors import DatabaseUnavailable, MemdbError, NotMigrated, UnsupportedServer, translate
from .masking import redact, redact_dsn
from .servers import resolve_admin_dsn, resolve_dsn

__all__ = ["Database", "resolve_dsn", "resolve_admin_dsn", "MIN_SERVER_VERSION"]

MIN_SERVER_VERSION = 150000
APPLICATION_NAME = "memdb"  # in pg_stat_activity, unless the DSN names another


def _configure(conn: psycopg.Connection) -> None:
    conn.row_factory = dict_row  # type: ignore[assignment]
    # Plans are made with the real parameter values, so memdb.matches() folds filters away.
    conn.prepare_threshold = None
    found = conn.execute(sql_files.query("connection_features")).fetchone()
    # a Citus coordinator: transaction settings must be SET LOCAL (see set_local)
    getattr(conn, "_conn", conn)._memdb_citus = bool(found["citus"])
    if found["vector"]:
        from pgvector.psycopg import register_vector, register_vector_async

        if isinstance(conn, AsyncBackedConnection):
            bridge.wait(register_vector_async(conn._conn))
        else:
            register_vector(conn)
    else:  # a database memdb never migrated: its vectors raise NotMigrated, not "cannot adapt"
        refuse_vectors(getattr(conn, "_conn", conn))
    conn.commit()


def _has_input(conn: psycopg.Connection) -> bool:
    """Whether an idle connection's socket is readable (or unusable) without waiting."""
    try:
        return bool(select.select([conn.fileno()], [], [], 0)[0])
    except (OSError, ValueError, psycopg.Error):
        return True


def on_citus(conn: psycopg.Connection) -> bool:
    """Whether ``conn`` (a pooled connection) is to a database with the citus extension."""
    return bool(getattr(conn, "_memdb_citus", False))


@functools.cache
def _citus_statements(name: str) -> list[sql.SQL]:
    """The statements of named query ``<name>_citus`` (comment lines dropped)."""
    text = "\n".join(line for line in sql_files.query(name + "_citus").splitlines()
                     if not line.lstrip().startswith("--"))
    return [sql.SQL(part.strip()) for part in text.split(";") if part.strip()]  # type: ignore[arg-type]


def set_local(conn: psycopg.Connection, name: str, params: dict[str, str]) -> list[Any]:
    """Set transaction-local settings with named query ``name`` (``set_config(..., true)``
    calls: one statement). On Citus its ``<name>_citus`` twin runs instead: ``SET LOCAL``
    statements with the values as quoted literals, one at a time (Citus passes a SET on to the
    workers as the text it came in, which must be that statement alone). Citus passes SET
    LOCAL on to the workers a transaction uses (``citus.propagate_set_commands = 'local'``,
    set by the twin) and does not pass on set_config: row-level security and the history
    trigger on the workers would see no tenant, subject, actor or reason. Returns the
    statements' cursors (in pipeline mode their results arrive at the next sync)."""
    if on_citus(conn):
        # the history trigger's default actor is session_user: on a worker that is the role
        # Citus connects as, so the coordinator's login is passed on instead
        params = {**params, "actor": params.get("actor") or conn.info.user}
        literals = {key: sql.Literal(val) for key, val in params.items()}
        return [conn.execute(statement.format(**literals))
                for statement in _citus_statements(name)]
    return [conn.execute(sql_files.query(name), params)]


def _isolate(conn: psycopg.Connection, tenant: str, subject: str | None) -> list[Any]:
    """Confine the transaction to ``tenant`` (and ``subject``): role memdb_app and the
    row-level-security keys, set LOCAL (they end with the transaction, however it ends)."""
    return set_local(conn, "set_isolation", {"tenant": tenant, "subject": subject or ""})


def _raise_if_unmigrated(exc: psycopg.Error) -> None:
    """NotMigrated for the isolation settings' error on a database without role memdb_app."""
    if getattr(exc, "sqlstate", None) in ("22023", "42704"):
        raise NotMigrated("role memdb_app is missing (is the schema migrated? "
                          "run `memdb migrate`)") from exc


@contextlib.contextmanager
def _pipelined(conn: psycopg.Connection, tenant: str | None,
               subject: str | None, snapshot: bool = False) -> Iterator[None]:
    """One transaction in one round trip (see :meth:`Database.transaction`).

    BEGIN and COMMIT are memdb's own statements in autocommit mode (psycopg's transaction()
    would sync after its BEGIN). The isolation settings are the transaction's first statements:
    if they fail, the server skips everything after them up to the sync, so nothing runs
    without them. Whatever ends the block (a server error, which leaves the transaction
    aborted, or a client-side one before COMMIT was queued), a transaction still open after the
    sync is rolled back here before the connection goes back to the pool, and with it the
    transaction-local settings. A 22023 / 42704 error is NotMigrated only when it is the
    settings' own: their cursors then have no result (SQL-side checks raise 22023 too)."""
    settings: list[Any] = []
    conn.autocommit = True
    try:
        with conn.pipeline():
            conn.execute(sql_files.query("begin_snapshot" if snapshot else "begin_transaction"))
            if tenant is not None:
                settings = _isolate(conn, tenant, subject)
            try:
                yield
            except psycopg.Rollback:
                conn.execute(sql_files.query("rollback_transaction"))
            else:
                conn.execute(sql_files.query("commit_transaction"))
    except psycopg.Error as exc:
        if any(cursor.pgresult is None for cursor in settings):
            _raise_if_unmigrated(exc)
        raise
    finally:
        with contextlib.suppress(psycopg.Error):  # broken: the pool discards it
            if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                conn.rollback()
            conn.autocommit = False


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


def _dsn_params(dsn: str) -> dict[str, object]:
    try:
        return conninfo_to_dict(dsn)
    except psycopg.Error:
        return {}


class Database:
    """A connection pool to one memdb database (embedded unless a DSN is given).

    Connection loss is a :class:`~memdb.core.errors.DatabaseUnavailable` for the call it hits;
    the broken connection leaves the pool, and pooled connections are checked before each
    use, so connections killed while idle never surface as errors. No message or ``repr()``
    shows the DSN's password.
    """

    def __init__(self, dsn: str | None = None, *, min_size: int = 1, max_size: int = 4,
                 admin: bool = False, driver: str = "sync", timeout: float = 30.0) -> None:
        if driver not in ("sync", "async"):
            raise ValueError(f"driver must be 'sync' or 'async', got {driver!r}")
        self.driver = driver
        self._requested, self._admin = dsn, admin
        self._explicit = bool(dsn)
        self._min_size, self._max_size = min_size, max_size
        self._timeout = timeout  # opening the pool, and waiting for a pooled connection
        self._pool: ConnectionPool | AsyncPool | None = None
        self._pool_lock = threading.Lock()
        self.dsn = ""
        self._server: EmbeddedServer | None = None
        self._secrets: list[str] = []
        self._connect_kwargs: dict[str, object] = {
            "connect_timeout": max(2, min(10, int(timeout)))}  # libpq's least is 2 s
        if driver == "sync":
            self.connect()

    def connect(self) -> None:
        """Find the server (starting the embedded one when no DSN is given) and check it is
        PostgreSQL 15+ with pgvector. The sync driver does this on construction; the async
        driver in :meth:`AsyncMemoryStore.open`, in a worker thread. Idempotent."""
        if self.dsn:
            return
        dsn, self._server = (resolve_admin_dsn if self._admin else resolve_dsn)(self._requested)
        params = _dsn_params(dsn)
        self._secrets = [str(params["password"])] if params.get("password") else []
        if not params.get("application_name"):
            self._connect_kwargs["application_name"] = APPLICATION_NAME
        try:
            with psycopg.connect(dsn, autocommit=True, **self._connect_kwargs) as conn:
                check_server(conn)
        except psycopg.Error as exc:
            # from None: libpq's text (redacted here) is all there is to say, and a DSN parse
            # error may quote the DSN, so the raw exception is not chained
            raise self._redacted(translate(exc)) from None
        if self._server is not None:  # memdb's own server migrates itself on first use
            from .autoschema import ensure_schema

            ensure_schema(self._server)
        self.dsn = dsn

    def __repr__(self) -> str:
        return f"Database(dsn={redact_dsn(self.dsn)!r}, max_size={self._max_size})"

    @property
    def admin_dsn(self) -> str:
        """The login that migrates this database: the embedded server's superuser, else an
        explicit ``dsn`` itself, else ``$MEMDB_ADMIN_DSN``, else this DSN ($MEMDB_DSN)."""
        if self._server is not None:
            return self._server.dsn()
        if self._explicit:
            return self.dsn
        return os.environ.get("MEMDB_ADMIN_DSN") or self.dsn

    def ensure_app_login(self) -> None:
        """On the embedded server, (re-)grant ``memdb_app`` to its data-path login (after a
        migration created the role); elsewhere nothing (grant it to your app login)."""
        if self._server is not None:
            self._server.ensure_login()

    def _redacted(self, error: MemdbError) -> MemdbError:
        """``error`` with the DSN's password (and any key-like text) masked in its message."""
        message = redact(str(error), self._secrets)
        if message != str(error):
            error.args = (message,)
        return error

    @property
    def pool(self) -> ConnectionPool | AsyncPool:
        """The pool, opened on first use (once, however many threads or tasks ask at once)."""
        pool = self._pool
        if pool is not None:
            return pool
        if self.driver == "async":  # no thread lock: greenlets switch only at I/O
            if not bridge.active():
                raise RuntimeError("this Database belongs to the async driver: use it through "
                                   "AsyncMemoryStore's coroutines")
            if not self.dsn:
                bridge.blocking(self.connect)
            pool = self._pool = self._new_pool(AsyncPool)  # visible at once: others wait on it
            self._open(pool)
            return pool
        with self._pool_lock:
            if self._pool is not None:
                return self._pool
            pool = self._new_pool(ConnectionPool)
            self._open(pool)
            self._pool = pool  # published only once open: other threads never see it half-made
            return pool

    def _new_pool(self, kind: type) -> ConnectionPool | AsyncPool:
        return kind(self.dsn, min_size=self._min_size, max_size=self._max_size,
                    configure=_configure, kwargs=dict(self._connect_kwargs), open=False,
                    timeout=self._timeout)

    def _open(self, pool: ConnectionPool | AsyncPool) -> None:
        try:
            pool.open(wait=True, timeout=self._timeout)
        except Exception as exc:
            if self._pool is pool:
                self._pool = None
            pool.close()  # else its workers keep reconnecting in the background
            raise self._redacted(DatabaseUnavailable(
                f"could not open a connection pool: {exc}")) from None

    def reset(self) -> None:
        """Close pooled connections, so new ones see types created since (after a migration)."""
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    @contextlib.contextmanager
    def _connection(self) -> Iterator[psycopg.Connection]:
        """A pooled connection known to be alive, returned to the pool afterwards.

        A connection whose socket has something to read while it sat idle in the pool (a
        terminated backend's FATAL message, the end of the stream of a server that went away)
        is probed (an empty query) before use - one round trip only then, not on every call; a
        dead one is discarded and the next one tried at once. (psycopg_pool's own ``check=``
        backs off 1, 2, 4... seconds between dead connections: seven seconds for a pool of four
        killed at once.)
        """
        pool = self.pool
        for attempt in range(self._max_size + 1):
            conn = pool.getconn()
            try:
                if _has_input(conn):
                    type(pool).check_connection(conn)
            except psycopg.OperationalError:
                pool.putconn(conn)  # broken: the pool discards it and opens a replacement
                if attempt == self._max_size:
                    raise
                continue
            except BaseException:
                pool.putconn(conn)
                raise
            try:
                yield conn
            finally:
                pool.putconn(conn)
            return

    @contextlib.contextmanager
    def transaction(self, *, tenant: str | None = None, subject: str | None = None,
                    pipelined: bool = False,
                    snapshot: bool = False) -> Iterator[psycopg.Connection]:
        """A pooled connection inside one transaction; driver errors become memdb errors.

        With ``tenant``, the transaction runs as the application role ``memdb_app`` with
        ``memdb.tenant`` (and ``memdb.subject``, when given) set LOCAL: row-level security then
        confines every statement to that tenant's (and subject's) rows. Without it, the
        transaction runs as the login: on the data path (``memdb_user`` or an app login) that
        sees nothing; on :class:`memdb.MemoryAdmin`'s, the admin.

        ``pipelined``: the block's statements are only queued (psycopg's pipeline mode), and
        BEGIN, the settings, the statements and COMMIT go to the server together: one round
        trip. Read their cursors after the block (a fetch inside it costs a round trip of its
        own); ``raise psycopg.Rollback()`` in the block ends it with ROLLBACK instead. With a
        libpq older than 14 (no pipeline mode) it is an ordinary transaction: the same results.

        ``snapshot``: the transaction is REPEATABLE READ, so all its statements see one
        snapshot of the data (a search whose keyword routes run ahead of its fusion statement).
        """
        try:
            with self._connection() as conn:
                if pipelined and psycopg.Pipeline.is_supported():  # libpq 14+
                    with _pipelined(conn, tenant, subject, snapshot):
                        yield conn
                    return
                with conn.transaction():
                    if snapshot:  # before any other statement of the transaction
                        conn.execute(sql_files.query("set_snapshot"))
                    if tenant is not None:
                        try:
                            _isolate(conn, tenant, subject)
                        except psycopg.Error as exc:
                            _raise_if_unmigrated(exc)
                            raise
                    yield conn
        except psycopg.Error as exc:
            raise self._redacted(translate(exc)) from exc

    @contextlib.contextmanager
    def statement(self) -> Iterator[psycopg.Connection]:
        """A pooled connection in autocommit mode, for one statement that needs neither a
        tenant nor a transaction block of its own (each statement commits by itself): two
        round trips (BEGIN, COMMIT) fewer than :meth:`transaction`. The API-key check of the
        doors runs here. Driver errors become memdb errors."""
        try:
            with self._connection() as conn:
                conn.autocommit = True
                try:
                    yield conn
                finally:
                    with contextlib.suppress(psycopg.Error):  # broken: the pool discards it
                        conn.autocommit = False
        except psycopg.Error as exc:
            raise self._redacted(translate(exc)) from exc

    def close(self) -> None:
        self.reset()
        if self._server is not None:
            bridge.blocking(self._server.stop)
            self._server = None

"""psycopg's async pool, connections and cursors with the synchronous faces memdb's code uses.

Under the async driver (:mod:`memdb.core.bridge`), :class:`memdb.core.connection.Database` holds an
:class:`AsyncPool` instead of a ``ConnectionPool``; every call below hands the underlying
coroutine to the event loop with :func:`memdb.core.bridge.wait`, so the queries run on psycopg's
``AsyncConnection``s while the operation's code reads as plain synchronous psycopg.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool

from .bridge import run, sync_context, wait

__all__ = ["AsyncPool", "Cursor", "Connection"]


class Cursor:
    """An ``AsyncCursor`` read synchronously."""

    __slots__ = ("_cursor",)

    def __init__(self, cursor: psycopg.AsyncCursor) -> None:
        self._cursor = cursor

    def fetchone(self) -> Any:
        return wait(self._cursor.fetchone())

    def fetchall(self) -> list[Any]:
        return wait(self._cursor.fetchall())

    def fetchmany(self, size: int = 0) -> list[Any]:
        return wait(self._cursor.fetchmany(size))

    def __iter__(self) -> Iterator[Any]:
        return iter(self.fetchall())

    @property
    def rowcount(self) -> int:
        return self._cursor.rowcount

    @property
    def description(self) -> Any:
        return self._cursor.description

    @property
    def statusmessage(self) -> str | None:
        return self._cursor.statusmessage

    @property
    def pgresult(self) -> Any:
        return self._cursor.pgresult


class Connection:
    """An ``AsyncConnection`` used synchronously (execute, transaction, pipeline, commit,
    rollback); other attributes (``info``, ``adapters``, ``closed``...) are the connection's
    own."""

    __slots__ = ("_conn",)

    def __init__(self, conn: psycopg.AsyncConnection) -> None:
        self._conn = conn

    def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Cursor:
        return Cursor(wait(self._conn.execute(query, params, **kwargs)))

    def transaction(self, *args: Any, **kwargs: Any) -> Any:
        return sync_context(self._conn.transaction(*args, **kwargs))

    def pipeline(self) -> Any:
        return sync_context(self._conn.pipeline())

    def commit(self) -> None:
        wait(self._conn.commit())

    def rollback(self) -> None:
        wait(self._conn.rollback())

    @property
    def row_factory(self) -> Any:
        return self._conn.row_factory

    @row_factory.setter
    def row_factory(self, value: Any) -> None:
        self._conn.row_factory = value

    @property
    def prepare_threshold(self) -> int | None:
        return self._conn.prepare_threshold

    @prepare_threshold.setter
    def prepare_threshold(self, value: int | None) -> None:
        self._conn.prepare_threshold = value

    @property
    def autocommit(self) -> bool:
        return self._conn.autocommit

    @autocommit.setter
    def autocommit(self, value: bool) -> None:
        wait(self._conn.set_autocommit(value))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


class AsyncPool:
    """An ``AsyncConnectionPool`` with ``ConnectionPool``'s synchronous methods."""

    def __init__(self, conninfo: str, *, configure: Any, **kwargs: Any) -> None:
        async def configure_async(conn: psycopg.AsyncConnection) -> None:
            await run(configure, Connection(conn))  # the one (synchronous) configure

        self._pool = AsyncConnectionPool(conninfo, configure=configure_async, **kwargs)

    def open(self, wait: bool = True, timeout: float = 30.0) -> None:  # noqa: A002
        _wait(self._pool.open(wait=wait, timeout=timeout))

    def close(self) -> None:
        _wait(self._pool.close())

    def getconn(self) -> Connection:
        return Connection(_wait(self._pool.getconn()))

    def putconn(self, conn: Connection) -> None:
        _wait(self._pool.putconn(conn._conn))

    @staticmethod
    def check_connection(conn: Connection) -> None:
        _wait(AsyncConnectionPool.check_connection(conn._conn))


_wait = wait  # (``open`` has a parameter named ``wait``)

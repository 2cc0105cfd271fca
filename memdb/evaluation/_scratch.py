"""A throw-away, migrated memdb database for one evaluation run.

Created as the admin login (``dsn``, else ``$MEMDB_ADMIN_DSN``, ``$MEMDB_DSN``, the embedded
server's superuser) as ``memdb_eval_<random>`` from a connection to its 'postgres' database,
migrated with
:func:`memdb.migrations.upgrade`, and dropped when the block ends, also on error.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Iterator

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from ..connection import resolve_admin_dsn
from ..migrations import upgrade

__all__ = ["scratch_database", "with_dbname", "PREFIX"]

PREFIX = "memdb_eval_"


def with_dbname(dsn: str, dbname: str) -> str:
    """``dsn`` pointed at database ``dbname`` on the same server."""
    params = conninfo_to_dict(dsn)
    params["dbname"] = dbname
    return make_conninfo(**params)


@contextlib.contextmanager
def scratch_database(dsn: str | None = None) -> Iterator[str]:
    """Yields the DSN of a fresh, migrated database; drops it afterwards."""
    server_dsn, server = resolve_admin_dsn(dsn)
    maintenance = with_dbname(server_dsn, "postgres")
    name = PREFIX + secrets.token_hex(6)
    try:
        with psycopg.connect(maintenance, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        try:
            scratch = with_dbname(server_dsn, name)
            upgrade(scratch)
            yield scratch
        finally:
            with psycopg.connect(maintenance, autocommit=True) as conn:
                conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
                             .format(sql.Identifier(name)))
    finally:
        if server is not None:
            server.stop()

"""A real, separate LOGIN role granted memdb_app, for tests that probe what an application
login may do (not the superuser with SET ROLE): created on the test server, dropped after."""

from __future__ import annotations

import contextlib
import itertools
import os
from collections.abc import Iterator

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

_counter = itertools.count()


@contextlib.contextmanager
def app_login(admin_dsn: str, prefix: str = "memdb_test_app") -> Iterator[str]:
    """A DSN for a new LOGIN role (INHERIT, a member of memdb_app, nothing else) on the
    database of ``admin_dsn``; its sessions are ended and the role dropped on exit."""
    name = f"{prefix}_{os.getpid()}_{next(_counter)}"
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {name} LOGIN INHERIT")
        conn.execute(f"GRANT memdb_app TO {name}")
    try:
        yield make_conninfo(**{**conninfo_to_dict(admin_dsn), "user": name})
    finally:
        with psycopg.connect(admin_dsn, autocommit=True) as conn:
            conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                         " WHERE usename = %s", (name,))
            conn.execute(f"DROP ROLE {name}")

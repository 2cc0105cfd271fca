"""The test databases made ahead (tests/db_copies.py): each taken copy is new, its own and a
copy of the migrated template; a given-back copy is dropped; close() drops the copies nobody
took and reports a failure of the thread instead of hiding it."""

from __future__ import annotations

import time

import psycopg
import pytest
from conftest import TEMPLATE
from psycopg.conninfo import make_conninfo

from tests.db_copies import TemplateCopies, create_database, drop_database


def _databases(admin: str, prefix: str) -> set[str]:
    with psycopg.connect(admin, autocommit=True) as conn:
        return {r[0] for r in conn.execute(
            "SELECT datname FROM pg_database WHERE starts_with(datname, %s)", (prefix,))}


def _eventually(check, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return check()


def test_copies_are_new_distinct_migrated_and_dropped_behind(server_dsn, template_dsn):
    prefix = "memdb_copytest"
    copies = TemplateCopies(server_dsn, TEMPLATE, prefix, ahead=2)
    try:
        first, second = copies.take(), copies.take()
        assert first != second and {first, second} <= _databases(server_dsn, prefix)
        # a copy is the migrated template: memdb's schema, no memory; a write to one copy
        # is not seen by the next
        with psycopg.connect(make_conninfo(server_dsn, dbname=first), autocommit=True) as conn:
            assert conn.execute("SELECT count(*) FROM memdb.memories").fetchone()[0] == 0
            conn.execute("CREATE TABLE public.written_here (x int)")
        with psycopg.connect(make_conninfo(server_dsn, dbname=second), autocommit=True) as conn:
            assert conn.execute("SELECT to_regclass('public.written_here')").fetchone()[0] is None
        copies.give_back(first)
        assert _eventually(lambda: first not in _databases(server_dsn, prefix))
        assert _eventually(lambda: len(_databases(server_dsn, prefix) - {second}) == 2)
    finally:
        copies.close()
    assert _databases(server_dsn, prefix) == {second}  # taken, not given back: the taker's
    drop_database(server_dsn, second)


def test_a_failed_copy_is_reported_at_close(server_dsn):
    prefix = "memdb_copyfail"
    copies = TemplateCopies(server_dsn, "memdb_no_such_template", prefix, ahead=1)
    with pytest.raises(psycopg.errors.InvalidCatalogName):
        copies.take()  # nothing ready (the thread failed too): made now, and that fails loudly
    with pytest.raises(RuntimeError, match="making or dropping a test database failed"):
        copies.close()
    assert _databases(server_dsn, prefix) == set()


def test_create_and_drop_database(server_dsn):
    name = "memdb_copytest_plain"
    create_database(server_dsn, name)
    assert _databases(server_dsn, name) == {name}
    drop_database(server_dsn, name)
    drop_database(server_dsn, name)  # IF EXISTS: a second drop is no error
    assert _databases(server_dsn, name) == set()

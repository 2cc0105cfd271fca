"""What both doors share (memdb._doors): the key checker, on the one synchronous
memdb.families.keys.lookup run under the async driver, and Database.statement, the autocommit
connection the check runs on (no BEGIN/COMMIT round trips). The store cache is tested through
the MCP door (tests/test_mcp.py) and the HTTP door (tests/test_http.py)."""

from __future__ import annotations

import asyncio

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict
from psycopg.pq import TransactionStatus

from memdb._doors import KeyChecker
from memdb.core import bridge
from memdb.core.connection import Database
from memdb.core.errors import DatabaseUnavailable
from memdb.families.keys import create_key, revoke_key
from tests.app_login import app_login


def _statement_then_transaction(db: Database) -> list[object]:
    seen: list[object] = []
    with db.statement() as conn:
        conn.execute("CREATE TEMP TABLE IF NOT EXISTS doors_probe (n int)")
        conn.execute("INSERT INTO doors_probe VALUES (1)")
        # each statement committed by itself: no transaction block left open
        seen += [conn.autocommit, conn.info.transaction_status]
    with db.transaction() as conn:  # the same pooled connection, transactional again
        conn.execute("SELECT 1")
        seen += [conn.autocommit, conn.info.transaction_status]
    return seen


@pytest.mark.parametrize("driver", ["sync", "async"], indirect=True)
def test_statement_runs_in_autocommit_and_hands_back_a_transactional_connection(fresh_db,
                                                                                driver):
    expected = [True, TransactionStatus.IDLE, False, TransactionStatus.INTRANS]
    if driver == "sync":
        db = Database(fresh_db, max_size=1)
        try:
            assert _statement_then_transaction(db) == expected
        finally:
            db.close()
        return

    async def scenario() -> list[object]:
        db = Database(fresh_db, max_size=1, driver="async")
        try:
            return await bridge.run(_statement_then_transaction, db)
        finally:
            await bridge.run(db.close)

    assert asyncio.run(scenario()) == expected


def test_key_checker_binds_keys_and_survives_dropped_connections(fresh_db):
    alice = create_key(fresh_db, tenant="acme", subject="alice")
    root = create_key(fresh_db, is_admin=True)
    gone = create_key(fresh_db, tenant="acme")
    revoke_key(fresh_db, gone.info.key_id)

    async def scenario(app_dsn: str) -> None:
        checker = KeyChecker(app_dsn, max_size=2)
        try:
            found = await checker.check(alice.key)
            assert (found.tenant, found.subject, found.is_admin) == ("acme", "alice", False)
            assert (await checker.check(root.key)).is_admin
            assert await checker.check(gone.key) is None
            for garbage in (None, "", "Bearer x", "mdb_" + "x" * 12 + "_" + "y" * 43):
                assert await checker.check(garbage) is None
            # concurrent checks share the small pool
            found = await asyncio.gather(*(checker.check(alice.key) for _ in range(20)))
            assert {f.key_id for f in found} == {alice.info.key_id}
            # the server ends every connection of the checker: the next checks still work
            # (the 5 s timeout waits for the backends to exit: pg_terminate_backend only
            # signals, and a check racing a backend that has not ended yet fails)
            login = conninfo_to_dict(app_dsn)["user"]
            with psycopg.connect(fresh_db, autocommit=True) as admin:
                ended = admin.execute("SELECT count(pg_terminate_backend(pid, 5000))"
                                      " FROM pg_stat_activity WHERE usename = %s",
                                      (login,)).fetchone()[0]
            assert ended >= 1
            assert (await checker.check(alice.key)).subject == "alice"
        finally:
            await checker.close()

    with app_login(fresh_db) as app_dsn:
        asyncio.run(scenario(app_dsn))


def test_key_checker_without_a_database_is_unavailable_without_the_password():
    async def scenario() -> None:
        checker = KeyChecker("postgresql://memdb:s3cretpw@127.0.0.1:1/memdb")
        try:
            assert await checker.check("not a key") is None  # no round trip for garbage
            with pytest.raises(DatabaseUnavailable) as caught:
                await checker.check("mdb_" + "a" * 12 + "_" + "b" * 43)
            assert "s3cretpw" not in str(caught.value)
        finally:
            await checker.close()

    asyncio.run(scenario())

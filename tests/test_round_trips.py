"""Round trips of the data path: a healthy pooled connection is used without a probe (the
empty query before every call was one round trip of five per search); one whose backend was
terminated while it sat in the pool is still probed, discarded and replaced."""

from __future__ import annotations

import psycopg


def _spy(monkeypatch, store) -> list[object]:
    pool_type = type(store.db.pool)
    calls: list[object] = []
    original = pool_type.check_connection

    def counting(conn):
        calls.append(conn)
        return original(conn)

    monkeypatch.setattr(pool_type, "check_connection", staticmethod(counting))
    return calls


def test_healthy_pooled_connection_is_not_probed(store, monkeypatch):
    store.add("Alice drinks green tea / 爱丽丝喝绿茶")
    calls = _spy(monkeypatch, store)
    for _ in range(3):
        assert len(store.search("green tea", k=3)) == 1
        assert len(store.search("绿茶", k=3)) == 1
    store.add("Bob drinks coffee / 鲍勃喝咖啡")
    assert calls == []


def test_terminated_pooled_connection_is_probed_and_replaced(store, fresh_db, monkeypatch):
    store.add("Alice drinks green tea / 爱丽丝喝绿茶")
    with psycopg.connect(fresh_db, autocommit=True) as admin:
        pids = [r[0] for r in admin.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND backend_type = 'client backend'").fetchall()]
        assert pids
        calls = _spy(monkeypatch, store)
        for pid in pids:
            admin.execute("SELECT pg_terminate_backend(%s, 5000)", (pid,))
    assert len(store.search("绿茶", k=3)) == 1  # no error: the dead one was probed and dropped
    assert calls

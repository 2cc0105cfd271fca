"""Round trips of the data path: a healthy pooled connection is used without a probe (the
empty query before every call was one round trip of five per search); one whose backend was
terminated while it sat in the pool is still probed, discarded and replaced."""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import shutil
import tempfile

import psycopg
import pytest
from psycopg import pq
from psycopg.types.json import Jsonb

from memdb import InvalidInput, MemoryStore, NotFound, NotMigrated
from memdb.core import bridge
from memdb.core.connection import Database
from memdb.core.embedded import EmbeddedServer
from tests import drivers


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
            admin.execute("SELECT pg_terminate_backend(%s::int, 5000)", (pid,))
    assert len(store.search("绿茶", k=3)) == 1  # no error: the dead one was probed and dropped
    assert calls


# -- one round trip per search and per batch (issue 18) -------------------------------------
# A round trip is a wait for the server: in libpq's trace of a borrowed connection, each run of
# client messages ("F") followed by the server's answer ("B"). Each transaction of search and
# add/add_many sends BEGIN, the tenant settings, its statements and COMMIT in one pipeline
# (Database.transaction(pipelined=True)); before, each of them was a round trip of its own.

BOTH = pytest.mark.parametrize("driver", ["sync", "async"], indirect=True)


def _round_trips(trace: str) -> int:
    directions = [line[0] for line in trace.splitlines() if line[:2] in ("F\t", "B\t")]
    return sum(1 for a, b in itertools.pairwise(directions) if a == "F" and b == "B")


@pytest.fixture
def round_trips(monkeypatch) -> list[int]:
    """The round trips of each pooled connection borrowed from now on, one entry per use."""
    counts: list[int] = []
    original = Database._connection

    @contextlib.contextmanager
    def traced(self):
        with original(self) as conn, tempfile.TemporaryFile("w+") as log:
            pgconn = conn.pgconn
            pgconn.trace(log.fileno())
            pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE)
            try:
                yield conn
            finally:
                pgconn.untrace()  # flushes libpq's stream
                log.seek(0)
                counts.append(_round_trips(log.read()))

    monkeypatch.setattr(Database, "_connection", traced)
    return counts


@BOTH
def test_search_is_one_round_trip(store, round_trips):
    store.add("Alice drinks green tea / 爱丽丝喝绿茶")
    store.search("warm-up")
    round_trips.clear()
    assert [h.memory.content for h in store.search("green tea", k=3)] == [
        "Alice drinks green tea / 爱丽丝喝绿茶"]
    assert len(store.search("绿茶", k=3, explain=True)) == 1
    assert round_trips == [1, 1]


@BOTH
def test_get_list_count_history_are_one_round_trip_each(store, round_trips):
    first = store.add("Dana plays the cello / 达娜拉大提琴")
    store.update(first.id, content="Dana plays the viola / 达娜拉中提琴")
    round_trips.clear()
    assert store.get(first.id).content == "Dana plays the viola / 达娜拉中提琴"
    assert [m.content for m in store.list(limit=5)] == ["Dana plays the viola / 达娜拉中提琴"]
    assert store.count() == 1
    assert len(store.history(first.id)) >= 2
    assert round_trips == [1, 1, 1, 1]
    round_trips.clear()
    with pytest.raises(NotFound):  # a miss is still one round trip, and raises after it
        store.get("00000000-0000-4000-8000-000000000000")
    assert store.count() == 1  # the connection the miss used is clean
    assert round_trips == [1, 1]


@BOTH
def test_add_and_add_many_are_one_round_trip(store, round_trips):
    store.add("warm-up: the embedding space is registered once per store")
    round_trips.clear()
    assert store.add("Bob drinks coffee / 鲍勃喝咖啡").created
    assert round_trips == [1]
    round_trips.clear()
    items = [f"fact {n}: Carol visited city {n} / 卡罗尔去过第{n}个城市" for n in range(5)]
    results = store.add_many(items, batch_size=2)  # three batches, one pipeline
    assert [r.outcome for r in results] == ["created"] * 5
    assert round_trips == [1]
    round_trips.clear()
    assert [r.outcome for r in store.add_many(items[:2] + ["新的一条"], dry_run=True)] == [
        "duplicate", "duplicate", "created"]
    assert round_trips == [1]
    assert store.count() == 7  # the dry run's ROLLBACK wrote nothing


def _on(driver: str, fn):
    """``fn()`` on the sync driver, or in the async driver's greenlet bridge."""
    return fn() if driver == "sync" else drivers.run(bridge.run(fn))


SETTINGS = ("SELECT current_setting('memdb.tenant', true) AS tenant, "
            "current_setting('memdb.subject', true) AS subject, current_user AS who")


@pytest.fixture
def probe(fresh_db):
    """A table memdb_app may write, to see whether a failed pipeline changed anything."""
    with psycopg.connect(fresh_db, autocommit=True) as admin:
        admin.execute("CREATE TABLE rtt_probe (tenant text, n int)")
        admin.execute("GRANT SELECT, INSERT ON rtt_probe TO memdb_app")
        try:
            yield admin
        finally:  # the Citus cluster's database outlives the test
            admin.execute("DROP TABLE rtt_probe")


@BOTH
def test_a_failed_pipeline_changes_nothing_and_leaves_no_settings(fresh_db, probe, driver,
                                                                  caplog):
    """Errors mid-pipeline (a SQL-side check's 22023, a division by zero after a write, a
    client-side error after statements were queued) map to memdb's types, roll the whole
    transaction back, and hand the one pooled connection back with no tenant, subject or role
    left set (memdb rolls back itself: the pool never has to). Tenants taking turns on that
    connection each see only their own settings."""
    caplog.set_level(logging.WARNING, logger="psycopg")
    db = Database(fresh_db, min_size=1, max_size=1, driver=driver)
    insert = "INSERT INTO rtt_probe VALUES (current_setting('memdb.tenant'), %s)"

    def work():
        login = None
        with db.transaction() as conn:
            login = conn.execute(SETTINGS).fetchone()["who"]
        with pytest.raises(InvalidInput):  # 22023 of the query itself: not NotMigrated
            with db.transaction(tenant="acme", subject="alice", pipelined=True) as conn:
                conn.execute(insert, (1,))
                conn.execute("SELECT memdb.check_search_options(%s)",
                             (Jsonb({"rrf_k": -1}),))
        with pytest.raises(InvalidInput):  # 22012 after a write
            with db.transaction(tenant="acme", pipelined=True) as conn:
                conn.execute(insert, (2,))
                conn.execute("SELECT 1 / 0")
        with pytest.raises(RuntimeError):  # client-side, statements already queued
            with db.transaction(tenant="acme", pipelined=True) as conn:
                conn.execute(insert, (3,))
                raise RuntimeError("the caller's own error")
        with db.transaction() as conn:
            assert conn.info.transaction_status == pq.TransactionStatus.INTRANS
            left = conn.execute(SETTINGS).fetchone()
        assert left["tenant"] in (None, "") and left["subject"] in (None, "")
        assert left["who"] == login
        seen = {}
        for tenant in ("acme", "globex", "acme"):
            with db.transaction(tenant=tenant, subject=tenant + "-user",
                                pipelined=True) as conn:
                cursor = conn.execute(SETTINGS)
                conn.execute(insert, (4,))
            seen.setdefault(tenant, []).append(cursor.fetchone())
        assert seen == {t: [{"tenant": t, "subject": t + "-user", "who": "memdb_app"}] * n
                        for t, n in (("acme", 2), ("globex", 1))}
        with db.transaction() as conn:
            left = conn.execute(SETTINGS).fetchone()
        assert left["tenant"] in (None, "") and left["who"] == login
        db.close()

    _on(driver, work)
    assert [r.getMessage() for r in caplog.records if "rolling back" in r.getMessage()] == []
    rows = probe.execute("SELECT tenant, n FROM rtt_probe ORDER BY tenant, n").fetchall()
    assert rows == [("acme", 4), ("acme", 4), ("globex", 4)]


@pytest.fixture(scope="module")
def roleless_server():
    """A server memdb never migrated: no role memdb_app (slow: a cluster of its own)."""
    home = tempfile.mkdtemp(prefix="memdb-rtt-")
    os.chmod(home, 0o755)
    server = EmbeddedServer(home)
    server.start()
    yield server.dsn("postgres")
    server.stop()
    shutil.rmtree(home, ignore_errors=True)


@pytest.mark.local_only("a cluster of its own, not the Citus cluster")
@BOTH
def test_a_missing_role_is_not_migrated_in_a_pipeline(roleless_server, embedder, driver):
    """set_config('role', 'memdb_app') fails with 22023 on a server without the role: in a
    pipelined search that error arrives with the sync, and is still NotMigrated."""
    with MemoryStore(roleless_server, embedder=embedder, gate=None) as store:
        for query in ("green tea", "绿茶"):
            with pytest.raises(NotMigrated, match="memdb migrate"):
                store.search(query, routes=["bm25"])  # no vector: the settings' error


@BOTH
def test_without_pipeline_mode_the_same_calls_still_work(store, round_trips, monkeypatch,
                                                         backend):
    """A libpq older than 14 has no pipeline mode: the pipelined transaction is then an
    ordinary one (a round trip per statement, as before: on Citus each SET LOCAL is one) with
    the same results, read after the block."""
    monkeypatch.setattr(psycopg.Pipeline, "is_supported", classmethod(lambda cls: False))
    store.add("warm-up")
    round_trips.clear()
    assert store.add("Alice drinks green tea / 爱丽丝喝绿茶").created
    assert [r.outcome for r in store.add_many(["a / 甲", "b / 乙", "c / 丙"], batch_size=2)] == [
        "created"] * 3
    assert store.search("绿茶", k=3)[0].memory.content == "Alice drinks green tea / 爱丽丝喝绿茶"
    assert round_trips == {"local": [5, 6, 4], "citus": [11, 12, 8]}[backend]

"""Faults: connections lost under the DAL, and a server killed with SIGKILL mid-write.

* Connection loss: an admin connection terminates the store's backends (``pg_terminate_backend``)
  while a call is in flight, or while they sit idle in the pool. The call in flight raises
  ``DatabaseUnavailable`` (never a raw psycopg exception), nothing is half-written, the pool
  replaces the dead connections, and the next call works.
* Crash safety: a separate embedded server, a child process writing tagged batches with
  ``add_many``, the postmaster and its children SIGKILLed while a batch's transaction has
  written rows (its backend holds an xid) but not committed, a restart on the same data
  folder (crash recovery from the WAL); then every acknowledged batch is complete, no batch is
  partial, history and BM25 statistics agree with the rows, and amcheck finds the btree and
  GIN indexes sound.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import psycopg
import pytest

from memdb import DatabaseUnavailable, MemoryStore
from memdb.core.connection import APPLICATION_NAME

DIMS = 8


class NoEmbedder:
    """Every vector is precomputed here; an embedding call would be a test bug."""

    model, dims = f"precomputed-{DIMS}", DIMS

    def embed_passages(self, texts):
        raise AssertionError("no embedding expected")

    embed_queries = embed_passages


def unit(seed: int) -> list[float]:
    v = np.random.default_rng(seed).normal(size=DIMS)
    return (v / np.linalg.norm(v)).tolist()


def store_backends(admin: psycopg.Connection) -> list[int]:
    return [r[0] for r in admin.execute(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
        "AND application_name = %s AND pid <> pg_backend_pid()", (APPLICATION_NAME,))]


def terminate_store_backends(admin: psycopg.Connection) -> int:
    pids = store_backends(admin)
    for pid in pids:
        admin.execute("SELECT pg_terminate_backend(%s, 5000)", (pid,))
    return len(pids)


def wait_for_lock_wait(admin: psycopg.Connection, timeout: float = 20.0) -> None:
    """Until a store backend is blocked on a lock (its call is in flight)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if admin.execute(
            "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() "
            "AND application_name = %s AND wait_event_type = 'Lock'", (APPLICATION_NAME,),
        ).fetchone():
            return
        time.sleep(0.05)
    raise AssertionError("the call never reached the database")


def in_flight(call) -> tuple[threading.Thread, dict]:
    outcome: dict = {}

    def run() -> None:
        try:
            outcome["result"] = call()
        except BaseException as exc:  # noqa: BLE001 - the test inspects it
            outcome["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


@pytest.fixture
def seeded(fresh_db):
    with MemoryStore(fresh_db, gate=None, embedder=NoEmbedder()) as store:
        store.add_many([{"content": f"记忆 {i}: Alice likes green tea variety {i}",
                         "subject": "alice", "embedding": unit(i)} for i in range(20)])
        yield store


@pytest.mark.parametrize("operation", ["search", "add_many"])
def test_connection_killed_mid_call(seeded, fresh_db, operation):
    store = seeded
    calls = {
        "search": lambda: store.search("green tea", k=5, embedding=unit(3)),
        "add_many": lambda: store.add_many([{"content": f"新的记忆 {i}", "embedding": unit(100 + i)}
                                            for i in range(10)]),
    }
    with psycopg.connect(fresh_db, autocommit=True) as admin, \
            psycopg.connect(fresh_db) as locker:
        # the call blocks behind this lock, so it is surely in flight when its backend dies
        locker.execute("LOCK TABLE memdb.memories IN ACCESS EXCLUSIVE MODE")
        thread, outcome = in_flight(calls[operation])
        wait_for_lock_wait(admin)
        assert terminate_store_backends(admin) >= 1
        thread.join(30)
        locker.rollback()
        assert not thread.is_alive()
        error = outcome.get("error")
        assert isinstance(error, DatabaseUnavailable), repr(error)
        assert not isinstance(error, psycopg.Error)
        assert isinstance(error.__cause__, psycopg.OperationalError)  # chained, typed by SQLSTATE
        assert admin.execute("SELECT count(*) FROM memdb.memories").fetchone()[0] == 20
    # the pool dropped the dead connection: the next calls work
    hits = store.search_by_vector(unit(3), k=5)
    assert len(hits) == 5 and hits[0].memory.content.startswith("记忆 3:")
    assert len(store.add_many([{"content": "after the loss", "embedding": unit(999)}])) == 1


def test_idle_pooled_connections_killed_are_not_errors(seeded, fresh_db):
    store = seeded
    # grow the pool to several connections, all idle afterwards
    barrier = threading.Barrier(4)

    def hold() -> None:
        with store.db.transaction(tenant=store.tenant) as conn:
            barrier.wait(10)
            conn.execute("SELECT 1")

    threads = [threading.Thread(target=hold) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    with psycopg.connect(fresh_db, autocommit=True) as admin:
        before = set(store_backends(admin))
        assert len(before) >= 2
        for _round in range(2):
            assert terminate_store_backends(admin) >= 1
            started = time.monotonic()
            for _ in range(6):  # more calls than pooled connections: each one is checked
                assert store.count() == 20
                assert len(store.search("tea", k=3, routes=["bm25"])) == 3
            # dead connections are replaced at once (psycopg_pool's check= backs off 1-4 s
            # between dead connections: 7 s for this pool)
            assert time.monotonic() - started < 2.0
        assert not before & set(store_backends(admin))  # all of them were replaced


def test_first_use_from_many_threads_opens_one_pool(fresh_db):
    """The pool is opened lazily; threads racing to be first used to each open one (or use
    one not yet open and fail with "the pool is not open yet")."""
    from memdb.core.connection import Database

    db = Database(fresh_db)
    try:
        barrier = threading.Barrier(6)
        pools, errors = [], []

        def first_call() -> None:
            barrier.wait(10)
            try:
                with db.transaction(tenant="default") as conn:
                    conn.execute("SELECT 1")
                pools.append(db.pool)
            except Exception as exc:  # noqa: BLE001 - collected for the assertion
                errors.append(exc)

        threads = [threading.Thread(target=first_call) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert errors == [] and len(pools) == 6 and len({id(p) for p in pools}) == 1
    finally:
        db.close()


# -- crash safety -----------------------------------------------------------------------------

BATCH = 50          # rows per add_many call (one transaction)
KILL_AFTER = 25     # acknowledged batches before the kill
CHILD = r'''
import sys
import numpy as np
from memdb import MemoryStore

DIMS = int(sys.argv[2])


class NoEmbedder:
    model, dims = f"precomputed-{DIMS}", DIMS

    def embed_passages(self, texts):
        raise AssertionError("vectors are precomputed")

    embed_queries = embed_passages


rng = np.random.default_rng(7)
with MemoryStore(sys.argv[1], gate=None, embedder=NoEmbedder()) as store:
    batch = 0
    while True:
        vectors = rng.normal(size=(int(sys.argv[3]), DIMS))
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        store.add_many([{
            "content": f"crash batch {batch} row {i}: 崩溃测试 第{batch}批 第{i}条",
            "subject": f"writer{i % 3}", "metadata": {"batch": batch, "row": i},
            "tags": [f"batch-{batch}"], "embedding": vectors[i],
        } for i in range(len(vectors))])
        print(f"ok {batch}", flush=True)   # acknowledged: add_many returned (committed)
        batch += 1
'''


def _kill_server(pgdata) -> list[int]:
    """SIGKILL the postmaster named in postmaster.pid and all its children; their pids."""
    import psutil

    pid = int((pgdata / "postmaster.pid").read_text().splitlines()[0])
    postmaster = psutil.Process(pid)
    victims = [postmaster, *postmaster.children(recursive=True)]
    for proc in victims:  # the postmaster first, so it cannot restart its children
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            pass
    gone, alive = psutil.wait_procs(victims, timeout=10)
    assert not alive, alive
    return [p.pid for p in victims]


@pytest.fixture(scope="module")
def crashed(tmp_path_factory):
    """A separate embedded server, written to by a child process and SIGKILLed mid-run, then
    restarted on the same data folder. Yields the facts the tests check."""
    import os
    import random
    import subprocess
    import sys
    import tempfile

    from memdb.core.embedded import EmbeddedServer
    from memdb.core.migrations import upgrade

    started = time.monotonic()
    home = tempfile.mkdtemp(prefix="memdb-crash-")
    os.chmod(home, 0o755)
    first = EmbeddedServer(home)
    handles = [first]
    child = None
    try:
        dsn = first.start()
        upgrade(dsn)
        script = tmp_path_factory.mktemp("crash") / "writer.py"
        script.write_text(CHILD)
        child = subprocess.Popen([sys.executable, str(script), dsn, str(DIMS), str(BATCH)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 env={**os.environ, "MEMDB_HOME": home})
        acked: list[int] = []
        lines: list[str] = []

        def read() -> None:
            for line in child.stdout:
                lines.append(line)
                if line.startswith("ok "):
                    acked.append(int(line.split()[1]))

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        deadline = time.monotonic() + 40
        while len(acked) < KILL_AFTER:
            assert child.poll() is None, child.stderr.read()
            assert time.monotonic() < deadline, "the writer made no progress"
            time.sleep(0.01)
        # kill while a batch's transaction has written rows (it holds an xid) but not committed
        with psycopg.connect(dsn, autocommit=True) as admin:
            while not admin.execute(
                "SELECT 1 FROM pg_stat_activity WHERE application_name = %s "
                "AND backend_xid IS NOT NULL AND state = 'active'", (APPLICATION_NAME,),
            ).fetchone():
                assert time.monotonic() < deadline, "never caught a batch in flight"
            time.sleep(random.uniform(0.0, 0.01))
            killed = _kill_server(first.pgdata)
        acked_at_kill = len(acked)
        # the writer now fails (DatabaseUnavailable); it must not be left behind. Killed inside
        # a batch, its call fails at once; when the batch committed just before the kill (a
        # 50-row batch takes ~15 ms), its next call waits for a pooled connection first, up to
        # the pool's 30 s, and then fails the same way
        try:
            child.wait(45)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait(5)
        reader.join(5)
        child_stderr = child.stderr.read()

        second = EmbeddedServer(home)  # the same data folder: crash recovery from the WAL
        handles.append(second)
        dsn2 = second.start()
        recovered_log = (first.pgdata / "log").read_text(errors="replace")
        yield {"dsn": dsn2, "acked": sorted(set(acked)), "acked_at_kill": acked_at_kill,
               "killed": killed, "log": recovered_log, "child_stderr": child_stderr,
               "child_rc": child.returncode, "started": started}
    finally:
        if child is not None and child.poll() is None:
            child.kill()
        for handle in handles:
            handle.stop()


def test_crash_recovery_ran_and_writer_failed_typed(crashed):
    assert len(crashed["killed"]) >= 5  # postmaster, checkpointer, writer, walwriter, backend...
    assert "not properly shut down" in crashed["log"] and "redo" in crashed["log"]
    assert crashed["child_rc"] != 0
    assert "DatabaseUnavailable" in crashed["child_stderr"], crashed["child_stderr"][-2000:]


def test_acknowledged_batches_complete_others_all_or_nothing(crashed):
    acked = crashed["acked"]
    assert acked == list(range(len(acked))) and len(acked) >= KILL_AFTER
    with psycopg.connect(crashed["dsn"], autocommit=True) as conn:
        per_batch = dict(conn.execute(
            "SELECT (metadata->>'batch')::int, count(*) FROM memdb.memories GROUP BY 1").fetchall())
        history = dict(conn.execute(
            "SELECT (after->'metadata'->>'batch')::int, count(*) FROM memdb.memory_history "
            "WHERE op = 'insert' GROUP BY 1").fetchall())
        tagged = dict(conn.execute(
            "SELECT (metadata->>'batch')::int, count(*) FROM memdb.memories "
            "WHERE tags = ARRAY['batch-' || (metadata->>'batch')] AND embedding IS NOT NULL "
            "AND space_id IS NOT NULL GROUP BY 1").fetchall())
        stats = conn.execute("SELECT doc_count FROM memdb.bm25_stats WHERE tenant = 'default'"
                             ).fetchone()[0]
        total = conn.execute("SELECT count(*) FROM memdb.memories").fetchone()[0]
    for batch in acked:
        assert per_batch.get(batch) == BATCH, (batch, per_batch.get(batch))
    # the batch in flight at the kill is either absent or complete, never partial
    assert set(per_batch) - set(acked) <= {acked[-1] + 1}
    assert all(n == BATCH for n in per_batch.values()), per_batch
    assert history == per_batch == tagged  # history rows and derived columns in the same commit
    assert stats == total == BATCH * len(per_batch)  # BM25 statistics kept by the same commit
    crashed["rows_checked"] = total
    crashed["in_flight_committed"] = len(per_batch) > len(acked)


def test_btree_and_gin_indexes_pass_amcheck(crashed):
    with psycopg.connect(crashed["dsn"], autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS amcheck")
        indexes = conn.execute(
            "SELECT c.oid::regclass::text, am.amname, i.indisunique FROM pg_index i "
            "JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am am ON am.oid = c.relam "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'memdb' "
            "ORDER BY 1").fetchall()
        btree = [(name, unique) for name, am, unique in indexes if am == "btree"]
        gin = [name for name, am, _ in indexes if am == "gin"]
        assert len(btree) >= 10 and "memdb.memories_dedup_key" in dict(btree)
        for name, unique in btree:
            conn.execute("SELECT bt_index_check(%s::regclass, heapallindexed => true, "
                         "checkunique => %s)", (name, unique))
            conn.execute("SELECT bt_index_parent_check(%s::regclass, heapallindexed => true, "
                         "rootdescend => true, checkunique => %s)", (name, unique))
        has_gin_check = conn.execute(
            "SELECT 1 FROM pg_proc WHERE proname = 'gin_index_check'").fetchone()
        if has_gin_check:
            for name in gin:
                conn.execute("SELECT gin_index_check(%s::regclass)", (name,))
        duplicates = conn.execute(
            "SELECT count(*) FROM (SELECT 1 FROM memdb.memories WHERE valid_to IS NULL "
            "GROUP BY tenant, subject, scope, project_id, session_id, content_hash "
            "HAVING count(*) > 1) d").fetchone()[0]
        assert duplicates == 0
    crashed["amcheck"] = {"btree": len(btree), "gin": len(gin) if has_gin_check else 0}
    if not has_gin_check:
        pytest.skip(f"btree indexes passed; this amcheck has no gin_index_check (needs "
                    f"PostgreSQL 18's amcheck 1.5), so {len(gin)} GIN indexes are unchecked")


def test_store_works_after_the_crash(crashed):
    with MemoryStore(crashed["dsn"], gate=None, embedder=NoEmbedder()) as store:
        text = "写入恢复后的数据 after recovery"
        assert store.add(text, embedding=unit(5)).created
        assert store.search_by_vector(unit(5), k=1)[0].memory.content == text
        hits = store.search("崩溃测试", k=3, routes=["bm25"], subject="writer1")
        assert len(hits) == 3
    print(f"\ncrash test: {len(crashed['acked'])} batches acknowledged "
          f"(in-flight batch committed: {crashed.get('in_flight_committed')}), "
          f"{crashed.get('rows_checked')} rows checked, amcheck {crashed.get('amcheck')}, "
          f"{len(crashed['killed'])} server processes killed, "
          f"{time.monotonic() - crashed['started']:.1f} s")

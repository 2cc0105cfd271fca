"""An embedding space's HNSW index is built when a search could use it
(sql/functions/051_ensure_vector_index.sql): not while the database holds fewer than
memdb.hnsw_min_rows current memories (the tests lower it to a few), and then by the write that
crosses it - through memdb.write_memories, the store's add path, documents - or at once by the
admin (SQL, MemoryAdmin, `memdb admin vector-index --build`). Real server, no mock."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict
from psycopg.types.json import Jsonb

from memdb import Forbidden, InvalidInput, MemoryAdmin, MemoryInput, MemoryStore
from tests.cli_helpers import ok_json, run
from tests.fixed_embedder import FixedEmbedder

DIMS = 3


@pytest.fixture(autouse=True)
def _no_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMDB_HOME", str(tmp_path / "memdb-home"))
    for var in ("MEMDB_DSN", "MEMDB_ADMIN_DSN"):
        monkeypatch.delenv(var, raising=False)


def _dbname(dsn: str) -> str:
    return conninfo_to_dict(dsn)["dbname"]


def _threshold(raw: psycopg.Connection, dsn: str, rows: int | str) -> None:
    """memdb.hnsw_min_rows for every new connection to the test's database."""
    raw.execute(f"ALTER DATABASE {_dbname(dsn)} SET memdb.hnsw_min_rows = '{rows}'")


def _space(raw: psycopg.Connection) -> int:
    return raw.execute("SELECT memdb.ensure_embedding_space('fixed-3d', %s)",
                       (DIMS,)).fetchone()[0]


def _built(raw: psycopg.Connection, sid: int) -> bool:
    return raw.execute("SELECT to_regclass(%s) IS NOT NULL",
                       (f"memdb.memories_hnsw_space_{sid}",)).fetchone()[0]


def _add(conn: psycopg.Connection, n: int, sid: int, tag: str, subject: str = "s",
         tenant: str = "default") -> list:
    rng = np.random.default_rng(len(tag) + n)
    items = [{"content": f"{tag} 记录 {i}", "subject": subject, "tenant": tenant}
             for i in range(n)]
    vectors = [v / np.linalg.norm(v) for v in rng.normal(size=(n, DIMS)).astype(np.float32)]
    return conn.execute("SELECT id, created FROM memdb.add_memories(%s, %s, %s)",
                        (Jsonb(items), vectors, sid)).fetchall()


def test_built_by_the_write_that_crosses_the_threshold(raw, fresh_db):
    _threshold(raw, fresh_db, 10)
    with psycopg.connect(fresh_db, autocommit=True) as conn:
        from pgvector.psycopg import register_vector
        register_vector(conn)
        sid = _space(conn)
        assert not _built(conn, sid)  # registered in an empty database: no index yet
        assert all(created for _, created in _add(conn, 9, sid, "a"))
        assert not _built(conn, sid)
        assert conn.execute("SELECT memdb.ensure_vector_index(%s)", (sid,)).fetchone()[0] is False
        assert all(created for _, created in _add(conn, 1, sid, "b"))  # the 10th memory
        assert _built(conn, sid)
        index = conn.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s",
                             (f"memories_hnsw_space_{sid}",)).fetchone()[0]
        assert "USING hnsw" in index and f"vector({DIMS})" in index
        assert f"WHERE (space_id = {sid})" in index
        assert conn.execute("SELECT count(*) FROM memdb.memories WHERE space_id = %s",
                            (sid,)).fetchone()[0] == 10
        # below the exact limit a search ranks exactly: the same hits with or without it
        search = "SELECT id, distance FROM memdb.search_vector('default', %s, 5, '{}')"
        query = np.array([1, 0, 0], dtype=np.float32)
        with_index = conn.execute(search, (query,)).fetchall()
        conn.execute(f"DROP INDEX memdb.memories_hnsw_space_{sid}")
        assert conn.execute(search, (query,)).fetchall() == with_index and len(with_index) == 5


def test_the_store_add_path_builds_it_as_the_application_role(raw, fresh_db):
    """store.add runs as memdb_app (row-level security), which may not create indexes:
    memdb.ensure_vector_index (SECURITY DEFINER) builds it for the write that crosses."""
    _threshold(raw, fresh_db, 5)
    with MemoryStore(fresh_db, tenant="acme", subject="alice", embedder=FixedEmbedder(),
                     gate=None) as store:
        sid = store.space_id()
        store.add_many([MemoryInput(content=f"笔记 note {i}") for i in range(4)])
        assert not _built(raw, sid)
        assert store.add("第五条 the fifth note").created
        assert _built(raw, sid)
        assert len(store.search("note", k=10)) == 5


def test_documents_build_it_too(raw, fresh_db):
    _threshold(raw, fresh_db, 3)
    with MemoryStore(fresh_db, embedder=FixedEmbedder(), gate=None) as store:
        sid = store.space_id()
        assert not _built(raw, sid)
        report = store.documents.ingest([
            {"id": "a.md", "text": "第一份文档：绿茶的笔记。"},
            {"id": "b.md", "text": "The second document, about coffee."},
            {"id": "c.md", "text": "第三份文档 and a third one."}])
        assert [f.status for f in report.files] == ["created"] * 3, report.files
        assert raw.execute("SELECT count(*) FROM memdb.memories").fetchone()[0] >= 3
        assert _built(raw, sid)


def test_zero_builds_it_with_the_space(raw, fresh_db):
    _threshold(raw, fresh_db, 0)
    with psycopg.connect(fresh_db, autocommit=True) as conn:
        assert _built(conn, _space(conn))


def test_a_malformed_threshold_is_a_clear_error_and_writes_nothing(raw, fresh_db):
    sid = _space(raw)
    raw.execute("SET memdb.hnsw_min_rows = 'lots'")
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="memdb.hnsw_min_rows"):
        raw.execute("SELECT * FROM memdb.add_memories(%s, NULL, %s)",
                    (Jsonb([{"content": "x"}]), sid))
    assert raw.execute("SELECT count(*) FROM memdb.memories").fetchone()[0] == 0
    raw.execute("SET memdb.hnsw_min_rows = '1; DROP TABLE memdb.memories'")
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        raw.execute("SELECT memdb.ensure_vector_index(%s)", (sid,))
    assert raw.execute("SELECT to_regclass('memdb.memories') IS NOT NULL").fetchone()[0]
    raw.execute("SET memdb.hnsw_min_rows = '２０'")  # full-width digits are no number either
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="whole number"):
        raw.execute("SELECT memdb.hnsw_min_rows()")
    raw.execute("SET memdb.hnsw_min_rows = ' 42 '")
    assert raw.execute("SELECT memdb.hnsw_min_rows()").fetchone()[0] == 42
    raw.execute("RESET memdb.hnsw_min_rows")
    assert raw.execute("SELECT memdb.hnsw_min_rows()").fetchone()[0] == 10000
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="no embedding space"):
        raw.execute("SELECT memdb.ensure_vector_index(999)")


def test_a_statement_reading_memories_defers_the_build(raw, fresh_db):
    """CREATE INDEX cannot run while the calling statement itself reads memdb.memories: the
    write goes on with a NOTICE, and the next write builds the index."""
    from pgvector.psycopg import register_vector

    _threshold(raw, fresh_db, 3)
    notices: list[str] = []
    with psycopg.connect(fresh_db, autocommit=True) as conn:
        register_vector(conn)
        conn.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
        sid = _space(conn)
        rows = conn.execute(
            "SELECT w.created, (SELECT count(*) FROM memdb.memories) AS n "
            "FROM memdb.add_memories(%s, NULL, %s) w",
            (Jsonb([{"content": f"row {i}"} for i in range(4)]), sid)).fetchall()
        assert [r[0] for r in rows] == [True] * 4
        assert not _built(conn, sid)
        assert any("was not built now" in n for n in notices), notices
        _add(conn, 1, sid, "later")
        assert _built(conn, sid)


def test_two_writers_crossing_together_both_write(raw, fresh_db):
    """Two transactions cross the threshold at once: each holds its insert's lock and wants
    the index's, so one of them would deadlock. Both writes succeed, every row is kept, and
    the index is built once."""
    from pgvector.psycopg import register_vector

    _threshold(raw, fresh_db, 20)
    raw.execute("SET memdb.hnsw_min_rows = 20")
    sid = _space(raw)
    _add(raw, 15, sid, "base")
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def writer(tag: str, subject: str) -> None:
        try:
            with psycopg.connect(fresh_db) as conn:
                register_vector(conn)
                conn.execute("SET deadlock_timeout = '100ms'")
                with conn.transaction():
                    conn.execute("SELECT 1 FROM memdb.memories LIMIT 0")
                    barrier.wait(timeout=10)
                    rows = _add(conn, 10, sid, tag, subject)
                    assert all(created for _, created in rows)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(t, s)) for t, s in (("x", "p"), ("y", "q"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    assert raw.execute("SELECT count(*) FROM memdb.memories").fetchone()[0] == 35
    # whichever gave way left it to the other or to the next write
    _add(raw, 1, sid, "next")
    assert _built(raw, sid)


def test_the_admin_builds_it_now_and_a_confined_caller_may_not(raw, fresh_db):
    sid = _space(raw)
    role = f"memdb_test_vi_{raw.info.backend_pid}"
    raw.execute(f"CREATE ROLE {role} LOGIN")
    raw.execute(f"GRANT memdb_app TO {role}")
    try:
        params = {**conninfo_to_dict(fresh_db), "user": role}
        with psycopg.connect(**params, autocommit=True) as app:
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="only the admin"):
                app.execute("SELECT memdb.ensure_vector_index(%s, true)", (sid,))
            # without force the application role may ask, as its writes do: below the
            # threshold nothing is built
            assert app.execute("SELECT memdb.ensure_vector_index(%s)", (sid,)).fetchone()[0] \
                is False
        assert not _built(raw, sid)
        with MemoryStore(fresh_db, embedder=FixedEmbedder(), gate=None) as store:
            with pytest.raises(Forbidden):  # a store acts as the application role
                with store.db.transaction(tenant="default", subject=None) as conn:
                    conn.execute("SELECT memdb.ensure_vector_index(%s, true)", (sid,))
        assert not _built(raw, sid)
    finally:
        raw.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s",
                    (role,))
        raw.execute(f"DROP ROLE {role}")
    seen: list[int] = []
    with MemoryAdmin(fresh_db) as admin:
        [row] = admin.vector_indexes()
        assert row == {"space_id": sid, "model": "fixed-3d", "dims": DIMS,
                       "index": f"memdb.memories_hnsw_space_{sid}", "built": False,
                       "memories": 0, "min_rows": 10000}
        [row] = admin.vector_indexes(build=True, progress=lambda r: seen.append(r["space_id"]))
        assert row["built"] and seen == [sid]
    assert _built(raw, sid)


def test_the_cli_shows_and_builds_it(raw, fresh_db):
    sid = _space(raw)
    shown = run(fresh_db, "admin", "vector-index").stdout
    assert f"space {sid} (fixed-3d, {DIMS} dims)" in shown and "not built" in shown
    assert "at 10000 memories" in shown
    [row] = ok_json(fresh_db, "admin", "vector-index", "--build")
    assert row["built"] is True and row["index"] == f"memdb.memories_hnsw_space_{sid}"
    assert _built(raw, sid)
    _threshold(raw, fresh_db, "x")
    raw.execute(f"DROP INDEX memdb.memories_hnsw_space_{sid}")
    result = run(fresh_db, "admin", "vector-index")
    assert result.exit_code != 0 and "memdb.hnsw_min_rows" in result.output


def test_malformed_threshold_through_the_admin_api(raw, fresh_db):
    _space(raw)
    _threshold(raw, fresh_db, "-1")
    with MemoryAdmin(fresh_db) as admin, pytest.raises(InvalidInput, match="hnsw_min_rows"):
        admin.vector_indexes()


def test_the_admins_build_waits_for_a_writer_and_a_write_does_not(raw, fresh_db):
    """A write that crosses the threshold while another transaction is writing the table gives
    way at once (NOTICE); the admin's build waits for that writer and then builds."""
    from pgvector.psycopg import register_vector

    raw.execute("SET memdb.hnsw_min_rows = 2")
    sid = _space(raw)
    with psycopg.connect(fresh_db) as writer:
        register_vector(writer)
        # another tenant's write (the same tenant's would wait for its BM25 statistics row) in
        # a transaction that stays open: a lock on the table
        _add(writer, 1, sid, "open", "w", tenant="other")
        notices: list[str] = []
        raw.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
        _add(raw, 2, sid, "crossing")
        assert not _built(raw, sid) and any("was not built now" in n for n in notices)
        timer = threading.Timer(0.5, writer.commit)
        timer.start()
        try:
            assert raw.execute("SELECT memdb.ensure_vector_index(%s, true)",
                               (sid,)).fetchone()[0] is True
        finally:
            timer.join()
    assert _built(raw, sid)
    assert raw.execute("SELECT count(*) FROM memdb.memories").fetchone()[0] == 3

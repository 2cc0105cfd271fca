"""Erasure and export of one subject (memdb.forget_subject / export_subject) on the real
server: afterwards no column of any table in schema memdb holds the subject's text (a unique
marker, searched in every text, jsonb, text[] and tsvector column, and its lexemes in the BM25
statistics), BM25 statistics equal a recount without the subject, and another subject's (and
another tenant's same-named subject's) rows are exactly as before. Dry run = real counts.
"""

from __future__ import annotations

import json

import psycopg
import pytest

from memdb import InvalidInput, MemoryStore, NotFound

MARK_EN = "Zqxmarker7"
MARK_ZH = "獬豸踪迹"


def _columns(conn) -> list[tuple[str, str, str]]:
    return conn.execute("""
        SELECT c.table_name, c.column_name, c.udt_name
        FROM information_schema.columns c
        JOIN information_schema.tables t USING (table_schema, table_name)
        WHERE c.table_schema = 'memdb' AND t.table_type = 'BASE TABLE'
          AND c.udt_name IN ('text', 'jsonb', 'json', '_text', 'tsvector', 'varchar')
        ORDER BY 1, 2""").fetchall()


def traces(dsn: str, tenant: str | None = None) -> dict[str, int]:
    """Where the markers (or their lexemes) still occur: {"table.column": rows}; with
    ``tenant``, only in that tenant's rows (tables without a tenant column: all rows)."""
    found: dict[str, int] = {}
    with psycopg.connect(dsn) as conn:
        tenanted = {t for (t,) in conn.execute(
            "SELECT table_name FROM information_schema.columns WHERE table_schema = 'memdb' "
            "AND column_name = 'tenant'").fetchall()}
        lexemes = conn.execute("SELECT tsvector_to_array(memdb.tokenize(%s))",
                               (f"{MARK_EN} {MARK_ZH}",)).fetchone()[0]
        lexemes = [x for x in lexemes if len(x) > 1]  # single CJK characters are too common
        for table, column, udt in _columns(conn):
            if udt == "tsvector":
                cond = f"tsvector_to_array({column}) && %(lex)s::text[]"
            else:
                cond = f"({column})::text ILIKE %(en)s OR ({column})::text LIKE %(zh)s"
            if tenant is not None and table in tenanted:
                cond = f"tenant = %(tenant)s AND ({cond})"
            n = conn.execute(f"SELECT count(*) FROM memdb.{table} WHERE {cond}",
                             {"lex": lexemes, "en": f"%{MARK_EN}%", "zh": f"%{MARK_ZH}%",
                              "tenant": tenant}).fetchone()[0]
            if n:
                found[f"{table}.{column}"] = n
        n = conn.execute("SELECT count(*) FROM memdb.bm25_terms WHERE term = ANY(%s) "
                         "AND (%s::text IS NULL OR tenant = %s)",
                         (lexemes, tenant, tenant)).fetchone()[0]
        if n:
            found["bm25_terms.term"] = n
    return found


def snapshot(dsn: str, tenant: str, subject: str) -> dict[str, list]:
    """Every row of a subject in every table that has one (as text, ordered)."""
    out = {}
    with psycopg.connect(dsn) as conn:
        for (table,) in conn.execute("SELECT table_name FROM memdb.subject_tables() "
                                     "WHERE has_subject UNION SELECT 'memories'").fetchall():
            out[table] = [r[0] for r in conn.execute(
                f"SELECT x::text FROM memdb.{table} x WHERE tenant = %s AND subject = %s "
                "ORDER BY 1", (tenant, subject)).fetchall()]
    return out


def bm25_consistent(dsn: str) -> None:
    """bm25_terms (df > 0) and bm25_stats equal a recount over the current memories, and no
    term is left with df <= 0 from the erasure."""
    with psycopg.connect(dsn) as conn:
        recount = dict(((t, term), df) for t, term, df in conn.execute("""
            SELECT m.tenant, u.lexeme, count(*) FROM memdb.memories m, unnest(m.tsv) u
            WHERE m.valid_to IS NULL GROUP BY 1, 2""").fetchall())
        kept = dict(((t, term), df) for t, term, df in conn.execute(
            "SELECT tenant, term, df FROM memdb.bm25_terms WHERE df <> 0").fetchall())
        assert kept == recount
        stats = conn.execute("SELECT tenant, doc_count, total_len FROM memdb.bm25_stats "
                             "WHERE doc_count <> 0 ORDER BY 1").fetchall()
        expected = conn.execute("SELECT tenant, count(*), sum(doc_len) FROM memdb.memories "
                                "WHERE valid_to IS NULL GROUP BY 1 ORDER BY 1").fetchall()
        assert stats == expected


@pytest.fixture
def world(fresh_db, embedder):
    """alice (with the markers everywhere she can put them) and bob in tenant 'default';
    a same-named alice in tenant 'other'."""
    store = MemoryStore(fresh_db, gate=None, embedder=embedder, actor="tester")
    other = MemoryStore(fresh_db, gate=None, tenant="other", embedder=embedder)
    alice = [store.add(f"{MARK_EN} Alice prefers green tea", subject="alice").id,
             store.add(f"李四的暗号是{MARK_ZH}，他喜欢绿茶", subject="alice",
                       category="entities").id,
             store.add("Alice lives in Berlin", subject="alice",
                       metadata={"note": f"{MARK_EN} in metadata"}, tags=["zqxmarker7-tag"]).id]
    store.update(alice[2], content=f"Alice lives in Hamburg ({MARK_EN})", reason="moved")
    store.add_many([{"content": text, "subject": "alice", "kind": "working", "scope": "session",
                     "session_id": "a1", "importance": 0.8}
                    for text in (f"Never share the {MARK_EN} code.", f"Alice likes {MARK_EN} jazz.",
                                 f"部署前必须先检查{MARK_ZH}。")])
    store.sessions.summarize("a1", llm=None)
    store.maintenance.sediment(subject="alice", min_sessions=1)
    assert store.review.list(subject="alice")
    bob = [store.add("Bob prefers coffee", subject="bob").id,
           store.add("鲍勃喜欢喝咖啡，也喜欢绿茶", subject="bob").id]
    store.mark_used([alice[0], bob[0]], subject="bob")  # bob used alice's memory and his own
    store.mark_used([alice[1]])
    other.add(f"{MARK_EN} the other tenant's alice", subject="alice")
    yield store, other, alice, bob
    store.close()
    other.close()


def test_forget_subject_leaves_no_trace(world, fresh_db, tmp_path):
    store, other, alice, bob = world
    assert {"memories.content", "memories.tsv", "memory_history.after", "memory_history.before",
            "memories.metadata", "memories.tags", "review_queue.content",
            "bm25_terms.term"} <= set(traces(fresh_db, "default"))
    bob_before = snapshot(fresh_db, "default", "bob")
    # bob's use of alice's memory is about alice's memory: it goes; the rest of bob stays
    bob_before["memory_usage"] = [r for r in bob_before["memory_usage"] if str(alice[0]) not in r]
    assert len(bob_before["memory_usage"]) == 1
    other_before = snapshot(fresh_db, "other", "alice")

    dry = store.subjects.forget("alice", dry_run=True)
    assert dry.counts["memories"] >= 8 and dry.counts["memory_history"] >= 9
    assert dry.counts["review_queue"] >= 1 and dry.counts["sediment_runs"] == 1
    assert dry.counts["memory_usage"] == 2 and dry.counts["bm25_terms"] > 0
    assert store.list(subject="alice")  # the dry run deleted nothing

    path = tmp_path / "alice.json"
    done = store.subjects.forget("alice", export_to=path)
    assert done.counts == dry.counts and done.exported_to == str(path)

    # the export has all of it
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["subject"] == "alice" and data["tenant"] == "default"
    assert len(data["tables"]["memories"]) == dry.counts["memories"]
    assert len(data["tables"]["memory_history"]) == dry.counts["memory_history"]
    assert MARK_ZH in path.read_text(encoding="utf-8")

    # no column of any table holds the text (only the other tenant's alice does)
    assert traces(fresh_db, "default") == {}
    assert set(traces(fresh_db, "other")) == {"memories.content", "memories.tsv",
                                              "memory_history.after", "bm25_terms.term"}
    for query in (MARK_EN, MARK_ZH, "Alice green tea"):
        assert not store.search(query, k=10, routes=["bm25", "exact"])
        hits = store.search(query, k=10)  # the vector route always finds neighbours: bob's
        assert {h.memory.subject for h in hits} == {"bob"}
    assert not store.list(subject="alice") and not store.review.list(subject="alice", status=None)
    for mid in alice:
        with pytest.raises(NotFound):
            store.history(mid)
    bm25_consistent(fresh_db)

    # everyone else is untouched
    assert snapshot(fresh_db, "default", "bob") == bob_before
    assert snapshot(fresh_db, "other", "alice") == other_before
    assert [h.memory.id for h in store.search("Bob coffee", k=5, subject="bob")][0] == bob[0]
    assert other.search(MARK_EN, k=3)

    again = store.subjects.forget("alice")
    assert set(again.counts.values()) == {0}


def test_export_subject_refuses_to_overwrite(world, fresh_db, tmp_path):
    store, *_ = world
    path = tmp_path / "export.json"
    counts = store.subjects.export("alice", path)
    assert counts["memories"] >= 8
    before = path.read_bytes()
    with pytest.raises(InvalidInput, match="refusing to overwrite"):
        store.subjects.export("alice", path)
    with pytest.raises(InvalidInput, match="refusing to overwrite"):
        store.subjects.forget("alice", export_to=path)
    assert path.read_bytes() == before
    assert store.list(subject="alice")  # nothing deleted when the export was refused


def test_forget_subject_from_sql_as_admin_and_as_app(world, fresh_db):
    """The same function from psql: as the admin, and as memdb_app under row-level security
    (which cannot reach another tenant's subject)."""
    with psycopg.connect(fresh_db) as conn:
        conn.execute("SELECT set_config('role', 'memdb_app', true), "
                     "set_config('memdb.tenant', 'default', true)")
        counts = conn.execute("SELECT memdb.forget_subject('other', 'alice')").fetchone()[0]
        assert set(counts.values()) == {0}
    with psycopg.connect(fresh_db, autocommit=True) as conn:
        counts = conn.execute("SELECT memdb.forget_subject('other', 'alice')").fetchone()[0]
        assert counts["memories"] == 1
    assert traces(fresh_db, "other") == {}
    assert traces(fresh_db, "default")  # default's alice is still there
    bm25_consistent(fresh_db)

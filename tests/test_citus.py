"""memdb distributed by tenant on a real Citus cluster (a coordinator and two workers built from
the vendored source: tests/citus_build.py, tests/citus_cluster.py).

The core behaviour modules run on the cluster through conftest.CITUS_MODULES; this module
checks what is Citus's own: the schema every key of which includes the tenant (also on plain
PostgreSQL), the distribution made by revision 0014 and undone by its downgrade, row-level
security reaching the workers, single-shard router plans for tenant-scoped calls, and the
administrative operations that fan out over every tenant.
"""

from __future__ import annotations

from datetime import UTC, datetime

import psycopg
import pytest
from psycopg.types.json import Jsonb

from memdb import MemoryAdmin, MemoryStore
from memdb.core.connection import set_local
from memdb.core.migrations import current, downgrade, head, upgrade

# the tables that hold rows of one tenant each (every other table is a shared registry)
TENANT_TABLES = {
    "memories", "memory_history", "bm25_terms", "bm25_stats", "memory_usage", "review_queue",
    "sediment_runs", "documents", "document_chunks", "sessions", "session_messages",
    "retrieval_traces", "entities", "entity_mentions", "entity_relations", "item_vectors",
    "jobs",
    "percepts",
    "job_schedules",
}
REFERENCE_TABLES = {"embedding_spaces", "api_keys"}


def _keys_without_tenant(conn: psycopg.Connection) -> list[tuple[str, str, str]]:
    """(table, constraint, definition) of every primary, unique or foreign key of a
    tenant-owned table whose columns do not include tenant (on both sides, for a foreign
    key)."""
    rows = conn.execute("""
        SELECT c.conrelid::regclass::text, c.conname, pg_get_constraintdef(c.oid), c.contype,
               c.confrelid::regclass::text,
               ARRAY(SELECT a.attname FROM pg_attribute a
                     WHERE a.attrelid = c.conrelid AND a.attnum = ANY (c.conkey)),
               ARRAY(SELECT a.attname FROM pg_attribute a
                     WHERE a.attrelid = c.confrelid AND a.attnum = ANY (c.confkey))
        FROM pg_constraint c
        WHERE c.connamespace = 'memdb'::regnamespace AND c.contype IN ('p', 'u', 'f')
        ORDER BY 1, 2""").fetchall()
    bad = []
    for table, name, definition, kind, ref_table, cols, ref_cols in rows:
        if table.removeprefix("memdb.") not in TENANT_TABLES:
            continue
        if kind == "f" and ref_table.removeprefix("memdb.") in REFERENCE_TABLES:
            continue  # a key to a shared registry (memories.space_id): a reference table
        if "tenant" not in cols or (kind == "f" and "tenant" not in ref_cols):
            bad.append((table, name, definition))
    return bad


def test_every_key_of_a_tenant_table_includes_the_tenant(raw):
    """Revision 0013 (plain PostgreSQL too): what Citus needs to distribute by tenant, and a
    key can never join two tenants' rows. Fails before 0013 (memories_pkey was (id))."""
    found = {r[0] for r in raw.execute(
        "SELECT c.relname FROM pg_class c WHERE c.relnamespace = 'memdb'::regnamespace"
        " AND c.relkind = 'r'")}
    assert found == TENANT_TABLES | REFERENCE_TABLES  # a new table must be classified here
    assert _keys_without_tenant(raw) == []
    assert raw.execute("SELECT pg_get_constraintdef(oid) FROM pg_constraint"
                       " WHERE conname = 'memories_pkey'").fetchone()[0] == \
        "PRIMARY KEY (tenant, id)"


def test_before_0013_some_keys_lack_the_tenant(empty_db):
    """The check above can fail: at revision 0012 the primary keys were on id alone."""
    upgrade(empty_db, "0012")
    with psycopg.connect(empty_db, autocommit=True) as conn:
        missing = {name for _, name, _ in _keys_without_tenant(conn)}
    assert {"memories_pkey", "memory_usage_pkey", "entity_relations_edge_key"} <= missing
    upgrade(empty_db)
    with psycopg.connect(empty_db, autocommit=True) as conn:
        assert _keys_without_tenant(conn) == []


def test_0014_does_nothing_on_plain_postgresql(raw):
    assert current(raw.info.dsn) == head()
    assert raw.execute("SELECT count(*) FROM pg_extension WHERE extname = 'citus'"
                       ).fetchone()[0] == 0
    # the ON DELETE SET NULL keys that Citus cannot hold stay, and no trigger replaces them
    assert {r[0] for r in raw.execute(
        "SELECT conname FROM pg_constraint WHERE conname IN"
        " ('memories_superseded_by_fkey', 'review_queue_memory_id_fkey')")} == {
        "memories_superseded_by_fkey", "review_queue_memory_id_fkey"}
    assert raw.execute("SELECT count(*) FROM pg_trigger"
                       " WHERE tgname = 'memories_delete_set_null'").fetchone()[0] == 0


# -- on the cluster ------------------------------------------------------------------------
@pytest.fixture
def cluster_db(citus_cluster) -> str:
    from tests.citus_cluster import reset

    dsn = citus_cluster.dsn()
    reset(dsn)
    return dsn


def _distribution(dsn: str) -> dict[str, tuple[str, str | None, int]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return {r[0]: (r[1], r[2], r[3]) for r in conn.execute("""
            SELECT c.relname, p.partmethod, column_to_column_name(p.logicalrelid, p.partkey),
                   p.colocationid
            FROM pg_dist_partition p JOIN pg_class c ON c.oid = p.logicalrelid
            WHERE c.relnamespace = 'memdb'::regnamespace""")}


@pytest.mark.citus
def test_tables_are_distributed_by_tenant_and_co_located(cluster_db):
    dist = _distribution(cluster_db)
    assert set(dist) == TENANT_TABLES | REFERENCE_TABLES
    colocation = dist["memories"][2]
    for table in TENANT_TABLES:
        assert dist[table] == ("h", "tenant", colocation), table
    for table in REFERENCE_TABLES:
        assert dist[table][:2] == ("n", None), table
    with psycopg.connect(cluster_db, autocommit=True) as conn:
        assert _keys_without_tenant(conn) == []
        # no function is distributed by an argument: Citus 14.0.1 crashes the coordinator on
        # a NULL one (tests/test_citus_null_guard.py); a tenant function's statements are
        # each routed to the tenant's shard instead
        assert conn.execute("""
            SELECT count(*) FROM pg_dist_object o
            WHERE o.classid = 'pg_proc'::regclass
              AND o.distribution_argument_index IS NOT NULL""").fetchone()[0] == 0


def _store(dsn: str, embedder, tenant: str, **kwargs) -> MemoryStore:
    return MemoryStore(dsn, embedder=embedder, tenant=tenant, gate=None, **kwargs)


@pytest.mark.citus
def test_row_level_security_reaches_the_workers(cluster_db, embedder):
    """The DAL's SET LOCAL settings reach the workers: each tenant sees its own rows, found
    by every route; SQL with SET LOCAL in a transaction (the psql way on Citus) too, and a
    session without a tenant sees nothing."""
    for tenant in ("acme", "globex", "initech", "umbrella"):
        with _store(cluster_db, embedder, tenant) as store:
            store.add(f"{tenant} likes green tea 喜欢绿茶", subject="alice")
            store.add(f"{tenant} ships on Fridays", subject="bob")
    with psycopg.connect(cluster_db, autocommit=True) as conn:  # the admin sees all of them
        assert conn.execute("SELECT count(DISTINCT tenant) FROM memdb.memories"
                            ).fetchone()[0] == 4
        nodes = conn.execute("SELECT count(DISTINCT nodename || nodeport) FROM"
                             " citus_shards WHERE table_name = 'memdb.memories'::regclass"
                             ).fetchone()[0]
        assert nodes == 2  # the shards are spread over both workers
    for tenant in ("acme", "globex", "initech", "umbrella"):
        with _store(cluster_db, embedder, tenant) as store:
            assert {m.tenant for m in store.list()} == {tenant}
            for routes in (["vector"], ["bm25"], ["exact"], None):
                hits = store.search("green tea", routes=routes)
                assert [h.memory.content for h in hits][:1] == [
                    f"{tenant} likes green tea 喜欢绿茶"], routes
                assert {h.memory.tenant for h in hits} == {tenant}
        with _store(cluster_db, embedder, tenant, subject="bob") as store:
            assert [m.content for m in store.list()] == [f"{tenant} ships on Fridays"]
    with psycopg.connect(cluster_db) as conn:
        conn.execute("SET ROLE memdb_app")
        assert conn.execute("SELECT count(*) FROM memdb.memories").fetchone()[0] == 0
        conn.rollback()
        with conn.transaction():
            conn.execute("SET LOCAL ROLE memdb_app")
            conn.execute("SET LOCAL citus.propagate_set_commands = 'local'")
            conn.execute("SET LOCAL memdb.tenant = 'globex'")
            assert {r[0] for r in conn.execute("SELECT DISTINCT tenant FROM memdb.memories")
                    } == {"globex"}
            assert {r[0] for r in conn.execute(
                "SELECT m.tenant FROM memdb.list_memories('globex') m")} == {"globex"}
            assert conn.execute("SELECT count(*) FROM memdb.list_memories('acme')"
                                ).fetchone()[0] == 0
        # set_config() is not passed on: the workers see no tenant, so nothing
        with conn.transaction():
            conn.execute("SET LOCAL ROLE memdb_app")
            conn.execute("SELECT set_config('memdb.tenant', 'globex', true)")
            assert conn.execute("SELECT count(*) FROM memdb.memories").fetchone()[0] == 0


def _explain(conn: psycopg.Connection, query: str, params=None) -> str:
    """The plan of ``query`` with its parameters as literals (a call Citus delegates is
    explained on the worker, which does not get the parameters' types)."""
    text = psycopg.ClientCursor(conn).mogrify(query, params)
    return "\n".join(r["QUERY PLAN"] for r in conn.execute("EXPLAIN (COSTS OFF) " + text))


@pytest.mark.citus
def test_tenant_scoped_calls_are_single_shard_router_plans(cluster_db, embedder):
    from memdb.core import sql

    with _store(cluster_db, embedder, "acme") as store:
        added = store.add("Alice prefers green tea 爱喝绿茶", subject="alice")
        store.add("Bob drinks coffee", subject="bob")
        vector = embedder.embed_queries(["green tea"])[0]
        with store.db.transaction(tenant="acme") as conn:
            params = {"tenant": "acme", "query": "green tea", "embedding": vector, "k": 5,
                      "filter": Jsonb({}), "options": Jsonb({}), "keyword_routes": None}
            plans = {
                "search (store.search)": _explain(conn, sql.query("search_hybrid"), params),
                "recall (search_planned)": _explain(
                    conn, sql.query("search_planned"),
                    {**params, "plan": Jsonb({"routes": ["vector", "bm25"]}),
                     "embeddings": [vector]}),
            }
            # a call on its own runs on the coordinator (no function is distributed by an
            # argument: tests/test_citus_null_guard.py), each of its statements on one shard
            conn.execute("SET LOCAL citus.multi_task_query_log_level = 'error'")
            for call in ("SELECT * FROM memdb.search_vector(%(tenant)s, %(embedding)s, 5)",
                         "SELECT * FROM memdb.search_bm25(%(tenant)s, %(query)s, 5)",
                         sql.query("forget_subject")):
                conn.execute(call, {**params, "subject": "bob", "dry_run": True}).fetchall()
            conn.execute("SELECT memdb.mark_used(%s, %s)", ("acme", [added.id]))
        for name, plan in plans.items():
            assert "Custom Scan (Citus" in plan and "Task Count: 1\n" in plan + "\n", (name, plan)


@pytest.mark.citus
def test_every_statement_of_a_tenant_scoped_call_is_one_shard(citus_cluster, cluster_db,
                                                             embedder):
    """With citus.multi_task_query_log_level = error, any statement that would touch more than
    one shard fails: add (each statement of memdb.write_memories on the coordinator), search,
    recall, sessions, ingest and forget_subject all run single-shard."""
    with psycopg.connect(cluster_db, autocommit=True) as conn:
        conn.execute("ALTER DATABASE memdb SET citus.multi_task_query_log_level = 'error'")
    try:
        with _store(cluster_db, embedder, "acme") as store:
            from memdb.write.ingest import TextSource

            store.add("Alice prefers green tea 爱喝绿茶", subject="alice")
            store.add_many([{"content": "Alice moved to Lisbon", "subject": "alice"},
                            {"content": "Alice prefers green tea 爱喝绿茶", "subject": "alice"}])
            assert store.search("green tea")
            assert len(store.recall("what does alice drink?", subject="alice")) > 0
            store.sessions.append("s1", "user", "hello 你好", subject="alice", llm=None)
            store.documents.ingest(TextSource("doc://a", "# Notes\n\nAlice likes tea."))
            assert store.subjects.forget("alice").counts["memories"] >= 2
    finally:
        with psycopg.connect(cluster_db, autocommit=True) as conn:
            conn.execute("ALTER DATABASE memdb RESET citus.multi_task_query_log_level")


@pytest.mark.citus
def test_admin_operations_fan_out_over_every_tenant(cluster_db, embedder):
    for tenant in ("acme", "globex"):
        with _store(cluster_db, embedder, tenant) as store:
            store.add(f"{tenant} fact", subject="alice")
            store.add(f"{tenant} important fact", subject="alice", importance=0.9)
            store.add(f"{tenant} trivia", subject="alice", importance=0.01)
    with MemoryAdmin(cluster_db, actor="janitor") as admin:
        dry = admin.maintain(dry_run=True, importance_threshold=0.06)
        assert dry["tenant"] is None and dry["steps"]["forget_importance"] == 2, dry
        one = admin.maintain(tenant="acme", importance_threshold=0.06,
                             steps=["forget_importance"])
        assert one["steps"] == {"forget_importance": 1}
        every = admin.maintain(importance_threshold=0.06)
        assert every["steps"]["forget_importance"] == 1
        assert admin.retokenize() == 0  # every tenant's index is today's already
    with psycopg.connect(cluster_db, autocommit=True) as conn:
        assert conn.execute("SELECT tenant, count(*) FROM memdb.memories GROUP BY 1 ORDER BY 1"
                            ).fetchall() == [("acme", 2), ("globex", 2)]
        assert {r[0] for r in conn.execute("SELECT DISTINCT actor FROM memdb.memory_history"
                                           " WHERE op = 'delete'")} == {"janitor"}


ID_DEFAULT = ("SELECT pg_get_expr(d.adbin, d.adrelid) FROM pg_attrdef d"
              " WHERE d.adrelid = 'memdb.memories'::regclass AND d.adnum = 1")


@pytest.mark.citus
def test_upgrade_and_downgrade_on_the_cluster(cluster_db, embedder):
    """0014 down (every table local on the coordinator again, rows kept, the SET NULL keys
    back) and up again (distributed, rows on the workers; 0017 fills the event time of the
    stored memories on the workers; 0018 makes new ids time-ordered again), on the cluster
    itself."""
    with _store(cluster_db, embedder, "acme") as store:
        old = store.add("Alice lives in Paris", subject="alice", norm_key="home")
        new = store.add("Alice lives in Lisbon", subject="alice", norm_key="home")
        said = datetime(2023, 6, 27, 10, tzinfo=UTC)
        timed = [store.add(text, subject="bob", created_at=said).id
                 for text in ("Bob moved to Lisbon last week", "鲍勃上周搬到了里斯本")]
    downgrade(cluster_db, "0013")
    try:
        assert current(cluster_db) == "0013"
        assert _distribution(cluster_db) == {}
        with psycopg.connect(cluster_db, autocommit=True) as conn:
            assert conn.execute("SELECT count(*) FROM memdb.memories").fetchone()[0] == 4
            assert conn.execute("SELECT count(*) FROM pg_constraint WHERE conname IN"
                                " ('memories_superseded_by_fkey', 'review_queue_memory_id_fkey')"
                                ).fetchone()[0] == 2
            assert conn.execute("SELECT rolcanlogin FROM pg_roles WHERE rolname = 'memdb_app'"
                                ).fetchone()[0] is False
            assert conn.execute(ID_DEFAULT).fetchone()[0] == "gen_random_uuid()"
    finally:
        upgrade(cluster_db)
    assert current(cluster_db) == head()
    assert set(_distribution(cluster_db)) == TENANT_TABLES | REFERENCE_TABLES
    with _store(cluster_db, embedder, "acme") as store:
        assert [m.id for m in store.list(subject="alice")] == [new.id]
        assert [h.op for h in store.history(old.id)] == ["insert", "supersede"]
        # the workers' identity sequences went past the history rows written before the round
        # trip (this write failed on memory_history's key before alembic/env.py moved them)
        porto = store.add("Alice moved to Porto", subject="alice", norm_key="home")
        assert [h.op for h in store.history(porto.id)] == ["insert"]
    with psycopg.connect(cluster_db, autocommit=True) as conn:
        assert conn.execute("SELECT count(DISTINCT id) = count(*) FROM memdb.memory_history"
                            ).fetchone()[0]
        assert conn.execute("SELECT id, lower(event_time)::date::text,"
                            " upper(event_time)::date::text, names_time FROM memdb.memories"
                            " WHERE tenant = 'acme' ORDER BY id").fetchall() == sorted(
            [(old.id, None, None, False), (new.id, None, None, False),
             (porto.id, None, None, False)]
            + [(mid, "2023-06-19", "2023-06-26", True) for mid in timed])
        # 0018, down with the rest and up again: ids default to uuidv7() again (the writes' ids
        # on the workers: tests/test_search_ties.py on the cluster)
        assert conn.execute(ID_DEFAULT).fetchone()[0] == "uuidv7()"


@pytest.mark.citus
def test_an_image_memory_on_the_cluster(cluster_db, embedder):
    """store.perceive on the cluster: the memory and its memdb.percepts row land on the
    tenant's worker in one transaction, search finds the image's text, another tenant sees
    nothing, and deleting the memory deletes the file row (a co-located cascading key)."""
    from tests.image_factory import text_image

    with _store(cluster_db, embedder, "acme") as acme, \
            _store(cluster_db, embedder, "globex") as globex:
        got = acme.perceive(text_image("登机口在十二号门", lang="zh", size=28), subject="li")
        assert acme.search("登机口", k=1, subject="li")[0].memory.modality == "image"
        assert acme.percepts.get(got.id)["mime"] == "image/png"
        assert all(h.memory.id != got.id for h in globex.search("登机口", k=5))
        acme.delete(got.id)
    with psycopg.connect(cluster_db, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM memdb.percepts").fetchone()[0] == 0


@pytest.mark.citus
def test_deleting_a_memory_clears_references_to_it(cluster_db, embedder):
    """The two ON DELETE SET NULL keys Citus refuses are kept by a trigger on the cluster."""
    with _store(cluster_db, embedder, "acme") as store:
        old = store.add("Alice lives in Paris", subject="alice", norm_key="home")
        new = store.add("Alice lives in Lisbon", subject="alice", norm_key="home")
        with psycopg.connect(cluster_db, autocommit=True) as conn:
            assert conn.execute("SELECT superseded_by FROM memdb.memories WHERE id = %s",
                                (old.id,)).fetchone()[0] == new.id
            conn.execute("DELETE FROM memdb.memories WHERE id = %s", (new.id,))
            assert conn.execute("SELECT superseded_by FROM memdb.memories WHERE id = %s",
                                (old.id,)).fetchone()[0] is None


def test_set_local_is_one_query_on_plain_postgresql(raw):
    """Off Citus, the isolation settings stay the one set_config round trip."""
    calls = []

    class Spy:
        def execute(self, query, params=None):
            calls.append(query)

    set_local(Spy(), "set_isolation", {"tenant": "acme", "subject": ""})
    assert len(calls) == 1 and "set_config" in calls[0]

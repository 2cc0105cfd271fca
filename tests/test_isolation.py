"""Tenant (and subject) isolation by PostgreSQL row-level security.

Two tenants, "acme" and "globex", share one database and hold identical content under
overlapping subjects (user_1, user_10). Proven here:
- every public MemoryStore method sees and changes only its own tenant's rows; the other
  tenant's ids give NotFound (or are ignored, for mark_used);
- subject isolation (MemoryStore(subject=...)) matches subjects exactly, never by prefix,
  and refuses writes for another subject (Forbidden);
- raw SQL as the application role: no tenant set → nothing visible; each SQL function returns
  only the set tenant's rows; the role cannot switch RLS off, disable it or drop a policy;
- what the role may not do at all (revision 0010): read or write the BM25 statistics (a
  subject would see other subjects' words, anyone could poison the ranking), update or delete
  history (only erasure of a whole subject deletes it), register an embedding space (each
  builds an index on the shared table; only the admin does). The full table x operation
  matrix is tests/test_isolation_matrix.py;
- the admin (the login that migrated) still sees everything; policies keep indexes usable.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from psycopg.types.json import Jsonb

from memdb import Forbidden, MemoryStore, NotFound
from tests.fixed_embedder import FixedEmbedder

# These tests set memdb.tenant / memdb.subject for a whole session with set_config(), as a psql
# user could on one server. Citus passes no session setting on to its workers (only SET LOCAL,
# inside a transaction, with citus.propagate_set_commands = 'local', as memdb's DAL does):
# on the cluster these run as tests/test_citus.py's SQL-level isolation test instead.
SESSION_SETTINGS = pytest.mark.local_only(
    "session-level set_config() does not reach Citus workers (tests/test_citus.py covers SQL "
    "isolation there with SET LOCAL)")

TENANTS = ("acme", "globex")
TABLES = ("memories", "memory_history", "memory_usage", "bm25_terms", "bm25_stats")
# per tenant under row-level security; the BM25 statistics are not the app role's at all
RLS_TABLES = ("memories", "memory_history", "memory_usage")
STATS_TABLES = ("bm25_terms", "bm25_stats")
CONTENT = [
    ("user_1", "Alice prefers green tea in the morning"),
    ("user_10", "Alice prefers green tea in the morning"),
    ("user_1", "王五喜欢喝绿茶，不喜欢咖啡"),
    ("user_10", "王五喜欢喝绿茶，不喜欢咖啡"),
    ("user_10", "Bob deploys the billing service on Fridays"),
]


@pytest.fixture
def stores(fresh_db, embedder):
    """{tenant: (store, {(subject, content): id})} with identical data in both tenants,
    plus one already expired memory each."""
    out = {}
    past = datetime.now(UTC) - timedelta(hours=1)
    for tenant in TENANTS:
        store = MemoryStore(fresh_db, tenant=tenant, embedder=embedder, gate=None)
        results = store.add_many([{"content": c, "subject": s} for s, c in CONTENT])
        assert all(r.created for r in results)  # identical content elsewhere is no duplicate
        ids = {key: r.id for key, r in zip(CONTENT, results, strict=True)}
        ids["expired"] = store.add("a stale reminder that already expired", subject="user_1",
                                   expires_at=past).id
        out[tenant] = (store, ids)
    yield out
    for store, _ in out.values():
        store.close()


def _other(tenant: str) -> str:
    return TENANTS[1 - TENANTS.index(tenant)]


def _current_ids(ids: dict) -> set:
    return {v for k, v in ids.items() if k != "expired"}


# -- MemoryStore: every public method ---------------------------------------------------------
@pytest.mark.parametrize("tenant", TENANTS)
def test_reads_see_only_the_callers_tenant(stores, embedder, tenant):
    store, ids = stores[tenant]
    _, other_ids = stores[_other(tenant)]
    assert not _current_ids(ids) & _current_ids(other_ids)

    listed = store.list(limit=1000)
    assert {m.id for m in listed} == _current_ids(ids)
    assert {m.tenant for m in listed} == {tenant}
    assert {m.id for m in store.list(subject="user_1")} == {
        ids[k] for k in CONTENT if k[0] == "user_1"}
    assert store.count() == len(ids)

    for key, mid in ids.items():
        if key != "expired":
            assert store.get(mid).tenant == tenant
        assert store.history(mid)[0].op == "insert"
    for mid in other_ids.values():
        with pytest.raises(NotFound):
            store.get(mid)
        with pytest.raises(NotFound):
            store.history(mid)

    for query in ("green tea", "绿茶", "王五喜欢喝绿茶"):
        for routes in (None, ["vector"], ["bm25"], ["exact"]):
            hits = store.search(query, k=50, routes=routes)
            assert hits, (query, routes)
            assert {h.memory.tenant for h in hits} == {tenant}
            assert {h.memory.id for h in hits} <= _current_ids(ids)
    vector = embedder.embed_queries(["green tea"])[0]
    hits = store.search_by_vector(vector, k=50)
    assert {h.memory.id for h in hits} == _current_ids(ids)


@pytest.mark.parametrize("tenant", TENANTS)
def test_writes_cannot_reach_the_other_tenant(stores, raw, tenant):
    store, ids = stores[tenant]
    other_store, other_ids = stores[_other(tenant)]
    before = raw.execute(
        "SELECT id, content, version, access_count FROM memdb.memories WHERE tenant = %s"
        " ORDER BY id", (_other(tenant),)).fetchall()
    history_before = other_store.history(other_ids[CONTENT[0]])

    target = other_ids[CONTENT[0]]
    with pytest.raises(NotFound):
        store.update(target, content="overwritten by the wrong tenant")
    with pytest.raises(NotFound):
        store.update(target, importance=0.9)
    with pytest.raises(NotFound):
        store.delete(target)
    assert store.mark_used(list(other_ids.values())) == 0
    assert store.mark_used([ids[CONTENT[0]]]) == 1
    assert store.maintenance.purge_expired() == 1  # its own expired memory only

    after = raw.execute(
        "SELECT id, content, version, access_count FROM memdb.memories WHERE tenant = %s"
        " ORDER BY id", (_other(tenant),)).fetchall()
    assert after == before
    assert other_store.history(target) == history_before
    assert other_store.count() == len(other_ids)
    assert raw.execute("SELECT count(*) FROM memdb.memory_usage WHERE tenant = %s",
                       (_other(tenant),)).fetchone()[0] == 0
    # own writes work as before
    assert store.update(ids[CONTENT[0]], importance=0.9).version == 2
    store.delete(ids[CONTENT[4]])
    assert store.count() == len(ids) - 2  # the purged and the deleted row


def test_admin_sees_every_tenant(stores, raw):
    rows = raw.execute("SELECT tenant, count(*) FROM memdb.memories GROUP BY 1 ORDER BY 1")
    assert rows.fetchall() == [(t, len(CONTENT) + 1) for t in TENANTS]
    for table in TABLES:
        tenants = raw.execute(f"SELECT DISTINCT tenant FROM memdb.{table}").fetchall()
        if table != "memory_usage":
            assert {t[0] for t in tenants} == set(TENANTS), table


# -- subject isolation ------------------------------------------------------------------------
@SESSION_SETTINGS
def test_subject_isolation_is_exact_and_refuses_other_subjects(stores, fresh_db, embedder):
    _, ids = stores["acme"]
    user_1 = {ids[k] for k in CONTENT if k[0] == "user_1"}
    user_10 = {ids[k] for k in CONTENT if k[0] == "user_10"}
    with MemoryStore(fresh_db, tenant="acme", subject="user_1", embedder=embedder,
                     gate=None) as s1:
        assert {m.id for m in s1.list()} == user_1
        assert s1.list(subject="user_10") == []
        for routes in (None, ["vector"], ["bm25"], ["exact"]):
            hits = s1.search("green tea 绿茶", k=50, routes=routes)
            assert {h.memory.subject for h in hits} <= {"user_1"}, routes
        assert {h.memory.subject for h in s1.search("Bob billing Fridays", k=50)} <= {"user_1"}
        for mid in user_10:
            with pytest.raises(NotFound):
                s1.get(mid)
            with pytest.raises(NotFound):
                s1.history(mid)
            with pytest.raises(NotFound):
                s1.update(mid, importance=0.1)
            with pytest.raises(NotFound):
                s1.delete(mid)
        assert s1.mark_used(list(user_10)) == 0
        with pytest.raises(Forbidden):
            s1.add("user_1 writing for user_10", subject="user_10")
        with pytest.raises(Forbidden):
            s1.mark_used(list(user_1), subject="user_10")
        mine = s1.add("written without a subject")
        assert s1.get(mine.id).subject == "user_1"
        assert s1.add("explicitly mine", subject="user_1").created
    with MemoryStore(fresh_db, tenant="acme", subject="user_10", embedder=embedder,
                     gate=None) as s10:
        assert {m.id for m in s10.list()} == user_10
    with MemoryStore(fresh_db, tenant="globex", subject="user_1", embedder=embedder,
                     gate=None) as g1:
        assert not {m.id for m in g1.list()} & (user_1 | user_10)


# -- raw SQL as the application role ----------------------------------------------------------
def _as_app(conn: psycopg.Connection, tenant: str | None, subject: str | None = None) -> None:
    conn.execute("SET ROLE memdb_app")
    if tenant is not None:
        conn.execute("SELECT set_config('memdb.tenant', %s, false),"
                     " set_config('memdb.subject', %s, false)", (tenant, subject or ""))


@SESSION_SETTINGS
def test_app_role_without_a_tenant_sees_nothing(stores, raw):
    _as_app(raw, None)
    assert raw.execute("SELECT current_user").fetchone()[0] == "memdb_app"
    for table in RLS_TABLES:
        assert raw.execute(f"SELECT count(*) FROM memdb.{table}").fetchone()[0] == 0, table
    for table in STATS_TABLES:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            raw.execute(f"SELECT count(*) FROM memdb.{table}")
    assert raw.execute("SELECT count(*) FROM memdb.list_memories(NULL)").fetchone()[0] == 0
    assert raw.execute("SELECT count(*) FROM memdb.list_memories('acme')").fetchone()[0] == 0
    # the global registry of embedding models stays readable
    assert raw.execute("SELECT count(*) FROM memdb.embedding_spaces").fetchone()[0] == 1
    # an empty tenant is no tenant
    raw.execute("SELECT set_config('memdb.tenant', '', false)")
    assert raw.execute("SELECT count(*) FROM memdb.memories").fetchone()[0] == 0


@SESSION_SETTINGS
def test_a_role_granted_memdb_app_is_confined_too(stores, raw):
    """A deployment's own login role, made a member of memdb_app, gets the same policies."""
    name = f"memdb_test_member_{raw.info.backend_pid}"
    raw.execute(f"CREATE ROLE {name} NOLOGIN")
    try:
        raw.execute(f"GRANT memdb_app TO {name}")
        raw.execute(f"SET ROLE {name}")
        assert raw.execute("SELECT count(*) FROM memdb.memories").fetchone()[0] == 0
        raw.execute("SELECT set_config('memdb.tenant', 'globex', false)")
        assert {r[0] for r in raw.execute("SELECT DISTINCT tenant FROM memdb.memories")} == {
            "globex"}
        raw.execute("RESET ROLE")
    finally:
        raw.execute("RESET ROLE")
        raw.execute(f"DROP ROLE {name}")


@SESSION_SETTINGS
@pytest.mark.parametrize("tenant", TENANTS)
def test_sql_functions_return_only_the_set_tenant(stores, raw, embedder, tenant):
    _, ids = stores[tenant]
    other = _other(tenant)
    _, other_ids = stores[other]
    vector = embedder.embed_queries(["green tea"])[0]
    _as_app(raw, tenant)

    for table in RLS_TABLES:
        tenants = {r[0] for r in raw.execute(f"SELECT DISTINCT tenant FROM memdb.{table}")}
        assert tenants <= {tenant}, table
    # the functions' own tenant argument: the caller's gives its rows, the other's nothing
    calls = {
        "list_memories": "SELECT id FROM memdb.list_memories(%(t)s, '{}', 1000)",
        "search_bm25": "SELECT id FROM memdb.search_bm25(%(t)s, '绿茶 green tea', 50)",
        "search_exact": "SELECT id FROM memdb.search_exact(%(t)s, '绿茶', 50)",
        "search_vector": "SELECT id FROM memdb.search_vector(%(t)s, %(v)s, 50)",
        "search_hybrid": "SELECT id FROM memdb.search_hybrid(%(t)s, 'green tea 绿茶', %(v)s, 50)",
    }
    for name, query in calls.items():
        mine = {r[0] for r in raw.execute(query, {"t": tenant, "v": vector})}
        assert mine and mine <= _current_ids(ids), name
        assert raw.execute(query, {"t": other, "v": vector}).fetchall() == [], name
    assert raw.execute("SELECT memdb.mark_used(%s, %s)",
                       (other, list(other_ids.values()))).fetchone()[0] == 0
    assert raw.execute("SELECT memdb.mark_used(%s, %s)",
                       (tenant, list(other_ids.values()))).fetchone()[0] == 0
    assert raw.execute("SELECT memdb.delete_memory(%s, %s)",
                       (other, other_ids[CONTENT[0]])).fetchone()[0] is False
    assert raw.execute("SELECT memdb.update_memory(%s, %s, '{\"importance\": 0.1}')",
                       (other, other_ids[CONTENT[0]])).fetchone()[0] is None
    # purge_expired(NULL) means "every tenant" to the admin, only the set tenant here
    assert raw.execute("SELECT memdb.purge_expired(NULL)").fetchone()[0] == 1
    # writing rows of the other tenant is refused by the policies' WITH CHECK
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        raw.execute("SELECT * FROM memdb.add_memories(%s)",
                    (Jsonb([{"content": "planted", "tenant": other}]),))
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        raw.execute("INSERT INTO memdb.bm25_stats (tenant) VALUES (%s)", (other,))
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        raw.execute("UPDATE memdb.memories SET tenant = %s", (other,))
    assert raw.execute("SELECT count(*) FROM memdb.memories WHERE tenant = %s",
                       (other,)).fetchone()[0] == 0
    raw.execute("RESET ROLE")
    # the admin's view of the other tenant is untouched
    assert raw.execute("SELECT count(*) FROM memdb.memories WHERE tenant = %s",
                       (other,)).fetchone()[0] == len(other_ids)
    assert raw.execute("SELECT count(*) FROM memdb.memory_usage").fetchone()[0] == 0


@SESSION_SETTINGS
def test_app_role_cannot_bypass_row_level_security(stores, raw):
    _as_app(raw, "acme")
    raw.execute("SET row_security = off")  # allowed to set, but then RLS-bound queries fail
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        raw.execute("SELECT count(*) FROM memdb.memories")
    raw.execute("RESET row_security")
    for statement in (
        "ALTER TABLE memdb.memories DISABLE ROW LEVEL SECURITY",
        "ALTER TABLE memdb.memories NO FORCE ROW LEVEL SECURITY",
        "DROP POLICY memories_isolation ON memdb.memories",
        "ALTER POLICY memories_isolation ON memdb.memories USING (true)",
        "CREATE POLICY wide_open ON memdb.memories USING (true)",
        "CREATE ROLE memdb_test_escape BYPASSRLS",
        "ALTER ROLE memdb_app BYPASSRLS",
        "TRUNCATE memdb.memories",
        "INSERT INTO memdb.embedding_spaces (model, dims) VALUES ('planted', 3)",
    ):
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            raw.execute(statement)
    assert {r[0] for r in raw.execute("SELECT DISTINCT tenant FROM memdb.memories")} == {"acme"}


@SESSION_SETTINGS
def test_subject_setting_matches_exactly(stores, raw):
    for subject, expected in (("user_1", {"user_1"}), ("user_10", {"user_10"}),
                              ("user_", set()), ("user_%", set()), ("USER_1", set())):
        _as_app(raw, "acme", subject)
        for table in ("memories", "memory_history"):
            got = {r[0] for r in raw.execute(f"SELECT DISTINCT subject FROM memdb.{table}")}
            assert got == expected, (subject, table)
        raw.execute("RESET ROLE")


@SESSION_SETTINGS
def test_policies_keep_the_scope_index(stores, raw):
    _as_app(raw, "acme")
    raw.execute("SET enable_seqscan = off")
    plan = "\n".join(r[0] for r in raw.execute(
        "EXPLAIN SELECT id FROM memdb.list_memories('acme', '{\"subject\": \"user_1\"}')"))
    assert "Index" in plan and "Seq Scan" not in plan, plan
    raw.execute("RESET enable_seqscan")


def test_dal_transactions_run_as_the_app_role(stores, fresh_db):
    from memdb.core.connection import Database

    db = Database(fresh_db)
    try:
        with db.transaction(tenant="acme", subject="user_10") as conn:
            row = conn.execute("SELECT current_user AS role, session_user AS login,"
                               " count(*) AS n FROM memdb.memories").fetchone()
            assert row["role"] == "memdb_app" and row["login"] != "memdb_app"
            assert row["n"] == 3  # acme's user_10 rows: no tenant filter needed in the query
        with db.transaction(tenant="globex") as conn:
            assert conn.execute("SELECT count(*) AS n FROM memdb.memories").fetchone()["n"] == 6
        with db.transaction() as conn:  # no tenant: the login, i.e. the admin
            row = conn.execute("SELECT current_user AS role, current_setting('memdb.tenant',"
                               " true) AS tenant, count(*) AS n FROM memdb.memories").fetchone()
            assert row["role"] != "memdb_app" and not row["tenant"] and row["n"] == 12
    finally:
        db.close()


@SESSION_SETTINGS
def test_an_application_login_cannot_escape(stores, fresh_db, raw, embedder):
    """The deployment the issue asks for: the application logs in as its own role, a member
    of memdb_app and not the owner. The store works; the same login's raw SQL, even after
    RESET ROLE, sees no rows without memdb.tenant and cannot switch row-level security off."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    name = f"memdb_test_login_{raw.info.backend_pid}"
    raw.execute(f"CREATE ROLE {name} LOGIN")
    try:
        raw.execute(f"GRANT memdb_app TO {name}")
        dsn = make_conninfo(**{**conninfo_to_dict(fresh_db), "user": name})
        with MemoryStore(dsn, tenant="globex", embedder=embedder, gate=None) as app:
            assert {m.tenant for m in app.list()} == {"globex"}
            assert app.add("written by the application login", subject="user_1").created
            assert {h.memory.tenant for h in app.search("green tea", k=20)} == {"globex"}
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("RESET ROLE")
            assert conn.execute("SELECT current_user").fetchone()[0] == name
            assert conn.execute("SELECT count(*) FROM memdb.memories").fetchone()[0] == 0
            # the keyword routes run as their owner: they confine this login themselves
            for route in ("search_bm25", "search_exact"):
                for tenant in ("globex", "acme"):
                    assert conn.execute(f"SELECT * FROM memdb.{route}(%s, 'green tea', 50)",
                                        (tenant,)).fetchall() == [], (route, tenant)
            conn.execute("SELECT set_config('memdb.tenant', 'globex', false)")
            assert len(conn.execute("SELECT * FROM memdb.search_bm25('globex', 'green tea', 50)")
                       .fetchall()) == 2
            assert conn.execute("SELECT * FROM memdb.search_bm25('acme', 'green tea', 50)"
                                ).fetchall() == []
            conn.execute("SET row_security = off")
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute("SELECT count(*) FROM memdb.memories")
            conn.execute("RESET row_security")
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute("ALTER TABLE memdb.memories DISABLE ROW LEVEL SECURITY")
    finally:
        raw.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s",
                    (name,))
        raw.execute(f"DROP ROLE {name}")


def test_unmigrated_database_is_reported(empty_db, embedder):
    from memdb import NotMigrated

    with MemoryStore(empty_db, tenant="acme", embedder=embedder, gate=None) as store:
        with pytest.raises(NotMigrated):
            store.list()


def test_every_tenant_table_is_under_row_level_security(raw):
    """Each memdb table with a tenant column has RLS enabled and a policy for memdb_app, so a
    table added by a later revision cannot silently skip isolation."""
    rows = raw.execute("""
        SELECT c.relname, c.relrowsecurity,
               EXISTS (SELECT 1 FROM pg_policy p WHERE p.polrelid = c.oid) AS has_policy
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'memdb' AND c.relkind = 'r'
          AND EXISTS (SELECT 1 FROM pg_attribute a
                      WHERE a.attrelid = c.oid AND a.attname = 'tenant' AND NOT a.attisdropped)
        ORDER BY 1""").fetchall()
    names = {name for name, _, _ in rows}
    assert {"memories", "memory_history", "review_queue", "sediment_runs"} <= names
    assert [name for name, rls, policy in rows if not (rls and policy)] == []


def _index_scans(raw: psycopg.Connection, index: str) -> int:
    raw.execute("SELECT pg_stat_force_next_flush()")
    raw.execute("SELECT 1")  # the backend reports its statistics when it goes idle
    raw.execute("SELECT pg_stat_clear_snapshot()")
    return raw.execute("SELECT idx_scan FROM pg_stat_user_indexes WHERE schemaname = 'memdb'"
                       " AND indexrelname = %s", (index,)).fetchone()[0]


@SESSION_SETTINGS
@pytest.mark.parametrize(("route", "index"), [("search_bm25", "memories_tsv_idx")])
def test_keyword_routes_use_their_index_for_the_app_role(stores, raw, route, index):
    """Under row-level security PostgreSQL may not use an index whose operator is not leakproof
    (tsvector @@, LIKE), so a tenant-wide keyword search would read every row of the tenant.
    The two keyword routes therefore run as their owner and confine the caller themselves
    (memdb.confine): as the app role they still scan their index — and still see only the
    caller's rows and subject. (search_exact does the same; at this table size the planner
    prefers the tenant btree over the trigram index even for the admin, so its speed is shown
    by benchmarks/search_latency.py instead.)"""
    raw.execute("""INSERT INTO memdb.memories (tenant, subject, content, uri, content_hash, tsv)
                   SELECT 'acme', 'user_' || (g % 40), 'filler note number ' || g || ' about lunch',
                          'mem://x', ''::bytea, ''::tsvector
                   FROM generate_series(1, 4000) g""")
    raw.execute("ANALYZE memdb.memories")
    _as_app(raw, "acme")
    raw.execute("SET enable_seqscan = off")  # a table this small would otherwise be read whole
    before = _index_scans(raw, index)
    hits = raw.execute(f"SELECT id FROM memdb.{route}('acme', 'green tea', 10)").fetchall()
    assert len(hits) == 2  # user_1's and user_10's, not globex's
    assert _index_scans(raw, index) > before
    raw.execute("SELECT set_config('memdb.subject', 'user_1', false)")
    subject_hits = raw.execute(f"SELECT id FROM memdb.{route}('acme', 'green tea', 10)").fetchall()
    assert len(subject_hits) == 1
    assert raw.execute(f"SELECT id FROM memdb.{route}('acme', 'green tea', 10,"
                       " '{\"subject\": \"user_10\"}')").fetchall() == []
    raw.execute("RESET ROLE")
    raw.execute("RESET enable_seqscan")


# -- what the application role may not do at all (revision 0010) ----------------------------
@pytest.fixture
def login(fresh_db):
    """A separate LOGIN role granted memdb_app (tests/app_login.py)."""
    from tests.app_login import app_login

    with app_login(fresh_db) as dsn:
        yield dsn


def _scoped(conn: psycopg.Connection, tenant: str, subject: str = "",
            set_role: bool = False) -> None:
    if set_role:  # as the DAL does it; without, the login acts with memdb_app's privileges
        conn.execute("SET ROLE memdb_app")
    conn.execute("SELECT set_config('memdb.tenant', %s, false),"
                 " set_config('memdb.subject', %s, false)", (tenant, subject))


def _statistics(raw: psycopg.Connection) -> tuple[list, list]:
    return (raw.execute("SELECT tenant, term, df FROM memdb.bm25_terms ORDER BY 1, 2").fetchall(),
            raw.execute("SELECT tenant, doc_count, total_len FROM memdb.bm25_stats ORDER BY 1"
                        ).fetchall())


@SESSION_SETTINGS
@pytest.mark.parametrize("set_role", [False, True], ids=["login", "set_role"])
def test_bm25_statistics_are_out_of_the_app_roles_reach(stores, login, raw, embedder,
                                                        set_role):
    """The issue's reproduction: a login granted memdb_app, with memdb.subject set, listed
    other subjects' terms and could zero the statistics. Now every direct access is refused,
    while the routes that rank with them still work for the same login."""
    _, ids = stores["acme"]
    before = _statistics(raw)
    assert any(term == "bob" for _, term, _ in before[0])  # user_10's word, in acme and globex
    with psycopg.connect(login, autocommit=True) as conn:
        _scoped(conn, "acme", "user_1", set_role)
        for statement in (
            "SELECT term FROM memdb.bm25_terms",
            "SELECT count(*) FROM memdb.bm25_terms WHERE term = 'bob'",
            "SELECT doc_count FROM memdb.bm25_stats",
            "UPDATE memdb.bm25_terms SET df = 1000000",
            "UPDATE memdb.bm25_stats SET doc_count = 0",
            "DELETE FROM memdb.bm25_terms",
            "INSERT INTO memdb.bm25_terms (tenant, term, df) VALUES ('acme', 'planted', 1)",
            "INSERT INTO memdb.bm25_stats (tenant) VALUES ('acme')",
            "TRUNCATE memdb.bm25_stats",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement)
        # the readers run as their owner and confine this login themselves
        hits = conn.execute("SELECT id FROM memdb.search_bm25('acme', 'green tea', 10)"
                            ).fetchall()
        assert len(hits) == 1  # user_1's, not user_10's nor globex's
        # the tenant's current memories (the expired one too, until it is purged), for the
        # vector route's choice of an exact scan; another tenant's count is not told
        count = "SELECT memdb.bm25_doc_count(%s)"
        assert conn.execute(count, ("acme",)).fetchone()[0] == len(CONTENT) + 1
        assert conn.execute(count, ("globex",)).fetchone()[0] == 0
        vector = str(embedder.embed_queries(["green tea"])[0].tolist())
        found = {r[0] for r in conn.execute(
            "SELECT id FROM memdb.search_vector('acme', %s::vector, 10)", (vector,))}
        assert found == {ids[k] for k in CONTENT if k[0] == "user_1"}
    assert _statistics(raw) == before


def test_the_app_logins_writes_keep_the_statistics_exact(stores, login, raw, embedder):
    """The trigger that maintains the statistics runs as its owner: writes, updates and
    deletes by an application login (which may not touch the tables) still count exactly."""
    with MemoryStore(login, tenant="acme", subject="user_1", embedder=embedder,
                     gate=None) as app:
        added = app.add("Carol collects rare orchids 兰花").id
        assert [h.memory.id for h in app.search("orchids", routes=["bm25"])] == [added]
        app.update(added, content="Carol collects rare ferns 蕨类")
        assert list(app.search("orchids", routes=["bm25"])) == []
        app.delete(added)
    recount = raw.execute("""
        SELECT m.tenant, u.lexeme, count(*) FROM memdb.memories m, unnest(m.tsv) u
        WHERE m.valid_to IS NULL GROUP BY 1, 2 ORDER BY 1, 2""").fetchall()
    assert [r for r in _statistics(raw)[0] if r[2] != 0] == recount
    assert raw.execute("SELECT doc_count FROM memdb.bm25_stats WHERE tenant = 'acme'"
                       ).fetchone()[0] == len(CONTENT) + 1


def _history(raw: psycopg.Connection) -> dict[tuple[str, str], int]:
    return {(t, s): n for t, s, n in raw.execute(
        "SELECT tenant, subject, count(*) FROM memdb.memory_history GROUP BY 1, 2")}


@SESSION_SETTINGS
@pytest.mark.parametrize("set_role", [False, True], ids=["login", "set_role"])
def test_history_is_append_only_for_the_app_role(stores, login, raw, set_role):
    _, ids = stores["acme"]
    target = ids[CONTENT[0]]
    before = _history(raw)
    with psycopg.connect(login, autocommit=True) as conn:
        _scoped(conn, "acme", "", set_role)
        assert conn.execute("SELECT op FROM memdb.memory_history WHERE memory_id = %s",
                            (target,)).fetchall() == [("insert",)]
        for statement in ("DELETE FROM memdb.memory_history",
                          "DELETE FROM memdb.memory_history WHERE memory_id = %(id)s",
                          "UPDATE memdb.memory_history SET reason = 'rewritten'",
                          "UPDATE memdb.memory_history SET after = NULL WHERE memory_id = %(id)s",
                          "TRUNCATE memdb.memory_history"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement, {"id": target})
    assert _history(raw) == before


@SESSION_SETTINGS
def test_erasure_is_the_one_way_history_goes(stores, login, raw, embedder):
    """memdb.forget_subject (SECURITY DEFINER) deletes a subject's history for the app role,
    confined as the policies would confine it: its own tenant, and its own subject when one is
    set; out of scope every count is 0 and nothing changes."""
    _, ids = stores["acme"]
    before = _history(raw)
    with MemoryStore(login, tenant="acme", subject="user_10", embedder=embedder,
                     gate=None) as s10:
        erased = s10.subjects.forget("user_1")  # another subject: out of this store's scope
        assert set(erased.counts.values()) == {0}
        assert _history(raw) == before
    with psycopg.connect(login, autocommit=True) as conn:
        _scoped(conn, "acme", "user_10")
        counts = conn.execute("SELECT memdb.forget_subject('globex', 'user_10')").fetchone()[0]
        assert set(counts.values()) == {0}
        counts = conn.execute("SELECT memdb.forget_subject('acme', 'user_1', true)").fetchone()[0]
        assert set(counts.values()) == {0}
    assert _history(raw) == before
    with MemoryStore(login, tenant="acme", embedder=embedder, gate=None) as app:
        erased = app.subjects.forget("user_1")
    assert erased.counts["memories"] == 3 and erased.counts["memory_history"] == 3
    after = _history(raw)
    assert ("acme", "user_1") not in after
    assert after == {k: n for k, n in before.items() if k != ("acme", "user_1")}
    assert raw.execute("SELECT count(*) FROM memdb.memories WHERE tenant = 'globex'"
                       " AND subject = 'user_1'").fetchone()[0] == 3
    assert raw.execute("SELECT count(*) FROM memdb.memories WHERE id = ANY(%s)",
                       ([ids[k] for k in CONTENT if k[0] == "user_10"],)).fetchone()[0] == 3


def _spaces(raw: psycopg.Connection) -> tuple[list, list]:
    return (raw.execute("SELECT model FROM memdb.embedding_spaces ORDER BY id").fetchall(),
            raw.execute("SELECT indexname FROM pg_indexes WHERE schemaname = 'memdb'"
                        " AND indexname LIKE 'memories_hnsw_space_%' ORDER BY 1").fetchall())


@SESSION_SETTINGS
@pytest.mark.parametrize("set_role", [False, True], ids=["login", "set_role"])
def test_only_the_admin_registers_an_embedding_space(stores, login, raw, embedder, set_role):
    before = _spaces(raw)
    with psycopg.connect(login, autocommit=True) as conn:
        _scoped(conn, "acme", "user_1", set_role)
        # a registered model: the app role gets its id
        assert conn.execute("SELECT memdb.ensure_embedding_space(%s, %s)",
                            (embedder.model, embedder.dims)).fetchone()[0] == 1
        with pytest.raises(psycopg.DatabaseError) as mismatch:  # registered with 384
            conn.execute("SELECT memdb.ensure_embedding_space(%s, 8)", (embedder.model,))
        assert mismatch.value.sqlstate == "MD001"
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="memdb migrate"):
            conn.execute("SELECT memdb.ensure_embedding_space('planted', 8)")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("INSERT INTO memdb.embedding_spaces (model, dims) VALUES ('x', 8)")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT nextval('memdb.embedding_spaces_id_seq')")
    assert _spaces(raw) == before


def test_a_store_on_an_app_login_names_the_missing_space(stores, login, fresh_db, raw):
    before = _spaces(raw)
    fixed = FixedEmbedder("isolation-test-8")
    with MemoryStore(login, tenant="acme", embedder=fixed, gate=None) as app:
        with pytest.raises(Forbidden, match=r'"isolation-test-8" \(8 dimensions\).*memdb migrate'):
            app.add("this needs a space the admin has not registered")
        assert app.count() == len(CONTENT) + 1  # nothing written
    assert _spaces(raw) == before
    # `migrate` (the admin's) registers the store's embedder's space; then the app login works
    with MemoryStore(fresh_db, tenant="acme", embedder=fixed, gate=None) as admin:
        admin.migrate()
    assert _spaces(raw)[0] == [*before[0], ("isolation-test-8",)]
    with MemoryStore(login, tenant="acme", embedder=fixed, gate=None) as app:
        assert app.add("now there is a space").created
    # a store whose own login is the admin registers its model on first use, as before
    other = FixedEmbedder("isolation-test-other-8")
    with MemoryStore(fresh_db, tenant="globex", embedder=other, gate=None) as admin_store:
        assert admin_store.add("registered on first use").created
    assert _spaces(raw)[0][-1] == ("isolation-test-other-8",)

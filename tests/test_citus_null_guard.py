"""A NULL tenant can crash no coordinator: every tenant function refuses it first.

Citus 14.0.1 looks a distributed function's shard up from its distribution argument while it
plans the call; a NULL there crashed the backend (SIGSEGV) and the postmaster restarted the
coordinator, ending every session of every tenant. Any login that could call the function
could do it, the application's included. Now no memdb function is distributed by an argument
(sql/queries/citus.sql says why a guard alone would not do), and every tenant function is a
guard (memdb.guard_tenant_functions) that raises null_value_not_allowed (22004), naming the
function, on a NULL tenant: on the cluster, as the application's role and as the admin, with
the NULL written in the SQL, bound as a parameter or inside a transaction. On one server the
functions stay unwrapped (nothing crashes there, and the wrapper would cost every call).
After all of it, a session opened before is still there and memdb still works, in Chinese
and English.
"""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from memdb import MemoryStore

# the functions whose NULL tenant means something (every tenant; confine: no tenant)
NOT_GUARDED = {"confine", "purge_expired", "purge_expired_batch", "retokenize",
               "forget_by_importance", "forget_by_age", "forget_by_capacity",
               "decay_hypotheses", "run_maintenance"}


def _tenant_functions(conn: psycopg.Connection) -> list[tuple[str, int, int, bool]]:
    """(name, number of input arguments, p_tenant's position, returns a set) of every memdb
    function a caller names with a p_tenant argument (not the bodies behind the guards)."""
    return [row for row in conn.execute("""
        SELECT p.proname, p.pronargs, array_position(p.proargnames, 'p_tenant') - 1,
               p.proretset
        FROM pg_proc p
        WHERE p.pronamespace = 'memdb'::regnamespace AND 'p_tenant' = ANY (p.proargnames)
          AND p.proname NOT LIKE '%\\_\\_unguarded' ORDER BY 1""")
        if row[0] not in NOT_GUARDED]


def _call(name: str, nargs: int, at: int, retset: bool, param: bool) -> str:
    """The function's call with every argument NULL (p_tenant, at position ``at``, too): as
    literals, or the tenant as a bound parameter."""
    args = ", ".join("%s" if param and i == at else "NULL" for i in range(nargs))
    return f"SELECT * FROM memdb.{name}({args})" if retset else f"SELECT memdb.{name}({args})"


def _assert_null_refused(dsn: str, *, role: str | None, in_transaction: bool) -> int:
    """Calls every tenant function with a NULL tenant on ``dsn`` (as ``role`` when given:
    SET ROLE), in the three forms; each must raise 22004 naming it. Returns how many."""
    checked = 0
    with psycopg.connect(dsn, autocommit=True) as meta:
        functions = _tenant_functions(meta)
    assert len(functions) >= 40, functions  # search, sessions, documents, graph, erasure...
    with psycopg.connect(dsn, autocommit=not in_transaction) as conn:
        if role:
            conn.execute(f"SET ROLE {role}")
        for name, nargs, at, retset in functions:
            for param in (False, True):
                with pytest.raises(psycopg.errors.NullValueNotAllowed) as err:
                    conn.execute(_call(name, nargs, at, retset, param),
                                 (None,) if param else None)
                assert err.value.diag.sqlstate == "22004"
                assert f"memdb.{name}: p_tenant must not be NULL" in str(err.value), name
                if in_transaction:
                    conn.rollback()
                    if role:
                        conn.execute(f"SET ROLE {role}")
                checked += 1
        assert conn.execute("SELECT 1").fetchone()[0] == 1
    return checked


def _memdb_still_works(dsn: str, embedder) -> None:
    with MemoryStore(dsn, embedder=embedder, tenant="腾讯", gate=None) as store:
        store.add("Alice prefers green tea 爱丽丝喜欢喝绿茶", subject="alice")
        store.add("Bob drinks black coffee 鲍勃喝黑咖啡", subject="bob")
        hits = store.search("绿茶 green tea", k=3)
        assert [h.memory.content for h in hits][:1] == ["Alice prefers green tea 爱丽丝喜欢喝绿茶"]
        assert [m.content for m in store.list(subject="bob")] == [
            "Bob drinks black coffee 鲍勃喝黑咖啡"]


def _bystander(dsn: str) -> psycopg.Connection:
    """A session of another tenant, opened before: a crashed backend would end it too."""
    conn = psycopg.connect(dsn, autocommit=True)
    conn.execute("SET application_name = 'bystander'")
    return conn


# -- on the cluster ------------------------------------------------------------------------
@pytest.fixture
def cluster_db(citus_cluster) -> Iterator[str]:
    from tests.citus_cluster import reset

    dsn = citus_cluster.dsn()
    reset(dsn)
    yield dsn
    reset(dsn)


@pytest.mark.citus
def test_no_memdb_function_is_distributed_by_an_argument(cluster_db):
    """What Citus would look the shard up from while planning: none (before, 50 were)."""
    with psycopg.connect(cluster_db, autocommit=True) as conn:
        distributed = [r[0] for r in conn.execute("""
            SELECT p.oid::regprocedure::text FROM pg_dist_object o
            JOIN pg_proc p ON p.oid = o.objid
            WHERE o.classid = 'pg_proc'::regclass AND o.distribution_argument_index IS NOT NULL
              AND p.pronamespace = 'memdb'::regnamespace""")]
    assert distributed == []


@pytest.mark.citus
@pytest.mark.parametrize("who", ["app login", "app role", "admin"])
def test_a_null_tenant_is_an_error_and_the_coordinator_lives(citus_cluster, cluster_db,
                                                             embedder, who):
    """memdb_app logs in on the cluster (Citus connects to the workers as it); the DAL's
    transactions SET ROLE memdb_app; the admin is the superuser."""
    dsn = citus_cluster.dsn(user="memdb_app") if who == "app login" else cluster_db
    bystander = _bystander(cluster_db)
    try:
        pid = bystander.info.backend_pid
        checked = _assert_null_refused(dsn, role="memdb_app" if who == "app role" else None,
                                       in_transaction=False)
        checked += _assert_null_refused(dsn, role="memdb_app" if who == "app role" else None,
                                        in_transaction=True)
        assert checked >= 160
        # no backend crashed: the postmaster would have ended this session with it
        assert bystander.execute("SELECT pg_backend_pid()").fetchone()[0] == pid
        assert bystander.execute("SELECT 1").fetchone()[0] == 1
    finally:
        bystander.close()
    _memdb_still_works(cluster_db, embedder)


# -- on one server -------------------------------------------------------------------------
def test_one_server_keeps_its_functions_unwrapped_and_survives_a_null_tenant(fresh_db,
                                                                          embedder):
    """On plain PostgreSQL the guards are not installed (a NULL tenant crashes nothing there,
    and a plpgsql wrapper would cost every call its inlining and custom plans): no body is
    renamed, and calls with a NULL tenant end without harm (no rows, or an error of the
    function's own), the server still serving."""
    with psycopg.connect(fresh_db, autocommit=True) as conn:
        renamed = conn.execute("SELECT count(*) FROM pg_proc WHERE pronamespace = "
                               "'memdb'::regnamespace AND proname LIKE '%\\_\\_unguarded'"
                               ).fetchone()[0]
        assert renamed == 0
        pid = conn.info.backend_pid
        called = 0
        for name, nargs, at, retset in _tenant_functions(conn):
            try:
                with conn.transaction():
                    conn.execute(_call(name, nargs, at, retset, True), (None,))
            except psycopg.Error as exc:  # the function's own answer; not a crash
                assert not isinstance(exc, psycopg.OperationalError), (name, exc)
            called += 1
        assert called >= 40
        assert conn.execute("SELECT pg_backend_pid()").fetchone() == (pid,)
    _memdb_still_works(fresh_db, embedder)


def test_every_tenant_function_is_guarded(fresh_db):
    """A new function with p_tenant gets a guard too (its body is renamed): the list is
    the catalog's, not a copy."""
    with psycopg.connect(fresh_db, autocommit=True) as conn:
        conn.execute("""CREATE FUNCTION memdb.count_for(p_tenant text) RETURNS bigint
                        LANGUAGE sql STABLE
                        AS $$ SELECT count(*) FROM memdb.memories WHERE tenant = p_tenant $$""")
        wanted = len(_tenant_functions(conn))  # count_for among them; one server: unwrapped
        assert conn.execute("SELECT memdb.guard_tenant_functions(true)").fetchone()[0] == wanted
        assert conn.execute("SELECT memdb.count_for('acme')").fetchone()[0] == 0
        with pytest.raises(psycopg.errors.NullValueNotAllowed, match="memdb.count_for"):
            conn.execute("SELECT memdb.count_for(NULL)")
        bodies = {r[0] for r in conn.execute(
            "SELECT left(proname, -11) FROM pg_proc WHERE pronamespace = 'memdb'::regnamespace"
            " AND proname LIKE '%\\_\\_unguarded'")}
        assert bodies == {row[0] for row in _tenant_functions(conn)}

-- Named queries for the tenant functions' guards (memdb.guard_tenant_functions,
-- sql/functions/990_guard_tenant_functions.sql), run by memdb.core.migrations.apply_objects.

-- name: unguard_tenant_functions
-- Before sql/functions is re-applied: each body memdb.f__unguarded takes its name memdb.f
-- back (its guard is dropped). Nothing to do on a database no memdb has guarded yet.
DO $$
BEGIN
    IF to_regprocedure('memdb.guard_tenant_functions(boolean)') IS NOT NULL THEN
        PERFORM memdb.guard_tenant_functions(false);
    END IF;
END
$$;

-- name: guard_tenant_functions
-- After sql/functions is re-applied, on a Citus coordinator: every tenant function gets its
-- guard. Only there: a NULL tenant crashes nothing on plain PostgreSQL, and the guard (a
-- plpgsql wrapper) would cost every call its SQL-function inlining and custom plans there
-- (tests/sql/test_functions.py's plan checks show it).
SELECT CASE WHEN EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus')
            THEN memdb.guard_tenant_functions(true) ELSE 0 END AS guarded;

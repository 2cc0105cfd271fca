-- Named queries for the tenant functions' guards (memdb.guard_tenant_functions,
-- sql/functions/990_guard_tenant_functions.sql), run by memdb.migrations.apply_objects.

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
-- After sql/functions is re-applied: every tenant function gets its guard.
SELECT memdb.guard_tenant_functions(true) AS guarded;

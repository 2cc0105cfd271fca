-- Named queries for a Citus coordinator (memdb.core.migrations.apply_objects). On plain PostgreSQL
-- only has_citus runs.

-- name: has_citus
SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') AS citus;

-- name: citus_allow_triggers
-- The triggers on memdb.memories are created on its shards, where they fire. Citus calls
-- that unsafe in general (a trigger could write other nodes' rows); memdb's write only the
-- co-located shards of the same tenants (memdb.colocated_table).
SET LOCAL citus.enable_unsafe_triggers = on;

-- name: citus_undistribute_functions
-- No memdb function is distributed by an argument: Citus 14.0.1 looks a distributed
-- function's shard up from its distribution argument while it plans the call, and a NULL
-- there crashes the backend (SIGSEGV); the postmaster then restarts the coordinator, ending
-- every session of every tenant. Any login that may call such a function could do it, and a
-- guard in front (memdb.guard_tenant_functions) does not close it: the function behind it can
-- still be named. So every memdb function an older memdb distributed by p_tenant is made a
-- plain one again (create_distributed_function without a distribution argument clears it). A
-- tenant function then runs where it is called: on the coordinator its statements are each
-- routed to the tenant's shard (single-shard router plans, tested), and inside a router query
-- (a search joined with memdb.memories) it runs on the worker holding the tenant.
SELECT count(*) AS undistributed
FROM (SELECT create_distributed_function(p.oid::regprocedure)
      FROM pg_dist_object o
      JOIN pg_proc p ON p.oid = o.objid
      WHERE o.classid = 'pg_proc'::regclass AND o.distribution_argument_index IS NOT NULL
        AND p.pronamespace = 'memdb'::regnamespace) AS made;

-- name: citus_keep_functions_whole
-- A set-returning SQL function is inlined into the calling query by PostgreSQL's planner: its
-- query would then be planned on the coordinator with the function's arguments as
-- parameters, which Citus refuses. A SET clause keeps a
-- function from being inlined, so on Citus those taking p_tenant get a harmless one (re-done
-- after every migration: CREATE OR REPLACE clears it). Plain PostgreSQL still inlines them.
DO $$
DECLARE
    f regprocedure;
BEGIN
    FOR f IN SELECT p.oid::regprocedure
             FROM pg_proc p
             WHERE p.pronamespace = 'memdb'::regnamespace
               AND p.prolang = (SELECT l.oid FROM pg_language l WHERE l.lanname = 'sql')
               AND p.proretset AND NOT p.prosecdef AND p.proconfig IS NULL
               AND 'p_tenant' = ANY (p.proargnames)
    LOOP
        EXECUTE format('ALTER FUNCTION %s SET memdb.delegated = %L', f, 'on');
    END LOOP;
END
$$;

-- name: citus_allow_nested_in_tenant_functions
-- A tenant function called inside a query that joins a tenant's table (a search joined with
-- memdb.memories, prf_terms over search_bm25) runs on the worker, inside that query on the
-- tenant's shard, and its own statements are distributed queries again, which Citus refuses
-- there unless citus.allow_nested_distributed_execution is on. memdb_app has it (revision
-- 0014), but Citus connects to the workers as the current role: the admin's, or the owner's
-- inside a SECURITY DEFINER function. So each body (memdb.f__unguarded) turns it on for its
-- own run, whoever calls; its statements all filter by its tenant, whose shards are on that
-- worker. Re-done after every migration (CREATE OR REPLACE clears it).
DO $$
DECLARE
    f regprocedure;
BEGIN
    FOR f IN SELECT p.oid::regprocedure FROM pg_proc p
             WHERE p.pronamespace = 'memdb'::regnamespace
               AND p.proname LIKE '%\_\_unguarded'
    LOOP
        EXECUTE format('ALTER FUNCTION %s SET citus.allow_nested_distributed_execution = on', f);
    END LOOP;
END
$$;

-- name: generic_plan_functions
-- Plain PostgreSQL only (not a Citus coordinator, and so never behind the guards of
-- memdb.guard_tenant_functions): memdb.search_hybrid and the routes search_vector,
-- search_bm25 and search_neighbors run their statements with generic plans, and so does the
-- write path, memdb.write_memories (with what it calls: insert_pending, the triggers). Its
-- near-duplicate look-up was planned anew on every add wherever the plan cache judged custom
-- plans cheaper (a subject's small category, e.g. 'general'): ~0.25 ms of a ~2 ms add.
-- Otherwise the fusion statement is planned anew on every call (plpgsql's plan cache keeps
-- choosing custom plans, whose estimates fold the unused routes away), which cost about as much
-- as a subject-scoped BM25 route (benchmarks/search_ab.py); the routes' static statements (one
-- subject; neighbours) read the same index whatever the values, and get the setting for calls
-- outside search_hybrid too (inside it, its setting holds). On Citus the coordinator cannot route a generic plan of
-- the fusion statement's join with memdb.memories ("could not create distributed plan"), so
-- there it keeps custom plans. Re-done after every migration (CREATE OR REPLACE clears it).
DO $$
DECLARE
    f regprocedure;
BEGIN
    FOR f IN SELECT p.oid::regprocedure FROM pg_proc p
             WHERE p.pronamespace = 'memdb'::regnamespace
               AND p.proname IN ('search_hybrid', 'search_vector', 'search_bm25',
                                 'search_neighbors', 'write_memories')
    LOOP
        EXECUTE format('ALTER FUNCTION %s SET plan_cache_mode = force_generic_plan', f);
    END LOOP;
END
$$;

-- name: citus_delete_set_null_trigger
-- Keeps the ON DELETE SET NULL action of the two foreign keys revision 0014 leaves out on Citus
-- (see memdb.memories_delete_set_null): made after every migration once memories is
-- distributed (where that key is gone); plain PostgreSQL never gets it, its keys act.
DROP TRIGGER IF EXISTS memories_delete_set_null ON memdb.memories;
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_constraint
                   WHERE conrelid = 'memdb.memories'::regclass
                     AND conname = 'memories_superseded_by_fkey') THEN
        CREATE TRIGGER memories_delete_set_null
            AFTER DELETE ON memdb.memories
            REFERENCING OLD TABLE AS old_rows
            FOR EACH STATEMENT EXECUTE FUNCTION memdb.memories_delete_set_null();
    END IF;
END
$$;

-- name: citus_identity_past_rows
-- On Citus each worker draws a distributed table's identity values from a range of its own
-- (start_value, from its group id << 48, up to max_value, the next group's start): the history
-- rows the workers' triggers write take ids there. Downgrading past revision 0014 keeps those
-- rows (local again); upgrading distributes the tables anew with every worker's sequence back
-- at the start of its range, and the next write would take an id a row already has. Run after
-- such an upgrade has committed (the workers see the tables only then; alembic/env.py): each
-- worker's memdb identity sequences go past the largest id in their range. Nothing to do on a
-- cluster whose tables were never local with rows from the workers.
SELECT nodename, nodeport, success, result FROM run_command_on_workers($cmd$
DO $$
DECLARE
    r record;
    top bigint;
BEGIN
    FOR r IN SELECT s.schemaname, s.sequencename, s.start_value, s.max_value,
                    d.refobjid::regclass AS tbl, a.attname AS col
             FROM pg_sequences s
             JOIN pg_class c ON c.relname = s.sequencename
                            AND c.relnamespace = s.schemaname::regnamespace
             JOIN pg_depend d ON d.classid = 'pg_class'::regclass AND d.objid = c.oid
                             AND d.refclassid = 'pg_class'::regclass AND d.deptype = 'i'
             JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
             WHERE s.schemaname = 'memdb' LOOP
        EXECUTE format('SELECT max(%I) FROM %s WHERE %I >= $1 AND %I < $2',
                       r.col, r.tbl, r.col, r.col)
            INTO top USING r.start_value, r.max_value;
        IF top IS NOT NULL THEN
            PERFORM setval(format('%I.%I', r.schemaname, r.sequencename), top);
        END IF;
    END LOOP;
END
$$
$cmd$)

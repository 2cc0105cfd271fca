-- memdb schema, revision 0014 (frozen): on a Citus coordinator, distribute memdb by tenant.
-- Applied only when the citus extension is installed in the database (the revision does
-- nothing on plain PostgreSQL); run it as a superuser on the coordinator, with the workers
-- added (citus_add_node) and the citus and vector extensions on every node.
--   * embedding_spaces and api_keys (shared registries, no tenant) become reference tables:
--     a copy on every node;
--   * every tenant-owned table is distributed by tenant, co-located with memdb.memories: one
--     tenant's rows of all tables live in the same shard group, on one worker, so a
--     tenant-scoped query or function call is a single-shard router plan. Revisions 0011 and
--     0013 put the tenant into every primary, unique and foreign key, as Citus requires;
--   * the foreign keys are dropped while the tables are distributed one by one, then made
--     again as they were (Citus checks them on the shards), except the two ON DELETE SET NULL
--     (column) keys, which Citus refuses when the key holds the distribution column:
--     memories.superseded_by and review_queue.memory_id. Their action is kept by the trigger
--     memories_delete_set_null (sql/queries/citus.sql, made only on Citus), which nulls
--     the references to deleted memories in the same statement; Citus does not check them;
--   * memdb_app gets LOGIN: Citus opens its connections to the workers as the current role,
--     and memdb's transactions run as memdb_app (SET LOCAL ROLE). It has no password: allow it
--     in the workers' pg_hba.conf from the coordinator only (or give Citus its credentials in
--     pg_dist_authinfo), never from clients.
--   * memdb_app may run distributed queries nested in a shard's query: a tenant-scoped search
--     (SELECT ... FROM memdb.search_hybrid(tenant, ...) JOIN memdb.memories ... tenant = ...)
--     is one router task on the worker holding the tenant, and the function runs there, where
--     its own queries read the same tenant's co-located shards, on that node. Citus refuses
--     such nesting by default because a nested query reaching another node would run outside
--     the transaction; memdb's tenant-scoped functions never leave their tenant;
--   * the SQL functions that take p_tenant are distributed by it after every migration
--     (memdb.migrations.apply_objects: they are re-created then), not here. A call on its own
--     (SELECT ... FROM memdb.f(tenant, ...)) is then delegated whole to that worker, where Citus
--     checks that every query of the call stays in that tenant.
SET LOCAL citus.enable_unsafe_triggers = on;
SET LOCAL citus.multi_shard_modify_mode = 'sequential';

CREATE TEMP TABLE memdb_0014_fkeys ON COMMIT DROP AS
    SELECT c.conrelid::regclass AS tbl, c.conname, pg_get_constraintdef(c.oid) AS def
    FROM pg_constraint c
    WHERE c.contype = 'f' AND c.connamespace = 'memdb'::regnamespace
    ORDER BY c.conrelid::regclass::text, c.conname;

DO $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT * FROM memdb_0014_fkeys LOOP
        EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', r.tbl, r.conname);
    END LOOP;
END
$$;

-- The triggers on memories go while its rows are copied into the shards (they would fire
-- there, writing history and BM25 statistics a second time); sql/triggers makes them again
-- after the migration. memories is distributed last, co-located with the others, so its
-- shards' triggers never meet a table that is not distributed yet.
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT t.tgname FROM pg_trigger t
             WHERE t.tgrelid = 'memdb.memories'::regclass AND NOT t.tgisinternal LOOP
        EXECUTE format('DROP TRIGGER %I ON memdb.memories', r.tgname);
    END LOOP;
END
$$;

SELECT create_reference_table('memdb.embedding_spaces');
SELECT create_reference_table('memdb.api_keys');
SELECT create_distributed_table('memdb.memory_history', 'tenant');
SELECT create_distributed_table(t, 'tenant', colocate_with => 'memdb.memory_history')
FROM unnest(ARRAY['memdb.bm25_terms', 'memdb.bm25_stats',
                  'memdb.memory_usage', 'memdb.review_queue', 'memdb.sediment_runs',
                  'memdb.documents', 'memdb.document_chunks', 'memdb.sessions',
                  'memdb.session_messages', 'memdb.retrieval_traces', 'memdb.entities',
                  'memdb.entity_mentions', 'memdb.entity_relations', 'memdb.memories']) AS t;

DO $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT * FROM memdb_0014_fkeys
             WHERE conname NOT IN ('memories_superseded_by_fkey', 'review_queue_memory_id_fkey')
    LOOP
        EXECUTE format('ALTER TABLE %s ADD CONSTRAINT %I %s', r.tbl, r.conname, r.def);
    END LOOP;
END
$$;

ALTER ROLE memdb_app LOGIN;
ALTER ROLE memdb_app SET citus.allow_nested_distributed_execution = on;

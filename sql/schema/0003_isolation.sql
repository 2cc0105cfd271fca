-- memdb schema, revision 0003 (frozen): tenant isolation by row-level security.
--   * role memdb_app (NOLOGIN): the role the DAL switches to in every transaction
--     (SET LOCAL ROLE memdb_app, with memdb.tenant and optionally memdb.subject set LOCAL);
--     the login that runs memdb is made a member so it can switch to it;
--   * RLS on every per-tenant table: memdb_app sees and writes only rows of the tenant in
--     setting memdb.tenant (and of the subject in memdb.subject when that is set and not
--     empty); with no tenant set it sees nothing. ENABLE, not FORCE: the tables' owner (the
--     login that migrates: the admin, for maintenance) and superusers bypass the policies;
--   * memdb.embedding_spaces is a global registry of model names: readable, no RLS; rows are
--     added only by memdb.ensure_embedding_space() (SECURITY DEFINER).
-- Policies use only built-in functions: this file runs before sql/functions is applied.

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'memdb_app') THEN
        CREATE ROLE memdb_app NOLOGIN NOSUPERUSER NOINHERIT NOCREATEDB NOCREATEROLE NOBYPASSRLS;
    END IF;
EXCEPTION WHEN duplicate_object OR unique_violation THEN
    NULL;  -- created concurrently by a migration of another database of this cluster
END
$$;

DO $$
BEGIN
    IF NOT pg_has_role(current_user, 'memdb_app', 'MEMBER') THEN
        EXECUTE format('GRANT memdb_app TO %I', current_user);
    END IF;
EXCEPTION WHEN duplicate_object OR unique_violation THEN
    NULL;  -- granted concurrently
END
$$;

GRANT USAGE ON SCHEMA memdb TO memdb_app;
GRANT SELECT ON memdb.embedding_spaces TO memdb_app;
GRANT SELECT, INSERT, UPDATE, DELETE
    ON memdb.memories, memdb.memory_history, memdb.bm25_terms, memdb.bm25_stats,
       memdb.memory_usage
    TO memdb_app;
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA memdb TO memdb_app;

ALTER TABLE memdb.memories ENABLE ROW LEVEL SECURITY;
ALTER TABLE memdb.memory_history ENABLE ROW LEVEL SECURITY;
ALTER TABLE memdb.bm25_terms ENABLE ROW LEVEL SECURITY;
ALTER TABLE memdb.bm25_stats ENABLE ROW LEVEL SECURITY;
ALTER TABLE memdb.memory_usage ENABLE ROW LEVEL SECURITY;

CREATE POLICY memories_isolation ON memdb.memories TO memdb_app
    USING (tenant = current_setting('memdb.tenant', true)
           AND (coalesce(current_setting('memdb.subject', true), '') = ''
                OR subject = current_setting('memdb.subject', true)))
    WITH CHECK (tenant = current_setting('memdb.tenant', true)
                AND (coalesce(current_setting('memdb.subject', true), '') = ''
                     OR subject = current_setting('memdb.subject', true)));

CREATE POLICY memory_history_isolation ON memdb.memory_history TO memdb_app
    USING (tenant = current_setting('memdb.tenant', true)
           AND (coalesce(current_setting('memdb.subject', true), '') = ''
                OR subject = current_setting('memdb.subject', true)))
    WITH CHECK (tenant = current_setting('memdb.tenant', true)
                AND (coalesce(current_setting('memdb.subject', true), '') = ''
                     OR subject = current_setting('memdb.subject', true)));

CREATE POLICY memory_usage_isolation ON memdb.memory_usage TO memdb_app
    USING (tenant = current_setting('memdb.tenant', true)
           AND (coalesce(current_setting('memdb.subject', true), '') = ''
                OR subject = current_setting('memdb.subject', true)))
    WITH CHECK (tenant = current_setting('memdb.tenant', true)
                AND (coalesce(current_setting('memdb.subject', true), '') = ''
                     OR subject = current_setting('memdb.subject', true)));

-- BM25 statistics are per tenant (shared by its subjects: document frequencies are corpus-wide)
CREATE POLICY bm25_terms_isolation ON memdb.bm25_terms TO memdb_app
    USING (tenant = current_setting('memdb.tenant', true))
    WITH CHECK (tenant = current_setting('memdb.tenant', true));

CREATE POLICY bm25_stats_isolation ON memdb.bm25_stats TO memdb_app
    USING (tenant = current_setting('memdb.tenant', true))
    WITH CHECK (tenant = current_setting('memdb.tenant', true));

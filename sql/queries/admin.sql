-- Named queries of memdb.core.embedded and memdb.families.admin (loaded by memdb.core.sql): who connects as whom.

-- name: ensure_app_login
-- The embedded server's data-path login (roles are per cluster; run as the superuser): created
-- if missing, kept unprivileged, and made a member of memdb_app once a migration (revision
-- 0003) has created that role. Each block tolerates a concurrent creation or grant.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'memdb_user') THEN
        CREATE ROLE memdb_user LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS NOREPLICATION;
    ELSIF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'memdb_user'
                  AND (rolsuper OR rolcreatedb OR rolcreaterole OR rolbypassrls
                       OR rolreplication OR NOT rolcanlogin)) THEN
        ALTER ROLE memdb_user LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS NOREPLICATION;
    END IF;
EXCEPTION WHEN duplicate_object OR unique_violation THEN
    NULL;
END
$$;
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'memdb_app')
       AND NOT pg_has_role('memdb_user', 'memdb_app', 'MEMBER') THEN
        GRANT memdb_app TO memdb_user;
    END IF;
EXCEPTION WHEN duplicate_object OR unique_violation THEN
    NULL;
END
$$;

-- name: admin_login
-- Is the login an admin: not confined by row-level security? The same test as memdb.confine()
-- (sql/functions/033_confine.sql): a superuser, BYPASSRLS, or a member of the owner of
-- memdb.memories (owner NULL: not migrated yet).
SELECT current_user AS login,
       r.rolsuper OR r.rolbypassrls
           OR coalesce(pg_has_role(current_user, c.relowner, 'USAGE'), false) AS admin,
       c.oid IS NOT NULL AS migrated
  FROM pg_roles r
  LEFT JOIN pg_class c ON c.oid = to_regclass('memdb.memories')
 WHERE r.rolname = current_user;

-- name: retokenize
-- The keyword index re-derived after an analyzer change (sql/functions/093_retokenize.sql).
SELECT memdb.retokenize(%(tenant)s) AS n;

-- name: vector_indexes
-- Each embedding space's HNSW index (sql/functions/051_ensure_vector_index.sql): built or not,
-- and what decides when memdb builds it (the database's current memories, the threshold).
SELECT es.id AS space_id, es.model, es.dims,
       'memdb.memories_hnsw_space_' || es.id AS index,
       to_regclass('memdb.memories_hnsw_space_' || es.id) IS NOT NULL AS built,
       (SELECT coalesce(sum(s.doc_count), 0) FROM memdb.bm25_stats s)::bigint AS memories,
       memdb.hnsw_min_rows() AS min_rows
FROM memdb.embedding_spaces es
ORDER BY es.id;

-- name: build_vector_index
SELECT memdb.ensure_vector_index(%(space_id)s, true) AS built;

-- name: schema_created
-- Has any memdb migration run on this database (memdb.core.autoschema: the embedded server
-- migrates itself on first use)? alembic's version table is made in the first migration's
-- transaction, so it exists exactly when a migration committed.
SELECT to_regclass('public.memdb_alembic_version') IS NOT NULL AS created;

-- name: migration_lock
-- Held by every memdb migration until it commits (alembic/env.py), so two migrations started at
-- once (two processes on a fresh embedded folder, two `memdb migrate`) run one after the other:
-- the second then finds the first one's revision and has nothing left to do.
SELECT pg_advisory_xact_lock(hashtextextended('memdb migrations', 0));

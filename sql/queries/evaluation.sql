-- Named queries of memdb.evaluation._scratch (loaded by memdb.core.sql): the scratch databases of
-- `memdb eval`. {} placeholders are identifiers/literals composed with psycopg.sql.

-- name: scratch_create
CREATE DATABASE {name};

-- name: scratch_set_owner
-- Who made it (host, boot, pid, process start): the next run drops it once that process is gone.
COMMENT ON DATABASE {name} IS {owner};

-- name: scratch_drop
DROP DATABASE IF EXISTS {name} WITH (FORCE);

-- name: scratch_databases
-- The scratch databases on this server, with the owner recorded in their comment (or NULL).
SELECT datname, shobj_description(oid, 'pg_database') AS owner
FROM pg_database
WHERE starts_with(datname, %(prefix)s)
ORDER BY datname;

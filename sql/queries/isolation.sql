-- Named queries of memdb.core.connection (loaded by memdb.core.sql): the isolation context of one
-- transaction. set_config('role', ..., true) is SET LOCAL ROLE, so one round trip sets the
-- role and the row-level-security keys; all three end with the transaction.

-- name: set_isolation
SELECT set_config('role', 'memdb_app', true) AS role,
       set_config('memdb.tenant', %(tenant)s, true) AS tenant,
       set_config('memdb.subject', %(subject)s, true) AS subject;

-- name: set_isolation_citus
-- The same on a Citus coordinator (memdb.core.connection.set_local fills in quoted literals): Citus
-- passes SET LOCAL, not set_config, on to the workers, once propagate_set_commands = 'local'.
-- The role is set before that: Citus connects to the workers as the current role anyway, and a
-- propagated role would also switch its connections for SECURITY DEFINER functions (as their
-- owner) to memdb_app.
SET LOCAL ROLE memdb_app;
SET LOCAL citus.propagate_set_commands = 'local';
SET LOCAL memdb.tenant = {tenant};
SET LOCAL memdb.subject = {subject};
SET LOCAL memdb.actor = {actor};

-- name: connection_features
-- Once per pooled connection (memdb.core.connection._configure): pgvector's type, and Citus.
SELECT EXISTS (SELECT 1 FROM pg_type WHERE typname = 'vector') AS vector,
       EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') AS citus;

-- name: begin_transaction
-- memdb.core.connection's pipelined transaction: BEGIN, the isolation settings, the statements and
-- COMMIT (or ROLLBACK) go to the server in one round trip.
BEGIN;

-- name: begin_snapshot
-- The same, REPEATABLE READ: every statement of the transaction sees one snapshot (a search whose
-- keyword routes run ahead of its fusion statement, memdb.search_keyword_routes).
BEGIN ISOLATION LEVEL REPEATABLE READ;

-- name: set_snapshot
-- The same for a transaction psycopg began (no pipeline mode): before any other statement.
SET TRANSACTION ISOLATION LEVEL REPEATABLE READ;

-- name: commit_transaction
COMMIT;

-- name: rollback_transaction
ROLLBACK;

-- Named queries of memdb.connection (loaded by memdb._sql): the isolation context of one
-- transaction. set_config('role', ..., true) is SET LOCAL ROLE, so one round trip sets the
-- role and the row-level-security keys; all three end with the transaction.

-- name: set_isolation
SELECT set_config('role', 'memdb_app', true) AS role,
       set_config('memdb.tenant', %(tenant)s, true) AS tenant,
       set_config('memdb.subject', %(subject)s, true) AS subject;

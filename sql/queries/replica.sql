-- Named queries of memdb.core.replica (loaded by memdb.core.sql): read-your-writes on a hot standby.

-- name: wal_insert_lsn
-- On the primary, after a write committed: a WAL position at or past its commit record.
SELECT pg_current_wal_insert_lsn()::text AS lsn;

-- name: replica_replayed
-- On the standby: has it replayed up to %(lsn)s? (A server not in recovery is not a standby:
-- it holds everything it has, so it counts as caught up.)
SELECT NOT pg_is_in_recovery()
           OR coalesce(pg_last_wal_replay_lsn() >= %(lsn)s::pg_lsn, false) AS caught_up,
       pg_last_wal_replay_lsn()::text AS replayed;

-- Named queries of memdb.core.replica (loaded by memdb.core.sql): read-your-writes on a hot standby.

-- name: wal_commit_lsn
-- On the primary, after a write committed: a WAL position at or past its commit record that
-- the standby can reach. With synchronous_commit on (or local, remote_write, remote_apply) a
-- commit returns once its record is flushed, so the flush position is past it; WAL inserted
-- after it and not flushed yet (a full-page image for hint bits under data checksums, a
-- non-transactional message) goes to the standby only when the WAL writer flushes it, up to
-- 25 x wal_writer_delay later on an idle primary. With synchronous_commit off a commit may
-- not be flushed yet: the insert position then.
SELECT CASE WHEN current_setting('synchronous_commit') = 'off'
            THEN pg_current_wal_insert_lsn()
            ELSE pg_current_wal_flush_lsn() END::text AS lsn;

-- name: replica_replayed
-- On the standby: has it replayed up to %(lsn)s? (A server not in recovery is not a standby:
-- it holds everything it has, so it counts as caught up.)
SELECT NOT pg_is_in_recovery()
           OR coalesce(pg_last_wal_replay_lsn() >= %(lsn)s::pg_lsn, false) AS caught_up,
       pg_last_wal_replay_lsn()::text AS replayed;

-- The job queue (memdb.jobs; memdb/jobs). Run in transactions confined to a tenant (RLS),
-- except claim_jobs, which a worker runs as memdb_app with no tenant (SECURITY DEFINER).

-- name: enqueue_job
SELECT * FROM memdb.enqueue_job(%(tenant)s, %(kind)s, %(payload)s, %(idempotency_key)s,
                                %(run_after)s, %(max_attempts)s, %(max_pending)s);

-- A store confined to a subject (a key bound to one) sees only its subject's jobs: row-level
-- security (memdb.jobs.subject, revision 0024), like its memories.
-- name: get_job
SELECT * FROM memdb.jobs WHERE tenant = %(tenant)s AND id = %(id)s;

-- name: list_jobs
-- newest first; state and kind optional
SELECT * FROM memdb.jobs
WHERE tenant = %(tenant)s
  AND (%(state)s::text IS NULL OR state = %(state)s::text)
  AND (%(kind)s::text IS NULL OR kind = %(kind)s::text)
ORDER BY created_at DESC, id DESC
LIMIT %(limit)s;

-- name: job_stats
-- queue depth by state, the age of the oldest due job, and the last hour's throughput
SELECT count(*) FILTER (WHERE state = 'queued')                  AS queued,
       count(*) FILTER (WHERE state = 'running')                 AS running,
       count(*) FILTER (WHERE state = 'failed')                  AS failed,
       count(*) FILTER (WHERE state = 'dead')                    AS dead,
       count(*) FILTER (WHERE state = 'done')                    AS done,
       count(*) FILTER (WHERE state = 'cancelled')               AS cancelled,
       extract(epoch FROM now() - min(run_after) FILTER (
           WHERE state IN ('queued', 'failed') AND run_after <= now()))::float8
                                                                 AS oldest_due_seconds,
       count(*) FILTER (WHERE state = 'done'
                        AND finished_at > now() - interval '1 hour') AS done_last_hour,
       count(*) FILTER (WHERE state = 'dead'
                        AND finished_at > now() - interval '1 hour') AS dead_last_hour
FROM memdb.jobs WHERE tenant = %(tenant)s;

-- name: claim_jobs
SELECT * FROM memdb.claim_jobs(%(worker)s, %(limit)s, %(lease)s, %(tenants)s, %(kinds)s);

-- name: start_job
SELECT * FROM memdb.start_job(%(tenant)s, %(id)s, %(worker)s);

-- name: complete_job
SELECT memdb.complete_job(%(tenant)s, %(id)s, %(worker)s, %(result)s) AS done;

-- name: fail_job
SELECT memdb.fail_job(%(tenant)s, %(id)s, %(worker)s, %(error)s, %(backoff)s,
                      %(retry)s) AS state;

-- name: cancel_job
SELECT memdb.cancel_job(%(tenant)s, %(id)s) AS state;

-- name: retry_job
SELECT memdb.retry_job(%(tenant)s, %(id)s) AS state;

-- name: listen_jobs
LISTEN memdb_jobs;

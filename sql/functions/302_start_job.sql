-- memdb.start_job(p_tenant, p_id, p_worker) -> the jobs' rows
-- The first statement of a job's handler transaction (as memdb_app, confined to the job's
-- tenant): locks the job's row until the transaction ends and returns it, if p_worker still
-- holds it (running, locked_by p_worker); no row when the lease was lost (cancelled, or taken
-- by another worker after it expired). While the handler's transaction is open, claim_jobs
-- skips the locked row even past the lease; if the worker dies, the transaction rolls back
-- and the job is claimable again once its lease has passed. The handler's writes and
-- memdb.complete_job commit together: its effect is applied exactly once.
-- Example: SELECT * FROM memdb.start_job('acme', '0190...'::uuid, 'host:123');
CREATE OR REPLACE FUNCTION memdb.start_job(p_tenant text, p_id uuid, p_worker text)
RETURNS TABLE (
    tenant text, id uuid, kind text, payload jsonb, state text, attempts integer,
    max_attempts integer, run_after timestamptz, locked_by text, locked_until timestamptz,
    last_error text, result jsonb, idempotency_key text, created_at timestamptz,
    updated_at timestamptz, finished_at timestamptz, subject text)
LANGUAGE sql VOLATILE
AS $$
    SELECT j.tenant, j.id, j.kind, j.payload, j.state, j.attempts, j.max_attempts, j.run_after,
           j.locked_by, j.locked_until, j.last_error, j.result, j.idempotency_key, j.created_at,
           j.updated_at, j.finished_at, j.subject
    FROM memdb.jobs j
    WHERE j.tenant = p_tenant AND j.id = p_id AND j.state = 'running'
      AND j.locked_by = p_worker
    FOR UPDATE
$$;

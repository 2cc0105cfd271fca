-- memdb.fail_job(p_tenant, p_id, p_worker, p_error, p_backoff_seconds, p_retry) -> text
-- Records a failed attempt (after the handler's transaction rolled back): the job is 'failed'
-- and due again after p_backoff_seconds * 2^(attempts - 1) (at most an hour), or 'dead' when
-- its attempts are used up or p_retry is false (a permanent failure). last_error keeps the
-- error either way. Returns the new state; NULL when p_worker no longer holds the job.
-- Example: SELECT memdb.fail_job('acme', '0190...'::uuid, 'host:123', 'timeout', 1);
CREATE OR REPLACE FUNCTION memdb.fail_job(p_tenant text, p_id uuid, p_worker text,
                                          p_error text, p_backoff_seconds double precision
                                          DEFAULT 1, p_retry boolean DEFAULT true)
RETURNS text
LANGUAGE sql VOLATILE
AS $$
    UPDATE memdb.jobs j
    SET state = CASE WHEN p_retry AND j.attempts < j.max_attempts THEN 'failed' ELSE 'dead' END,
        last_error = left(coalesce(p_error, 'failed'), 4000),
        run_after = now() + make_interval(secs => least(
            3600, greatest(p_backoff_seconds, 0) * 2 ^ greatest(j.attempts - 1, 0))),
        locked_by = NULL, locked_until = NULL, updated_at = now(),
        finished_at = CASE WHEN p_retry AND j.attempts < j.max_attempts THEN NULL
                           ELSE now() END
    WHERE j.tenant = p_tenant AND j.id = p_id AND j.state = 'running'
      AND j.locked_by = p_worker
    RETURNING j.state
$$;

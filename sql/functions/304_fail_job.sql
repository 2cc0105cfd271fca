-- memdb.fail_job(p_tenant, p_id, p_worker, p_error, p_backoff_seconds, p_retry) -> text
-- Records a failed attempt (after the handler's transaction rolled back): the job is 'failed'
-- and due again after p_backoff_seconds * 2^(attempts - 1) (at most an hour), or 'dead' when
-- its attempts are used up or p_retry is false (a permanent failure). last_error keeps the
-- error either way. Returns the new state; NULL when p_worker no longer holds the job.
-- The row is read first and the UPDATE gets plain values: Citus refuses an UPDATE whose SET
-- mixes now() (STABLE) with column references, e.g. now() + backoff(attempts).
-- Example: SELECT memdb.fail_job('acme', '0190...'::uuid, 'host:123', 'timeout', 1);
CREATE OR REPLACE FUNCTION memdb.fail_job(p_tenant text, p_id uuid, p_worker text,
                                          p_error text, p_backoff_seconds double precision
                                          DEFAULT 1, p_retry boolean DEFAULT true)
RETURNS text
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_now timestamptz := now();
    v_attempts integer;
    v_max integer;
    v_state text;
BEGIN
    SELECT j.attempts, j.max_attempts INTO v_attempts, v_max
    FROM memdb.jobs j
    WHERE j.tenant = p_tenant AND j.id = p_id AND j.state = 'running'
      AND j.locked_by = p_worker
    FOR UPDATE;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    v_state := CASE WHEN p_retry AND v_attempts < v_max THEN 'failed' ELSE 'dead' END;
    UPDATE memdb.jobs j
    SET state = v_state,
        last_error = left(coalesce(p_error, 'failed'), 4000),
        run_after = v_now + make_interval(secs => least(
            3600, greatest(p_backoff_seconds, 0) * 2 ^ greatest(v_attempts - 1, 0))),
        locked_by = NULL, locked_until = NULL, updated_at = v_now,
        finished_at = CASE WHEN v_state = 'dead' THEN v_now END
    WHERE j.tenant = p_tenant AND j.id = p_id;
    RETURN v_state;
END
$$;

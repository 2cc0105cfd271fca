-- memdb.retry_job(p_tenant, p_id) -> text
-- Runs a dead, failed or cancelled job again now: queued, its attempts back to 0 (last_error
-- kept until it next runs), and wakes the workers. A queued or running job is left as it is;
-- a done job is never run twice (SQLSTATE MD003, memdb.core.errors.Conflict). Returns the job's
-- state after; NULL when the tenant has no such job.
-- Example: SELECT memdb.retry_job('acme', '0190...'::uuid);
CREATE OR REPLACE FUNCTION memdb.retry_job(p_tenant text, p_id uuid)
RETURNS text
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_state text;
BEGIN
    SELECT j.state INTO v_state FROM memdb.jobs j
    WHERE j.tenant = p_tenant AND j.id = p_id;
    IF v_state = 'done' THEN
        RAISE EXCEPTION 'job % is done: a done job is not run again (enqueue a new one)', p_id
            USING ERRCODE = 'MD003';
    END IF;
    IF v_state IN ('dead', 'failed', 'cancelled') THEN
        UPDATE memdb.jobs j
        SET state = 'queued', attempts = 0, run_after = now(), locked_by = NULL,
            locked_until = NULL, updated_at = now(), finished_at = NULL
        WHERE j.tenant = p_tenant AND j.id = p_id;
        PERFORM pg_notify('memdb_jobs', '');
        RETURN 'queued';
    END IF;
    RETURN v_state;
END
$$;

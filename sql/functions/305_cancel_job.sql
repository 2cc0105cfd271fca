-- memdb.cancel_job(p_tenant, p_id) -> text
-- Cancels a job that is not being handled: queued, failed (waiting to retry), or running
-- without its handler's transaction (claimed a moment ago, or its worker died): it becomes
-- 'cancelled' and is never run again. A job being handled right now (its row locked by the
-- handler's transaction) is not waited for: SQLSTATE MD003 (memdb.core.errors.Conflict). A
-- finished job (done, dead, cancelled) is left as it is. Returns the job's state after; NULL
-- when the tenant has no such job.
-- Example: SELECT memdb.cancel_job('acme', '0190...'::uuid);
CREATE OR REPLACE FUNCTION memdb.cancel_job(p_tenant text, p_id uuid)
RETURNS text
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_state text;
BEGIN
    BEGIN
        SELECT j.state INTO v_state FROM memdb.jobs j
        WHERE j.tenant = p_tenant AND j.id = p_id
        FOR UPDATE NOWAIT;
    EXCEPTION WHEN lock_not_available THEN
        RAISE EXCEPTION 'job % is running: it cannot be cancelled while its handler runs',
                        p_id USING ERRCODE = 'MD003';
    END;
    IF v_state IN ('queued', 'failed', 'running') THEN
        UPDATE memdb.jobs j
        SET state = 'cancelled', locked_by = NULL, locked_until = NULL, updated_at = now(),
            finished_at = now()
        WHERE j.tenant = p_tenant AND j.id = p_id;
        RETURN 'cancelled';
    END IF;
    RETURN v_state;
END
$$;

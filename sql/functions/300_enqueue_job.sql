-- memdb.enqueue_job(p_tenant, p_kind, p_payload, p_idempotency_key, p_run_after,
--                   p_max_attempts, p_max_pending) -> (id, state, created)
-- Adds a job to the tenant's queue (as the caller: row-level security applies) and wakes the
-- workers (NOTIFY memdb_jobs; the payload is empty: listeners learn no tenant name, and a
-- transaction's notifications collapse into one). With p_idempotency_key, a job of the same
-- tenant, kind and key is returned instead (created false) whatever its state.
-- Backpressure: when the tenant already has p_max_pending jobs not finished (queued, failed
-- or running) a new one is refused with SQLSTATE MD002 (memdb.families.jobs.QueueFull). Concurrent
-- enqueues of one tenant may pass the bound by their number; it is never unbounded.
-- Example: SELECT * FROM memdb.enqueue_job('acme', 'noop', '{}');
CREATE OR REPLACE FUNCTION memdb.enqueue_job(
    p_tenant text, p_kind text, p_payload jsonb DEFAULT '{}'::jsonb,
    p_idempotency_key text DEFAULT NULL, p_run_after timestamptz DEFAULT NULL,
    p_max_attempts integer DEFAULT 5, p_max_pending integer DEFAULT 10000)
RETURNS TABLE (id uuid, state text, created boolean)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_pending bigint;
BEGIN
    IF p_idempotency_key IS NOT NULL THEN
        RETURN QUERY SELECT j.id, j.state, false FROM memdb.jobs j
                     WHERE j.tenant = p_tenant AND j.kind = p_kind
                       AND j.idempotency_key = p_idempotency_key;
        IF FOUND THEN
            RETURN;
        END IF;
    END IF;
    SELECT count(*) INTO v_pending FROM (
        SELECT 1 FROM memdb.jobs j
        WHERE j.tenant = p_tenant AND j.state IN ('queued', 'failed', 'running')
        LIMIT p_max_pending) AS pending;
    IF v_pending >= p_max_pending THEN
        RAISE EXCEPTION 'the job queue of tenant % is full: % jobs pending (the bound); retry '
                        'later', p_tenant, p_max_pending
            USING ERRCODE = 'MD002';
    END IF;
    RETURN QUERY
        INSERT INTO memdb.jobs AS j (tenant, id, kind, payload, idempotency_key, run_after,
                                     max_attempts)
        VALUES (p_tenant, memdb.new_memory_id(), p_kind, coalesce(p_payload, '{}'::jsonb),
                p_idempotency_key, coalesce(p_run_after, now()), p_max_attempts)
        ON CONFLICT ON CONSTRAINT jobs_idempotency_key DO NOTHING
        RETURNING j.id, j.state, true;
    IF NOT FOUND THEN  -- the same key enqueued concurrently: that job
        RETURN QUERY SELECT j.id, j.state, false FROM memdb.jobs j
                     WHERE j.tenant = p_tenant AND j.kind = p_kind
                       AND j.idempotency_key = p_idempotency_key;
        RETURN;
    END IF;
    PERFORM pg_notify('memdb_jobs', '');
END
$$;

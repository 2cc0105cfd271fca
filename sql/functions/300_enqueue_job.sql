-- memdb.enqueue_job(p_tenant, p_kind, p_payload, p_idempotency_key, p_run_after,
--                   p_max_attempts, p_max_pending) -> (id, state, created)
-- Adds a job to the tenant's queue (as the caller: row-level security applies) and wakes the
-- workers (NOTIFY memdb_jobs; the payload is empty: listeners learn no tenant name, and a
-- transaction's notifications collapse into one). With p_idempotency_key, a job of the same
-- tenant, kind and key is returned instead (created false) whatever its state.
-- Backpressure: when the tenant already has p_max_pending jobs not finished (queued, failed
-- or running) a new one is refused with SQLSTATE MD002 (memdb.families.jobs.QueueFull). Concurrent
-- enqueues of one tenant may pass the bound by their number; it is never unbounded. The bound is
-- the tenant's, counted by memdb.pending_jobs whatever the caller may see.
-- A caller confined to a subject (memdb.subject set) enqueues its subject's jobs: a payload
-- that names no subject gets {"subject": <the caller's>}, and one that names another subject
-- (its "subject", or its "options"' subject) is refused with SQLSTATE 42501
-- (memdb.core.errors.Forbidden). The job's subject column (revision 0024) is generated from the
-- payload, and row-level security keeps it from the other subjects.
-- An idempotency key already taken by a job the caller cannot see (another subject's) is
-- refused with SQLSTATE MD003 (memdb.core.errors.Conflict).
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
    v_subject text := nullif(current_setting('memdb.subject', true), '');
    v_named text := coalesce(p_payload ->> 'subject', p_payload #>> '{options,subject}');
BEGIN
    IF v_subject IS NOT NULL AND v_named IS NULL THEN
        p_payload := coalesce(p_payload, '{}'::jsonb) || jsonb_build_object('subject', v_subject);
    ELSIF v_subject IS NOT NULL AND v_named IS DISTINCT FROM v_subject THEN
        RAISE EXCEPTION 'a caller confined to subject % cannot enqueue a job of subject %',
                        quote_literal(v_subject), quote_literal(v_named)
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF p_idempotency_key IS NOT NULL THEN
        RETURN QUERY SELECT j.id, j.state, false FROM memdb.jobs j
                     WHERE j.tenant = p_tenant AND j.kind = p_kind
                       AND j.idempotency_key = p_idempotency_key;
        IF FOUND THEN
            RETURN;
        END IF;
    END IF;
    v_pending := memdb.pending_jobs(p_tenant, p_max_pending);
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
        IF NOT FOUND THEN  -- taken by a job row-level security hides: another subject's
            RAISE EXCEPTION 'idempotency key % of job kind % is taken by another subject''s job',
                            quote_literal(p_idempotency_key), p_kind USING ERRCODE = 'MD003';
        END IF;
        RETURN;
    END IF;
    PERFORM pg_notify('memdb_jobs', '');
END
$$;

-- memdb.enqueue_due_schedules(p_tenants, p_kinds) -> (tenant, kind, job_id, created)
-- What every worker calls when it wakes up: enqueues one job for each due schedule of
-- memdb.job_schedules (next_run <= now()), with the schedule's kind and payload and the
-- idempotency key 'schedule:<kind>@<period start>' (periods are aligned on multiples of
-- period_seconds since the epoch, in UTC), then moves the schedule's next_run to the next
-- period's start. At most once per schedule and period, however many workers call it at once:
-- each schedule's row is locked FOR UPDATE SKIP LOCKED (a worker skips the schedules another
-- is enqueueing), and the job's idempotency key is unique (a job of that period already made
-- is returned with created false, and nothing is added).
-- p_tenants / p_kinds: only these tenants / kinds (NULL: any); a worker names the kinds it
-- has handlers for. Wakes the workers (NOTIFY memdb_jobs) when it made a job.
-- SECURITY DEFINER, executable by memdb_app only: like memdb.claim_jobs, it reads every
-- tenant's due schedules; each tenant's jobs are written under its own tenant's key.
-- Example: SELECT * FROM memdb.enqueue_due_schedules();
CREATE OR REPLACE FUNCTION memdb.enqueue_due_schedules(
    p_tenants text[] DEFAULT NULL, p_kinds text[] DEFAULT NULL)
RETURNS TABLE (tenant text, kind text, job_id uuid, created boolean)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_tenants text[];
    v_tenant  text;
    v_start   timestamptz;
    v_key     text;
    v_id      uuid;
    v_made    boolean := false;
    r         record;
BEGIN
    SELECT array_agg(DISTINCT s.tenant) INTO v_tenants FROM memdb.job_schedules s
    WHERE s.next_run <= now()
      AND (p_tenants IS NULL OR s.tenant = ANY (p_tenants))
      AND (p_kinds IS NULL OR s.kind = ANY (p_kinds));
    IF v_tenants IS NULL THEN
        RETURN;
    END IF;
    FOREACH v_tenant IN ARRAY v_tenants LOOP  -- one tenant at a time: routed to its shard
        FOR r IN SELECT s.kind, s.payload, s.period_seconds FROM memdb.job_schedules s
                 WHERE s.tenant = v_tenant AND s.next_run <= now()
                   AND (p_kinds IS NULL OR s.kind = ANY (p_kinds))
                 ORDER BY s.kind
                 FOR UPDATE SKIP LOCKED LOOP
            v_start := to_timestamp(floor(extract(epoch FROM now()) / r.period_seconds)
                                    * r.period_seconds);
            v_key := 'schedule:' || r.kind || '@'
                     || to_char(v_start AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"');
            INSERT INTO memdb.jobs AS j (tenant, id, kind, payload, idempotency_key)
            VALUES (v_tenant, memdb.new_memory_id(), r.kind, r.payload, v_key)
            ON CONFLICT ON CONSTRAINT jobs_idempotency_key DO NOTHING
            RETURNING j.id INTO v_id;
            created := v_id IS NOT NULL;
            IF NOT created THEN
                SELECT j.id INTO v_id FROM memdb.jobs j
                WHERE j.tenant = v_tenant AND j.kind = r.kind AND j.idempotency_key = v_key;
            END IF;
            v_made := v_made OR created;
            UPDATE memdb.job_schedules s
            SET next_run = v_start + make_interval(secs => r.period_seconds),
                last_run = now(), last_job = v_id, updated_at = now()
            WHERE s.tenant = v_tenant AND s.kind = r.kind;
            tenant := v_tenant;
            kind := r.kind;
            job_id := v_id;
            RETURN NEXT;
        END LOOP;
    END LOOP;
    IF v_made THEN
        PERFORM pg_notify('memdb_jobs', '');
    END IF;
END
$$;

REVOKE ALL ON FUNCTION memdb.enqueue_due_schedules(text[], text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memdb.enqueue_due_schedules(text[], text[]) TO memdb_app;

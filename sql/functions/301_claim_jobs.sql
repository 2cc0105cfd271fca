-- memdb.claim_jobs(p_worker, p_limit, p_lease_seconds, p_tenants, p_kinds) -> the jobs' rows
-- A worker's claim: up to p_limit due jobs (queued, failed past its backoff, or running with
-- an expired lease: its worker died), each locked FOR UPDATE SKIP LOCKED so concurrent
-- workers never take the same job, marked running with one more attempt and a lease of
-- p_lease_seconds held by p_worker (run_after moves to the lease's end). A job whose expired
-- lease used its last attempt becomes dead instead ('lease expired').
-- Fair between tenants: the tenants with due jobs are visited in random order and each gives
-- at most ceil(p_limit / tenants) jobs, oldest first; a tenant's flood is one tenant among the
-- others however many jobs it has. p_tenants / p_kinds: only these tenants / kinds (NULL:
-- any); a worker names the kinds it has handlers for.
-- SECURITY DEFINER: a worker claims across tenants (row-level security would confine it to
-- one); it runs each job afterwards in a transaction confined to the job's tenant. Executable
-- by memdb_app (docs/jobs.md: the trust model of a worker).
-- Example: SELECT id, tenant, kind FROM memdb.claim_jobs('host:123', 4, 60);
CREATE OR REPLACE FUNCTION memdb.claim_jobs(
    p_worker text, p_limit integer DEFAULT 1, p_lease_seconds double precision DEFAULT 60,
    p_tenants text[] DEFAULT NULL, p_kinds text[] DEFAULT NULL)
RETURNS TABLE (
    tenant text, id uuid, kind text, payload jsonb, state text, attempts integer,
    max_attempts integer, run_after timestamptz, locked_by text, locked_until timestamptz,
    last_error text, result jsonb, idempotency_key text, created_at timestamptz,
    updated_at timestamptz, finished_at timestamptz, subject text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_tenants text[];
    v_tenant  text;
    v_each    integer;
    v_taken   integer := 0;
    r         record;
BEGIN
    IF p_worker IS NULL OR p_limit IS NULL OR p_limit < 1 OR p_lease_seconds IS NULL
            OR p_lease_seconds <= 0 THEN
        RAISE EXCEPTION 'claim_jobs needs a worker, a limit >= 1 and a lease > 0'
            USING ERRCODE = '22023';
    END IF;
    IF p_tenants IS NOT NULL THEN
        SELECT array_agg(t ORDER BY random()) INTO v_tenants
        FROM unnest(p_tenants) AS t
        WHERE EXISTS (SELECT 1 FROM memdb.jobs j
                      WHERE j.tenant = t AND j.state IN ('queued', 'failed', 'running')
                        AND j.run_after <= now());
    ELSIF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
        SELECT array_agg(t ORDER BY random()) INTO v_tenants FROM (
            SELECT DISTINCT j.tenant AS t FROM memdb.jobs j
            WHERE j.state IN ('queued', 'failed', 'running') AND j.run_after <= now()) AS d;
    ELSE  -- the distinct tenants by a skip scan of the claimable index: one probe per tenant
        WITH RECURSIVE t(tenant) AS (
            (SELECT j.tenant FROM memdb.jobs j
             WHERE j.state IN ('queued', 'failed', 'running')
             ORDER BY j.tenant LIMIT 1)
            UNION ALL
            SELECT (SELECT j.tenant FROM memdb.jobs j
                    WHERE j.state IN ('queued', 'failed', 'running') AND j.tenant > t.tenant
                    ORDER BY j.tenant LIMIT 1)
            FROM t WHERE t.tenant IS NOT NULL)
        SELECT array_agg(t.tenant ORDER BY random()) INTO v_tenants
        FROM t WHERE t.tenant IS NOT NULL;
    END IF;
    IF v_tenants IS NULL THEN
        RETURN;
    END IF;
    v_each := ceil(p_limit::numeric / cardinality(v_tenants))::integer;
    FOREACH v_tenant IN ARRAY v_tenants LOOP
        EXIT WHEN v_taken >= p_limit;
        FOR r IN SELECT j.id, j.state, j.attempts, j.max_attempts FROM memdb.jobs j
                 WHERE j.tenant = v_tenant AND j.state IN ('queued', 'failed', 'running')
                   AND j.run_after <= now()
                   AND (p_kinds IS NULL OR j.kind = ANY (p_kinds))
                 ORDER BY j.run_after, j.id
                 LIMIT least(v_each, p_limit - v_taken)
                 FOR UPDATE SKIP LOCKED LOOP
            IF r.state = 'running' AND r.attempts >= r.max_attempts THEN
                UPDATE memdb.jobs j
                SET state = 'dead', locked_by = NULL, locked_until = NULL,
                    last_error = 'lease expired on its last attempt (the worker died or '
                                 'stopped answering)' || coalesce('; before: ' || j.last_error, ''),
                    updated_at = now(), finished_at = now()
                WHERE j.tenant = v_tenant AND j.id = r.id;
                CONTINUE;
            END IF;
            RETURN QUERY
                UPDATE memdb.jobs j
                SET state = 'running', attempts = j.attempts + 1, locked_by = p_worker,
                    locked_until = now() + make_interval(secs => p_lease_seconds),
                    run_after = now() + make_interval(secs => p_lease_seconds),
                    updated_at = now()
                WHERE j.tenant = v_tenant AND j.id = r.id
                RETURNING j.tenant, j.id, j.kind, j.payload, j.state, j.attempts, j.max_attempts,
                          j.run_after, j.locked_by, j.locked_until, j.last_error, j.result,
                          j.idempotency_key, j.created_at, j.updated_at, j.finished_at, j.subject;
            v_taken := v_taken + 1;
        END LOOP;
    END LOOP;
END
$$;

REVOKE ALL ON FUNCTION memdb.claim_jobs(text, integer, double precision, text[], text[])
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memdb.claim_jobs(text, integer, double precision, text[], text[])
    TO memdb_app;

-- memdb.pending_jobs(p_tenant text, p_limit integer) -> bigint
-- How many jobs of the tenant are not finished (queued, failed or running), counted up to
-- p_limit: memdb.enqueue_job's bound of a tenant's queue. SECURITY DEFINER, so a caller confined
-- to a subject (who sees only its subject's jobs) is bounded by the tenant's whole queue; only
-- for the caller's own tenant (memdb.tenant), or for a login that bypasses row-level security
-- (the admin): anyone else gets SQLSTATE 42501.
-- Example: SELECT memdb.pending_jobs('acme', 10000);
CREATE OR REPLACE FUNCTION memdb.pending_jobs(p_tenant text, p_limit integer)
RETURNS bigint
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_n bigint;
BEGIN
    IF p_tenant IS DISTINCT FROM current_setting('memdb.tenant', true)
       AND NOT EXISTS (SELECT 1 FROM pg_roles r
                       WHERE r.rolname = session_user AND (r.rolsuper OR r.rolbypassrls)) THEN
        RAISE EXCEPTION 'the pending jobs of tenant % are not this caller''s to count',
                        quote_literal(p_tenant) USING ERRCODE = 'insufficient_privilege';
    END IF;
    SELECT count(*) INTO v_n FROM (
        SELECT 1 FROM memdb.jobs j
        WHERE j.tenant = p_tenant AND j.state IN ('queued', 'failed', 'running')
        LIMIT p_limit) AS pending;
    RETURN v_n;
END
$$;

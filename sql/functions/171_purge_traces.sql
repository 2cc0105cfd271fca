-- memdb.purge_traces(p_tenant text, p_older_than interval) -> integer
-- Deletes the tenant's retrieval traces older than p_older_than (the retention period, e.g.
-- '30 days'); returns how many. Run it from the application (MemoryStore.purge_traces,
-- `memdb trace --purge`) or pg_cron.
CREATE OR REPLACE FUNCTION memdb.purge_traces(p_tenant text, p_older_than interval)
RETURNS integer
LANGUAGE sql
AS $$
    WITH gone AS (
        DELETE FROM memdb.retrieval_traces t
        WHERE t.tenant = p_tenant AND t.created_at < now() - p_older_than
        RETURNING 1
    )
    SELECT count(*)::integer FROM gone
$$;

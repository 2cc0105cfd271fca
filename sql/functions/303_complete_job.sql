-- memdb.complete_job(p_tenant, p_id, p_worker, p_result) -> boolean
-- Marks the job done with its result (in the handler's transaction, after memdb.start_job);
-- false (nothing changed) when p_worker no longer holds it.
-- Example: SELECT memdb.complete_job('acme', '0190...'::uuid, 'host:123', '{"n": 1}');
CREATE OR REPLACE FUNCTION memdb.complete_job(p_tenant text, p_id uuid, p_worker text,
                                              p_result jsonb DEFAULT NULL)
RETURNS boolean
LANGUAGE sql VOLATILE
AS $$
    WITH done AS (
        UPDATE memdb.jobs j
        SET state = 'done', result = p_result, locked_by = NULL, locked_until = NULL,
            updated_at = now(), finished_at = now()
        WHERE j.tenant = p_tenant AND j.id = p_id AND j.state = 'running'
          AND j.locked_by = p_worker
        RETURNING 1
    )
    SELECT EXISTS (SELECT 1 FROM done)
$$;

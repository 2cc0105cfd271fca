-- memdb.erase_traces(p_tenant text, p_subject text) -> integer
-- Erasure with the subject: deletes every retrieval trace of the tenant that searched the
-- subject's memories or returned one of them (result_subjects); returns how many.
CREATE OR REPLACE FUNCTION memdb.erase_traces(p_tenant text, p_subject text)
RETURNS integer
LANGUAGE sql
AS $$
    WITH gone AS (
        DELETE FROM memdb.retrieval_traces t
        WHERE t.tenant = p_tenant
          AND (t.subject = p_subject OR t.result_subjects @> ARRAY[p_subject])
        RETURNING 1
    )
    SELECT count(*)::integer FROM gone
$$;

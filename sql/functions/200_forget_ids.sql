-- memdb.forget_ids(p_ids uuid[], p_reason text) -> SETOF uuid
-- The one deleting step of every forgetting strategy: deletes the given memories (never one in
-- category 'system', re-checked under the row lock) and returns the ids actually deleted.
-- Rows are locked in id order with SKIP LOCKED: a row some other transaction holds is left
-- for the next run instead of making maintenance wait. The history trigger records each
-- deletion with reason p_reason (the setting memdb.reason is restored afterwards).
CREATE OR REPLACE FUNCTION memdb.forget_ids(p_ids uuid[], p_reason text)
RETURNS SETOF uuid
LANGUAGE plpgsql
AS $$
DECLARE
    prev_reason text := current_setting('memdb.reason', true);
    v_tenant text;
    v_gone uuid[] := '{}';
BEGIN
    IF p_ids IS NULL OR cardinality(p_ids) = 0 THEN
        RETURN;
    END IF;
    PERFORM memdb.set_local('memdb.reason', coalesce(p_reason, ''));
    -- one tenant at a time: each lock and delete is by (tenant, id), the primary key (and on
    -- Citus a one-shard statement, which FOR UPDATE requires)
    FOR v_tenant IN SELECT DISTINCT m.tenant FROM memdb.memories m WHERE m.id = ANY (p_ids)
                    ORDER BY 1 LOOP
        WITH locked AS (
            SELECT m.id FROM memdb.memories m
            WHERE m.tenant = v_tenant AND m.id = ANY (p_ids) AND m.category <> 'system'
            ORDER BY m.id
            FOR UPDATE SKIP LOCKED
        ), gone AS (
            DELETE FROM memdb.memories m USING locked l
            WHERE m.tenant = v_tenant AND m.id = l.id RETURNING m.id
        )
        SELECT v_gone || coalesce(array_agg(g.id), '{}') INTO v_gone FROM gone g;
    END LOOP;
    RETURN QUERY SELECT x.id FROM unnest(v_gone) AS x(id) ORDER BY x.id;
    PERFORM memdb.set_local('memdb.reason', coalesce(prev_reason, ''));
END
$$;

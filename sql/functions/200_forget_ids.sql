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
BEGIN
    IF p_ids IS NULL OR cardinality(p_ids) = 0 THEN
        RETURN;
    END IF;
    PERFORM set_config('memdb.reason', coalesce(p_reason, ''), true);
    RETURN QUERY
    WITH locked AS (
        SELECT m.id FROM memdb.memories m
        WHERE m.id = ANY (p_ids) AND m.category <> 'system'
        ORDER BY m.id
        FOR UPDATE SKIP LOCKED
    ), gone AS (
        DELETE FROM memdb.memories m USING locked l WHERE m.id = l.id RETURNING m.id
    )
    SELECT g.id FROM gone g ORDER BY g.id;
    PERFORM set_config('memdb.reason', coalesce(prev_reason, ''), true);
END
$$;

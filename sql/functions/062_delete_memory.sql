-- memdb.delete_memory(p_tenant text, p_id uuid) -> boolean
-- Deletes one memory of the tenant (any version); true when a row was deleted.
-- The history trigger records the deletion with the row as it was.
CREATE OR REPLACE FUNCTION memdb.delete_memory(p_tenant text, p_id uuid)
RETURNS boolean
LANGUAGE sql
AS $$
    WITH d AS (DELETE FROM memdb.memories WHERE tenant = p_tenant AND id = p_id RETURNING 1)
    SELECT count(*) > 0 FROM d
$$;

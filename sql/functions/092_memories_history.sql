-- memdb.memories_history() -> trigger (AFTER INSERT/UPDATE/DELETE ON memdb.memories, per statement)
-- Writes one memory_history row per changed memory from the statement's transition tables:
-- op insert | update | supersede (valid_to newly set) | delete, the row before and after
-- (memdb.history_row), the actor (setting memdb.actor, else the login: session_user, which
-- SET ROLE memdb_app does not change) and the
-- reason (setting memdb.reason; 'duplicate write' for a dedup bump). Updates that only touch
-- access counters or the embedding write no row.
CREATE OR REPLACE FUNCTION memdb.memories_history()
RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
    v_actor text := coalesce(nullif(current_setting('memdb.actor', true), ''), session_user);
    v_reason text := nullif(current_setting('memdb.reason', true), '');
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO memdb.memory_history (memory_id, tenant, subject, op, before, after, actor, reason)
        SELECT n.id, n.tenant, n.subject, 'insert', NULL, memdb.history_row(n), v_actor, v_reason
        FROM new_rows n;
    ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO memdb.memory_history (memory_id, tenant, subject, op, before, after, actor, reason)
        SELECT n.id, n.tenant, n.subject,
               CASE WHEN o.valid_to IS NULL AND n.valid_to IS NOT NULL THEN 'supersede' ELSE 'update' END,
               memdb.history_row(o), memdb.history_row(n), v_actor,
               coalesce(v_reason, CASE WHEN n.access_count > o.access_count THEN 'duplicate write' END)
        FROM new_rows n JOIN old_rows o ON o.id = n.id
        WHERE n.version <> o.version OR n.valid_to IS DISTINCT FROM o.valid_to;
    ELSE
        INSERT INTO memdb.memory_history (memory_id, tenant, subject, op, before, after, actor, reason)
        SELECT o.id, o.tenant, o.subject, 'delete', memdb.history_row(o), NULL, v_actor, v_reason
        FROM old_rows o;
    END IF;
    RETURN NULL;
END
$$;

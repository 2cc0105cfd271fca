-- memdb.memories_history() -> trigger (AFTER INSERT/UPDATE/DELETE ON memdb.memories, per statement)
-- Writes one memory_history row per changed memory from the statement's transition tables:
-- op insert | update | supersede (valid_to newly set) | delete, the row before and after
-- (memdb.history_row), the actor (setting memdb.actor, else the login: session_user, which
-- SET ROLE memdb_app does not change) and the
-- reason (setting memdb.reason; 'duplicate write' for a dedup bump). Updates that only touch
-- access counters or the embedding write no row.
-- Plain PostgreSQL writes memdb.memory_history; on a Citus worker, where the trigger fires
-- on a shard of memories, the co-located shard of memory_history (memdb.colocated_table), and
-- the shard's rows are cast to memdb.memories for memdb.history_row. A shard has no identity
-- default of its own, so there the id comes from the node's memory_history_id_seq (Citus gives
-- each node its own range): hence SECURITY DEFINER (fixed search_path, names qualified), as
-- the application role has no privilege on that sequence (revision 0010). The rows written
-- come only from the caller's own statement's transition tables.
CREATE OR REPLACE FUNCTION memdb.memories_history()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_actor text := coalesce(nullif(current_setting('memdb.actor', true), ''), session_user);
    v_reason text := nullif(current_setting('memdb.reason', true), '');
    v_target text;
    v_new text := CASE WHEN TG_TABLE_NAME = 'memories' THEN 'n' ELSE 'ROW(n.*)::memdb.memories' END;
    v_old text := CASE WHEN TG_TABLE_NAME = 'memories' THEN 'o' ELSE 'ROW(o.*)::memdb.memories' END;
    -- the id column and its value: the identity default on plain PostgreSQL, the sequence on a shard
    v_id text := CASE WHEN TG_TABLE_NAME = 'memories' THEN '' ELSE 'id, ' END;
    v_next text := CASE WHEN TG_TABLE_NAME = 'memories' THEN ''
                        ELSE 'nextval(''memdb.memory_history_id_seq''), ' END;
BEGIN
    IF TG_TABLE_NAME = 'memories' THEN
        -- plain PostgreSQL (or a Citus coordinator's own table): static statements, planned
        -- once per session, not once per write
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
    END IF;
    -- a Citus worker's shard: the co-located shard of memory_history, named at run time
    v_target := memdb.colocated_table(TG_TABLE_NAME, 'memory_history');
    IF TG_OP = 'INSERT' THEN
        EXECUTE format($q$
            INSERT INTO %s (%smemory_id, tenant, subject, op, before, after, actor, reason)
            SELECT %sn.id, n.tenant, n.subject, 'insert', NULL, memdb.history_row(%s), $1, $2
            FROM new_rows n$q$, v_target, v_id, v_next, v_new)
            USING v_actor, v_reason;
    ELSIF TG_OP = 'UPDATE' THEN
        EXECUTE format($q$
            INSERT INTO %s (%smemory_id, tenant, subject, op, before, after, actor, reason)
            SELECT %sn.id, n.tenant, n.subject,
                   CASE WHEN o.valid_to IS NULL AND n.valid_to IS NOT NULL THEN 'supersede' ELSE 'update' END,
                   memdb.history_row(%s), memdb.history_row(%s), $1,
                   coalesce($2, CASE WHEN n.access_count > o.access_count THEN 'duplicate write' END)
            FROM new_rows n JOIN old_rows o ON o.id = n.id
            WHERE n.version <> o.version OR n.valid_to IS DISTINCT FROM o.valid_to$q$,
            v_target, v_id, v_next, v_old, v_new)
            USING v_actor, v_reason;
    ELSE
        EXECUTE format($q$
            INSERT INTO %s (%smemory_id, tenant, subject, op, before, after, actor, reason)
            SELECT %so.id, o.tenant, o.subject, 'delete', memdb.history_row(%s), NULL, $1, $2
            FROM old_rows o$q$, v_target, v_id, v_next, v_old)
            USING v_actor, v_reason;
    END IF;
    RETURN NULL;
END
$$;

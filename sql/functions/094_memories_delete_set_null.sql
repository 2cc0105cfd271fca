-- memdb.memories_delete_set_null() -> trigger (AFTER DELETE ON memdb.memories, per statement;
-- made only on Citus, by sql/queries/citus.sql after every migration)
-- What the foreign keys memories_superseded_by_fkey and review_queue_memory_id_fkey do with
-- ON DELETE SET NULL (column) on plain PostgreSQL, for Citus, which refuses those two keys on
-- tables distributed by tenant (revision 0014): references to the deleted memories from the
-- same tenant's memories (superseded_by) and review items (memory_id) become NULL, in the
-- same statement, on the shards co-located with the deleted rows (memdb.colocated_table).
-- As the caller (the rows it clears are its own tenant's, which it could delete); no fixed
-- search_path, as the memories triggers its updates fire use the caller's (pgvector's
-- operators).
CREATE OR REPLACE FUNCTION memdb.memories_delete_set_null()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    EXECUTE format('UPDATE %s m SET superseded_by = NULL FROM old_rows o
                    WHERE m.tenant = o.tenant AND m.superseded_by = o.id',
                   memdb.colocated_table(TG_TABLE_NAME, 'memories'));
    EXECUTE format('UPDATE %s q SET memory_id = NULL FROM old_rows o
                    WHERE q.tenant = o.tenant AND q.memory_id = o.id',
                   memdb.colocated_table(TG_TABLE_NAME, 'review_queue'));
    RETURN NULL;
END
$$;

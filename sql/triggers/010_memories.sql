-- Triggers on memdb.memories (re-applied after every upgrade; each file drops and recreates).
DROP TRIGGER IF EXISTS memories_before_write ON memdb.memories;
CREATE TRIGGER memories_before_write
    BEFORE INSERT OR UPDATE ON memdb.memories
    FOR EACH ROW EXECUTE FUNCTION memdb.memories_before_write();

DROP TRIGGER IF EXISTS memories_history_insert ON memdb.memories;
CREATE TRIGGER memories_history_insert
    AFTER INSERT ON memdb.memories
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION memdb.memories_history();

DROP TRIGGER IF EXISTS memories_history_update ON memdb.memories;
CREATE TRIGGER memories_history_update
    AFTER UPDATE ON memdb.memories
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION memdb.memories_history();

DROP TRIGGER IF EXISTS memories_history_delete ON memdb.memories;
CREATE TRIGGER memories_history_delete
    AFTER DELETE ON memdb.memories
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION memdb.memories_history();

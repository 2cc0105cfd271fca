-- BM25 statistics triggers on memdb.memories (see memdb.bm25_maintain).
DROP TRIGGER IF EXISTS memories_bm25_insert ON memdb.memories;
CREATE TRIGGER memories_bm25_insert
    AFTER INSERT ON memdb.memories
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION memdb.bm25_maintain();

DROP TRIGGER IF EXISTS memories_bm25_update ON memdb.memories;
CREATE TRIGGER memories_bm25_update
    AFTER UPDATE ON memdb.memories
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION memdb.bm25_maintain();

DROP TRIGGER IF EXISTS memories_bm25_delete ON memdb.memories;
CREATE TRIGGER memories_bm25_delete
    AFTER DELETE ON memdb.memories
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION memdb.bm25_maintain();

DROP TRIGGER IF EXISTS memories_bm25_truncate ON memdb.memories;
CREATE TRIGGER memories_bm25_truncate
    AFTER TRUNCATE ON memdb.memories
    FOR EACH STATEMENT EXECUTE FUNCTION memdb.bm25_reset();

-- memdb schema, revision 0010 (frozen): what the application role may do, table by table.
--   * BM25 statistics (memdb.bm25_terms, memdb.bm25_stats) are tenant-wide: a subject-confined
--     caller could list other subjects' words and any caller could poison the ranking. The
--     application role (memdb_app) gets no privilege on them at all; the trigger functions
--     memdb.bm25_maintain / memdb.bm25_reset keep them and the readers that need them
--     (memdb.search_bm25, memdb.bm25_doc_count, memdb.forget_subject) run as their owner
--     (SECURITY DEFINER) and confine their caller themselves (memdb.confine);
--   * memdb.memory_history is append-only for the application role: it still reads and writes
--     (the history triggers and write_memories run as the caller) its own tenant's and
--     subject's rows, but may neither UPDATE nor DELETE them; erasure of a whole subject
--     (memdb.forget_subject, SECURITY DEFINER) is the one way history rows are deleted;
--   * the sequences granted in revision 0003 (embedding_spaces' and memory_history's ids) are
--     revoked: identity columns need no sequence privilege to insert, and the application role
--     registers no embedding space (memdb.ensure_embedding_space refuses it a new one).
-- Row-level security and the policies on the statistics tables stay (a second line of defence).
-- The role memdb_app itself, and every other grant, are unchanged.

REVOKE ALL ON memdb.bm25_terms, memdb.bm25_stats FROM memdb_app;
REVOKE UPDATE, DELETE ON memdb.memory_history FROM memdb_app;
REVOKE ALL ON SEQUENCE memdb.embedding_spaces_id_seq, memdb.memory_history_id_seq FROM memdb_app;

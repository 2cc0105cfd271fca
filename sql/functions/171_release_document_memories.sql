-- memdb.release_document_memories(p_tenant text, p_document_id uuid,
--                                  p_keep uuid[] DEFAULT '{}') -> integer
-- Lets go of the chunk memories the tenant's document p_document_id owns (memories.document_id) except
-- those in p_keep. The caller has already deleted the document's own chunk-map rows. A memory
-- another document's chunk map still points at (identical text in the same scope is stored
-- once) passes to that document — the oldest, lowest position — with its provenance
-- rewritten; the others are deleted (history records it). Returns how many were deleted.
-- One document's case of memdb.release_documents_memories.
CREATE OR REPLACE FUNCTION memdb.release_document_memories(p_tenant text,
                                                           p_document_id uuid,
                                                           p_keep uuid[] DEFAULT '{}')
RETURNS integer
LANGUAGE sql
AS $$
    SELECT coalesce(sum(r.removed), 0)::integer
    FROM memdb.release_documents_memories(p_tenant, ARRAY[p_document_id], p_keep) r
$$;

-- memdb.release_document_memories(p_document_id uuid, p_keep uuid[] DEFAULT '{}') -> integer
-- Lets go of the chunk memories document p_document_id owns (memories.document_id) except
-- those in p_keep. The caller has already deleted the document's own chunk-map rows. A memory
-- another document's chunk map still points at (identical text in the same scope is stored
-- once) passes to that document — the oldest, lowest position — with its provenance
-- rewritten; the others are deleted (history records it). Returns how many were deleted.
CREATE OR REPLACE FUNCTION memdb.release_document_memories(p_document_id uuid,
                                                           p_keep uuid[] DEFAULT '{}')
RETURNS integer
LANGUAGE sql
AS $$
    WITH gone AS (
        SELECT m.id FROM memdb.memories m
        WHERE m.document_id = p_document_id
          AND NOT (m.id = ANY (coalesce(p_keep, '{}'::uuid[])))
    ),
    heir AS (
        SELECT DISTINCT ON (c.memory_id) c.memory_id, d AS doc, c.position, c.heading_path,
               c.char_start, c.char_end, c.parent_start, c.parent_end
        FROM memdb.document_chunks c
        JOIN gone g ON g.id = c.memory_id
        JOIN memdb.documents d ON d.id = c.document_id
        WHERE c.document_id <> p_document_id
        ORDER BY c.memory_id, d.created_at, d.id, c.position
    ),
    moved AS (
        UPDATE memdb.memories m
        SET document_id = (h.doc).id,
            source_id = (h.doc).id::text || '#' || h.position,
            metadata = memdb.chunk_provenance(h.doc, h.position, h.heading_path, h.char_start,
                                              h.char_end, h.parent_start, h.parent_end)
        FROM heir h
        WHERE m.id = h.memory_id
        RETURNING m.id
    ),
    dropped AS (
        DELETE FROM memdb.memories m
        USING gone g
        WHERE m.id = g.id AND NOT EXISTS (SELECT 1 FROM heir h WHERE h.memory_id = g.id)
        RETURNING m.id
    )
    SELECT count(*)::integer FROM dropped
$$;

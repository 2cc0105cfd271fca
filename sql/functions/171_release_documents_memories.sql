-- memdb.release_documents_memories(p_tenant text, p_document_ids uuid[],
--                                   p_keep uuid[] DEFAULT '{}')
--   -> TABLE(document_id uuid, removed integer)
-- Lets go of the chunk memories the tenant's documents p_document_ids own (memories.document_id)
-- that neither their own chunk map (memdb.document_chunks) points at nor p_keep lists: what a
-- document no longer uses once its chunk map was rewritten (memdb.ingest_documents) or
-- deleted (memdb.remove_documents). A memory another document's chunk map still points at
-- (identical text in the same scope is stored once) passes to that document — the oldest,
-- lowest position — with its provenance rewritten; the others are deleted (history records
-- it). One statement for all the documents, so the history and BM25 triggers run once.
-- Returns, per document given, how many of its memories were deleted. Every row it reads or
-- writes is the tenant's (on Citus the call is delegated by p_tenant: one worker, one shard).
CREATE OR REPLACE FUNCTION memdb.release_documents_memories(p_tenant text,
                                                            p_document_ids uuid[],
                                                            p_keep uuid[] DEFAULT '{}')
RETURNS TABLE (document_id uuid, removed integer)
LANGUAGE sql
AS $$
    WITH gone AS (
        SELECT m.id, m.document_id AS owner FROM memdb.memories m
        WHERE m.tenant = p_tenant AND m.document_id = ANY (p_document_ids)
          AND NOT (m.id = ANY (coalesce(p_keep, '{}'::uuid[])))
          AND NOT EXISTS (SELECT 1 FROM memdb.document_chunks c
                          WHERE c.tenant = p_tenant AND c.document_id = m.document_id
                            AND c.memory_id = m.id)
    ),
    heir AS (
        SELECT DISTINCT ON (c.memory_id) c.memory_id, d AS doc, c.position, c.heading_path,
               c.char_start, c.char_end, c.parent_start, c.parent_end
        FROM gone g
        JOIN memdb.document_chunks c
          ON c.tenant = p_tenant AND c.memory_id = g.id AND c.document_id <> g.owner
        JOIN memdb.documents d ON d.tenant = p_tenant AND d.id = c.document_id
        ORDER BY c.memory_id, d.created_at, d.id, c.position
    ),
    moved AS (
        UPDATE memdb.memories m
        SET document_id = (h.doc).id,
            source_id = (h.doc).id::text || '#' || h.position,
            metadata = memdb.chunk_provenance(h.doc, h.position, h.heading_path, h.char_start,
                                              h.char_end, h.parent_start, h.parent_end)
        FROM heir h
        WHERE m.tenant = p_tenant AND m.id = h.memory_id
        RETURNING m.id
    ),
    dropped AS (
        DELETE FROM memdb.memories m
        USING gone g
        WHERE m.tenant = p_tenant AND m.id = g.id
          AND NOT EXISTS (SELECT 1 FROM heir h WHERE h.memory_id = g.id)
        RETURNING g.owner
    )
    SELECT u.id, count(x.owner)::integer
    FROM unnest(p_document_ids) WITH ORDINALITY AS u(id, ord)
    LEFT JOIN dropped x ON x.owner = u.id
    GROUP BY u.id, u.ord
    ORDER BY u.ord
$$;

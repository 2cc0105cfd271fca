-- memdb.remove_documents(p_tenant text, p_uris text[])
--   -> TABLE(document_id uuid, uri text, chunks integer)
-- Removes the tenant's documents with these URIs, each with its chunk map and the chunk
-- memories it owns (those another document shares pass to it: memdb.release_document_memories),
-- in the caller's transaction. Returns what was removed; unknown URIs are ignored.
CREATE OR REPLACE FUNCTION memdb.remove_documents(p_tenant text, p_uris text[])
RETURNS TABLE (document_id uuid, uri text, chunks integer)
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
    v_doc record;
BEGIN
    FOR v_doc IN
        SELECT d.id, d.uri, d.chunk_count FROM memdb.documents d
        WHERE d.tenant = p_tenant AND d.uri = ANY (p_uris)
        ORDER BY d.uri
        FOR UPDATE
    LOOP
        DELETE FROM memdb.document_chunks c WHERE c.tenant = p_tenant AND c.document_id = v_doc.id;
        PERFORM memdb.release_document_memories(p_tenant, v_doc.id, '{}'::uuid[]);
        DELETE FROM memdb.documents d WHERE d.tenant = p_tenant AND d.id = v_doc.id;
        document_id := v_doc.id;
        uri := v_doc.uri;
        chunks := v_doc.chunk_count;
        RETURN NEXT;
    END LOOP;
END
$$;

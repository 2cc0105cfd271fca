-- memdb.ingest_document(p_tenant text, p_document jsonb, p_chunks jsonb,
--                       p_embeddings vector[] DEFAULT NULL, p_space_id integer DEFAULT NULL)
--   -> TABLE(document_id uuid, version integer, chunks integer, created integer,
--            reused integer, removed integer)
-- Writes one document and replaces its chunks, in the caller's transaction (so a search
-- sees the old chunks or the new ones, never a mix): memdb.ingest_documents for a batch of
-- one. p_document: {uri, title, format, content_hash (hex), size, content, chunking,
-- metadata, subject, scope, project_id, session_id, category, tags, importance}; p_chunks: a
-- JSON array, in document order, of {content, search_context, heading_path, char_start,
-- char_end, parent_start, parent_end, tokens}; p_embeddings[i] is chunk i's vector in space
-- p_space_id, or NULL when the caller knows (memdb.known_chunks) that a current memory with
-- that text and context already exists in the document's scope. Identical text in the scope
-- is stored once and linked; memories the document no longer uses are released. Raises
-- SQLSTATE 40001 (retry the transaction) when a concurrent writer made or removed a memory of
-- the same text after the caller checked.
CREATE OR REPLACE FUNCTION memdb.ingest_document(p_tenant text, p_document jsonb, p_chunks jsonb,
                                                 p_embeddings vector[] DEFAULT NULL,
                                                 p_space_id integer DEFAULT NULL)
RETURNS TABLE (document_id uuid, version integer, chunks integer, created integer,
               reused integer, removed integer)
LANGUAGE sql
AS $$
    SELECT r.document_id, r.version, r.chunks, r.created, r.reused, r.removed
    FROM memdb.ingest_documents(p_tenant, jsonb_build_array(p_document),
                                jsonb_build_array(p_chunks), p_embeddings, p_space_id) r
$$;

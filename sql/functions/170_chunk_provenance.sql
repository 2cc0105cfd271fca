-- memdb.chunk_provenance(p_document anyelement, p_position integer, p_heading_path text[],
--                        p_char_start integer, p_char_end integer,
--                        p_parent_start integer, p_parent_end integer) -> jsonb
-- The metadata a chunk memory carries about where its text came from: the owning document
-- (id, uri, title), the chunk's position, heading path and character offsets into the
-- document's extracted text (memdb.documents.content), and its parent span. One definition
-- for memdb.ingest_document and memdb.release_document_memories. p_document is a row of
-- memdb.documents (polymorphic: on a Citus worker, a shard's row has the shard's own type).
CREATE OR REPLACE FUNCTION memdb.chunk_provenance(p_document anyelement, p_position integer,
                                                  p_heading_path text[], p_char_start integer,
                                                  p_char_end integer, p_parent_start integer,
                                                  p_parent_end integer)
RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT jsonb_build_object(
        'document_id', p_document.id, 'document_uri', p_document.uri,
        'title', p_document.title, 'position', p_position,
        'heading_path', to_jsonb(coalesce(p_heading_path, '{}'::text[])),
        'char_start', p_char_start, 'char_end', p_char_end,
        'parent_start', p_parent_start, 'parent_end', p_parent_end)
$$;

-- memdb.known_chunks(p_tenant text, p_document jsonb, p_texts text[], p_contexts text[],
--                    p_space_id integer) -> SETOF integer
-- Which chunks (1-based positions in p_texts) need no new vector: one document's case of
-- memdb.known_chunks_batch (p_document: uri, subject, scope, project_id, session_id;
-- p_contexts[i] is chunk i's search context).
CREATE OR REPLACE FUNCTION memdb.known_chunks(p_tenant text, p_document jsonb, p_texts text[],
                                              p_contexts text[], p_space_id integer)
RETURNS SETOF integer
LANGUAGE sql STABLE
AS $$
    SELECT k.chunk
    FROM memdb.known_chunks_batch(
             p_tenant,
             jsonb_build_array(p_document || jsonb_build_object('texts', to_jsonb(p_texts),
                                                                'contexts', to_jsonb(p_contexts))),
             p_space_id) k
    ORDER BY 1
$$;

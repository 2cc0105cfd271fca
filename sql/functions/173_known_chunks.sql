-- memdb.known_chunks(p_tenant text, p_document jsonb, p_texts text[], p_contexts text[],
--                    p_space_id integer) -> SETOF integer
-- Which chunks (1-based positions in p_texts) need no new vector: a current memory with the
-- same normalized text already exists in the document's scope (p_document: uri, subject,
-- scope, project_id, session_id) with a vector in space p_space_id, and it is not one of this
-- document's own memories whose search context (p_contexts[i]) changed. memdb.ingest_document
-- will reuse those memories, so the caller embeds only the rest. One index probe per chunk
-- (memdb.current_memory_id).
CREATE OR REPLACE FUNCTION memdb.known_chunks(p_tenant text, p_document jsonb, p_texts text[],
                                              p_contexts text[], p_space_id integer)
RETURNS SETOF integer
LANGUAGE sql STABLE
AS $$
    SELECT t.ord::integer
    FROM unnest(p_texts, p_contexts) WITH ORDINALITY AS t(content, context, ord)
    CROSS JOIN LATERAL (
        SELECT memdb.current_memory_id(p_tenant, coalesce(p_document ->> 'subject', 'default'),
                                       coalesce(p_document ->> 'scope', 'user'),
                                       p_document ->> 'project_id', p_document ->> 'session_id',
                                       memdb.content_hash(t.content)) AS id
    ) x
    JOIN memdb.memories m ON m.id = x.id
    LEFT JOIN memdb.documents d ON d.id = m.document_id
    WHERE m.embedding IS NOT NULL AND m.space_id = p_space_id
      AND (d.uri IS DISTINCT FROM p_document ->> 'uri'
           OR m.search_context IS NOT DISTINCT FROM t.context)
    ORDER BY 1
$$;

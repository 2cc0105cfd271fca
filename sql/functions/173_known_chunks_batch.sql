-- memdb.known_chunks_batch(p_tenant text, p_documents jsonb, p_space_id integer)
--   -> TABLE(doc integer, chunk integer)
-- Which chunks of a batch of documents need no new vector. p_documents is a JSON array of
-- {uri, subject, scope, project_id, session_id, texts: [chunk text, ...], contexts: [search
-- context or null, ...]}; a row (doc, chunk) (1-based positions in p_documents and in that
-- document's texts) says: a current memory with the same normalized text already exists in
-- the document's scope with a vector in space p_space_id, and it is not one of this
-- document's own memories whose search context changed. memdb.ingest_documents will reuse
-- those memories, so the caller embeds only the rest. One dedup-key probe
-- (memdb.current_memory_id) and one primary-key probe per chunk, whatever the statistics
-- (LATERAL ... LIMIT 1: before ANALYZE, a join planned by cost scanned the tenant's memories
-- once per call).
CREATE OR REPLACE FUNCTION memdb.known_chunks_batch(p_tenant text, p_documents jsonb,
                                                    p_space_id integer)
RETURNS TABLE (doc integer, chunk integer)
LANGUAGE sql STABLE
AS $$
    SELECT x.ord::integer, t.ord::integer
    FROM jsonb_array_elements(p_documents) WITH ORDINALITY AS x(d, ord)
    CROSS JOIN LATERAL ROWS FROM (jsonb_array_elements_text(x.d -> 'texts'),
                                  jsonb_array_elements_text(x.d -> 'contexts'))
               WITH ORDINALITY AS t(content, context, ord)
    CROSS JOIN LATERAL (  -- OFFSET 0: kept apart, so the probe below is by a plain value
        SELECT memdb.current_memory_id(p_tenant, coalesce(x.d ->> 'subject', 'default'),
                                       coalesce(x.d ->> 'scope', 'user'), x.d ->> 'project_id',
                                       x.d ->> 'session_id', memdb.content_hash(t.content)) AS id
        OFFSET 0
    ) c
    CROSS JOIN LATERAL (
        SELECT m.document_id, m.search_context
        FROM memdb.memories m
        WHERE m.tenant = p_tenant AND m.id = c.id AND m.embedding IS NOT NULL
          AND m.space_id = p_space_id
        LIMIT 1
    ) k
    LEFT JOIN LATERAL (
        SELECT o.uri FROM memdb.documents o WHERE o.tenant = p_tenant AND o.id = k.document_id
        LIMIT 1
    ) owner ON true
    WHERE t.content IS NOT NULL
      AND (owner.uri IS DISTINCT FROM x.d ->> 'uri'
           OR k.search_context IS NOT DISTINCT FROM t.context)
    ORDER BY 1, 2
$$;

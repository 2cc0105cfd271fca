-- memdb.known_chunks(p_tenant text, p_document jsonb, p_texts text[], p_contexts text[],
--                    p_space_id integer) -> SETOF integer
-- Which chunks (1-based positions in p_texts) need no new vector: a current memory with the
-- same normalized text already exists in the document's scope (p_document: uri, subject,
-- scope, project_id, session_id) with a vector in space p_space_id, and it is not one of this
-- document's own memories whose search context (p_contexts[i]) changed. memdb.ingest_document
-- will reuse those memories, so the caller embeds only the rest.
-- Planned with the actual scope values (force_custom_plan), so a NULL project_id/session_id
-- becomes an IS NULL condition of memories_dedup_key: one index probe per chunk.
CREATE OR REPLACE FUNCTION memdb.known_chunks(p_tenant text, p_document jsonb, p_texts text[],
                                              p_contexts text[], p_space_id integer)
RETURNS SETOF integer
LANGUAGE plpgsql STABLE
SET plan_cache_mode = force_custom_plan
AS $$
DECLARE
    v_subject text := coalesce(p_document ->> 'subject', 'default');
    v_scope text := coalesce(p_document ->> 'scope', 'user');
    v_project text := p_document ->> 'project_id';
    v_session text := p_document ->> 'session_id';
    v_uri text := p_document ->> 'uri';
BEGIN
    RETURN QUERY
    SELECT t.ord::integer
    FROM unnest(p_texts, p_contexts) WITH ORDINALITY AS t(content, context, ord)
    CROSS JOIN LATERAL (SELECT memdb.content_hash(t.content) AS h) x
    WHERE EXISTS (
        SELECT 1 FROM memdb.memories m
        LEFT JOIN memdb.documents d ON d.id = m.document_id
        WHERE m.tenant = p_tenant AND m.subject = v_subject AND m.scope = v_scope
          AND m.project_id IS NOT DISTINCT FROM v_project
          AND m.session_id IS NOT DISTINCT FROM v_session
          AND m.content_hash = x.h AND m.valid_to IS NULL
          AND m.embedding IS NOT NULL AND m.space_id = p_space_id
          AND (d.uri IS DISTINCT FROM v_uri OR m.search_context IS NOT DISTINCT FROM t.context))
    ORDER BY 1;
END
$$;

-- memdb.update_memory(p_tenant text, p_id uuid, p_changes jsonb,
--                     p_embedding vector DEFAULT NULL, p_space_id integer DEFAULT NULL) -> uuid
-- Changes the given fields of one current memory of the tenant and returns its id, or NULL
-- when there is no such memory. Fields: content, search_context, kind, category, agent,
-- norm_key, importance, confidence, source_type, source_id, metadata (replaced), tags
-- (replaced), expires_at (JSON null clears it) or ttl_seconds (expires that long from now,
-- by the server's clock). A new content or search_context with no new embedding leaves
-- the memory without one (the old vector described the old text; it is then queued for
-- re-embedding, see MemoryStore.reembed). The version increments
-- and a history row is written by triggers. A new category is an explicit one: the
-- classification's tag_version is cleared, unless tag_version is given with it (a category
-- re-classified from new content by memdb.write.classify, as MemoryStore.update does).
CREATE OR REPLACE FUNCTION memdb.update_memory(p_tenant text, p_id uuid, p_changes jsonb,
                                               p_embedding vector DEFAULT NULL,
                                               p_space_id integer DEFAULT NULL)
RETURNS uuid
LANGUAGE plpgsql
AS $$
DECLARE
    k text;
    result uuid;
    v_tags text[];
    v_expires timestamptz;
BEGIN
    IF p_changes IS NULL OR jsonb_typeof(p_changes) <> 'object' THEN
        RAISE EXCEPTION 'changes must be a JSON object' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    FOR k IN SELECT jsonb_object_keys(p_changes) LOOP
        IF k NOT IN ('content', 'search_context', 'kind', 'category', 'agent', 'norm_key',
                     'importance', 'confidence', 'source_type', 'source_id', 'metadata',
                     'tags', 'expires_at', 'ttl_seconds', 'tag_version') THEN
            RAISE EXCEPTION 'memory field "%" cannot be updated', k USING ERRCODE = 'invalid_parameter_value';
        END IF;
    END LOOP;
    -- values needing non-immutable functions are computed first: Citus refuses them inside
    -- the CASEs of an UPDATE of a distributed table
    v_tags := memdb.jtext_array(p_changes -> 'tags');
    v_expires := CASE WHEN p_changes ? 'expires_at' THEN (p_changes ->> 'expires_at')::timestamptz
                      WHEN p_changes ? 'ttl_seconds'
                          THEN now() + (p_changes ->> 'ttl_seconds')::double precision * interval '1 second'
                 END;
    UPDATE memdb.memories m SET
        content        = CASE WHEN p_changes ? 'content' THEN p_changes ->> 'content' ELSE m.content END,
        search_context = CASE WHEN p_changes ? 'search_context' THEN p_changes ->> 'search_context' ELSE m.search_context END,
        kind           = CASE WHEN p_changes ? 'kind' THEN p_changes ->> 'kind' ELSE m.kind END,
        category       = CASE WHEN p_changes ? 'category' THEN p_changes ->> 'category' ELSE m.category END,
        tag_version    = CASE WHEN p_changes ? 'tag_version' THEN (p_changes ->> 'tag_version')::integer
                              WHEN p_changes ? 'category' THEN NULL ELSE m.tag_version END,
        agent          = CASE WHEN p_changes ? 'agent' THEN p_changes ->> 'agent' ELSE m.agent END,
        norm_key       = CASE WHEN p_changes ? 'norm_key' THEN p_changes ->> 'norm_key' ELSE m.norm_key END,
        importance     = CASE WHEN p_changes ? 'importance' THEN (p_changes ->> 'importance')::real ELSE m.importance END,
        confidence     = CASE WHEN p_changes ? 'confidence' THEN (p_changes ->> 'confidence')::real ELSE m.confidence END,
        source_type    = CASE WHEN p_changes ? 'source_type' THEN p_changes ->> 'source_type' ELSE m.source_type END,
        source_id      = CASE WHEN p_changes ? 'source_id' THEN p_changes ->> 'source_id' ELSE m.source_id END,
        metadata       = CASE WHEN p_changes ? 'metadata' THEN p_changes -> 'metadata' ELSE m.metadata END,
        tags           = CASE WHEN p_changes ? 'tags' THEN v_tags ELSE m.tags END,
        expires_at     = CASE WHEN p_changes ? 'expires_at' OR p_changes ? 'ttl_seconds' THEN v_expires
                              ELSE m.expires_at END,
        embedding      = CASE WHEN p_embedding IS NOT NULL THEN p_embedding
                              WHEN p_changes ? 'content' AND p_changes ->> 'content' IS DISTINCT FROM m.content THEN NULL
                              WHEN p_changes ? 'search_context' AND p_changes ->> 'search_context' IS DISTINCT FROM m.search_context THEN NULL
                              ELSE m.embedding END,
        space_id       = CASE WHEN p_embedding IS NOT NULL THEN p_space_id
                              WHEN p_changes ? 'content' AND p_changes ->> 'content' IS DISTINCT FROM m.content THEN NULL
                              WHEN p_changes ? 'search_context' AND p_changes ->> 'search_context' IS DISTINCT FROM m.search_context THEN NULL
                              ELSE m.space_id END
    WHERE m.tenant = p_tenant AND m.id = p_id AND m.valid_to IS NULL
      AND (m.expires_at IS NULL OR m.expires_at > now())
    RETURNING m.id INTO result;
    RETURN result;
END
$$;

-- memdb.bump_memory(p_id uuid, p_new memdb.memories, p_source_order jsonb DEFAULT NULL)
--   -> memdb.memories
-- What a repeated write does to the memory it repeats (an exact or a near duplicate, see
-- memdb.write_memories): access_count + 1 and last_accessed_at now; the higher importance; the
-- union of tags; the later expiry (none beats any); an embedding if it had none. Provenance by
-- memdb.source_strength (order p_source_order): a new source at least as strong raises the
-- confidence to the higher of the two, a strictly stronger one also takes over source_type and
-- source_id; a weaker one changes neither. A hypothesis repeated by an active write from a
-- source other than model_inference is confirmed: status becomes 'active'.
-- The content is never rewritten. Returns the row as it is now.
CREATE OR REPLACE FUNCTION memdb.bump_memory(p_id uuid, p_new memdb.memories,
                                             p_source_order jsonb DEFAULT NULL)
RETURNS memdb.memories
LANGUAGE sql
AS $$
    UPDATE memdb.memories m SET
        access_count = m.access_count + 1,
        last_accessed_at = now(),
        importance = greatest(m.importance, p_new.importance),
        confidence = CASE WHEN memdb.source_strength(p_new.source_type, p_source_order)
                               >= memdb.source_strength(m.source_type, p_source_order)
                          THEN greatest(m.confidence, p_new.confidence) ELSE m.confidence END,
        source_type = CASE WHEN memdb.source_strength(p_new.source_type, p_source_order)
                                > memdb.source_strength(m.source_type, p_source_order)
                           THEN p_new.source_type ELSE m.source_type END,
        source_id = CASE WHEN memdb.source_strength(p_new.source_type, p_source_order)
                              > memdb.source_strength(m.source_type, p_source_order)
                         THEN p_new.source_id ELSE m.source_id END,
        status = CASE WHEN m.status = 'hypothesis' AND p_new.status = 'active'
                           AND p_new.source_type <> 'model_inference' THEN 'active'
                      ELSE m.status END,
        tags = ARRAY(SELECT DISTINCT t FROM unnest(m.tags || p_new.tags) AS t ORDER BY t),
        expires_at = CASE WHEN m.expires_at IS NULL OR p_new.expires_at IS NULL THEN NULL
                          ELSE greatest(m.expires_at, p_new.expires_at) END,
        space_id = CASE WHEN m.embedding IS NULL THEN p_new.space_id ELSE m.space_id END,
        embedding = coalesce(m.embedding, p_new.embedding)
    WHERE m.tenant = p_new.tenant AND m.id = p_id
    RETURNING m.*
$$;

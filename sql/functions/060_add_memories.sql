-- memdb.add_memories(p_items jsonb, p_embeddings vector[] DEFAULT NULL, p_space_id integer DEFAULT NULL)
--   -> TABLE(ord integer, id uuid, created boolean)
-- Adds a batch of memories in one statement. p_items is a JSON array of objects with the
-- memories columns (content required; tenant, subject, agent, scope, project_id, session_id,
-- kind, category, uri, search_context, norm_key, importance, confidence, source_type,
-- source_id, created_by, metadata, tags, created_at, expires_at or ttl_seconds, tag_version
-- (the classification rules' version when the category was classified) optional). p_embeddings[i]
-- is item i's vector (or NULL) in space p_space_id.
-- Dedup: content whose normal form (memdb.normalize_text) already has a current row in the
-- same scope (tenant, subject, scope, project_id, session_id) does not make a second row:
-- the existing row is bumped (access_count, last_accessed_at), keeps the higher importance
-- and confidence, gains the new tags, and takes the later expiry (none beats any). Duplicates
-- inside one batch collapse onto the first. Safe under concurrent writers (unique index); rows
-- are written in key order, so two calls whose batches overlap in different orders queue
-- instead of deadlocking.
-- Returns, per input position (1-based ord), the memory id and whether it was created.
CREATE OR REPLACE FUNCTION memdb.add_memories(p_items jsonb, p_embeddings vector[] DEFAULT NULL,
                                              p_space_id integer DEFAULT NULL)
RETURNS TABLE (ord integer, id uuid, created boolean)
LANGUAGE sql
AS $$
    WITH input AS (
        SELECT r.ord::integer AS ord, gen_random_uuid() AS new_id,
               coalesce(r.item ->> 'tenant', 'default') AS tenant,
               coalesce(r.item ->> 'subject', 'default') AS subject,
               r.item ->> 'agent' AS agent,
               coalesce(r.item ->> 'scope', 'user') AS scope,
               r.item ->> 'project_id' AS project_id,
               r.item ->> 'session_id' AS session_id,
               coalesce(r.item ->> 'kind', 'semantic') AS kind,
               coalesce(r.item ->> 'category', 'general') AS category,
               (r.item ->> 'tag_version')::integer AS tag_version,
               r.item ->> 'uri' AS uri,
               r.item ->> 'content' AS content,
               r.item ->> 'search_context' AS search_context,
               r.item ->> 'norm_key' AS norm_key,
               coalesce((r.item ->> 'importance')::real, 0.5) AS importance,
               coalesce((r.item ->> 'confidence')::real, 1.0) AS confidence,
               coalesce(r.item ->> 'source_type', 'user_statement') AS source_type,
               r.item ->> 'source_id' AS source_id,
               r.item ->> 'created_by' AS created_by,
               coalesce(r.item -> 'metadata', '{}'::jsonb) AS metadata,
               coalesce(memdb.jtext_array(r.item -> 'tags'), '{}'::text[]) AS tags,
               coalesce((r.item ->> 'created_at')::timestamptz, now()) AS created_at,
               coalesce((r.item ->> 'expires_at')::timestamptz,
                        now() + (r.item ->> 'ttl_seconds')::double precision * interval '1 second') AS expires_at,
               memdb.content_hash(r.item ->> 'content') AS content_hash,
               e.embedding
        FROM jsonb_array_elements(p_items) WITH ORDINALITY AS r(item, ord)
        LEFT JOIN unnest(p_embeddings) WITH ORDINALITY AS e(embedding, ord) ON e.ord = r.ord
    ),
    firsts AS (
        SELECT DISTINCT ON (tenant, subject, scope, project_id, session_id, content_hash) *
        FROM input
        ORDER BY tenant, subject, scope, project_id, session_id, content_hash, ord
    ),
    written AS (
        INSERT INTO memdb.memories AS m (
            id, tenant, subject, agent, scope, project_id, session_id, kind, category, uri,
            content, search_context, content_hash, norm_key, space_id, embedding, tsv,
            importance, confidence, source_type, source_id, created_by, metadata, tags,
            created_at, valid_from, expires_at, tag_version)
        SELECT f.new_id, f.tenant, f.subject, f.agent, f.scope, f.project_id, f.session_id,
               f.kind, f.category, coalesce(f.uri, memdb.uri_for(f.subject, f.category, f.new_id)),
               f.content, f.search_context, f.content_hash, f.norm_key,
               CASE WHEN f.embedding IS NULL THEN NULL ELSE p_space_id END, f.embedding,
               ''::tsvector, f.importance, f.confidence, f.source_type, f.source_id,
               f.created_by, f.metadata, f.tags, f.created_at, f.created_at, f.expires_at, f.tag_version
        FROM firsts f
        -- rows are inserted (and their dedup keys locked) in key order, not input order, so
        -- concurrent batches that overlap in different orders queue instead of deadlocking
        ORDER BY f.tenant, f.subject, f.scope, f.project_id, f.session_id, f.content_hash
        ON CONFLICT (tenant, subject, scope, project_id, session_id, content_hash)
            WHERE valid_to IS NULL
        DO UPDATE SET
            access_count = m.access_count + 1,
            last_accessed_at = now(),
            importance = greatest(m.importance, excluded.importance),
            confidence = greatest(m.confidence, excluded.confidence),
            tags = ARRAY(SELECT DISTINCT t FROM unnest(m.tags || excluded.tags) AS t ORDER BY t),
            expires_at = CASE WHEN m.expires_at IS NULL OR excluded.expires_at IS NULL THEN NULL
                              ELSE greatest(m.expires_at, excluded.expires_at) END,
            space_id = CASE WHEN m.embedding IS NULL THEN excluded.space_id ELSE m.space_id END,
            embedding = coalesce(m.embedding, excluded.embedding)
        RETURNING m.id, m.tenant, m.subject, m.scope, m.project_id, m.session_id,
                  m.content_hash, (m.xmax = 0) AS inserted
    )
    SELECT i.ord, w.id, (w.inserted AND f.ord = i.ord) AS created
    FROM input i
    JOIN firsts f ON f.tenant = i.tenant AND f.subject = i.subject AND f.scope = i.scope
                 AND f.project_id IS NOT DISTINCT FROM i.project_id
                 AND f.session_id IS NOT DISTINCT FROM i.session_id
                 AND f.content_hash = i.content_hash
    JOIN written w ON w.tenant = f.tenant AND w.subject = f.subject AND w.scope = f.scope
                  AND w.project_id IS NOT DISTINCT FROM f.project_id
                  AND w.session_id IS NOT DISTINCT FROM f.session_id
                  AND w.content_hash = f.content_hash
    ORDER BY i.ord
$$;

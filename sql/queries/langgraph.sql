-- Named queries of memdb.integrations.langgraph (LangGraph's BaseStore on memdb's memories;
-- the mapping of namespaces and keys onto URIs is in memdb/integrations/_langgraph_map.py).
-- Row-level security confines each to the store's tenant and subject as well.

-- name: langgraph_get
-- The current rows at these item URIs, expired ones too (flagged), newest first per URI;
-- found through norm_key (a hash of the URI) and memories_norm_key_idx, then the URI itself.
SELECT m.id, m.tenant, m.subject, m.agent, m.scope, m.project_id, m.session_id, m.kind,
       m.category, m.uri, m.content, m.search_context, m.norm_key, m.importance, m.confidence,
       m.source_type, m.source_id, m.created_by, m.metadata, m.tags, m.created_at,
       m.updated_at, m.expires_at, m.access_count, m.last_accessed_at, m.version, m.valid_from,
       m.valid_to, m.superseded_by, (m.embedding IS NOT NULL) AS has_embedding, m.status,
       m.tag_version, (m.expires_at IS NOT NULL AND m.expires_at <= now()) AS expired
FROM memdb.memories m
WHERE m.tenant = %(tenant)s AND m.subject = %(subject)s AND m.category = %(category)s
  AND m.norm_key = ANY (%(keys)s::text[]) AND m.norm_key IS NOT NULL AND m.valid_to IS NULL
  AND m.uri = ANY (%(uris)s::text[])
ORDER BY m.uri, m.updated_at DESC, m.id;

-- name: langgraph_namespaces
-- The distinct namespaces (item URIs without their "=key") that ever held an item: current
-- rows (expired or superseded too) and, from history, deleted ones; a namespace stays listed
-- after its last item is deleted, as in LangGraph's InMemoryStore, until its history is erased.
SELECT regexp_replace(m.uri, '=[^/]*$', '') AS prefix
FROM memdb.memories m
WHERE m.tenant = %(tenant)s AND m.subject = %(subject)s AND m.category = %(category)s
  AND m.uri LIKE ANY (memdb.like_prefixes(ARRAY[%(root)s]::text[]))
UNION
SELECT regexp_replace(h.before ->> 'uri', '=[^/]*$', '')
FROM memdb.memory_history h
WHERE h.tenant = %(tenant)s AND h.subject = %(subject)s AND h.op = 'delete'
  AND h.before ->> 'category' = %(category)s
  AND (h.before ->> 'uri') LIKE ANY (memdb.like_prefixes(ARRAY[%(root)s]::text[]))
ORDER BY 1;

-- name: langgraph_refresh_ttl
-- Renew the expiry of items read with a TTL: now() + their TTL (seconds), in one statement.
UPDATE memdb.memories m
SET expires_at = now() + t.secs * interval '1 second'
FROM unnest(%(ids)s::uuid[], %(secs)s::double precision[]) AS t(id, secs)
WHERE m.tenant = %(tenant)s AND m.id = t.id AND m.valid_to IS NULL;

-- name: langgraph_lock
-- Puts of one store queue here (memdb.write_lock_key: the lock memdb.write_memories takes for
-- the same tenant, subject and category, so taking it first orders every lock the same way):
-- reading the items and writing them is one atomic upsert, the last writer wins.
SELECT pg_advisory_xact_lock(memdb.write_lock_key(%(tenant)s, %(subject)s, %(category)s));

-- name: langgraph_list
-- The current, unexpired items under a URI prefix, most recently updated first (LangGraph's
-- order for a search without a query), optionally narrowed by metadata containment.
SELECT m.id, m.tenant, m.subject, m.agent, m.scope, m.project_id, m.session_id, m.kind,
       m.category, m.uri, m.content, m.search_context, m.norm_key, m.importance, m.confidence,
       m.source_type, m.source_id, m.created_by, m.metadata, m.tags, m.created_at,
       m.updated_at, m.expires_at, m.access_count, m.last_accessed_at, m.version, m.valid_from,
       m.valid_to, m.superseded_by, (m.embedding IS NOT NULL) AS has_embedding, m.status,
       m.tag_version
FROM memdb.memories m
WHERE m.tenant = %(tenant)s AND m.subject = %(subject)s AND m.category = %(category)s
  AND m.uri LIKE ANY (memdb.like_prefixes(ARRAY[%(prefix)s]::text[]))
  AND m.valid_to IS NULL AND (m.expires_at IS NULL OR m.expires_at > now())
  AND (%(metadata)s::jsonb IS NULL OR m.metadata @> %(metadata)s::jsonb)
ORDER BY m.updated_at DESC, m.id DESC
LIMIT %(limit)s OFFSET %(offset)s;

-- name: langgraph_vectors_clear
-- Drop the per-field vectors of these items' memories (a put rewrites them, or has none).
DELETE FROM memdb.item_vectors v
WHERE v.tenant = %(tenant)s AND v.memory_id = ANY (%(ids)s::uuid[]);

-- name: langgraph_vectors_insert
-- The per-field vectors of items: one row per text their index fields extracted.
INSERT INTO memdb.item_vectors (tenant, subject, memory_id, path, ordinal, space_id, embedding)
SELECT %(tenant)s, %(subject)s, t.memory_id, t.path, t.ordinal, %(space_id)s, t.embedding
FROM unnest(%(ids)s::uuid[], %(paths)s::text[], %(ordinals)s::integer[],
            %(embeddings)s::vector[]) AS t(memory_id, path, ordinal, embedding);

-- name: langgraph_vector_search
-- A query ranked by vector similarity alone, as LangGraph's stores rank: each current,
-- unexpired item under the URI prefix scores the cosine similarity of its best per-field
-- vector (memdb.item_vectors), or, for an item without any (its index is the whole value),
-- of its memory's own vector; vectors of other embedding spaces are not compared. An exact
-- scan of the items under the prefix (no HNSW index: per-field vectors of any space share
-- the table), best first, then most recently updated.
SELECT m.id, m.tenant, m.subject, m.agent, m.scope, m.project_id, m.session_id, m.kind,
       m.category, m.uri, m.content, m.search_context, m.norm_key, m.importance, m.confidence,
       m.source_type, m.source_id, m.created_by, m.metadata, m.tags, m.created_at,
       m.updated_at, m.expires_at, m.access_count, m.last_accessed_at, m.version, m.valid_from,
       m.valid_to, m.superseded_by, (m.embedding IS NOT NULL) AS has_embedding, m.status,
       m.tag_version, s.score
FROM memdb.memories m
CROSS JOIN LATERAL (
    SELECT coalesce(
        (SELECT max(1 - (v.embedding <=> %(query)s::vector))
         FROM memdb.item_vectors v
         WHERE v.tenant = m.tenant AND v.memory_id = m.id AND v.space_id = %(space_id)s),
        CASE WHEN m.space_id = %(space_id)s AND m.embedding IS NOT NULL
             THEN 1 - (m.embedding <=> %(query)s::vector) END) AS score
) s
WHERE m.tenant = %(tenant)s AND m.subject = %(subject)s AND m.category = %(category)s
  AND m.uri LIKE ANY (memdb.like_prefixes(ARRAY[%(prefix)s]::text[]))
  AND m.valid_to IS NULL AND (m.expires_at IS NULL OR m.expires_at > now())
  AND (%(metadata)s::jsonb IS NULL OR m.metadata @> %(metadata)s::jsonb)
  AND s.score IS NOT NULL
ORDER BY s.score DESC, m.updated_at DESC, m.id DESC
LIMIT %(limit)s;

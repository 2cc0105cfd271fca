-- Named queries of memdb.families.store (loaded by memdb.core.sql). Parameters are %(name)s placeholders.

-- name: set_context
SELECT set_config('memdb.actor', %(actor)s, true) AS actor,
       set_config('memdb.reason', %(reason)s, true) AS reason;

-- name: set_context_citus
SET LOCAL citus.propagate_set_commands = 'local';
SET LOCAL memdb.actor = {actor};
SET LOCAL memdb.reason = {reason};

-- name: keyword_index_fits
SELECT memdb.keyword_index_fits(%(content)s, %(search_context)s) AS fits;

-- name: ensure_space
SELECT memdb.ensure_embedding_space(%(model)s, %(dims)s) AS id;

-- name: schema_ready
SELECT to_regclass('memdb.memories') IS NOT NULL AS ready;

-- name: add_memories
SELECT ord, id, created FROM memdb.add_memories(%(items)s, %(embeddings)b, %(space_id)s);

-- name: get_memory
SELECT m.id, m.tenant, m.subject, m.agent, m.scope, m.project_id, m.session_id, m.kind,
       m.category, m.uri, m.content, m.search_context, m.norm_key, m.importance, m.confidence,
       m.source_type, m.source_id, m.created_by, m.metadata, m.tags, m.created_at,
       m.updated_at, m.expires_at, m.access_count, m.last_accessed_at, m.version, m.valid_from,
       m.valid_to, m.superseded_by, (m.embedding IS NOT NULL) AS has_embedding, m.status,
       m.tag_version
FROM memdb.memories m
WHERE m.tenant = %(tenant)s AND m.id = %(id)s
  AND (m.expires_at IS NULL OR m.expires_at > now());

-- name: memory_at_uri
-- Whether the memory with this id is the one a URI names: same subject and category (or this
-- very stored uri); with history, a recorded version (the memory may be deleted) counts too.
SELECT EXISTS (
           SELECT 1 FROM memdb.memories m
           WHERE m.tenant = %(tenant)s AND m.id = %(id)s
             AND ((m.subject = %(subject)s AND m.category = %(category)s) OR m.uri = %(uri)s))
       OR (%(history)s AND EXISTS (
           SELECT 1 FROM memdb.memory_history h, LATERAL (VALUES (h.before), (h.after)) AS r(v)
           WHERE h.tenant = %(tenant)s AND h.memory_id = %(id)s
             AND ((r.v ->> 'subject' = %(subject)s AND r.v ->> 'category' = %(category)s)
                  OR r.v ->> 'uri' = %(uri)s))) AS found;

-- name: list_memories
SELECT m.id, m.tenant, m.subject, m.agent, m.scope, m.project_id, m.session_id, m.kind,
       m.category, m.uri, m.content, m.search_context, m.norm_key, m.importance, m.confidence,
       m.source_type, m.source_id, m.created_by, m.metadata, m.tags, m.created_at,
       m.updated_at, m.expires_at, m.access_count, m.last_accessed_at, m.version, m.valid_from,
       m.valid_to, m.superseded_by, (m.embedding IS NOT NULL) AS has_embedding, m.status,
       m.tag_version
FROM memdb.list_memories(%(tenant)s, %(filter)s, %(limit)s, %(offset)s) m;

-- name: update_memory
SELECT memdb.update_memory(%(tenant)s, %(id)s, %(changes)s, %(embedding)s, %(space_id)s) AS id;

-- name: delete_memory
SELECT memdb.delete_memory(%(tenant)s, %(id)s) AS deleted;

-- name: purge_expired
SELECT memdb.purge_expired(%(tenant)s) AS purged;

-- name: history
-- In time order: on Citus the ids come from each node's own sequence range, not in order.
SELECT h.id, h.memory_id, h.op, h.before, h.after, h.actor, h.reason, h.at
FROM memdb.memory_history h
WHERE h.tenant = %(tenant)s AND h.memory_id = %(id)s
ORDER BY h.at, h.id;

-- name: count_memories
SELECT count(*) AS n FROM memdb.memories WHERE tenant = %(tenant)s;

-- name: write_memories
SELECT ord, id, outcome, related_id, similarity, detail
FROM memdb.write_memories(%(items)s, %(embeddings)b, %(space_id)s, %(options)s);

-- name: pending_embeddings
-- The re-embedding queue is no table of its own: it is the tenant's current, unexpired rows
-- without an embedding (written while the embedding provider failed, with
-- on_embedding_error = 'defer', or updated to a new content without a new vector).
SELECT count(*) AS n
FROM memdb.memories m
WHERE m.tenant = %(tenant)s AND m.embedding IS NULL AND m.valid_to IS NULL
  AND (m.expires_at IS NULL OR m.expires_at > now());

-- name: embedding_queue
-- The next queued rows after a given id (keyset order: one pass over the queue).
SELECT m.id, m.content, m.search_context
FROM memdb.memories m
WHERE m.tenant = %(tenant)s AND m.embedding IS NULL AND m.valid_to IS NULL
  AND (m.expires_at IS NULL OR m.expires_at > now())
  AND m.id > %(after)s
ORDER BY m.id
LIMIT %(limit)s;

-- name: set_embeddings
-- Writes vectors for queued rows, but only where the row still has exactly the text that was
-- embedded and still has no vector: a row changed or embedded meanwhile is left alone, so a
-- stale vector is never stored. Returns how many rows were written.
WITH done AS (
    UPDATE memdb.memories m
    SET embedding = q.embedding, space_id = %(space_id)s
    FROM unnest(%(ids)s::uuid[], %(contents)s::text[], %(contexts)s::text[],
                %(embeddings)b::vector[]) AS q(id, content, search_context, embedding)
    WHERE m.tenant = %(tenant)s AND m.id = q.id AND m.embedding IS NULL
      AND m.valid_to IS NULL AND m.content = q.content
      AND m.search_context IS NOT DISTINCT FROM q.search_context
    RETURNING m.id
)
SELECT count(*) AS n FROM done;

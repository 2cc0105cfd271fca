-- Named queries of memdb.families.graph (loaded by memdb.core.sql). Parameters are %(name)s placeholders.

-- name: graph_link_memories
SELECT memory_id, linked, entities, relations
FROM memdb.link_memories(%(tenant)s::text, %(items)s::jsonb);

-- name: graph_match_mentions
SELECT memdb.match_mentions(%(tenant)s::text, %(ids)s::uuid[]) AS added;

-- name: graph_memories_to_link
SELECT m.id, m.content
FROM memdb.memories m
WHERE m.tenant = %(tenant)s::text AND m.valid_to IS NULL
  AND (m.expires_at IS NULL OR m.expires_at > now())
  AND (%(ids)s::uuid[] IS NULL OR m.id = ANY (%(ids)s::uuid[]))
  AND (%(subject)s::text IS NULL OR m.subject = %(subject)s::text)
ORDER BY m.created_at, m.id
LIMIT %(limit)s::integer;

-- name: graph_search
SELECT m.id, m.tenant, m.subject, m.agent, m.scope, m.project_id, m.session_id, m.kind,
       m.category, m.uri, m.content, m.search_context, m.norm_key, m.importance, m.confidence,
       m.source_type, m.source_id, m.created_by, m.metadata, m.tags, m.created_at,
       m.updated_at, m.expires_at, m.access_count, m.last_accessed_at, m.version, m.valid_from,
       m.valid_to, m.superseded_by, (m.embedding IS NOT NULL) AS has_embedding, m.status, m.tag_version,
       g.rank, g.score, g.hybrid_rank, g.hybrid_score, g.graph_rank, g.graph_score, g.graph_hops,
       g.graph_entities, g.vector_rank, g.vector_score, g.bm25_rank, g.bm25_score, g.exact_rank,
       g.exact_score
FROM memdb.search_hybrid_graph(%(tenant)s::text, %(query)s::text, %(embedding)s::vector,
                               %(k)s::integer, %(filter)s::jsonb, %(options)s::jsonb,
                               %(graph)s::jsonb) g
JOIN memdb.memories m ON m.id = g.id
ORDER BY g.rank;

-- name: graph_route
SELECT m.id, m.tenant, m.subject, m.agent, m.scope, m.project_id, m.session_id, m.kind,
       m.category, m.uri, m.content, m.search_context, m.norm_key, m.importance, m.confidence,
       m.source_type, m.source_id, m.created_by, m.metadata, m.tags, m.created_at,
       m.updated_at, m.expires_at, m.access_count, m.last_accessed_at, m.version, m.valid_from,
       m.valid_to, m.superseded_by, (m.embedding IS NOT NULL) AS has_embedding, m.status, m.tag_version,
       g.rank, g.score, g.rank AS graph_rank, g.score AS graph_score, g.hops AS graph_hops,
       g.entities AS graph_entities
FROM memdb.search_graph(%(tenant)s::text, %(query)s::text, %(entities)s::text[],
                        %(hops)s::integer, %(k)s::integer, %(filter)s::jsonb) g
JOIN memdb.memories m ON m.id = g.id
ORDER BY g.rank;

-- name: graph_neighbors
SELECT depth, from_name, from_type, relation, to_name, to_type, strength, memory_id,
       valid_from, valid_to
FROM memdb.entity_neighbors(%(tenant)s::text, %(entity)s::text, %(hops)s::integer,
                            %(limit)s::integer);

-- name: graph_entity
SELECT e.id, e.subject, e.name, e.type, e.aliases,
       (SELECT count(*) FROM memdb.entity_mentions x WHERE x.entity_id = e.id) AS mentions
FROM memdb.entities e
WHERE e.tenant = %(tenant)s::text
  AND (e.norm_name = memdb.entity_norm(%(entity)s::text)
       OR e.aliases @> ARRAY[memdb.entity_norm(%(entity)s::text)])
ORDER BY e.id;

-- name: graph_mention_count
SELECT count(*) AS n FROM memdb.entity_mentions x WHERE x.memory_id = ANY (%(ids)s::uuid[]);

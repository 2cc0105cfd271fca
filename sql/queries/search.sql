-- Named queries of memdb.families.store's search (loaded by memdb.core.sql).

-- name: search_hybrid
SELECT m.id, m.tenant, m.subject, m.agent, m.scope, m.project_id, m.session_id, m.kind,
       m.category, m.uri, m.content, m.search_context, m.norm_key, m.importance, m.confidence,
       m.source_type, m.source_id, m.created_by, m.metadata, m.tags, m.created_at,
       m.updated_at, m.expires_at, m.access_count, m.last_accessed_at, m.version, m.valid_from,
       m.valid_to, m.superseded_by, (m.embedding IS NOT NULL) AS has_embedding, m.status, m.tag_version,
       h.rank, h.score, h.fused, h.multiplier, h.vector_rank, h.vector_score, h.bm25_rank,
       h.bm25_score, h.exact_rank, h.exact_score, h.mmr_score
FROM memdb.search_hybrid(%(tenant)s, %(query)s, %(embedding)s, %(k)s, %(filter)s, %(options)s,
                         %(keyword_routes)s::jsonb) h
-- LEFT JOIN, as search_planned: the function must run (and check its options and filter)
-- even where the plan would read no memory first, e.g. a tenant's empty shard on Citus.
LEFT JOIN memdb.memories m ON m.id = h.id AND m.tenant = %(tenant)s
ORDER BY h.rank;

-- name: search_keyword_routes
-- The keyword routes of the search above, run while its query is being embedded (as text: it
-- goes back to the server as it came, as search_hybrid's p_keyword_routes).
SELECT memdb.search_keyword_routes(%(tenant)s, %(query)s, %(k)s, %(filter)s, %(options)s)::text
       AS keyword_routes;

-- name: prf_terms
SELECT t.term, t.weight, t.original
FROM memdb.prf_terms(%(tenant)s, %(query)s, %(filter)s, %(options)s) t;

-- name: mark_used
SELECT memdb.mark_used(%(tenant)s, %(ids)s, %(subject)s) AS marked;

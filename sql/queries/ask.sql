-- Named queries of memdb.retrieval.ask (loaded by memdb.core.sql).

-- name: search_fused
SELECT m.id, m.tenant, m.subject, m.agent, m.scope, m.project_id, m.session_id, m.kind,
       m.category, m.uri, m.content, m.search_context, m.norm_key, m.importance, m.confidence,
       m.source_type, m.source_id, m.created_by, m.metadata, m.tags, m.created_at,
       m.updated_at, m.expires_at, m.access_count, m.last_accessed_at, m.version, m.valid_from,
       m.valid_to, m.superseded_by, (m.embedding IS NOT NULL) AS has_embedding, m.status, m.tag_version,
       h.rank, h.score, h.variant_ranks, h.variant_scores
FROM memdb.search_fused(%(tenant)s, %(variants)s, %(embeddings)s::vector[], %(k)s, %(filter)s,
                        %(options)s, %(rrf_k)s, %(depth)s) h
-- LEFT JOIN, as search_planned: the function must run (and check its options and filter)
-- even where the plan would read no memory first, e.g. a tenant's empty shard on Citus.
LEFT JOIN memdb.memories m ON m.id = h.id AND m.tenant = %(tenant)s
ORDER BY h.rank;

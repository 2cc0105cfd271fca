-- Named queries of memdb.retrieval.recall (planned retrieval, traces, classification backfill), loaded
-- by memdb.core.sql.

-- name: search_planned
SELECT m.id, m.tenant, m.subject, m.agent, m.scope, m.project_id, m.session_id, m.kind,
       m.category, m.uri, m.content, m.search_context, m.norm_key, m.importance, m.confidence,
       m.source_type, m.source_id, m.created_by, m.metadata, m.tags, m.created_at,
       m.updated_at, m.expires_at, m.access_count, m.last_accessed_at, m.version, m.valid_from,
       m.valid_to, m.superseded_by, (m.embedding IS NOT NULL) AS has_embedding, m.status, m.tag_version,
       h.rank, h.score, h.fused, h.multiplier, h.routes, h.fallback, h.notes
FROM memdb.search_planned(%(tenant)s, %(plan)s, %(embeddings)b, %(k)s, %(filter)s, %(options)s) h
LEFT JOIN memdb.memories m ON m.id = h.id AND m.tenant = %(tenant)s
ORDER BY h.rank;

-- name: statement_timeout
SELECT set_config('statement_timeout', %(ms)s, true) AS timeout;

-- name: insert_trace
INSERT INTO memdb.retrieval_traces (tenant, subject, query, intent, plan_source, fallback, status,
                                    reasons, categories, plan, candidates, chosen_ids,
                                    result_subjects, k, latency_ms, timings)
VALUES (%(tenant)s, %(subject)s, %(query)s, %(intent)s, %(plan_source)s, %(fallback)s, %(status)s,
        %(reasons)s, %(categories)s, %(plan)s, %(candidates)s, %(chosen_ids)s,
        %(result_subjects)s, %(k)s, %(latency_ms)s, %(timings)s)
RETURNING id;

-- name: list_traces
SELECT id, subject, query, intent, plan_source, fallback, status, reasons, categories,
       cardinality(chosen_ids) AS results, k, latency_ms, created_at
FROM memdb.retrieval_traces
WHERE tenant = %(tenant)s
ORDER BY created_at DESC, id
LIMIT %(limit)s;

-- name: get_trace
SELECT id, subject, query, intent, plan_source, fallback, status, reasons, categories, plan,
       candidates, chosen_ids, result_subjects, k, latency_ms, timings, created_at
FROM memdb.retrieval_traces
WHERE tenant = %(tenant)s AND id = %(id)s;

-- name: trace_stats
SELECT memdb.trace_stats(%(tenant)s, %(since)s) AS stats;

-- name: purge_traces
SELECT memdb.purge_traces(%(tenant)s, %(older_than)s) AS purged;

-- name: erase_traces
SELECT memdb.erase_traces(%(tenant)s, %(subject)s) AS erased;

-- name: classification_batch
SELECT m.id, m.content, m.metadata, m.category, m.tag_version
FROM memdb.memories m
WHERE m.tenant = %(tenant)s AND m.valid_to IS NULL AND m.id > %(after)s
  AND (m.tag_version < %(version)s OR (m.tag_version IS NULL AND m.category = 'general'))
ORDER BY m.id
LIMIT %(limit)s;

-- name: reclassify
SELECT memdb.reclassify(%(tenant)s, %(moves)s) AS changed;

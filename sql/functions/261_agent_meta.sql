-- memdb.agent_meta(p_tenant text, p_agent text, p_limit integer DEFAULT 20) -> jsonb
-- An agent's meta memory (what it knows about itself) as one JSON document, derived on read
-- from the current memories of its subject 'agent:<p_agent>' (memdb.families.meta; the same document
-- from psql):
--   {"agent", "subject", "tenant", "persona": [...], "abilities": [...], "limits": [...],
--    "lessons": [...], "memory_ids": [...], "counts": {...}}
-- Each item is {"id", "content", "category", "importance", "updated_at"}. A memory's aspect is
-- its tag 'meta:<aspect>' (store.meta.add writes it), else by category: skills or tools ->
-- abilities, system -> limits, patterns -> lessons, anything else -> persona (so memories
-- written under the subject 'agent:<name>' by hand count too). Only current, active,
-- unexpired, non-working memories; at most p_limit per aspect, by importance then recency.
-- Runs with the caller's rights: a store confined to another subject sees no meta memory.
CREATE OR REPLACE FUNCTION memdb.agent_meta(p_tenant text, p_agent text,
                                            p_limit integer DEFAULT 20)
RETURNS jsonb
LANGUAGE sql STABLE
AS $$
    WITH rows AS (
        SELECT m.id, m.content, m.category, m.importance, m.updated_at,
               CASE
                   WHEN 'meta:persona' = ANY (m.tags) THEN 'persona'
                   WHEN 'meta:abilities' = ANY (m.tags) THEN 'abilities'
                   WHEN 'meta:limits' = ANY (m.tags) THEN 'limits'
                   WHEN 'meta:lessons' = ANY (m.tags) THEN 'lessons'
                   WHEN m.category IN ('skills', 'tools') THEN 'abilities'
                   WHEN m.category = 'system' THEN 'limits'
                   WHEN m.category = 'patterns' THEN 'lessons'
                   ELSE 'persona'
               END AS aspect
        FROM memdb.memories m
        WHERE m.tenant = p_tenant AND m.subject = 'agent:' || p_agent
          AND m.valid_to IS NULL AND m.status = 'active' AND m.kind <> 'working'
          AND (m.expires_at IS NULL OR m.expires_at > now())
    ), kept AS (
        SELECT r.* FROM (
            SELECT r.*, row_number() OVER (PARTITION BY r.aspect
                                          ORDER BY r.importance DESC, r.updated_at DESC, r.id)
                       AS pos
            FROM rows r) r
        WHERE r.pos <= greatest(coalesce(p_limit, 20), 0)
    ), aspects AS (
        SELECT k.aspect,
               jsonb_agg(jsonb_build_object(
                   'id', k.id, 'content', k.content, 'category', k.category,
                   'importance', round(k.importance::numeric, 2), 'updated_at', k.updated_at)
                   ORDER BY k.pos) AS items,
               count(*) AS n
        FROM kept k
        GROUP BY k.aspect
    )
    SELECT jsonb_build_object(
        'agent', p_agent, 'subject', 'agent:' || p_agent, 'tenant', p_tenant,
        'persona', coalesce((SELECT a.items FROM aspects a WHERE a.aspect = 'persona'),
                            '[]'::jsonb),
        'abilities', coalesce((SELECT a.items FROM aspects a WHERE a.aspect = 'abilities'),
                              '[]'::jsonb),
        'limits', coalesce((SELECT a.items FROM aspects a WHERE a.aspect = 'limits'),
                           '[]'::jsonb),
        'lessons', coalesce((SELECT a.items FROM aspects a WHERE a.aspect = 'lessons'),
                            '[]'::jsonb),
        'memory_ids', coalesce((SELECT jsonb_agg(k.id ORDER BY k.aspect, k.pos) FROM kept k),
                               '[]'::jsonb),
        'counts', coalesce((SELECT jsonb_object_agg(a.aspect, a.n) FROM aspects a),
                           '{}'::jsonb))
$$;

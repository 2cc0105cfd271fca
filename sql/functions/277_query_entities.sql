-- memdb.query_entities(p_tenant text, p_query text, p_names text[] DEFAULT NULL,
--                      p_filter jsonb DEFAULT '{}')
--   -> TABLE(entity_id bigint, name text, type text, subject text)
-- The entities a question is about, the seeds of a graph walk: those named in p_names (by
-- normalized name or alias), and those whose name or an alias occurs in p_query
-- (one of memdb.entity_candidates(p_query): whole words for Latin names, substrings for CJK
-- names; found through the indexes on norm_name and aliases, not by a scan). Only entities
-- of the subjects p_filter allows (its "subject" key; row-level security confines the rest).
-- Example: SELECT * FROM memdb.query_entities('default', 'who works with 李四?');
CREATE OR REPLACE FUNCTION memdb.query_entities(p_tenant text, p_query text,
                                                p_names text[] DEFAULT NULL,
                                                p_filter jsonb DEFAULT '{}')
RETURNS TABLE (entity_id bigint, name text, type text, subject text)
LANGUAGE sql STABLE
AS $$
    WITH q AS MATERIALIZED (  -- the candidates once, not once per entity
        SELECT memdb.entity_candidates(coalesce(p_query, ''))
                   || ARRAY(SELECT memdb.entity_norm(x) FROM unnest(coalesce(p_names, '{}')) x) AS names,
               CASE WHEN coalesce(p_filter, '{}') ? 'subject'
                    THEN memdb.jtext_array(p_filter -> 'subject') END AS subjects
    )
    SELECT e.id, e.name, e.type, e.subject
    FROM memdb.entities e
    WHERE e.tenant = p_tenant
      -- scalar subqueries (InitPlans): index conditions on norm_name and aliases
      AND (e.norm_name = ANY ((SELECT q.names FROM q)::text[]) OR e.aliases && (SELECT q.names FROM q))
      AND ((SELECT q.subjects FROM q) IS NULL OR e.subject = ANY ((SELECT q.subjects FROM q)::text[]))
    ORDER BY e.id
$$;

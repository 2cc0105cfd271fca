-- memdb.query_entities(p_tenant text, p_query text, p_names text[] DEFAULT NULL,
--                      p_filter jsonb DEFAULT '{}')
--   -> TABLE(entity_id bigint, name text, type text, subject text)
-- The entities a question is about, the seeds of a graph walk: those named in p_names (by
-- normalized name or alias), and those whose name or an alias occurs in p_query
-- (memdb.entity_occurs: whole words for Latin names, substrings for CJK names). Only entities
-- of the subjects p_filter allows (its "subject" key; row-level security confines the rest).
-- Example: SELECT * FROM memdb.query_entities('default', 'who works with 李四?');
CREATE OR REPLACE FUNCTION memdb.query_entities(p_tenant text, p_query text,
                                                p_names text[] DEFAULT NULL,
                                                p_filter jsonb DEFAULT '{}')
RETURNS TABLE (entity_id bigint, name text, type text, subject text)
LANGUAGE sql STABLE
AS $$
    WITH q AS (
        SELECT memdb.entity_words(coalesce(p_query, '')) AS words,
               ARRAY(SELECT memdb.entity_norm(x) FROM unnest(coalesce(p_names, '{}')) x) AS names,
               CASE WHEN coalesce(p_filter, '{}') ? 'subject'
                    THEN memdb.jtext_array(p_filter -> 'subject') END AS subjects
    )
    SELECT e.id, e.name, e.type, e.subject
    FROM memdb.entities e, q
    WHERE e.tenant = p_tenant
      AND (q.subjects IS NULL OR e.subject = ANY (q.subjects))
      AND (e.norm_name = ANY (q.names) OR e.aliases && q.names
           OR memdb.entity_occurs(e.norm_name, q.words)
           OR EXISTS (SELECT 1 FROM unnest(e.aliases) a WHERE memdb.entity_occurs(a, q.words)))
    ORDER BY e.id
$$;

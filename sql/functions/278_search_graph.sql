-- memdb.search_graph(p_tenant text, p_query text, p_entities text[] DEFAULT NULL,
--                    p_hops integer DEFAULT 2, p_k integer DEFAULT 10, p_filter jsonb DEFAULT '{}')
--   -> TABLE(id uuid, rank integer, score double precision, hops integer, entities text[])
-- The graph route: memories connected to the entities of a question.
--   1. seeds: memdb.query_entities(p_query, p_entities) (hop 0);
--   2. a recursive CTE walks relations in both directions up to p_hops hops (0..4), keeping each
--      entity's fewest hops; only relations valid now (or at p_filter's as_of) whose evidence
--      memory passes p_filter (memdb.matches: current, unexpired, in scope) are walked;
--   3. every memory passing p_filter that mentions a reached entity scores
--      sum over its reached entities of 0.5 ^ hops (a memory naming the seed and its neighbour
--      outranks one naming only the neighbour); ties by id.
-- hops: the fewest hops among the memory's entities; entities: their names, nearest first.
-- No seed entity: no rows.
-- Example: SELECT * FROM memdb.search_graph('default', '谁和李四一起工作？', NULL, 2, 5);
CREATE OR REPLACE FUNCTION memdb.search_graph(p_tenant text, p_query text,
                                              p_entities text[] DEFAULT NULL,
                                              p_hops integer DEFAULT 2, p_k integer DEFAULT 10,
                                              p_filter jsonb DEFAULT '{}')
RETURNS TABLE (id uuid, rank integer, score double precision, hops integer, entities text[])
LANGUAGE plpgsql STABLE
ROWS 10
AS $$
DECLARE
    f jsonb := coalesce(p_filter, '{}'::jsonb);
    v_now timestamptz;
BEGIN
    IF p_k IS NULL OR p_k < 1 OR p_k > 1000 THEN
        RAISE EXCEPTION 'k must be between 1 and 1000, got %', p_k USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_hops IS NULL OR p_hops < 0 OR p_hops > 4 THEN
        RAISE EXCEPTION 'hops must be between 0 and 4, got %', p_hops USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM memdb.check_filter(f);
    v_now := coalesce((f ->> 'as_of')::timestamptz, now());
    RETURN QUERY
    WITH RECURSIVE walk(entity_id, depth) AS (
        SELECT s.entity_id, 0 FROM memdb.query_entities(p_tenant, p_query, p_entities, f) s
        UNION
        SELECT nb.other, w.depth + 1
        FROM walk w
        CROSS JOIN LATERAL (
            SELECT r.to_id AS other, r.memory_id, r.valid_from, r.valid_to
            FROM memdb.entity_relations r WHERE r.from_id = w.entity_id AND r.tenant = p_tenant
            UNION ALL
            SELECT r.from_id, r.memory_id, r.valid_from, r.valid_to
            FROM memdb.entity_relations r WHERE r.to_id = w.entity_id AND r.tenant = p_tenant
        ) nb
        -- LATERAL ... LIMIT 1: one primary-key probe per edge, whatever the statistics say
        CROSS JOIN LATERAL (
            SELECT 1 FROM memdb.memories ev
            WHERE ev.id = nb.memory_id AND memdb.matches(ev, f) LIMIT 1
        ) ok
        WHERE w.depth < p_hops
          AND nb.valid_from <= v_now AND (nb.valid_to IS NULL OR nb.valid_to > v_now)
    ), reached AS MATERIALIZED (
        SELECT w.entity_id, min(w.depth) AS depth FROM walk w GROUP BY w.entity_id
    ), hit AS (
        SELECT mm.memory_id,
               sum(power(0.5, r.depth)) AS score,
               min(r.depth)::integer AS hops,
               array_agg(e.name ORDER BY r.depth, e.name) AS names
        FROM reached r
        CROSS JOIN LATERAL (SELECT x.name FROM memdb.entities x WHERE x.id = r.entity_id LIMIT 1) e
        CROSS JOIN LATERAL (  -- mentions by entity (the primary key's leading column)
            SELECT x.memory_id FROM memdb.entity_mentions x WHERE x.entity_id = r.entity_id
            OFFSET 0
        ) mm
        CROSS JOIN LATERAL (
            SELECT 1 FROM memdb.memories m
            WHERE m.id = mm.memory_id AND m.tenant = p_tenant AND memdb.matches(m, f) LIMIT 1
        ) ok
        GROUP BY mm.memory_id
    )
    SELECT h.memory_id, (row_number() OVER (ORDER BY h.score DESC, h.memory_id))::integer,
           h.score::double precision, h.hops, h.names
    FROM hit h
    ORDER BY h.score DESC, h.memory_id
    LIMIT p_k;
END
$$;

-- memdb.entity_neighbors(p_tenant text, p_entity text, p_hops integer DEFAULT 1,
--                        p_limit integer DEFAULT 100)
--   -> TABLE(depth integer, from_name text, from_type text, relation text, to_name text,
--            to_type text, strength real, memory_id uuid, valid_from timestamptz,
--            valid_to timestamptz)
-- The neighbourhood of an entity (by normalized name or alias, every subject the caller may
-- see): every currently valid relation within p_hops (1..4) hops of it whose evidence memory is
-- current, with the hop at which it was reached (1: touches the entity), strongest first.
-- Example: SELECT * FROM memdb.entity_neighbors('default', '李四', 2);
CREATE OR REPLACE FUNCTION memdb.entity_neighbors(p_tenant text, p_entity text,
                                                  p_hops integer DEFAULT 1,
                                                  p_limit integer DEFAULT 100)
RETURNS TABLE (depth integer, from_name text, from_type text, relation text, to_name text,
               to_type text, strength real, memory_id uuid, valid_from timestamptz,
               valid_to timestamptz)
LANGUAGE plpgsql STABLE
AS $$
BEGIN
    IF p_hops IS NULL OR p_hops < 1 OR p_hops > 4 THEN
        RAISE EXCEPTION 'hops must be between 1 and 4, got %', p_hops USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_limit IS NULL OR p_limit < 1 OR p_limit > 10000 THEN
        RAISE EXCEPTION 'limit must be between 1 and 10000, got %', p_limit USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN QUERY
    WITH RECURSIVE live AS (
        SELECT r.* FROM memdb.entity_relations r
        JOIN memdb.memories m ON m.id = r.memory_id
        WHERE r.tenant = p_tenant AND r.valid_from <= now() AND (r.valid_to IS NULL OR r.valid_to > now())
          AND m.valid_to IS NULL AND (m.expires_at IS NULL OR m.expires_at > now())
    ), walk(entity_id, d) AS (
        SELECT e.id, 0 FROM memdb.entities e
        WHERE e.tenant = p_tenant
          AND (e.norm_name = memdb.entity_norm(p_entity) OR e.aliases @> ARRAY[memdb.entity_norm(p_entity)])
        UNION
        SELECT CASE WHEN l.from_id = w.entity_id THEN l.to_id ELSE l.from_id END, w.d + 1
        FROM walk w JOIN live l ON w.entity_id IN (l.from_id, l.to_id)
        WHERE w.d < p_hops
    ), near AS (
        SELECT w.entity_id, min(w.d) AS d FROM walk w GROUP BY w.entity_id
    )
    SELECT (least(a.d, b.d) + 1)::integer, fe.name, fe.type, l.type, te.name, te.type, l.strength,
           l.memory_id, l.valid_from, l.valid_to
    FROM live l
    JOIN near a ON a.entity_id = l.from_id
    JOIN near b ON b.entity_id = l.to_id
    JOIN memdb.entities fe ON fe.id = l.from_id
    JOIN memdb.entities te ON te.id = l.to_id
    WHERE least(a.d, b.d) < p_hops
    ORDER BY 1, l.strength DESC, fe.name, l.type, te.name
    LIMIT p_limit;
END
$$;

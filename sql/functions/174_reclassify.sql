-- memdb.reclassify(p_tenant text, p_moves jsonb) -> integer
-- Applies a classification backfill: p_moves is a JSON array of {"id", "category",
-- "tag_version"}; each current memory of the tenant gets that category and tag_version (a
-- changed category also moves a default URI and writes a history row, by trigger). Returns
-- how many rows changed. The moves are computed by memdb.write.classify (MemoryStore.reclassify).
CREATE OR REPLACE FUNCTION memdb.reclassify(p_tenant text, p_moves jsonb)
RETURNS integer
LANGUAGE sql
AS $$
    WITH done AS (
        UPDATE memdb.memories m
        SET category = x.category, tag_version = x.tag_version
        FROM jsonb_to_recordset(p_moves) AS x(id uuid, category text, tag_version integer)
        WHERE m.tenant = p_tenant AND m.id = x.id AND m.valid_to IS NULL
          AND (m.category, m.tag_version) IS DISTINCT FROM (x.category, x.tag_version)
        RETURNING 1
    )
    SELECT count(*)::integer FROM done
$$;

-- memdb.mark_used(p_tenant text, p_ids uuid[], p_subject text DEFAULT NULL) -> integer
-- Records that the caller used these memories (e.g. cited them in an answer): their use count
-- for p_subject (default: each memory's own subject) grows by one. Hotness reads these counts;
-- appearing in search results never changes them. Unknown ids and other tenants' ids are
-- ignored. Returns how many memories were marked.
CREATE OR REPLACE FUNCTION memdb.mark_used(p_tenant text, p_ids uuid[], p_subject text DEFAULT NULL)
RETURNS integer
LANGUAGE sql
AS $$
    WITH marked AS (
        INSERT INTO memdb.memory_usage AS u (memory_id, subject, tenant, use_count, last_used_at)
        SELECT m.id, coalesce(p_subject, m.subject), p_tenant, 1, now()
        FROM memdb.memories m
        WHERE m.tenant = p_tenant AND m.id = ANY (p_ids)
        ORDER BY m.id
        ON CONFLICT (tenant, memory_id, subject) DO UPDATE
            SET use_count = u.use_count + 1, last_used_at = excluded.last_used_at
        RETURNING 1
    )
    SELECT count(*)::integer FROM marked
$$;

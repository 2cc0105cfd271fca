-- memdb.forget_by_age(p_tenant text, p_days double precision DEFAULT 180,
--                     p_max_uses integer DEFAULT 0, p_limit integer DEFAULT 1000,
--                     p_dry_run boolean DEFAULT false) -> SETOF uuid
-- Time-based forgetting: deletes current, unexpired memories (never category 'system') that
-- are older than p_days AND rarely used: at most p_max_uses uses (memdb.mark_used counts of
-- every subject plus re-statements, memories.access_count) and none in the last p_days.
-- Oldest first, at most p_limit. p_tenant NULL: every tenant visible to the caller.
-- Returns the ids deleted; with p_dry_run the ids it would delete, changing nothing.
-- History reason: 'forget: older than <days> days, used at most <n> times'.
CREATE OR REPLACE FUNCTION memdb.forget_by_age(p_tenant text,
                                               p_days double precision DEFAULT 180,
                                               p_max_uses integer DEFAULT 0,
                                               p_limit integer DEFAULT 1000,
                                               p_dry_run boolean DEFAULT false)
RETURNS SETOF uuid
LANGUAGE plpgsql
AS $$
DECLARE
    v_ids uuid[];
    v_cutoff timestamptz;
BEGIN
    IF p_days IS NULL OR p_days < 0 OR p_max_uses IS NULL OR p_max_uses < 0 THEN
        RAISE EXCEPTION 'forget_by_age needs days >= 0 and max_uses >= 0'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_cutoff := now() - p_days * interval '1 day';
    SELECT coalesce(array_agg(c.id ORDER BY c.created_at, c.id), '{}') INTO v_ids
    FROM (SELECT m.id, m.created_at FROM memdb.memories m
          LEFT JOIN LATERAL (SELECT sum(u.use_count) AS uses, max(u.last_used_at) AS last_used
                             FROM memdb.memory_usage u
                                       WHERE u.tenant = m.tenant AND u.memory_id = m.id) u ON true
          WHERE (p_tenant IS NULL OR m.tenant = p_tenant)
            AND m.valid_to IS NULL AND m.category <> 'system'
            AND (m.expires_at IS NULL OR m.expires_at > now())
            AND m.created_at < v_cutoff
            AND coalesce(u.uses, 0) + m.access_count <= p_max_uses
            AND coalesce(greatest(u.last_used, m.last_accessed_at), '-infinity') < v_cutoff
          ORDER BY m.created_at, m.id
          LIMIT greatest(coalesce(p_limit, 1000), 0)) c;
    IF p_dry_run THEN
        RETURN QUERY SELECT unnest(v_ids);
    ELSE
        RETURN QUERY SELECT memdb.forget_ids(
            v_ids, format('forget: older than %s days, used at most %s times', p_days, p_max_uses));
    END IF;
END
$$;

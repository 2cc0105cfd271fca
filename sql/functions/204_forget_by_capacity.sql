-- memdb.forget_by_capacity(p_tenant text, p_max_per_session integer DEFAULT 100,
--                          p_half_life_days double precision DEFAULT 7,
--                          p_limit integer DEFAULT 1000, p_dry_run boolean DEFAULT false)
--   -> SETOF uuid
-- Capacity-based forgetting: keeps at most p_max_per_session current, unexpired working
-- memories per (tenant, session_id), by priority = importance * memdb.time_decay(age in days,
-- p_half_life_days) (ties: newer first), and deletes the rest, lowest priority first, at most
-- p_limit per call. Category 'system' is never deleted and does not count against the cap;
-- working memories without a session_id are not capped. p_tenant NULL: every tenant visible
-- to the caller. Returns the ids deleted; with p_dry_run the ids it would delete.
-- History reason: 'forget: over capacity (<n> working memories per session)'.
CREATE OR REPLACE FUNCTION memdb.forget_by_capacity(p_tenant text,
                                                    p_max_per_session integer DEFAULT 100,
                                                    p_half_life_days double precision DEFAULT 7,
                                                    p_limit integer DEFAULT 1000,
                                                    p_dry_run boolean DEFAULT false)
RETURNS SETOF uuid
LANGUAGE plpgsql
AS $$
DECLARE
    v_ids uuid[];
    v_now timestamptz := now();  -- a value, not a call: Citus pushes the lateral subquery down
BEGIN
    IF p_max_per_session IS NULL OR p_max_per_session < 0 THEN
        RAISE EXCEPTION 'max_per_session must be >= 0, got %', p_max_per_session
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT coalesce(array_agg(c.id ORDER BY c.priority, c.created_at, c.id), '{}') INTO v_ids
    FROM (SELECT r.id, r.priority, r.created_at
          FROM (SELECT m.id, m.created_at, p.priority,
                       row_number() OVER (PARTITION BY m.tenant, m.session_id
                                          ORDER BY p.priority DESC, m.created_at DESC, m.id) AS rn
                FROM memdb.memories m
                CROSS JOIN LATERAL (SELECT m.importance * memdb.time_decay(
                        extract(epoch FROM v_now - m.created_at) / 86400.0,
                        p_half_life_days) AS priority) p
                WHERE (p_tenant IS NULL OR m.tenant = p_tenant)
                  AND m.kind = 'working' AND m.session_id IS NOT NULL
                  AND m.valid_to IS NULL AND m.category <> 'system'
                  AND (m.expires_at IS NULL OR m.expires_at > now())) r
          WHERE r.rn > p_max_per_session
          ORDER BY r.priority, r.created_at, r.id
          LIMIT greatest(coalesce(p_limit, 1000), 0)) c;
    IF p_dry_run THEN
        RETURN QUERY SELECT unnest(v_ids);
    ELSE
        RETURN QUERY SELECT memdb.forget_ids(
            v_ids, format('forget: over capacity (%s working memories per session)', p_max_per_session));
    END IF;
END
$$;

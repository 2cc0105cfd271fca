-- memdb.forget_by_importance(p_tenant text, p_threshold real DEFAULT 0.1,
--                            p_limit integer DEFAULT 1000, p_dry_run boolean DEFAULT false)
--   -> SETOF uuid
-- Importance-based forgetting: deletes current, unexpired memories whose importance is below
-- p_threshold (least important, then oldest, first; at most p_limit), never category
-- 'system'. p_tenant NULL: every tenant visible to the caller (all, for the admin).
-- Returns the ids deleted; with p_dry_run the ids it would delete, changing nothing.
-- History reason: 'forget: importance below <threshold>'.
CREATE OR REPLACE FUNCTION memdb.forget_by_importance(p_tenant text,
                                                      p_threshold real DEFAULT 0.1,
                                                      p_limit integer DEFAULT 1000,
                                                      p_dry_run boolean DEFAULT false)
RETURNS SETOF uuid
LANGUAGE plpgsql
AS $$
DECLARE
    v_ids uuid[];
BEGIN
    IF p_threshold IS NULL OR p_threshold < 0 OR p_threshold > 1 THEN
        RAISE EXCEPTION 'importance threshold must be in [0, 1], got %', p_threshold
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT coalesce(array_agg(c.id ORDER BY c.importance, c.created_at, c.id), '{}') INTO v_ids
    FROM (SELECT m.id, m.importance, m.created_at FROM memdb.memories m
          WHERE (p_tenant IS NULL OR m.tenant = p_tenant)
            AND m.valid_to IS NULL AND m.category <> 'system'
            AND (m.expires_at IS NULL OR m.expires_at > now())
            AND m.importance < p_threshold
          ORDER BY m.importance, m.created_at, m.id
          LIMIT greatest(coalesce(p_limit, 1000), 0)) c;
    IF p_dry_run THEN
        RETURN QUERY SELECT unnest(v_ids);
    ELSE
        RETURN QUERY SELECT memdb.forget_ids(v_ids, format('forget: importance below %s', p_threshold));
    END IF;
END
$$;

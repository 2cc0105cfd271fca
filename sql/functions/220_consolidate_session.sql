-- memdb.consolidate_session(p_tenant text, p_session_id text, p_threshold real DEFAULT 0.6,
--                           p_subject text DEFAULT NULL, p_dry_run boolean DEFAULT false)
--   -> TABLE(id uuid, old_importance real, new_importance real)
-- Consolidation working -> episodic: the session's current, unexpired working memories (of
-- p_subject, or of every subject) with importance >= p_threshold become long-term: kind
-- 'episodic', importance * 1.1 capped at 1, and no expiry (a working memory's TTL would
-- otherwise still end it). One statement, so all of them move or none do; scope, session_id
-- and provenance stay (the session stays findable as where the memory came from).
-- Returns the moved memories (with p_dry_run: those it would move, nothing changed).
-- History reason: 'consolidate: session <id>'.
CREATE OR REPLACE FUNCTION memdb.consolidate_session(p_tenant text, p_session_id text,
                                                     p_threshold real DEFAULT 0.6,
                                                     p_subject text DEFAULT NULL,
                                                     p_dry_run boolean DEFAULT false)
RETURNS TABLE (id uuid, old_importance real, new_importance real)
LANGUAGE plpgsql
AS $$
DECLARE
    prev_reason text := current_setting('memdb.reason', true);
BEGIN
    IF p_tenant IS NULL OR p_session_id IS NULL THEN
        RAISE EXCEPTION 'consolidate_session needs a tenant and a session id'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_threshold IS NULL OR p_threshold < 0 OR p_threshold > 1 THEN
        RAISE EXCEPTION 'importance threshold must be in [0, 1], got %', p_threshold
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_dry_run THEN
        RETURN QUERY
        SELECT m.id, m.importance, least(1, m.importance * 1.1)::real
        FROM memdb.memories m
        WHERE m.tenant = p_tenant AND m.session_id = p_session_id
          AND (p_subject IS NULL OR m.subject = p_subject)
          AND m.kind = 'working' AND m.valid_to IS NULL
          AND (m.expires_at IS NULL OR m.expires_at > now())
          AND m.importance >= p_threshold
        ORDER BY m.created_at, m.id;
        RETURN;
    END IF;
    PERFORM memdb.set_local('memdb.reason', format('consolidate: session %s', p_session_id));
    RETURN QUERY
    WITH moved AS (
        UPDATE memdb.memories m
        SET kind = 'episodic', importance = least(1, m.importance * 1.1)::real, expires_at = NULL
        FROM (SELECT c.id, c.importance FROM memdb.memories c
              WHERE c.tenant = p_tenant AND c.session_id = p_session_id
                AND (p_subject IS NULL OR c.subject = p_subject)
                AND c.kind = 'working' AND c.valid_to IS NULL
                AND (c.expires_at IS NULL OR c.expires_at > now())
                AND c.importance >= p_threshold
              ORDER BY c.id
              FOR UPDATE) old
        WHERE m.tenant = p_tenant AND m.id = old.id
        RETURNING m.id, old.importance AS old_importance, m.importance AS new_importance, m.created_at
    )
    SELECT mv.id, mv.old_importance, mv.new_importance FROM moved mv ORDER BY mv.created_at, mv.id;
    PERFORM memdb.set_local('memdb.reason', coalesce(prev_reason, ''));
END
$$;

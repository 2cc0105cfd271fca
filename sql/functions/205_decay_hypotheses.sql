-- memdb.decay_hypotheses(p_tenant text, p_half_life_days double precision DEFAULT 7,
--                        p_floor real DEFAULT 0.2, p_min_step real DEFAULT 0.01,
--                        p_limit integer DEFAULT 1000, p_dry_run boolean DEFAULT false)
--   -> TABLE(id uuid, old_confidence real, new_confidence real, action text)
-- Confidence decay of unconfirmed hypotheses (current, unexpired memories with status
-- 'hypothesis'): confidence * memdb.time_decay(days since the row was last written
-- (updated_at), p_half_life_days). Writing the decayed value moves updated_at to now, so the
-- result does not depend on how often this runs (c * 0.5^(a/h) * 0.5^(b/h) = c * 0.5^((a+b)/h));
-- a change smaller than p_min_step is not written (no history row per run for a tiny change;
-- the time keeps counting). action 'forget': the decayed confidence is below p_floor and the
-- memory is deleted (never category 'system': it keeps decaying instead); 'decay': the
-- confidence is lowered. At most p_limit rows, longest unwritten first. p_tenant NULL: every
-- tenant visible to the caller. With p_dry_run: what it would do, nothing changed.
-- History reasons: 'decay: unconfirmed hypothesis (half-life <h> days)' and
-- 'forget: hypothesis confidence below <floor>'.
CREATE OR REPLACE FUNCTION memdb.decay_hypotheses(p_tenant text,
                                                  p_half_life_days double precision DEFAULT 7,
                                                  p_floor real DEFAULT 0.2,
                                                  p_min_step real DEFAULT 0.01,
                                                  p_limit integer DEFAULT 1000,
                                                  p_dry_run boolean DEFAULT false)
RETURNS TABLE (id uuid, old_confidence real, new_confidence real, action text)
LANGUAGE plpgsql
AS $$
DECLARE
    prev_reason text := current_setting('memdb.reason', true);
    v_ids uuid[];
    v_old real[];
    v_new real[];
    v_action text[];
    v_forget uuid[];
    v_decay uuid[];
    v_tenant text;
BEGIN
    IF p_half_life_days IS NULL OR p_half_life_days <= 0 OR p_floor IS NULL OR p_floor < 0
       OR p_floor > 1 OR p_min_step IS NULL OR p_min_step < 0 THEN
        RAISE EXCEPTION 'decay_hypotheses needs half_life_days > 0, floor in [0, 1], min_step >= 0'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT coalesce(array_agg(c.id ORDER BY c.updated_at, c.id), '{}'),
           coalesce(array_agg(c.confidence ORDER BY c.updated_at, c.id), '{}'),
           coalesce(array_agg(c.decayed ORDER BY c.updated_at, c.id), '{}'),
           coalesce(array_agg(CASE WHEN c.decayed < p_floor AND c.category <> 'system'
                                   THEN 'forget' ELSE 'decay' END ORDER BY c.updated_at, c.id), '{}')
      INTO v_ids, v_old, v_new, v_action
    FROM (SELECT m.id, m.confidence, m.category, m.updated_at, d.decayed
          FROM memdb.memories m
          CROSS JOIN LATERAL (SELECT (m.confidence * memdb.time_decay(
                  extract(epoch FROM now() - m.updated_at) / 86400.0, p_half_life_days))::real
                  AS decayed) d
          WHERE (p_tenant IS NULL OR m.tenant = p_tenant)
            AND m.status = 'hypothesis' AND m.valid_to IS NULL
            AND (m.expires_at IS NULL OR m.expires_at > now())
            -- a system hypothesis below the floor is only decayed, and only by a real step
            AND ((d.decayed < p_floor AND m.category <> 'system')
                 OR m.confidence - d.decayed >= p_min_step)
          ORDER BY m.updated_at, m.id
          LIMIT greatest(coalesce(p_limit, 1000), 0)) c;
    IF p_dry_run THEN
        RETURN QUERY SELECT * FROM unnest(v_ids, v_old, v_new, v_action);
        RETURN;
    END IF;
    SELECT array_agg(p.id) FILTER (WHERE p.action = 'forget'),
           array_agg(p.id) FILTER (WHERE p.action = 'decay')
      INTO v_forget, v_decay
      FROM unnest(v_ids, v_action) AS p(id, action);
    RETURN QUERY
    SELECT p.id, p.old_confidence, p.new_confidence, p.action
    FROM memdb.forget_ids(v_forget, format('forget: hypothesis confidence below %s', p_floor)) f(id)
    JOIN unnest(v_ids, v_old, v_new, v_action) AS p(id, old_confidence, new_confidence, action)
      ON p.id = f.id;
    IF v_decay IS NOT NULL THEN
        PERFORM memdb.set_local('memdb.reason',
                                format('decay: unconfirmed hypothesis (half-life %s days)', p_half_life_days));
        -- one tenant at a time: locks and updates by (tenant, id) (on Citus, one shard each)
        FOR v_tenant IN SELECT DISTINCT m.tenant FROM memdb.memories m
                        WHERE m.id = ANY (v_decay) ORDER BY 1 LOOP
            RETURN QUERY
            WITH plan AS (
                SELECT * FROM unnest(v_ids, v_old, v_new, v_action)
                    AS p(id, old_confidence, new_confidence, action)
                WHERE p.action = 'decay'
            ), locked AS (
                SELECT m.id FROM memdb.memories m
                WHERE m.tenant = v_tenant AND m.id = ANY (v_decay)
                ORDER BY m.id FOR UPDATE SKIP LOCKED
            ), changed AS (
                UPDATE memdb.memories m SET confidence = p.new_confidence
                FROM plan p, locked l
                WHERE m.tenant = v_tenant AND m.id = p.id AND l.id = p.id
                RETURNING m.id
            )
            SELECT p.id, p.old_confidence, p.new_confidence, p.action
            FROM changed c JOIN plan p ON p.id = c.id;
        END LOOP;
        PERFORM memdb.set_local('memdb.reason', coalesce(prev_reason, ''));
    END IF;
END
$$;

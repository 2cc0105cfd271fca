-- memdb.run_maintenance(p_tenant text DEFAULT NULL, p_options jsonb DEFAULT '{}',
--                       p_dry_run boolean DEFAULT false) -> jsonb
-- One scheduled maintenance pass, safe for pg_cron:
--   SELECT cron.schedule('memdb-maintenance', '*/15 * * * *', 'SELECT memdb.run_maintenance()');
-- Steps, in order (each bounded by batch_limit rows; "more": true when any step hit it, so
-- the next call continues): purge_expired (memdb.purge_expired_batch), forget_importance
-- (memdb.forget_by_importance), forget_age (memdb.forget_by_age), forget_capacity
-- (memdb.forget_by_capacity), hypotheses (memdb.decay_hypotheses: decayed and forgotten).
-- Category 'system' is never forgotten. p_tenant NULL: every tenant, for the admin only (e.g.
-- from pg_cron): a caller that row-level security confines (memdb_app, or any login that is not
-- a superuser, BYPASSRLS or a member of the owner of memdb.memories: the test of memdb.confine)
-- gets insufficient_privilege (42501) and nothing changes. Such a caller may maintain its own
-- tenant (p_tenant = memdb.tenant; row-level security confines every step to it).
-- Safety: two runs for the same tenant (or two all-tenant runs) never overlap: the second
-- gets pg_try_advisory_xact_lock = false and returns {"skipped": true} at once. Row locks are
-- taken with SKIP LOCKED and lock_timeout is lowered (lock_timeout_ms, default 2000) for the
-- run, so it never waits long behind writers; a step that still times out is reported as
-- {"error": "lock timeout"} and the others run. Idempotent: a second run finds nothing more to
-- do (hypothesis decay is computed from the time since each row was last written).
-- Options (p_options, every key optional): steps (array of step names), batch_limit (1000),
-- importance_threshold (0.1), age_days (180), age_max_uses (0), capacity_per_session (100),
-- capacity_half_life_days (7), hypothesis_half_life_days (7), hypothesis_floor (0.2),
-- hypothesis_min_step (0.01), lock_timeout_ms (2000).
-- p_dry_run: the whole pass runs inside a subtransaction that is rolled back, so the counts
-- are exactly what a real run would do now, and nothing changes.
-- Returns {"tenant", "dry_run", "skipped", "steps": {step: count | {"error": ...}}, "more", "ms"}
-- with hypotheses as {"decayed": n, "forgotten": n}.
CREATE OR REPLACE FUNCTION memdb.run_maintenance(p_tenant text DEFAULT NULL,
                                                 p_options jsonb DEFAULT '{}',
                                                 p_dry_run boolean DEFAULT false)
RETURNS jsonb
LANGUAGE plpgsql
AS $$
DECLARE
    o jsonb := jsonb_build_object(
        'steps', jsonb_build_array('purge_expired', 'forget_importance', 'forget_age',
                                   'forget_capacity', 'hypotheses'),
        'batch_limit', 1000, 'importance_threshold', 0.1, 'age_days', 180, 'age_max_uses', 0,
        'capacity_per_session', 100, 'capacity_half_life_days', 7,
        'hypothesis_half_life_days', 7, 'hypothesis_floor', 0.2, 'hypothesis_min_step', 0.01,
        'lock_timeout_ms', 2000) || coalesce(p_options, '{}'::jsonb);
    v_known text[] := ARRAY['steps', 'batch_limit', 'importance_threshold', 'age_days',
                            'age_max_uses', 'capacity_per_session', 'capacity_half_life_days',
                            'hypothesis_half_life_days', 'hypothesis_floor',
                            'hypothesis_min_step', 'lock_timeout_ms'];
    v_steps text[];
    v_limit integer;
    v_result jsonb := '{}'::jsonb;
    v_more boolean := false;
    v_started timestamptz := clock_timestamp();
    v_prev_timeout text := current_setting('lock_timeout');
    v_step text;
    v_role name := CASE WHEN current_setting('role') = 'none' THEN session_user
                        ELSE current_setting('role')::name END;
    n bigint;
    n2 bigint;
BEGIN
    IF p_tenant IS NULL AND NOT coalesce((
            SELECT r.rolsuper OR r.rolbypassrls OR pg_has_role(v_role, c.relowner, 'USAGE')
              FROM pg_roles r, pg_class c
             WHERE r.rolname = v_role AND c.oid = 'memdb.memories'::regclass), false) THEN
        RAISE EXCEPTION 'run_maintenance over every tenant (p_tenant NULL) is for the admin login; '
                        'role % is confined by row-level security: pass its own tenant', v_role
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF jsonb_typeof(o) <> 'object' OR EXISTS (SELECT 1 FROM jsonb_object_keys(o) k WHERE k <> ALL (v_known)) THEN
        RAISE EXCEPTION 'unknown run_maintenance option(s); known: %', array_to_string(v_known, ', ')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_steps := memdb.jtext_array(o -> 'steps');
    IF EXISTS (SELECT 1 FROM unnest(v_steps) s
               WHERE s <> ALL (ARRAY['purge_expired', 'forget_importance', 'forget_age',
                                     'forget_capacity', 'hypotheses'])) THEN
        RAISE EXCEPTION 'unknown maintenance step in %', o -> 'steps'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_limit := (o ->> 'batch_limit')::integer;
    IF v_limit IS NULL OR v_limit < 1 THEN
        RAISE EXCEPTION 'batch_limit must be a positive integer' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF NOT pg_try_advisory_xact_lock(hashtextextended('memdb.run_maintenance:' || coalesce(p_tenant, '*'), 0)) THEN
        RETURN jsonb_build_object('tenant', p_tenant, 'dry_run', p_dry_run, 'skipped', true,
                                  'reason', 'another run_maintenance is in progress',
                                  'steps', '{}'::jsonb, 'more', false);
    END IF;
    PERFORM set_config('lock_timeout', ((o ->> 'lock_timeout_ms')::integer)::text, true);
    BEGIN
        FOREACH v_step IN ARRAY v_steps LOOP
            BEGIN
                CASE v_step
                WHEN 'purge_expired' THEN
                    SELECT count(*) INTO n FROM memdb.purge_expired_batch(p_tenant, v_limit);
                WHEN 'forget_importance' THEN
                    SELECT count(*) INTO n FROM memdb.forget_by_importance(
                        p_tenant, (o ->> 'importance_threshold')::real, v_limit);
                WHEN 'forget_age' THEN
                    SELECT count(*) INTO n FROM memdb.forget_by_age(
                        p_tenant, (o ->> 'age_days')::double precision,
                        (o ->> 'age_max_uses')::integer, v_limit);
                WHEN 'forget_capacity' THEN
                    SELECT count(*) INTO n FROM memdb.forget_by_capacity(
                        p_tenant, (o ->> 'capacity_per_session')::integer,
                        (o ->> 'capacity_half_life_days')::double precision, v_limit);
                WHEN 'hypotheses' THEN
                    SELECT count(*) FILTER (WHERE h.action = 'decay'),
                           count(*) FILTER (WHERE h.action = 'forget')
                      INTO n, n2
                      FROM memdb.decay_hypotheses(
                          p_tenant, (o ->> 'hypothesis_half_life_days')::double precision,
                          (o ->> 'hypothesis_floor')::real, (o ->> 'hypothesis_min_step')::real,
                          v_limit) h;
                END CASE;
                IF v_step = 'hypotheses' THEN
                    v_result := v_result || jsonb_build_object(v_step,
                        jsonb_build_object('decayed', n, 'forgotten', n2));
                    v_more := v_more OR n + n2 >= v_limit;
                ELSE
                    v_result := v_result || jsonb_build_object(v_step, n);
                    v_more := v_more OR n >= v_limit;
                END IF;
            EXCEPTION WHEN lock_not_available THEN
                v_result := v_result || jsonb_build_object(v_step, jsonb_build_object('error', 'lock timeout'));
                v_more := true;
            END;
        END LOOP;
        IF p_dry_run THEN
            RAISE EXCEPTION 'dry run' USING ERRCODE = 'MD900';
        END IF;
    EXCEPTION WHEN SQLSTATE 'MD900' THEN
        NULL;  -- the dry run's changes are rolled back; v_result keeps what they were
    END;
    PERFORM set_config('lock_timeout', v_prev_timeout, true);
    RETURN jsonb_build_object('tenant', p_tenant, 'dry_run', p_dry_run, 'skipped', false,
                              'steps', v_result, 'more', v_more,
                              'ms', round((extract(epoch FROM clock_timestamp() - v_started) * 1000)::numeric, 1));
END
$$;

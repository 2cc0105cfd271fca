-- memdb.guard_tenant_functions(p_guard boolean) -> integer
-- Puts a NULL check in front of every tenant function: each memdb function with an argument
-- p_tenant, except confine (its NULL tenant means "no tenant") and the maintenance functions
-- whose NULL tenant means every tenant. A NULL tenant is then one error everywhere, on one
-- server and on a Citus coordinator alike, instead of whatever the body made of it (no rows,
-- a check violation, a Citus internal error). The function a caller names is the guard, and
-- the body is another function it calls:
--   memdb.f(...)              the guard: plpgsql, the same arguments, defaults and result;
--                             raises null_value_not_allowed (22004), naming the function,
--                             when p_tenant is NULL, else returns the body's result;
--   memdb.f__unguarded(...)   the body from sql/functions, renamed.
-- (On Citus no memdb function is distributed by an argument: sql/queries/citus.sql says why.)
-- memdb.core.migrations.apply_objects calls it with false before re-applying sql/functions (the
-- bodies get their own names back, so the files replace them), then with true. Returns how
-- many functions it wrapped (true) or unwrapped (false).
-- Example: SELECT memdb.guard_tenant_functions(true);
CREATE OR REPLACE FUNCTION memdb.guard_tenant_functions(p_guard boolean)
RETURNS integer
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    f record;
    n integer := 0;
    v_call text;
    v_body text;
BEGIN
    IF NOT p_guard THEN
        FOR f IN SELECT p.oid::regprocedure AS body,
                        left(p.proname, -length('__unguarded')) AS name,
                        pg_get_function_identity_arguments(p.oid) AS args
                 FROM pg_proc p
                 WHERE p.pronamespace = 'memdb'::regnamespace
                   AND p.proname LIKE '%\_\_unguarded' LOOP
            EXECUTE format('DROP FUNCTION IF EXISTS memdb.%I(%s)', f.name, f.args);
            EXECUTE format('ALTER FUNCTION %s RENAME TO %I', f.body, f.name);
            n := n + 1;
        END LOOP;
        RETURN n;
    END IF;
    FOR f IN SELECT p.oid, p.oid::regprocedure AS body, p.proname AS name, p.proretset,
                    p.provolatile, p.proargnames, p.proargmodes, p.pronargs
             FROM pg_proc p
             WHERE p.pronamespace = 'memdb'::regnamespace
               AND p.prokind = 'f'
               AND 'p_tenant' = ANY (p.proargnames)
               AND p.proname NOT LIKE '%\_\_unguarded'
               AND p.proname NOT IN ('confine', 'purge_expired', 'purge_expired_batch',
                                     'retokenize', 'forget_by_importance', 'forget_by_age',
                                     'forget_by_capacity', 'decay_hypotheses',
                                     'run_maintenance')
               AND NOT EXISTS (SELECT 1 FROM pg_proc q
                               WHERE q.pronamespace = p.pronamespace
                                 AND q.proname = p.proname || '__unguarded') LOOP
        -- the input arguments by name, in order (no function here has VARIADIC)
        SELECT string_agg(quote_ident(a.name), ', ' ORDER BY a.i) INTO v_call
        FROM unnest(f.proargnames, coalesce(f.proargmodes, array_fill('i'::"char",
                                                                       ARRAY[f.pronargs])))
             WITH ORDINALITY AS a(name, mode, i)
        WHERE a.mode IN ('i', 'b');
        v_call := format('memdb.%I(%s)', f.name || '__unguarded', v_call);
        v_body := format($b$
BEGIN
    IF p_tenant IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'null_value_not_allowed',
            MESSAGE = 'memdb.%s: p_tenant must not be NULL',
            HINT = 'Pass the tenant the call is for.';
    END IF;
    %s
END
$b$, f.name,
            CASE WHEN f.proretset THEN format('RETURN QUERY SELECT * FROM %s;', v_call)
                 ELSE format('RETURN %s;', v_call) END);
        EXECUTE format('ALTER FUNCTION %s RENAME TO %I', f.body, f.name || '__unguarded');
        EXECUTE format('CREATE FUNCTION memdb.%I(%s) RETURNS %s LANGUAGE plpgsql %s AS %L',
                       f.name, pg_get_function_arguments(f.oid), pg_get_function_result(f.oid),
                       CASE f.provolatile WHEN 'i' THEN 'IMMUTABLE' WHEN 's' THEN 'STABLE'
                                          ELSE 'VOLATILE' END,
                       v_body);
        n := n + 1;
    END LOOP;
    RETURN n;
END
$$;

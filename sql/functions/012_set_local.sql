-- memdb.set_local(p_name text, p_value text) -> text
-- SET LOCAL p_name = p_value (a memdb.* setting) and return the value: set_config(p_name,
-- p_value, true) by another road, the one Citus passes on to the workers a transaction uses
-- (with citus.propagate_set_commands = 'local', as memdb's DAL sets it), where the history
-- trigger reads memdb.reason. On plain PostgreSQL the two are the same.
CREATE OR REPLACE FUNCTION memdb.set_local(p_name text, p_value text)
RETURNS text
LANGUAGE plpgsql
AS $$
BEGIN
    IF p_name !~ '^memdb\.[a-z_]+$' THEN
        RAISE EXCEPTION 'memdb.set_local sets memdb.* settings only, not "%"', p_name
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    EXECUTE format('SET LOCAL %s = %L', p_name, coalesce(p_value, ''));
    RETURN p_value;
END
$$;

-- memdb.jtext_array(p_value jsonb) -> text[]
-- A JSON string or array of strings as text[] ("a" -> {a}; ["a","b"] -> {a,b}).
-- Lets filters accept one value or a list; immutable, so it folds to a constant at plan time.
CREATE OR REPLACE FUNCTION memdb.jtext_array(p_value jsonb)
RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT CASE jsonb_typeof(p_value)
               WHEN 'array' THEN ARRAY(SELECT jsonb_array_elements_text(p_value))
               ELSE ARRAY[p_value #>> '{}']
           END
$$;

-- memdb.uri_for(p_subject text, p_category text, p_id uuid) -> text
-- The default address of a memory: mem://{subject}/{category}/{id}, with '%', '/' and white
-- space in the subject percent-encoded so the subject is always exactly one path segment.
CREATE OR REPLACE FUNCTION memdb.uri_for(p_subject text, p_category text, p_id uuid)
RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT 'mem://'
        || replace(replace(replace(replace(p_subject, '%', '%25'), '/', '%2F'), ' ', '%20'), chr(9), '%09')
        || '/' || p_category || '/' || p_id::text
$$;

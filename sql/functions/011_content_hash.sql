-- memdb.content_hash(p_text text) -> bytea
-- sha256 of memdb.normalize_text(p_text): the dedup key of a memory within its scope.
CREATE OR REPLACE FUNCTION memdb.content_hash(p_text text)
RETURNS bytea
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT sha256(convert_to(memdb.normalize_text(p_text), 'UTF8'))
$$;

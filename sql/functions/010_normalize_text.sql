-- memdb.normalize_text(p_text text) -> text
-- The normal form used for dedup: Unicode NFKC, lower case, runs of white space folded to
-- one space, trimmed. Two texts with the same normal form are the same memory.
CREATE OR REPLACE FUNCTION memdb.normalize_text(p_text text)
RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT btrim(regexp_replace(lower(normalize(p_text, NFKC)), '\s+', ' ', 'g'))
$$;

-- memdb.like_prefixes(p_prefixes text[]) -> text[]
-- LIKE patterns matching the strings that start with each prefix: the prefix with LIKE's
-- escape character (backslash) and wildcards (% and _) escaped, then '%'. A prefix is data,
-- never a pattern: 'mem://a_b/' matches 'mem://a_b/...' but not 'mem://axb/...'.
-- Immutable, so with a constant filter it folds to a constant at plan time.
CREATE OR REPLACE FUNCTION memdb.like_prefixes(p_prefixes text[])
RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT ARRAY(SELECT replace(replace(replace(p, '\', '\\'), '%', '\%'), '_', '\_') || '%'
                 FROM unnest(p_prefixes) AS p)
$$;

-- memdb.doc_length(p_tsv tsvector) -> integer
-- The number of tokens a tsvector was built from (sum of each lexeme's positions): the
-- document length BM25 normalizes by.
CREATE OR REPLACE FUNCTION memdb.doc_length(p_tsv tsvector)
RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT coalesce(sum(coalesce(array_length(u.positions, 1), 1)), 0)::integer FROM unnest(p_tsv) u
$$;

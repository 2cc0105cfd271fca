-- memdb.query_terms(p_query text) -> text[]
-- The distinct keyword terms of a query, by the same analyzer as stored memories
-- (memdb.tokenize), sorted. Operators and quotes in the query are plain text: '&', '|', '!',
-- ':*' and SQL syntax never reach a tsquery parser. Only stop words or punctuation -> '{}'.
CREATE OR REPLACE FUNCTION memdb.query_terms(p_query text)
RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT coalesce(array_agg(t ORDER BY t), '{}') FROM unnest(tsvector_to_array(memdb.tokenize(p_query))) AS t
$$;

-- memdb.terms_tsquery(p_terms text[]) -> tsquery
-- An OR query of already-analyzed terms, each quoted as a literal lexeme (so terms are never
-- parsed as tsquery syntax). NULL for no terms.
CREATE OR REPLACE FUNCTION memdb.terms_tsquery(p_terms text[])
RETURNS tsquery
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT CASE WHEN cardinality(p_terms) = 0 THEN NULL ELSE
        array_to_string(ARRAY(
            SELECT '''' || replace(replace(t, '\', '\\'), '''', '''''') || ''''
            FROM unnest(p_terms) AS t), ' | ')::tsquery
    END
$$;

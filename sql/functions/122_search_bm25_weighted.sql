-- memdb.search_bm25_weighted(p_tenant text, p_terms text[], p_weights double precision[],
--                            p_k integer DEFAULT 10, p_filter jsonb DEFAULT '{}',
--                            p_k1 double precision DEFAULT 1.2, p_b double precision DEFAULT 0.75)
--   -> TABLE(id uuid, score double precision)
-- Okapi BM25 (as memdb.search_bm25) for a weighted query of already-analyzed terms: term
-- p_terms[i] counts p_weights[i] times (weights > 0; a NULL or non-positive weight drops the
-- term):  score(d) = sum over t in d of weight(t) * idf(t) * tf(t,d) * (k1 + 1) /
--                    (tf(t,d) + k1 * (1 - b + b * |d| / avgdl)).
-- The second pass of pseudo-relevance feedback (memdb.prf_terms makes the query). Candidates
-- come from the GIN index on tsv, matched on every term with a scope filter
-- (subject/agent/project/session); without one, on the rarest terms whose document
-- frequencies add up to at most 60 * k (at least one), as memdb.search_bm25 does; each candidate
-- is scored by memdb.bm25_score_sql, as there.
-- SECURITY DEFINER for the GIN index, confined by memdb.confine() like memdb.search_bm25.
-- Example: SELECT * FROM memdb.search_bm25_weighted('default', ARRAY['react', '开发'], ARRAY[1, 0.5], 5);
CREATE OR REPLACE FUNCTION memdb.search_bm25_weighted(p_tenant text, p_terms text[],
                                                      p_weights double precision[],
                                                      p_k integer DEFAULT 10,
                                                      p_filter jsonb DEFAULT '{}',
                                                      p_k1 double precision DEFAULT 1.2,
                                                      p_b double precision DEFAULT 0.75)
RETURNS TABLE (id uuid, score double precision)
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
ROWS 50
AS $$
DECLARE
    v_n double precision;
    v_avgdl double precision;
    v_terms text[];
    v_w double precision[];
    v_cand text[];
    v_as_of boolean := coalesce(p_filter ? 'as_of', false);
    v_budget double precision;
BEGIN
    IF p_k IS NULL OR p_k < 1 OR p_k > 10000 THEN
        RAISE EXCEPTION 'k must be between 1 and 10000, got %', p_k USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_k1 IS NULL OR p_k1 < 0 OR p_b IS NULL OR p_b < 0 OR p_b > 1 THEN
        RAISE EXCEPTION 'BM25 needs k1 >= 0 and b in [0, 1]' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF cardinality(p_terms) IS DISTINCT FROM cardinality(p_weights) THEN
        RAISE EXCEPTION 'one weight per term: % terms, % weights', cardinality(p_terms), cardinality(p_weights)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM memdb.check_filter(p_filter);
    p_filter := memdb.confine(p_tenant, p_filter);
    IF p_filter IS NULL OR p_terms IS NULL THEN
        RETURN;
    END IF;
    v_budget := CASE WHEN p_filter ?| ARRAY['subject', 'agent', 'project_id', 'session_id']
                     THEN 'Infinity' ELSE 60.0 * p_k END;
    SELECT s.doc_count, s.total_len::double precision / greatest(s.doc_count, 1)
      INTO v_n, v_avgdl
      FROM memdb.bm25_stats s WHERE s.tenant = p_tenant;
    IF (v_n IS NULL OR v_n <= 0) AND NOT v_as_of THEN
        RETURN;
    END IF;
    v_n := greatest(coalesce(v_n, 0), 1);
    v_avgdl := coalesce(nullif(v_avgdl, 0), 1);
    SELECT array_agg(q.term ORDER BY q.term),
           array_agg(q.w * ln(1 + (v_n - q.df + 0.5) / (q.df + 0.5)) ORDER BY q.term),
           array_agg(q.term ORDER BY q.term) FILTER (WHERE q.cum_df <= v_budget OR q.rarity = 1)
      INTO v_terms, v_w, v_cand
      FROM (SELECT d.term, d.w, d.df,
                   sum(d.df) OVER (ORDER BY d.df, d.term) AS cum_df,
                   row_number() OVER (ORDER BY d.df, d.term) AS rarity
              FROM (SELECT u.term, max(u.w) AS w, max(greatest(coalesce(t.df, 0), 0))::double precision AS df
                      FROM unnest(p_terms, p_weights) AS u(term, w)
                      LEFT JOIN memdb.bm25_terms t ON t.tenant = p_tenant AND t.term = u.term
                     WHERE u.term IS NOT NULL AND u.w > 0
                     GROUP BY u.term) d
             WHERE d.df > 0 OR v_as_of) q;  -- unheld terms dropped before the rarity ranking
    IF v_terms IS NULL THEN
        RETURN;
    END IF;
    RETURN QUERY EXECUTE format($q$
        SELECT m.id, %s AS score
        FROM memdb.memories m
        WHERE m.tenant = $1 AND m.tsv @@ $3 AND memdb.matches(m, $2)
        ORDER BY score DESC, m.id
        LIMIT $9
    $q$, memdb.bm25_score_sql())
    USING p_tenant, coalesce(p_filter, '{}'::jsonb), memdb.terms_tsquery(coalesce(v_cand, v_terms)),
          v_terms, v_w, p_k1, p_b, v_avgdl, p_k;
END
$$;

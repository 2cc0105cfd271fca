-- memdb.prf_terms(p_tenant text, p_query text, p_filter jsonb DEFAULT '{}', p_options jsonb DEFAULT '{}')
--   -> TABLE(term text, weight double precision, original boolean)
-- Pseudo-relevance feedback (search option "prf", RM3-style): the weighted query that
-- memdb.search_hybrid's BM25 route runs instead of p_query when "prf" is set.
--   1. first pass: the top N = prf memories of memdb.search_bm25(p_query) inside p_filter
--      (with the options' k1, b, candidate_df_ratio);
--   2. relevance model: P(t|R) = sum over those memories d of s(d) * tf(t,d) / |d|, s(d) the
--      first-pass score normalized to sum 1, tf and |d| from the stored tsvector (memdb.tokenize:
--      English stems and CJK unigrams + bigrams alike; the search_context counts);
--   3. the M = prf_terms (default 10) terms not in the query with the highest P(t|R) * idf(t)
--      (idf as BM25's, so terms every memory holds are not picked); P renormalized over them
--      and the query's own terms;
--   4. interpolation with the original query, prf_weight = alpha (default 0.5):
--      weight(t) = |Q| * (alpha * [t in Q] / |Q| + (1 - alpha) * P(t|R)), Q = memdb.query_terms;
--      scaled by |Q| so an original term weighs 1 at alpha = 1 (then the second pass is plain BM25).
-- No rows when the query has no keyword terms; only the original terms when the first pass
-- finds nothing. original: whether the term is one of the query's.
-- SECURITY DEFINER (reads the BM25 statistics); the feedback memories come from
-- memdb.search_bm25, which applies memdb.confine().
-- Example: SELECT * FROM memdb.prf_terms('default', 'Caroline LGBTQ support group', '{"subject": "conv-26"}', '{"prf": 10}');
CREATE OR REPLACE FUNCTION memdb.prf_terms(p_tenant text, p_query text, p_filter jsonb DEFAULT '{}',
                                           p_options jsonb DEFAULT '{}')
RETURNS TABLE (term text, weight double precision, original boolean)
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
ROWS 20
AS $$
    WITH o AS (
        -- jsonb casts: a wrong type raises invalid_parameter_value as the check does
        SELECT coalesce((p_options -> 'prf')::integer, 10) AS n_docs,
               coalesce((p_options -> 'prf_terms')::integer, 10) AS n_terms,
               coalesce((p_options -> 'prf_weight')::double precision, 0.5) AS alpha
        WHERE memdb.check_search_options(p_options)
    ), q AS (
        SELECT u.term FROM unnest(memdb.query_terms(p_query)) AS u(term)
    ), fb AS (
        SELECT f.id, f.score / nullif(sum(f.score) OVER (), 0) AS s
        FROM o, memdb.search_bm25(p_tenant, p_query, greatest(o.n_docs, 1), p_filter,
                                  coalesce((p_options ->> 'k1')::double precision, 1.2),
                                  coalesce((p_options ->> 'b')::double precision, 0.75),
                                  coalesce((p_options ->> 'candidate_df_ratio')::double precision, 0.3)) f
        WHERE o.n_docs > 0
    ), rm AS (
        SELECT u.lexeme AS term,
               sum(fb.s * coalesce(array_length(u.positions, 1), 1) / greatest(m.doc_len, 1)) AS p
        FROM fb
        JOIN memdb.memories m ON m.tenant = p_tenant AND m.id = fb.id
        CROSS JOIN LATERAL unnest(m.tsv) AS u
        WHERE fb.s > 0
        GROUP BY u.lexeme
    ), picked AS (
        (SELECT rm.term, rm.p
         FROM rm
         LEFT JOIN memdb.bm25_terms t ON t.tenant = p_tenant AND t.term = rm.term
         CROSS JOIN (SELECT greatest(s.doc_count, 1)::double precision AS n
                     FROM memdb.bm25_stats s WHERE s.tenant = p_tenant) st
         WHERE rm.term NOT IN (SELECT q.term FROM q)
         ORDER BY rm.p * ln(1 + (st.n - coalesce(t.df, 0) + 0.5) / (coalesce(t.df, 0) + 0.5)) DESC, rm.term
         LIMIT (SELECT o.n_terms FROM o))
        UNION ALL
        SELECT rm.term, rm.p FROM rm WHERE rm.term IN (SELECT q.term FROM q)
    ), model AS (
        SELECT picked.term, picked.p / sum(picked.p) OVER () AS p FROM picked
    ), nq AS (
        SELECT count(*)::double precision AS n FROM q
    )
    SELECT coalesce(q.term, model.term),
           nq.n * (o.alpha * CASE WHEN q.term IS NULL THEN 0 ELSE 1 / nq.n END
                   + (1 - o.alpha) * coalesce(model.p, 0)),
           q.term IS NOT NULL
    FROM q FULL JOIN model ON model.term = q.term
    CROSS JOIN nq CROSS JOIN o
    WHERE nq.n > 0
    ORDER BY 2 DESC, 1
$$;

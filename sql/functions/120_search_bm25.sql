-- memdb.search_bm25(p_tenant text, p_query text, p_k integer DEFAULT 10, p_filter jsonb DEFAULT '{}',
--                   p_k1 double precision DEFAULT 1.2, p_b double precision DEFAULT 0.75,
--                   p_candidate_df_ratio double precision DEFAULT 0.3)
--   -> TABLE(id uuid, score double precision)
-- Okapi BM25 over the tenant's current memories passing p_filter (memdb.check_filter):
--   score(d) = sum over query terms t in d of
--              idf(t) * tf(t,d) * (k1 + 1) / (tf(t,d) + k1 * (1 - b + b * |d| / avgdl))
--   idf(t)   = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
-- N, avgdl and df come from memdb.bm25_stats / memdb.bm25_terms (kept by triggers), |d| from
-- memories.doc_len (kept by the memories_before_write trigger), tf from the stored tsvector (the
-- query's terms only: setweight marks them A and ts_filter keeps them; a stored tsvector carries
-- no weights, memdb.tokenize's positions are all D); a candidate holding each query term once
-- is scored from its lexemes alone, with tf 1 (memdb.bm25_score_sql, the expression the
-- one-shot statement uses; the two static statements for one subject spell it with their
-- variables). Candidates come from the GIN index on tsv,
-- matched on the query's rarer terms (df <= p_candidate_df_ratio * N; all terms if none is that
-- rare, or when the tenant has under 1,000 memories; 1 disables the pruning); every query term
-- present in a candidate counts in its score. Without a subject/agent/project/session filter
-- the candidate terms are further limited, rarest first, to those whose document frequencies
-- add up to at most 60 * k (at least the rarest term that some memory holds: a query word no
-- memory holds is no candidate and takes no place): tenant-wide searches stay fast, at the
-- price of missing documents that hold only common query terms (top-10 overlap with the
-- unpruned ranking 0.98 at 100,000 memories, 0.75 at 1,000,000: benchmarks/search_ab.py
-- --pruning). Scoped searches stay exact; a
-- subject-scoped one whose candidate terms are held by more than 2,000 documents tenant-wide
-- tests the subject's rows (scope index) instead of reading those matches from the GIN index.
-- A query of only stop words or punctuation returns no rows.
-- SECURITY DEFINER, so the GIN index serves tenant-wide searches (row-level security would rule
-- it out); the caller's tenant and subject isolation is applied by memdb.confine().
-- With p_filter.as_of the statistics are still today's; a query term no current memory holds
-- (df 0 today, but in memories valid then) counts as the rarest term instead of being dropped.
CREATE OR REPLACE FUNCTION memdb.search_bm25(p_tenant text, p_query text, p_k integer DEFAULT 10,
                                             p_filter jsonb DEFAULT '{}',
                                             p_k1 double precision DEFAULT 1.2,
                                             p_b double precision DEFAULT 0.75,
                                             p_candidate_df_ratio double precision DEFAULT 0.3)
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
    v_idf double precision[];
    v_cand text[];
    v_as_of boolean := coalesce(p_filter ? 'as_of', false);
    -- candidate budget: without a narrowing scope filter, candidates come from the rarest terms
    -- whose document frequencies add up to at most 60 * k (3000 for search_hybrid's depth 50)
    v_budget double precision;
    v_cand_df double precision;  -- how many documents hold a candidate term (tenant-wide)
    v_tsq tsquery;
    v_subject text;  -- a filter of one subject only: the subject (a static statement)
BEGIN
    IF p_k IS NULL OR p_k < 1 OR p_k > 10000 THEN
        RAISE EXCEPTION 'k must be between 1 and 10000, got %', p_k USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_k1 IS NULL OR p_k1 < 0 OR p_b IS NULL OR p_b < 0 OR p_b > 1 THEN
        RAISE EXCEPTION 'BM25 needs k1 >= 0 and b in [0, 1]' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM memdb.check_filter(p_filter);
    p_filter := memdb.confine(p_tenant, p_filter);
    IF p_filter IS NULL THEN
        RETURN;
    END IF;
    v_budget := CASE WHEN p_filter ?| ARRAY['subject', 'agent', 'project_id', 'session_id']
                     THEN 'Infinity' ELSE 60.0 * p_k END;
    SELECT s.doc_count, s.total_len::double precision / greatest(s.doc_count, 1)
      INTO v_n, v_avgdl
      FROM memdb.bm25_stats s WHERE s.tenant = p_tenant;
    IF p_query IS NULL OR ((v_n IS NULL OR v_n <= 0) AND NOT v_as_of) THEN
        RETURN;
    END IF;
    v_n := greatest(coalesce(v_n, 0), 1);
    v_avgdl := coalesce(nullif(v_avgdl, 0), 1);
    SELECT array_agg(q.term ORDER BY q.term),
           array_agg(ln(1 + (v_n - q.df + 0.5) / (q.df + 0.5)) ORDER BY q.term),
           array_agg(q.term ORDER BY q.term) FILTER (WHERE c.cand),
           sum(q.df) FILTER (WHERE c.cand),
           -- memdb.terms_tsquery(coalesce(v_cand, v_terms)), computed here: an OR query of the
           -- quoted lexemes
           coalesce(string_agg(c.lexeme, ' | ' ORDER BY q.term) FILTER (WHERE c.cand),
                    string_agg(c.lexeme, ' | ' ORDER BY q.term))::tsquery
      INTO v_terms, v_idf, v_cand, v_cand_df, v_tsq
      FROM (SELECT d.term, d.df,
                   sum(d.df) OVER (ORDER BY d.df, d.term) AS cum_df,
                   row_number() OVER (ORDER BY d.df, d.term) AS rarity
              FROM (SELECT u.term, greatest(coalesce(t.df, 0), 0)::double precision AS df
                      -- memdb.query_terms(p_query) (the aggregates above sort the terms)
                      FROM unnest(tsvector_to_array(memdb.tokenize(p_query))) AS u(term)
                      LEFT JOIN memdb.bm25_terms t ON t.tenant = p_tenant AND t.term = u.term) d
             -- a term no current memory holds is dropped before the terms are ranked by rarity:
             -- it must not take the rarest place (rarity 1), which the budget always admits
             WHERE d.df > 0 OR v_as_of) q
      CROSS JOIN LATERAL (
          SELECT v_n < 1000 OR coalesce(p_candidate_df_ratio, 1) >= 1
                 OR (q.df <= p_candidate_df_ratio * v_n AND (q.cum_df <= v_budget OR q.rarity = 1)) AS cand,
                 '''' || replace(replace(q.term, '\', '\\'), '''', '''''') || '''' AS lexeme
      ) c;
    IF v_terms IS NULL THEN
        RETURN;
    END IF;
    -- A subject-scoped search whose candidate terms are common (their documents, tenant-wide,
    -- outnumber what a subject holds) reads the subject's rows through the scope index and
    -- tests each tsvector, instead of intersecting the GIN index's tenant-wide matches with them.
    -- One subject (the filter searches use most): a static statement, whose plan is kept (a
    -- generic plan: the scope index, ANDed with the GIN index when the terms are rare enough,
    -- bounds the rows read by the subject's, and the common-terms case above never reads the GIN
    -- index). Any other filter, and none (tenant-wide: the GIN index is the right one only for
    -- terms the planner can see are rare), is written into a one-shot query (EXECUTE).
    v_subject := CASE WHEN p_filter - 'subject' = '{}'::jsonb THEN CASE jsonb_typeof(p_filter -> 'subject')
                         WHEN 'string' THEN p_filter ->> 'subject'
                         WHEN 'array' THEN CASE WHEN jsonb_array_length(p_filter -> 'subject') = 1
                                                THEN p_filter #>> '{subject,0}' END END END;
    IF v_subject IS NOT NULL AND v_cand_df > 2000 THEN
        RETURN QUERY
        SELECT m.id, (
            SELECT CASE WHEN strpos(x.f::text, ',') > 0  -- a term more than once: tf from positions
                        THEN (SELECT sum(v_idf[array_position(v_terms, u.lexeme)]
                                         * coalesce(array_length(u.positions, 1), 1)::double precision * (p_k1 + 1)
                                         / (coalesce(array_length(u.positions, 1), 1)::double precision
                                            + p_k1 * (1 - p_b + p_b * m.doc_len / v_avgdl)))
                              FROM unnest(x.f) u)
                        WHEN length(x.f) = 1  -- one query term, once
                        THEN v_idf[array_position(v_terms, (tsvector_to_array(x.f))[1])] * (p_k1 + 1)
                             / (1 + p_k1 * (1 - p_b + p_b * m.doc_len / v_avgdl))
                        ELSE (SELECT sum(v_idf[array_position(v_terms, u.lexeme)] * (p_k1 + 1)
                                         / (1 + p_k1 * (1 - p_b + p_b * m.doc_len / v_avgdl)))
                              FROM (SELECT unnest(tsvector_to_array(x.f)) AS lexeme) u) END
            FROM (SELECT ts_filter(setweight(m.tsv, 'A', v_terms), '{a}') AS f OFFSET 0) x) AS score
        FROM memdb.memories m
        WHERE m.tenant = p_tenant AND coalesce(m.tsv, '') @@ v_tsq AND m.subject = v_subject
          AND m.valid_to IS NULL AND (m.expires_at IS NULL OR m.expires_at > now())
        ORDER BY score DESC, m.id
        LIMIT p_k;
        RETURN;
    ELSIF v_subject IS NOT NULL THEN
        RETURN QUERY
        SELECT m.id, (
            SELECT CASE WHEN strpos(x.f::text, ',') > 0  -- a term more than once: tf from positions
                        THEN (SELECT sum(v_idf[array_position(v_terms, u.lexeme)]
                                         * coalesce(array_length(u.positions, 1), 1)::double precision * (p_k1 + 1)
                                         / (coalesce(array_length(u.positions, 1), 1)::double precision
                                            + p_k1 * (1 - p_b + p_b * m.doc_len / v_avgdl)))
                              FROM unnest(x.f) u)
                        WHEN length(x.f) = 1  -- one query term, once
                        THEN v_idf[array_position(v_terms, (tsvector_to_array(x.f))[1])] * (p_k1 + 1)
                             / (1 + p_k1 * (1 - p_b + p_b * m.doc_len / v_avgdl))
                        ELSE (SELECT sum(v_idf[array_position(v_terms, u.lexeme)] * (p_k1 + 1)
                                         / (1 + p_k1 * (1 - p_b + p_b * m.doc_len / v_avgdl)))
                              FROM (SELECT unnest(tsvector_to_array(x.f)) AS lexeme) u) END
            FROM (SELECT ts_filter(setweight(m.tsv, 'A', v_terms), '{a}') AS f OFFSET 0) x) AS score
        FROM memdb.memories m
        WHERE m.tenant = p_tenant AND m.tsv @@ v_tsq AND m.subject = v_subject
          AND m.valid_to IS NULL AND (m.expires_at IS NULL OR m.expires_at > now())
        ORDER BY score DESC, m.id
        LIMIT p_k;
        RETURN;
    END IF;
    RETURN QUERY EXECUTE format($q$
        SELECT m.id, %s AS score
        FROM memdb.memories m
        WHERE m.tenant = $1 AND %s @@ $3 AND %s
        ORDER BY score DESC, m.id
        LIMIT $9
    $q$, memdb.bm25_score_sql(),
         CASE WHEN p_filter ? 'subject' AND v_cand_df > 2000 THEN 'coalesce(m.tsv, '''')' ELSE 'm.tsv' END,
         coalesce(memdb.filter_predicate(p_filter), 'memdb.matches(m, $2)'))  -- cheap to plan
    USING p_tenant, coalesce(p_filter, '{}'::jsonb), v_tsq, v_terms, v_idf, p_k1, p_b, v_avgdl, p_k;
END
$$;

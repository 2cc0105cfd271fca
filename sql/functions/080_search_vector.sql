-- memdb.search_vector(p_tenant text, p_query vector, p_k integer DEFAULT 10,
--                     p_filter jsonb DEFAULT '{}', p_space_id integer DEFAULT NULL,
--                     p_exact_limit integer DEFAULT 10000)
--   -> TABLE(id uuid, distance double precision, score double precision)
-- The k memories of the tenant nearest to p_query by cosine distance (score = 1 - distance)
-- among those passing p_filter (memdb.check_filter), in space p_space_id (default: the one
-- space whose dimensions match the query). The filter is applied inside the scan, so a
-- restrictive filter still returns k rows:
--   * when at most p_exact_limit memories pass the filter (without a filter: the tenant's
--     memory count kept for BM25, memdb.bm25_doc_count, an upper bound): an exact scan of just those rows
--     (found through the scope indexes) - the true top k; with a filter, one pass both counts
--     the rows (up to p_exact_limit + 1) and ranks them;
--   * otherwise the space's HNSW index with pgvector's iterative scan (relaxed order,
--     ef_search 100), re-sorted by exact distance.
-- A query of other dimensions raises MD001.
CREATE OR REPLACE FUNCTION memdb.search_vector(p_tenant text, p_query vector, p_k integer DEFAULT 10,
                                               p_filter jsonb DEFAULT '{}',
                                               p_space_id integer DEFAULT NULL,
                                               p_exact_limit integer DEFAULT 10000)
RETURNS TABLE (id uuid, distance double precision, score double precision)
LANGUAGE plpgsql STABLE
ROWS 50
SET hnsw.iterative_scan = 'relaxed_order'
SET hnsw.ef_search = 100
AS $$
DECLARE
    s memdb.embedding_spaces;
    v_filter jsonb := coalesce(p_filter, '{}'::jsonb);
    v_n bigint;
    v_where text;
    v_ids uuid[];
    v_dist double precision[];
    v_subject text;  -- a filter of one subject only: the subject (a static statement)
BEGIN
    IF p_query IS NULL THEN
        RAISE EXCEPTION 'query vector must not be NULL' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_k IS NULL OR p_k < 1 OR p_k > 10000 THEN
        RAISE EXCEPTION 'k must be between 1 and 10000, got %', p_k USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM memdb.check_filter(v_filter);
    -- the filter searches use most (one subject) runs a static statement, whose plan is kept (it
    -- reads the subject's rows through the scope index whatever the query vector); any other
    -- filter, and none (the planner weighs the tenant's share of the table), is written into a
    -- one-shot query (EXECUTE) as a plain predicate where it is one (cheap to plan), else as
    -- memdb.matches
    IF v_filter - 'subject' = '{}'::jsonb THEN
        v_subject := CASE jsonb_typeof(v_filter -> 'subject')
                         WHEN 'string' THEN v_filter ->> 'subject'
                         WHEN 'array' THEN CASE WHEN jsonb_array_length(v_filter -> 'subject') = 1
                                                THEN v_filter #>> '{subject,0}' END
                     END;
    END IF;
    IF v_subject IS NULL THEN
        v_where := memdb.filter_predicate(v_filter);
    END IF;
    IF p_space_id IS NULL THEN
        SELECT * INTO s FROM memdb.embedding_spaces es WHERE es.dims = vector_dims(p_query) ORDER BY es.id LIMIT 1;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'no embedding space holds % dimensions', vector_dims(p_query) USING ERRCODE = 'MD001';
        END IF;
    ELSE
        SELECT * INTO s FROM memdb.embedding_spaces es WHERE es.id = p_space_id;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'no embedding space %', p_space_id USING ERRCODE = 'invalid_parameter_value';
        END IF;
        IF s.dims <> vector_dims(p_query) THEN
            RAISE EXCEPTION 'query has % dimensions but space "%" holds %', vector_dims(p_query), s.model, s.dims
                USING ERRCODE = 'MD001';
        END IF;
    END IF;
    -- no filter: the tenant's current-row count kept by the BM25 triggers bounds the rows in
    -- the space from above, so a small tenant still gets the exact scan without counting rows
    IF v_filter = '{}'::jsonb THEN
        v_n := memdb.bm25_doc_count(p_tenant);
        IF v_n <= coalesce(p_exact_limit, 0) THEN
            -- exact: the distance expression does not match the HNSW index expression
            RETURN QUERY EXECUTE format($q$
                SELECT m.id, (m.embedding <=> $1)::double precision AS distance,
                       (1 - (m.embedding <=> $1))::double precision AS score
                FROM memdb.memories m
                WHERE m.tenant = $2 AND m.space_id = %s AND %s
                ORDER BY m.embedding <=> $1, m.id
                LIMIT $4
            $q$, s.id, coalesce(v_where, 'memdb.matches(m, $3)')) USING p_query, p_tenant, v_filter, p_k;
            RETURN;
        END IF;
    ELSE
        -- a filter: one pass over (at most p_exact_limit + 1 of) the rows passing it counts them
        -- and ranks them exactly; the ranking is kept when they are few enough
        IF v_subject IS NOT NULL THEN
            SELECT array_agg(t.id ORDER BY t.distance, t.id), array_agg(t.distance ORDER BY t.distance, t.id),
                   max(t.n)
              INTO v_ids, v_dist, v_n
              FROM (SELECT f.id, f.distance, count(*) OVER () AS n
                    FROM (SELECT m.id, (m.embedding <=> p_query)::double precision AS distance
                          FROM memdb.memories m
                          WHERE m.tenant = p_tenant AND m.space_id = s.id AND m.subject = v_subject
                            AND m.valid_to IS NULL AND (m.expires_at IS NULL OR m.expires_at > now())
                          LIMIT coalesce(p_exact_limit, 0) + 1) f
                    ORDER BY f.distance, f.id
                    LIMIT p_k) t;
        ELSE
            EXECUTE format($q$
                SELECT array_agg(t.id ORDER BY t.distance, t.id), array_agg(t.distance ORDER BY t.distance, t.id),
                       max(t.n)
                FROM (SELECT f.id, f.distance, count(*) OVER () AS n
                      FROM (SELECT m.id, (m.embedding <=> $1)::double precision AS distance
                            FROM memdb.memories m
                            WHERE m.tenant = $2 AND m.space_id = %s AND %s
                            LIMIT $5) f
                      ORDER BY f.distance, f.id
                      LIMIT $4) t
            $q$, s.id, coalesce(v_where, 'memdb.matches(m, $3)'))
            INTO v_ids, v_dist, v_n USING p_query, p_tenant, v_filter, p_k, coalesce(p_exact_limit, 0) + 1;
        END IF;
        v_n := coalesce(v_n, 0);
        IF v_n <= coalesce(p_exact_limit, 0) THEN
            RETURN QUERY SELECT x.id, x.distance, 1 - x.distance
                         FROM unnest(v_ids, v_dist) AS x(id, distance)
                         ORDER BY x.distance, x.id;
            RETURN;
        END IF;
    END IF;
    -- too many rows for an exact scan: the space's HNSW index (a one-shot query: the index is
    -- partial, per space, on an expression of the space's dimensions; the planner must see both)
    IF v_subject IS NOT NULL THEN
        v_where := memdb.filter_predicate(v_filter);
    END IF;
    RETURN QUERY EXECUTE format($q$
        WITH nearest AS MATERIALIZED (
            SELECT m.id, (m.embedding::vector(%1$s) <=> $1)::double precision AS distance
            FROM memdb.memories m
            WHERE m.tenant = $2 AND m.space_id = %2$s AND %3$s
            ORDER BY m.embedding::vector(%1$s) <=> $1
            LIMIT $4
        )
        SELECT n.id, n.distance, 1 - n.distance FROM nearest n ORDER BY n.distance, n.id
    $q$, s.dims, s.id, coalesce(v_where, 'memdb.matches(m, $3)')) USING p_query, p_tenant, v_filter, p_k;
END
$$;

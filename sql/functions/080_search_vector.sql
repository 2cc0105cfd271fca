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
--     (found through the scope indexes) - the true top k;
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
BEGIN
    IF p_query IS NULL THEN
        RAISE EXCEPTION 'query vector must not be NULL' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_k IS NULL OR p_k < 1 OR p_k > 10000 THEN
        RAISE EXCEPTION 'k must be between 1 and 10000, got %', p_k USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM memdb.check_filter(v_filter);
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
    ELSE
    EXECUTE format($q$
        SELECT count(*) FROM (
            SELECT 1 FROM memdb.memories m
            WHERE m.tenant = $1 AND m.space_id = %s AND memdb.matches(m, $2)
            LIMIT $3) x
    $q$, s.id) INTO v_n USING p_tenant, v_filter, coalesce(p_exact_limit, 0) + 1;
    END IF;
    IF v_n <= coalesce(p_exact_limit, 0) THEN
        -- exact: the distance expression does not match the HNSW index expression
        RETURN QUERY EXECUTE format($q$
            SELECT m.id, (m.embedding <=> $1)::double precision AS distance,
                   (1 - (m.embedding <=> $1))::double precision AS score
            FROM memdb.memories m
            WHERE m.tenant = $2 AND m.space_id = %s AND memdb.matches(m, $3)
            ORDER BY m.embedding <=> $1, m.id
            LIMIT $4
        $q$, s.id) USING p_query, p_tenant, v_filter, p_k;
    ELSE
        RETURN QUERY EXECUTE format($q$
            WITH nearest AS MATERIALIZED (
                SELECT m.id, (m.embedding::vector(%1$s) <=> $1)::double precision AS distance
                FROM memdb.memories m
                WHERE m.tenant = $2 AND m.space_id = %2$s AND memdb.matches(m, $3)
                ORDER BY m.embedding::vector(%1$s) <=> $1
                LIMIT $4
            )
            SELECT n.id, n.distance, 1 - n.distance FROM nearest n ORDER BY n.distance, n.id
        $q$, s.dims, s.id) USING p_query, p_tenant, v_filter, p_k;
    END IF;
END
$$;

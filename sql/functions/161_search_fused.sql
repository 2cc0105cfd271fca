-- memdb.search_fused(p_tenant text, p_variants jsonb, p_embeddings vector[] DEFAULT NULL,
--                    p_k integer DEFAULT 10, p_filter jsonb DEFAULT '{}', p_options jsonb DEFAULT '{}',
--                    p_rrf_k double precision DEFAULT 60, p_depth integer DEFAULT NULL)
--   -> TABLE(id uuid, rank integer, score double precision, variant_ranks integer[],
--            variant_scores double precision[])
-- Several phrasings of one question (query expansion: the original, LLM rewrites, a
-- hypothetical answer passage) searched with memdb.search_hybrid each, their ranked lists
-- fused by weighted Reciprocal Rank Fusion: score = sum over variants of weight / (rrf_k + rank).
--   p_variants: a JSON array (1 to 16 entries) of {"query": text or null, "weight": number >= 0
--     (default 1), "options": search options laid over p_options (e.g. {"routes": ["vector"]})};
--   p_embeddings[n]: the query vector of variant n (NULL: that variant has no vector route);
--   p_depth: how many hits each variant contributes (default greatest(50, 2 * p_k)).
-- Rankings stay inspectable: variant_ranks[n] / variant_scores[n] are the rank and score the
-- hit had in variant n's own search (NULL where that variant missed it).
-- Example: SELECT * FROM memdb.search_fused('default',
--   '[{"query": "key rotation"}, {"query": "how often are API keys rotated", "weight": 0.5}]',
--   NULL, 5, '{"source_type": "document"}', '{"routes": ["bm25", "exact"]}');
CREATE OR REPLACE FUNCTION memdb.search_fused(p_tenant text, p_variants jsonb,
                                              p_embeddings vector[] DEFAULT NULL,
                                              p_k integer DEFAULT 10, p_filter jsonb DEFAULT '{}',
                                              p_options jsonb DEFAULT '{}',
                                              p_rrf_k double precision DEFAULT 60,
                                              p_depth integer DEFAULT NULL)
RETURNS TABLE (id uuid, rank integer, score double precision, variant_ranks integer[],
               variant_scores double precision[])
LANGUAGE plpgsql STABLE
ROWS 10
AS $$
DECLARE
    n_variants integer;
    bad jsonb;
    depth integer;
    v record;
    found_rows jsonb := '[]'::jsonb;
BEGIN
    IF p_k IS NULL OR p_k < 1 OR p_k > 1000 THEN
        RAISE EXCEPTION 'k must be between 1 and 1000, got %', p_k USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_variants IS NULL OR jsonb_typeof(p_variants) <> 'array'
       OR jsonb_array_length(p_variants) NOT BETWEEN 1 AND 16 THEN
        RAISE EXCEPTION 'variants must be a JSON array of 1 to 16 objects' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    n_variants := jsonb_array_length(p_variants);
    SELECT e INTO bad FROM jsonb_array_elements(p_variants) e
    WHERE jsonb_typeof(e) <> 'object'
       OR (e ? 'query' AND jsonb_typeof(e -> 'query') NOT IN ('string', 'null'))
       OR (e ? 'weight' AND (jsonb_typeof(e -> 'weight') <> 'number' OR (e ->> 'weight')::double precision < 0))
       OR (e ? 'options' AND jsonb_typeof(e -> 'options') <> 'object')
    LIMIT 1;
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION 'bad variant %: expected {"query": text, "weight": number >= 0, "options": {}}', bad
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_embeddings IS NOT NULL AND cardinality(p_embeddings) > n_variants THEN
        RAISE EXCEPTION 'more embeddings (%) than variants (%)', cardinality(p_embeddings), n_variants
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_rrf_k IS NULL OR p_rrf_k < 0 OR p_rrf_k = 'Infinity'::double precision THEN
        RAISE EXCEPTION 'rrf_k must be a finite number >= 0' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    depth := coalesce(p_depth, greatest(50, 2 * p_k));
    IF depth < 1 OR depth > 1000 THEN
        RAISE EXCEPTION 'depth must be between 1 and 1000, got %', depth USING ERRCODE = 'invalid_parameter_value';
    END IF;

    -- one search_hybrid call per variant (a loop, not a lateral join: on Citus the
    -- delegated call's nested searches must each run as their own statement)
    FOR v IN SELECT t.n::integer AS n, t.e AS spec
             FROM jsonb_array_elements(p_variants) WITH ORDINALITY AS t(e, n) LOOP
        found_rows := found_rows || coalesce((
            SELECT jsonb_agg(jsonb_build_object(
                       'n', v.n, 'w', coalesce((v.spec ->> 'weight')::double precision, 1),
                       'id', h.id, 'rank', h.rank, 'score', h.score))
            FROM memdb.search_hybrid(
                p_tenant, v.spec ->> 'query', p_embeddings[v.n], depth, p_filter,
                coalesce(p_options, '{}'::jsonb) || coalesce(v.spec -> 'options', '{}'::jsonb)) h),
            '[]'::jsonb);
    END LOOP;

    RETURN QUERY
    WITH hits AS (
        SELECT * FROM jsonb_to_recordset(found_rows) AS x(
            n integer, w double precision, id uuid, rank integer, score double precision)
    ), fused AS (
        SELECT hits.id, sum(hits.w / (p_rrf_k + hits.rank)) AS fused_score,
               jsonb_object_agg(hits.n, hits.rank) AS ranks,
               jsonb_object_agg(hits.n, hits.score) AS scores
        FROM hits
        GROUP BY hits.id
    )
    SELECT f.id, (row_number() OVER (ORDER BY f.fused_score DESC, f.id))::integer,
           f.fused_score,
           ARRAY(SELECT (f.ranks ->> g::text)::integer FROM generate_series(1, n_variants) g ORDER BY g),
           ARRAY(SELECT (f.scores ->> g::text)::double precision FROM generate_series(1, n_variants) g ORDER BY g)
    FROM fused f
    ORDER BY f.fused_score DESC, f.id
    LIMIT p_k;
END
$$;

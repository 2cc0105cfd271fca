-- memdb.search_planned(p_tenant text, p_plan jsonb, p_embeddings vector[] DEFAULT NULL,
--                      p_k integer DEFAULT 10, p_filter jsonb DEFAULT '{}', p_options jsonb DEFAULT '{}')
--   -> TABLE(id uuid, rank integer, score double precision, fused double precision,
--            multiplier double precision, category text, routes jsonb, fallback boolean,
--            notes jsonb)
-- Executes a query plan (memdb.retrieval.planner.QueryPlan as JSON: {"query": text, "queries": [{"text",
-- "categories", "strategy", "weight"}, ...]}) with the same filter and options as
-- memdb.search_hybrid:
--   1. each typed query i runs memdb.search_hybrid inside its categories (the filter's own
--      category list, if any, is intersected with them; an empty list means every category;
--      with option with_general, 'general' - not classified anywhere - is searched as well)
--      with its strategy's route weights: semantic = the options' weights; bm25 = the vector
--      weight halved; exact_match = the vector weight halved and the exact weight doubled.
--      Its vector is p_embeddings[i + 1] (p_embeddings[1] when that is NULL or missing);
--   2. the all-categories route ("all": the plan's query, p_embeddings[1], the caller's filter,
--      no plan categories: the flat hybrid search, with the per-method depth search_hybrid uses at
--      k = anchor_k, or p_k when not anchored) runs with weight backstop_weight (0 by default), and
--      with weight max(backstop_weight, 1) when a typed query returned nothing or raised an
--      error: the fallback (fallback = true), so a plan never finds less than a flat search;
--   3. weighted RRF over the typed queries: fused = sum of weight_i / (rrf_k + rank_i);
--   4. score = fused * memdb.score_multiplier(...) (hotness / decay / importance as in
--      search_hybrid, never applied to category 'system');
--   5. anchoring (option anchor_k, default p_k; 0 = off): the all-categories route's top
--      anchor_k memories are the first rows, ordered among themselves by score (then by their
--      flat rank); the other candidates follow by score. With anchor_k = p_k the result holds
--      exactly the memories a flat search returns (recall@k never drops), and the plan decides
--      their order; with 0, the top p_k by score, so a scoped route can pull a memory of its
--      categories past the flat search's own top k.
-- The first row (rank 0, id NULL) always carries the notes: per route its categories,
-- weight, row count and error (if any). Result rows carry, in routes, each route's rank,
-- fused score and per-method ranks and raw scores; rows are in rank order (with anchoring a
-- row's score can be below the score of a row after it). MMR options are ignored here.
-- Extra options: backstop_weight in [0, 10] (default 0); with_general boolean (default false);
-- anchor_k integer in [0, p_k] (default p_k).
-- Query decomposition: a plan key "subqueries" (a JSON array of at most 3 non-blank strings, at
-- most 1000 characters each; MemoryStore.recall with option decompose sets it) makes the
-- all-categories route the decomposed search: the query and its sub-queries, each searched by
-- memdb.search_hybrid with the caller's filter and options and fused by weighted RRF (weight 1
-- each, the options' rrf_k) by memdb.search_fused (memdb.planned_fused_route), with the
-- per-variant depth search_fused uses at k = anchor_k (or p_k); sub-query j's vector is
-- p_embeddings[n + 1 + j], n the number of typed queries (NULL: p_embeddings[1]). Anchored, the
-- result then holds exactly the memories the decomposed flat search returns at k.
-- Example: SELECT * FROM memdb.search_planned('default',
--   '{"query": "上次那个项目", "queries": [{"text": "项目", "categories": ["entities", "events"],
--     "strategy": "bm25", "weight": 1}]}', NULL, 5, '{"subject": "lisi"}',
--   '{"routes": ["bm25", "exact"]}');
CREATE OR REPLACE FUNCTION memdb.search_planned(p_tenant text, p_plan jsonb,
                                                p_embeddings vector[] DEFAULT NULL,
                                                p_k integer DEFAULT 10, p_filter jsonb DEFAULT '{}',
                                                p_options jsonb DEFAULT '{}')
RETURNS TABLE (id uuid, rank integer, score double precision, fused double precision,
               multiplier double precision, category text, routes jsonb, fallback boolean,
               notes jsonb)
LANGUAGE plpgsql STABLE
ROWS 11
AS $$
DECLARE
    o jsonb := coalesce(p_options, '{}'::jsonb);
    f jsonb := coalesce(p_filter, '{}'::jsonb);
    base jsonb;
    backstop double precision := coalesce((o ->> 'backstop_weight')::double precision, 0);
    with_general boolean := coalesce((o ->> 'with_general')::boolean, false);
    anchor_k integer;
    all_options jsonb;
    rrf_k double precision := coalesce((o ->> 'rrf_k')::double precision, 60);
    w_vector double precision := coalesce((o #>> '{weights,vector}')::double precision, 1);
    w_bm25 double precision := coalesce((o #>> '{weights,bm25}')::double precision, 1);
    w_exact double precision := coalesce((o #>> '{weights,exact}')::double precision, 1);
    use_hot boolean := coalesce((o ->> 'hotness_weight')::double precision, 0) <> 0;
    depth integer := greatest(50, 2 * p_k);
    q jsonb;
    i integer := 0;
    cats jsonb;
    qf jsonb;
    qo jsonb;
    emb vector;
    got jsonb;
    n integer;
    err text;
    found_rows jsonb := '[]'::jsonb;
    qweights jsonb := '{}'::jsonb;
    route_notes jsonb := '[]'::jsonb;
    need_fallback boolean := false;
    n_queries integer;
    n_subs integer := 0;
    variants jsonb;
    sub_embeddings vector[];
    use_all boolean;
    w_all double precision;
    v_now timestamptz;
    usage_subject text;
BEGIN
    IF p_k IS NULL OR p_k < 1 OR p_k > 1000 THEN
        RAISE EXCEPTION 'k must be between 1 and 1000, got %', p_k USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_plan IS NULL OR jsonb_typeof(p_plan) <> 'object' OR jsonb_typeof(p_plan -> 'query') <> 'string'
       OR jsonb_typeof(p_plan -> 'queries') <> 'array' OR jsonb_array_length(p_plan -> 'queries') > 3 THEN
        RAISE EXCEPTION 'a plan is an object with a query string and at most 3 queries'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_plan ? 'subqueries' AND (jsonb_typeof(p_plan -> 'subqueries') <> 'array'
       OR jsonb_array_length(p_plan -> 'subqueries') > 3
       OR EXISTS (SELECT 1 FROM jsonb_array_elements(p_plan -> 'subqueries') s
                  WHERE jsonb_typeof(s) <> 'string' OR btrim(s #>> '{}') = ''
                     OR length(s #>> '{}') > 1000)) THEN
        RAISE EXCEPTION 'plan subqueries must be an array of at most 3 non-blank strings of at most 1000 characters'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    n_subs := coalesce(jsonb_array_length(p_plan -> 'subqueries'), 0);
    IF jsonb_typeof(o -> 'backstop_weight') IS DISTINCT FROM 'number' AND o ? 'backstop_weight'
       OR backstop < 0 OR backstop > 10 THEN
        RAISE EXCEPTION 'option "backstop_weight" must be a number in [0, 10]' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF o ? 'anchor_k' AND jsonb_typeof(o -> 'anchor_k') <> 'number' THEN
        RAISE EXCEPTION 'option "anchor_k" must be an integer in [0, k]' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF (o ->> 'anchor_k')::numeric NOT BETWEEN 0 AND p_k
       OR (o ->> 'anchor_k')::numeric <> trunc((o ->> 'anchor_k')::numeric) THEN
        RAISE EXCEPTION 'option "anchor_k" must be an integer in [0, k]' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    anchor_k := coalesce((o ->> 'anchor_k')::integer, p_k);
    base := o - 'backstop_weight' - 'with_general' - 'anchor_k' - 'mmr_lambda' - 'mmr_candidates' - 'decay_weight'
              - 'hotness_weight' - 'importance_weight' - 'half_life_days';
    PERFORM memdb.check_filter(f);
    PERFORM memdb.check_search_options(o - 'backstop_weight' - 'with_general' - 'anchor_k');
    IF o -> 'routes' ? 'vector' AND p_embeddings[1] IS NULL THEN
        RAISE EXCEPTION 'the vector route needs a query embedding' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_now := coalesce((f ->> 'as_of')::timestamptz, now());
    usage_subject := CASE jsonb_typeof(f -> 'subject')
                         WHEN 'string' THEN f ->> 'subject'
                         WHEN 'array' THEN CASE WHEN jsonb_array_length(f -> 'subject') = 1 THEN f #>> '{subject,0}' END
                     END;

    FOR q IN SELECT value FROM jsonb_array_elements(p_plan -> 'queries') LOOP
        i := i + 1;
        IF jsonb_typeof(q) <> 'object' OR jsonb_typeof(q -> 'text') <> 'string' THEN
            RAISE EXCEPTION 'plan query % needs a text', i USING ERRCODE = 'invalid_parameter_value';
        END IF;
        cats := CASE WHEN jsonb_typeof(q -> 'categories') = 'array' THEN q -> 'categories' ELSE '[]'::jsonb END;
        IF with_general AND jsonb_array_length(cats) > 0 AND NOT cats ? 'general' THEN
            cats := cats || '["general"]'::jsonb;
        END IF;
        IF jsonb_array_length(cats) > 0 AND f ? 'category' THEN
            cats := coalesce((SELECT jsonb_agg(c) FROM jsonb_array_elements_text(cats) c
                              WHERE c = ANY (memdb.jtext_array(f -> 'category'))), f -> 'category');
        END IF;
        qf := CASE WHEN jsonb_array_length(cats) > 0 THEN f || jsonb_build_object('category', cats) ELSE f END;
        qo := base || jsonb_build_object('weights', CASE q ->> 'strategy'
            WHEN 'bm25' THEN jsonb_build_object('vector', w_vector / 2, 'bm25', w_bm25, 'exact', w_exact)
            WHEN 'exact_match' THEN jsonb_build_object('vector', w_vector / 2, 'bm25', w_bm25, 'exact', 2 * w_exact)
            ELSE jsonb_build_object('vector', w_vector, 'bm25', w_bm25, 'exact', w_exact) END);
        emb := CASE WHEN p_embeddings IS NULL THEN NULL
                    ELSE coalesce(p_embeddings[i + 1], p_embeddings[1]) END;
        err := NULL;
        BEGIN
            got := memdb.planned_route(i, p_tenant, q ->> 'text', emb, depth, qf, qo);
            n := jsonb_array_length(got);
        EXCEPTION WHEN others THEN
            got := '[]'::jsonb;
            n := 0;
            err := SQLSTATE || ': ' || SQLERRM;
        END;
        found_rows := found_rows || got;
        qweights := qweights || jsonb_build_object(i::text,
            least(1, greatest(0.1, coalesce((q ->> 'weight')::double precision, 1))));
        route_notes := route_notes || jsonb_build_object('route', 'q' || i, 'categories', cats,
            'strategy', coalesce(q ->> 'strategy', 'semantic'), 'weight', qweights -> i::text,
            'rows', n, 'error', err);
        IF n = 0 THEN
            need_fallback := true;
        END IF;
    END LOOP;
    IF i = 0 THEN
        need_fallback := true;
    END IF;

    use_all := need_fallback OR backstop > 0 OR anchor_k > 0;
    IF use_all THEN
        -- the same per-method candidate depth as a flat search_hybrid at k = anchor_k (or p_k),
        -- so the anchored memories are exactly what that search returns
        all_options := CASE WHEN base ? 'depth' THEN base ELSE base || jsonb_build_object('depth',
                           greatest(50, 2 * CASE WHEN anchor_k > 0 THEN anchor_k ELSE p_k END)) END;
        w_all := CASE WHEN need_fallback THEN greatest(backstop, 1) ELSE backstop END;
        err := NULL;
        BEGIN
            IF n_subs > 0 THEN  -- the decomposed search: the query and its sub-queries fused
                n_queries := jsonb_array_length(p_plan -> 'queries');
                variants := jsonb_build_array(jsonb_build_object('query', p_plan -> 'query'))
                            || (SELECT jsonb_agg(jsonb_build_object('query', s.value) ORDER BY s.n)
                                FROM jsonb_array_elements(p_plan -> 'subqueries') WITH ORDINALITY s(value, n));
                IF p_embeddings IS NOT NULL THEN
                    sub_embeddings := ARRAY[p_embeddings[1]] || ARRAY(
                        SELECT coalesce(p_embeddings[n_queries + 1 + j], p_embeddings[1])
                        FROM generate_series(1, n_subs) j ORDER BY j);
                END IF;
                got := memdb.planned_fused_route(0, p_tenant, variants, sub_embeddings, depth, f,
                                                 base, rrf_k,
                                                 greatest(50, 2 * CASE WHEN anchor_k > 0 THEN anchor_k ELSE p_k END));
            ELSE
                got := memdb.planned_route(0, p_tenant, p_plan ->> 'query',
                                           CASE WHEN p_embeddings IS NULL THEN NULL ELSE p_embeddings[1] END,
                                           depth, f, all_options);
            END IF;
            n := jsonb_array_length(got);
        EXCEPTION WHEN others THEN
            got := '[]'::jsonb;
            n := 0;
            err := SQLSTATE || ': ' || SQLERRM;
        END;
        found_rows := found_rows || got;
        qweights := qweights || jsonb_build_object('0', w_all);
        route_notes := route_notes || jsonb_build_object('route', 'all', 'categories', '[]'::jsonb,
            'strategy', 'semantic', 'weight', w_all, 'rows', n, 'error', err, 'subqueries', n_subs,
            'reason', CASE WHEN need_fallback THEN 'fallback'
                           WHEN backstop > 0 THEN 'backstop' ELSE 'anchor' END);
    END IF;

    RETURN QUERY SELECT NULL::uuid, 0, NULL::double precision, NULL::double precision,
                        NULL::double precision, NULL::text, NULL::jsonb, need_fallback,
                        jsonb_build_object('routes', route_notes, 'fallback', need_fallback,
                                           'anchor_k', anchor_k);
    RETURN QUERY
    WITH r AS (
        SELECT * FROM jsonb_to_recordset(found_rows) AS x(
            q integer, id uuid, rnk integer, fused double precision, vector_rank integer,
            vector_score double precision, bm25_rank integer, bm25_score double precision,
            exact_rank integer, exact_score double precision)
    ), fu AS (
        SELECT r.id,
               sum((qweights ->> r.q::text)::double precision / (rrf_k + r.rnk)) AS fused,
               min(r.rnk) FILTER (WHERE r.q = 0) AS flat_rank,
               jsonb_object_agg(CASE WHEN r.q = 0 THEN 'all' ELSE 'q' || r.q END,
                                jsonb_strip_nulls(jsonb_build_object(
                                    'rank', r.rnk, 'fused', r.fused,
                                    'vector_rank', r.vector_rank, 'vector_score', r.vector_score,
                                    'bm25_rank', r.bm25_rank, 'bm25_score', r.bm25_score,
                                    'exact_rank', r.exact_rank, 'exact_score', r.exact_score))) AS routes
        FROM r
        GROUP BY r.id
    )
    SELECT fu.id, (row_number() OVER (ORDER BY an.anchored DESC, fu.fused * mu.mult DESC,
                                             fu.flat_rank NULLS LAST, fu.id))::integer,
           fu.fused * mu.mult, fu.fused, mu.mult, m.category, fu.routes, need_fallback, NULL::jsonb
    FROM fu
    CROSS JOIN LATERAL (SELECT coalesce(fu.flat_rank <= anchor_k, false) AS anchored) an
    JOIN memdb.memories m ON m.tenant = p_tenant AND m.id = fu.id
    -- the use count, looked up per candidate and only when the hotness weight reads it (as
    -- a join, a generic plan could read the tenant's whole usage table in every search)
    LEFT JOIN LATERAL (SELECT u.use_count FROM memdb.memory_usage u
                       WHERE use_hot AND u.tenant = m.tenant AND u.memory_id = m.id
                         AND u.subject = coalesce(usage_subject, m.subject) OFFSET 0) u ON true
    CROSS JOIN LATERAL (
        SELECT memdb.score_multiplier(m.category, m.importance, u.use_count,
                                      extract(epoch FROM v_now - m.created_at) / 86400.0, o) AS mult
    ) mu
    ORDER BY an.anchored DESC, fu.fused * mu.mult DESC, fu.flat_rank NULLS LAST, fu.id
    LIMIT p_k;
END
$$;

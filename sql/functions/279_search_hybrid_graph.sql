-- memdb.search_hybrid_graph(p_tenant text, p_query text, p_embedding vector DEFAULT NULL,
--                           p_k integer DEFAULT 10, p_filter jsonb DEFAULT '{}',
--                           p_options jsonb DEFAULT '{}', p_graph jsonb DEFAULT '{}')
--   -> TABLE(id uuid, rank integer, score double precision, hybrid_rank integer,
--            hybrid_score double precision, graph_rank integer, graph_score double precision,
--            graph_hops integer, graph_entities text[], vector_rank integer,
--            vector_score double precision, bm25_rank integer, bm25_score double precision,
--            exact_rank integer, exact_score double precision)
-- Hybrid search with the graph route: memdb.search_hybrid (vector, BM25, exact, fused and
-- decayed by p_options) and memdb.search_graph, each taking its top `depth` hits, fused by
-- weighted Reciprocal Rank Fusion as memdb.search_fused fuses variants:
--   score = hybrid_weight / (rrf_k + hybrid_rank) + weight / (rrf_k + graph_rank).
-- p_graph (all optional): hops 0..4 (default 2), weight >= 0 (graph route, default 1),
-- hybrid_weight >= 0 (default 1), rrf_k > 0 (default 60), depth 1..1000 (default
-- greatest(50, 2k)), entities: names to start from besides those found in p_query.
-- Every row keeps both routes' ranks and scores (NULL where a route missed it) and, from the
-- hybrid search, each inner route's rank and score.
-- Example: SELECT * FROM memdb.search_hybrid_graph('default', '谁和李四一起工作', NULL, 5,
--                                                  '{}', '{"routes": ["bm25"]}', '{"hops": 2}');
CREATE OR REPLACE FUNCTION memdb.search_hybrid_graph(p_tenant text, p_query text,
                                                     p_embedding vector DEFAULT NULL,
                                                     p_k integer DEFAULT 10,
                                                     p_filter jsonb DEFAULT '{}',
                                                     p_options jsonb DEFAULT '{}',
                                                     p_graph jsonb DEFAULT '{}')
RETURNS TABLE (id uuid, rank integer, score double precision, hybrid_rank integer,
               hybrid_score double precision, graph_rank integer, graph_score double precision,
               graph_hops integer, graph_entities text[], vector_rank integer,
               vector_score double precision, bm25_rank integer, bm25_score double precision,
               exact_rank integer, exact_score double precision)
LANGUAGE plpgsql STABLE
ROWS 10
AS $$
DECLARE
    g jsonb := coalesce(p_graph, '{}'::jsonb);
    k text;
    depth integer;
    rrf_k double precision;
    w_graph double precision;
    w_hybrid double precision;
BEGIN
    IF p_k IS NULL OR p_k < 1 OR p_k > 1000 THEN
        RAISE EXCEPTION 'k must be between 1 and 1000, got %', p_k USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF jsonb_typeof(g) <> 'object' THEN
        RAISE EXCEPTION 'graph options must be a JSON object' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    FOR k IN SELECT jsonb_object_keys(g) LOOP
        IF k NOT IN ('hops', 'weight', 'hybrid_weight', 'rrf_k', 'depth', 'entities') THEN
            RAISE EXCEPTION 'unknown graph option "%"', k USING ERRCODE = 'invalid_parameter_value';
        END IF;
        IF (k = 'entities' AND jsonb_typeof(g -> k) <> 'array')
           OR (k <> 'entities' AND jsonb_typeof(g -> k) <> 'number') THEN
            RAISE EXCEPTION 'graph option "%" has the wrong type', k USING ERRCODE = 'invalid_parameter_value';
        END IF;
    END LOOP;
    depth := coalesce((g ->> 'depth')::numeric::integer, greatest(50, 2 * p_k));
    rrf_k := coalesce((g ->> 'rrf_k')::double precision, 60);
    w_graph := coalesce((g ->> 'weight')::double precision, 1);
    w_hybrid := coalesce((g ->> 'hybrid_weight')::double precision, 1);
    IF depth < 1 OR depth > 1000 OR rrf_k <= 0 OR w_graph < 0 OR w_hybrid < 0 THEN
        RAISE EXCEPTION 'graph options out of range: %', g USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN QUERY
    WITH h AS (
        SELECT * FROM memdb.search_hybrid(p_tenant, p_query, p_embedding, depth, p_filter, p_options)
    ), gr AS (
        SELECT * FROM memdb.search_graph(p_tenant, p_query,
                                         ARRAY(SELECT jsonb_array_elements_text(coalesce(g -> 'entities', '[]'))),
                                         coalesce((g ->> 'hops')::numeric::integer, 2), depth, p_filter)
    ), fused AS (
        SELECT coalesce(h.id, gr.id) AS id,
               coalesce(w_hybrid / (rrf_k + h.rank), 0) + coalesce(w_graph / (rrf_k + gr.rank), 0) AS score,
               h.rank AS hybrid_rank, h.score AS hybrid_score, gr.rank AS graph_rank,
               gr.score AS graph_score, gr.hops AS graph_hops, gr.entities AS graph_entities,
               h.vector_rank, h.vector_score, h.bm25_rank, h.bm25_score, h.exact_rank, h.exact_score
        FROM h FULL JOIN gr ON gr.id = h.id
    )
    SELECT f.id, (row_number() OVER (ORDER BY f.score DESC, f.id))::integer, f.score,
           f.hybrid_rank, f.hybrid_score, f.graph_rank, f.graph_score, f.graph_hops,
           f.graph_entities, f.vector_rank, f.vector_score, f.bm25_rank, f.bm25_score,
           f.exact_rank, f.exact_score
    FROM fused f
    ORDER BY f.score DESC, f.id
    LIMIT p_k;
END
$$;

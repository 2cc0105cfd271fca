-- memdb.planned_route(p_q integer, p_tenant text, p_query text, p_embedding vector,
--                     p_k integer, p_filter jsonb, p_options jsonb) -> jsonb
-- One route of memdb.search_planned: the rows of memdb.search_hybrid(p_tenant, p_query,
-- p_embedding, p_k, p_filter, p_options) as a jsonb array of {q: p_q (0 = the all-categories
-- route, i = typed query i), id, rnk, fused, vector_rank, vector_score, bm25_rank, bm25_score,
-- exact_rank, exact_score}; '[]' when nothing matches.
CREATE OR REPLACE FUNCTION memdb.planned_route(p_q integer, p_tenant text, p_query text,
                                               p_embedding vector, p_k integer,
                                               p_filter jsonb, p_options jsonb)
RETURNS jsonb
LANGUAGE sql STABLE
AS $$
    SELECT coalesce(jsonb_agg(jsonb_build_object(
               'q', p_q, 'id', h.id, 'rnk', h.rank, 'fused', h.fused,
               'vector_rank', h.vector_rank, 'vector_score', h.vector_score,
               'bm25_rank', h.bm25_rank, 'bm25_score', h.bm25_score,
               'exact_rank', h.exact_rank, 'exact_score', h.exact_score)), '[]'::jsonb)
    FROM memdb.search_hybrid(p_tenant, p_query, p_embedding, p_k, p_filter, p_options) h
$$;

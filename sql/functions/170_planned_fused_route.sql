-- memdb.planned_fused_route(p_q integer, p_tenant text, p_variants jsonb,
--                           p_embeddings vector[], p_k integer, p_filter jsonb,
--                           p_options jsonb, p_rrf_k double precision, p_depth integer) -> jsonb
-- The all-categories route of memdb.search_planned for a decomposed query (the plan's
-- "subqueries"): the rows of memdb.search_fused(p_tenant, p_variants, p_embeddings, p_k,
-- p_filter, p_options, p_rrf_k, p_depth) - the query and its sub-queries, each searched by
-- memdb.search_hybrid and fused by weighted RRF, as MemoryStore.search does with option
-- decompose - as a jsonb array of {q: p_q, id, rnk, fused, variant_ranks}; '[]' when nothing
-- matches.
CREATE OR REPLACE FUNCTION memdb.planned_fused_route(p_q integer, p_tenant text,
                                                     p_variants jsonb, p_embeddings vector[],
                                                     p_k integer, p_filter jsonb,
                                                     p_options jsonb,
                                                     p_rrf_k double precision,
                                                     p_depth integer)
RETURNS jsonb
LANGUAGE sql STABLE
AS $$
    SELECT coalesce(jsonb_agg(jsonb_build_object(
               'q', p_q, 'id', h.id, 'rnk', h.rank, 'fused', h.score,
               'variant_ranks', to_jsonb(h.variant_ranks))), '[]'::jsonb)
    FROM memdb.search_fused(p_tenant, p_variants, p_embeddings, p_k, p_filter, p_options,
                            p_rrf_k, p_depth) h
$$;

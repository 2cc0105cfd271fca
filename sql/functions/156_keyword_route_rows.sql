-- memdb.keyword_route_rows(p_tenant text, p_query text, p_depth integer, p_filter jsonb,
--                          p_options jsonb, p_bm25 boolean, p_prf boolean, p_exact boolean,
--                          p_prf_terms text[], p_prf_weights double precision[])
--   -> TABLE(route text, id uuid, raw double precision, rnk bigint)
-- The keyword routes of memdb.search_hybrid, ranked: with p_bm25, the BM25 route's top p_depth
-- (memdb.search_bm25 of p_query, or with p_prf memdb.search_bm25_weighted of the expanded
-- query p_prf_terms / p_prf_weights, see memdb.prf_terms); with p_exact, the exact route's
-- (memdb.search_exact). raw is the route's score, rnk its rank (score descending, then id).
-- BM25's k1, b and candidate_df_ratio come from p_options (defaults 1.2, 0.75, 0.3).
-- The one place these routes are called from: search_hybrid inlines it into its fusion
-- statement, memdb.search_keyword_routes runs it ahead of the query's embedding. One SQL
-- statement, so PostgreSQL inlines it (on plain PostgreSQL; on a Citus coordinator it is
-- behind its NULL-tenant guard, memdb.guard_tenant_functions, as every tenant function).
CREATE OR REPLACE FUNCTION memdb.keyword_route_rows(p_tenant text, p_query text, p_depth integer,
                                                    p_filter jsonb, p_options jsonb,
                                                    p_bm25 boolean, p_prf boolean, p_exact boolean,
                                                    p_prf_terms text[],
                                                    p_prf_weights double precision[])
RETURNS TABLE (route text, id uuid, raw double precision, rnk bigint)
LANGUAGE sql STABLE
AS $$
    SELECT 'bm25', x.id, x.score, row_number() OVER (ORDER BY x.score DESC, x.id)
    FROM memdb.search_bm25(p_tenant, p_query, p_depth, p_filter,
                           coalesce((p_options ->> 'k1')::double precision, 1.2),
                           coalesce((p_options ->> 'b')::double precision, 0.75),
                           coalesce((p_options ->> 'candidate_df_ratio')::double precision, 0.3)) x
    WHERE p_bm25 AND NOT p_prf
    UNION ALL
    SELECT 'bm25', x.id, x.score, row_number() OVER (ORDER BY x.score DESC, x.id)
    FROM memdb.search_bm25_weighted(p_tenant, p_prf_terms, p_prf_weights, p_depth, p_filter,
                                    coalesce((p_options ->> 'k1')::double precision, 1.2),
                                    coalesce((p_options ->> 'b')::double precision, 0.75)) x
    WHERE p_bm25 AND p_prf
    UNION ALL
    SELECT 'exact', x.id, x.score, row_number() OVER (ORDER BY x.score DESC, x.id)
    FROM memdb.search_exact(p_tenant, p_query, p_depth, p_filter) x
    WHERE p_exact
$$;

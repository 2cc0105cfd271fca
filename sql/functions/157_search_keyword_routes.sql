-- memdb.keyword_routes_key(p_tenant text, p_query text, p_k integer, p_filter jsonb,
--                          p_options jsonb) -> text
-- What memdb.search_keyword_routes' rows were computed for (a digest of its arguments):
-- memdb.search_hybrid takes them only for the same arguments.
CREATE OR REPLACE FUNCTION memdb.keyword_routes_key(p_tenant text, p_query text, p_k integer,
                                                    p_filter jsonb, p_options jsonb)
RETURNS text
LANGUAGE sql IMMUTABLE
AS $$
    SELECT md5(jsonb_build_array(p_tenant, p_query, p_k, coalesce(p_filter, '{}'::jsonb),
                                 coalesce(p_options, '{}'::jsonb))::text)
$$;

-- memdb.search_keyword_routes(p_tenant text, p_query text, p_k integer DEFAULT 10,
--                             p_filter jsonb DEFAULT '{}', p_options jsonb DEFAULT '{}') -> jsonb
-- The keyword routes (BM25, or its expanded query with prf; exact) of memdb.search_hybrid with
-- the same arguments, run ahead: the part of a search that needs no query vector, so it can
-- run while the query is being embedded. Returns
--   {"for": memdb.keyword_routes_key(...), "rows": [{"route", "id", "raw", "rnk"}, ...]}
-- (memdb.keyword_route_rows; rows [] for a blank query or a tenant without memories). Pass it
-- to memdb.search_hybrid(..., p_keyword_routes => it) with the same tenant, query, k, filter
-- and options: that call runs only the vector route and the fusion, and returns what one call
-- without it returns, provided both statements see the same data (one REPEATABLE READ
-- transaction: MemoryStore.search does this, docs/performance.md "Hiding the embedder").
-- The same checks as search_hybrid: k, filter (memdb.check_filter), options
-- (memdb.check_search_options). Scores keep every bit through the JSON (extra_float_digits 1).
-- Example:
--   BEGIN ISOLATION LEVEL REPEATABLE READ;
--   SELECT memdb.search_keyword_routes('default', 'React 开发', 5, '{}', '{}') \gset
--   SELECT * FROM memdb.search_hybrid('default', 'React 开发', :'embedding', 5, '{}', '{}',
--                                     :'search_keyword_routes');
--   COMMIT;
CREATE OR REPLACE FUNCTION memdb.search_keyword_routes(p_tenant text, p_query text,
                                                       p_k integer DEFAULT 10,
                                                       p_filter jsonb DEFAULT '{}',
                                                       p_options jsonb DEFAULT '{}')
RETURNS jsonb
LANGUAGE plpgsql STABLE
SET extra_float_digits = 1
AS $$
DECLARE
    o jsonb := coalesce(p_options, '{}'::jsonb);
    f jsonb := coalesce(p_filter, '{}'::jsonb);
    routes jsonb;
    use_bm25 boolean;
    use_prf boolean;
    prf_t text[];
    prf_w double precision[];
    found_rows jsonb;
BEGIN
    IF p_k IS NULL OR p_k < 1 OR p_k > 1000 THEN
        RAISE EXCEPTION 'k must be between 1 and 1000, got %', p_k USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM memdb.check_filter(f);
    PERFORM memdb.check_search_options(o);
    routes := coalesce(o -> 'routes', '["vector", "bm25", "exact"]'::jsonb);
    use_bm25 := routes ? 'bm25';
    use_prf := coalesce((o ->> 'prf')::integer, 0) > 0 AND use_bm25;
    IF p_query IS NOT NULL AND p_query ~ '[^[:space:]]'
       AND EXISTS (SELECT 1 FROM memdb.memories m WHERE m.tenant = p_tenant) THEN
        IF use_prf THEN
            SELECT array_agg(t.term), array_agg(t.weight) INTO prf_t, prf_w
            FROM memdb.prf_terms(p_tenant, p_query, f, o) t;
        END IF;
        SELECT jsonb_agg(jsonb_build_object('route', r.route, 'id', r.id, 'raw', r.raw, 'rnk', r.rnk))
        INTO found_rows
        FROM memdb.keyword_route_rows(p_tenant, p_query, memdb.search_depth(p_k, o), f, o,
                                      use_bm25, use_prf, routes ? 'exact', prf_t, prf_w) r;
    END IF;
    RETURN jsonb_build_object('for', memdb.keyword_routes_key(p_tenant, p_query, p_k, f, o),
                              'rows', coalesce(found_rows, '[]'::jsonb));
END
$$;

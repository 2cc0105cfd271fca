-- memdb.search_depth(p_k integer, p_options jsonb) -> integer
-- How many candidates each route of memdb.search_hybrid returns for a search of p_k results
-- with p_options: the option depth, else max(50, 2 * pool), where pool is p_k or, with
-- mmr_lambda set, the mmr_candidates MMR re-picks from (default max(30, 3 * p_k)).
-- memdb.search_keyword_routes uses the same depth, so its rows are those search_hybrid's own
-- routes would find.
-- Example: SELECT memdb.search_depth(10, '{}');  -- 50
CREATE OR REPLACE FUNCTION memdb.search_depth(p_k integer, p_options jsonb)
RETURNS integer
LANGUAGE sql IMMUTABLE
AS $$
    SELECT coalesce((p_options ->> 'depth')::integer,
                    greatest(50, 2 * CASE WHEN p_options ? 'mmr_lambda'
                                          THEN coalesce((p_options ->> 'mmr_candidates')::integer,
                                                        greatest(30, 3 * p_k))
                                          ELSE p_k END))
$$;

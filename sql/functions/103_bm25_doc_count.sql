-- memdb.bm25_doc_count(p_tenant text) -> bigint
-- The tenant's number of current memories, as kept in memdb.bm25_stats by memdb.bm25_maintain
-- (0 when it has none): memdb.search_vector's cheap upper bound on the rows a search can scan.
-- SECURITY DEFINER (fixed search_path, names qualified): the application role may not read
-- memdb.bm25_stats (revision 0010). A caller that row-level security confines (memdb.confine)
-- gets its own tenant's count only (the BM25 route ranks with it anyway), 0 for another.
CREATE OR REPLACE FUNCTION memdb.bm25_doc_count(p_tenant text)
RETURNS bigint
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce((SELECT s.doc_count FROM memdb.bm25_stats s
                     WHERE s.tenant = p_tenant
                       AND memdb.confine(p_tenant, NULL) IS NOT NULL), 0)
$$;

-- memdb.bm25_reset() -> trigger (AFTER TRUNCATE ON memdb.memories, per statement)
-- TRUNCATE removes every memory of every tenant, so every BM25 statistic goes with them.
-- SECURITY DEFINER (fixed search_path, names qualified), like memdb.bm25_maintain: the
-- application role has no privilege on the statistics tables (nor may it TRUNCATE memories).
CREATE OR REPLACE FUNCTION memdb.bm25_reset()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    DELETE FROM memdb.bm25_terms;
    DELETE FROM memdb.bm25_stats;
    RETURN NULL;
END
$$;

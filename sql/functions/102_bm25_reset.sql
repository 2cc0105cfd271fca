-- memdb.bm25_reset() -> trigger (AFTER TRUNCATE ON memdb.memories, per statement)
-- TRUNCATE removes every memory of every tenant, so every BM25 statistic goes with them.
CREATE OR REPLACE FUNCTION memdb.bm25_reset()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    DELETE FROM memdb.bm25_terms;
    DELETE FROM memdb.bm25_stats;
    RETURN NULL;
END
$$;

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
    -- on a Citus worker: the shards co-located with the truncated shard (memdb.colocated_table)
    EXECUTE format('DELETE FROM %s', memdb.colocated_table(TG_TABLE_NAME, 'bm25_terms'));
    EXECUTE format('DELETE FROM %s', memdb.colocated_table(TG_TABLE_NAME, 'bm25_stats'));
    RETURN NULL;
END
$$;

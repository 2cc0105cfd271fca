-- memdb.retokenize(p_tenant text DEFAULT NULL) -> bigint
-- Re-derives the keyword index of stored memories after a change to the analyzer
-- (memdb.tokenize): every memory of p_tenant (NULL: of every tenant the caller may see),
-- current or superseded, whose stored tsv differs from what memdb.tokenize(content || ' ' ||
-- search_context) gives today is rewritten. The memories_before_write trigger recomputes tsv
-- and doc_len, and memdb.bm25_maintain moves the BM25 statistics by exactly the difference,
-- so document frequencies, document count and total length stay exact; the version does
-- not change and no history row is written. Returns the number of rows rewritten (0 when
-- the index is already current). Runs as the caller (row-level security applies).
-- Example, after an upgrade that changes the analyzer: SELECT memdb.retokenize();
CREATE OR REPLACE FUNCTION memdb.retokenize(p_tenant text DEFAULT NULL)
RETURNS bigint
LANGUAGE sql VOLATILE
AS $$
    WITH changed AS (
        UPDATE memdb.memories m
           SET tsv = memdb.tokenize(m.content || ' ' || coalesce(m.search_context, ''))
         WHERE (p_tenant IS NULL OR m.tenant = p_tenant)
           AND m.tsv IS DISTINCT FROM memdb.tokenize(m.content || ' ' || coalesce(m.search_context, ''))
        RETURNING 1
    )
    SELECT count(*) FROM changed
$$;

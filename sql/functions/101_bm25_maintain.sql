-- memdb.bm25_maintain() -> trigger (AFTER INSERT/UPDATE/DELETE ON memdb.memories, per statement)
-- Keeps BM25 statistics exact for current memories (valid_to IS NULL), per tenant:
-- memdb.bm25_stats (document count, total length) and memdb.bm25_terms.df (documents holding
-- each term). Set-based over the statement's transition tables. The tenant's stats row is
-- locked first and term rows follow in sorted order, so writers of one tenant queue instead
-- of deadlocking. Updates that change neither the text nor the validity of a row cost nothing.
-- SECURITY DEFINER (fixed search_path, every name qualified): the application role has no
-- privilege at all on the statistics tables (revision 0010), so only this trigger writes them,
-- from the rows the caller's statement changed (rows row-level security already let it write).
-- On a Citus worker the trigger fires on a shard of memories and writes the co-located shards
-- of the statistics tables (memdb.colocated_table): the same tenants' rows, on this node.
-- On plain PostgreSQL the statements are static (plans cached per session); only a shard's
-- are built at run time.
CREATE OR REPLACE FUNCTION memdb.bm25_maintain()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    src text;
    v_stats text;
    v_terms text;
BEGIN
    IF TG_TABLE_NAME = 'memories' THEN
        -- plain PostgreSQL (or a Citus coordinator's own table): static statements, planned
        -- once per session, not once per write
        IF TG_OP = 'INSERT' THEN
            INSERT INTO memdb.bm25_stats AS s (tenant, doc_count, total_len)
            SELECT n.tenant, count(*), sum(n.doc_len)
            FROM new_rows n WHERE n.valid_to IS NULL
            GROUP BY n.tenant ORDER BY n.tenant
            ON CONFLICT (tenant) DO UPDATE
                SET doc_count = s.doc_count + excluded.doc_count,
                    total_len = s.total_len + excluded.total_len;
            INSERT INTO memdb.bm25_terms AS t (tenant, term, df)
            SELECT n.tenant, u.lexeme, count(*)
            FROM new_rows n CROSS JOIN LATERAL pg_catalog.unnest(n.tsv) u
            WHERE n.valid_to IS NULL
            GROUP BY n.tenant, u.lexeme ORDER BY n.tenant, u.lexeme
            ON CONFLICT (tenant, term) DO UPDATE SET df = t.df + excluded.df;
        ELSIF TG_OP = 'DELETE' THEN
            INSERT INTO memdb.bm25_stats AS s (tenant, doc_count, total_len)
            SELECT o.tenant, -count(*), -sum(o.doc_len)
            FROM old_rows o WHERE o.valid_to IS NULL
            GROUP BY o.tenant ORDER BY o.tenant
            ON CONFLICT (tenant) DO UPDATE
                SET doc_count = s.doc_count + excluded.doc_count,
                    total_len = s.total_len + excluded.total_len;
            INSERT INTO memdb.bm25_terms AS t (tenant, term, df)
            SELECT o.tenant, u.lexeme, -count(*)
            FROM old_rows o CROSS JOIN LATERAL pg_catalog.unnest(o.tsv) u
            WHERE o.valid_to IS NULL
            GROUP BY o.tenant, u.lexeme ORDER BY o.tenant, u.lexeme
            ON CONFLICT (tenant, term) DO UPDATE SET df = t.df + excluded.df;
        ELSE  -- the stats row first, then the term rows (as every writer locks them)
            INSERT INTO memdb.bm25_stats AS s (tenant, doc_count, total_len)
            SELECT d.tenant, sum(d.sign), sum(d.sign * d.doc_len)
            FROM (SELECT x.tenant, x.tsv, x.doc_len, x.sign
                  FROM new_rows n JOIN old_rows o ON o.id = n.id
                  CROSS JOIN LATERAL (VALUES (o.tenant, o.tsv, o.doc_len, -1, o.valid_to IS NULL),
                                             (n.tenant, n.tsv, n.doc_len, 1, n.valid_to IS NULL))
                                      AS x(tenant, tsv, doc_len, sign, is_current)
                  WHERE x.is_current
                    AND (n.tsv IS DISTINCT FROM o.tsv OR n.tenant IS DISTINCT FROM o.tenant
                         OR (n.valid_to IS NULL) <> (o.valid_to IS NULL))) d
            GROUP BY d.tenant ORDER BY d.tenant
            ON CONFLICT (tenant) DO UPDATE
                SET doc_count = s.doc_count + excluded.doc_count,
                    total_len = s.total_len + excluded.total_len;
            INSERT INTO memdb.bm25_terms AS t (tenant, term, df)
            SELECT d.tenant, u.lexeme, sum(d.sign)
            FROM (SELECT x.tenant, x.tsv, x.doc_len, x.sign
                  FROM new_rows n JOIN old_rows o ON o.id = n.id
                  CROSS JOIN LATERAL (VALUES (o.tenant, o.tsv, o.doc_len, -1, o.valid_to IS NULL),
                                             (n.tenant, n.tsv, n.doc_len, 1, n.valid_to IS NULL))
                                      AS x(tenant, tsv, doc_len, sign, is_current)
                  WHERE x.is_current
                    AND (n.tsv IS DISTINCT FROM o.tsv OR n.tenant IS DISTINCT FROM o.tenant
                         OR (n.valid_to IS NULL) <> (o.valid_to IS NULL))) d
            CROSS JOIN LATERAL pg_catalog.unnest(d.tsv) u
            GROUP BY d.tenant, u.lexeme
            HAVING sum(d.sign) <> 0
            ORDER BY d.tenant, u.lexeme
            ON CONFLICT (tenant, term) DO UPDATE SET df = t.df + excluded.df;
        END IF;
        RETURN NULL;
    END IF;
    -- a Citus worker's shard: the co-located shards of the statistics tables, named at run time
    v_stats := memdb.colocated_table(TG_TABLE_NAME, 'bm25_stats');
    v_terms := memdb.colocated_table(TG_TABLE_NAME, 'bm25_terms');
    src := CASE TG_OP
        WHEN 'INSERT' THEN
            'SELECT n.tenant, n.tsv, n.doc_len, 1 AS sign FROM new_rows n WHERE n.valid_to IS NULL'
        WHEN 'DELETE' THEN
            'SELECT o.tenant, o.tsv, o.doc_len, -1 AS sign FROM old_rows o WHERE o.valid_to IS NULL'
        ELSE
            'SELECT x.tenant, x.tsv, x.doc_len, x.sign
             FROM new_rows n JOIN old_rows o ON o.id = n.id
             CROSS JOIN LATERAL (VALUES (o.tenant, o.tsv, o.doc_len, -1, o.valid_to IS NULL),
                                        (n.tenant, n.tsv, n.doc_len, 1, n.valid_to IS NULL))
                                 AS x(tenant, tsv, doc_len, sign, is_current)
             WHERE x.is_current
               AND (n.tsv IS DISTINCT FROM o.tsv OR n.tenant IS DISTINCT FROM o.tenant
                    OR (n.valid_to IS NULL) <> (o.valid_to IS NULL))'
    END;
    EXECUTE format($q$
        INSERT INTO %s AS s (tenant, doc_count, total_len)
        SELECT d.tenant, sum(d.sign), sum(d.sign * d.doc_len)
        FROM (%s) d
        GROUP BY d.tenant
        ORDER BY d.tenant
        ON CONFLICT (tenant) DO UPDATE
            SET doc_count = s.doc_count + excluded.doc_count,
                total_len = s.total_len + excluded.total_len
    $q$, v_stats, src);
    EXECUTE format($q$
        INSERT INTO %s AS t (tenant, term, df)
        SELECT d.tenant, u.lexeme, sum(d.sign)
        FROM (%s) d CROSS JOIN LATERAL pg_catalog.unnest(d.tsv) u
        GROUP BY d.tenant, u.lexeme
        HAVING sum(d.sign) <> 0
        ORDER BY d.tenant, u.lexeme
        ON CONFLICT (tenant, term) DO UPDATE SET df = t.df + excluded.df
    $q$, v_terms, src);
    RETURN NULL;
END
$$;

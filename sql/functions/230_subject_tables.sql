-- memdb.subject_tables() -> TABLE(table_name text, has_subject boolean, has_memory_id boolean)
-- The tables of schema memdb besides memories that hold rows about a subject: every table with
-- columns tenant and subject (its rows of that subject), or with a column memory_id (its rows
-- about that subject's memories). Found in the catalog, so a table added later (traces, graph
-- edges) is erased and exported by memdb.forget_subject / memdb.export_subject as soon as it
-- has one of those columns. BM25 statistics (no subject) are handled by forget_subject itself.
CREATE OR REPLACE FUNCTION memdb.subject_tables()
RETURNS TABLE (table_name text, has_subject boolean, has_memory_id boolean)
LANGUAGE sql STABLE
AS $$
    SELECT c.relname::text,
           bool_or(a.attname = 'subject') AND bool_or(a.attname = 'tenant'),
           bool_or(a.attname = 'memory_id')
    FROM pg_class c
    JOIN pg_namespace n ON n.oid = c.relnamespace
    JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
    WHERE n.nspname = 'memdb' AND c.relkind IN ('r', 'p') AND c.relname <> 'memories'
      AND NOT c.relispartition
      -- not a Citus shard (<table>_<shard id>, beside its table), seen on a worker
      AND NOT (c.relname ~ '_[0-9]+$'
               AND EXISTS (SELECT 1 FROM pg_class t
                           WHERE t.relnamespace = c.relnamespace
                             AND t.relname = regexp_replace(c.relname, '_[0-9]+$', '')))
    GROUP BY c.relname
    HAVING (bool_or(a.attname = 'subject') AND bool_or(a.attname = 'tenant'))
        OR bool_or(a.attname = 'memory_id')
    ORDER BY c.relname
$$;

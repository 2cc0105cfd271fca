-- memdb.history_row(r memdb.memories) -> jsonb
-- A memory as it is kept in memory_history: every column but the derived ones (embedding,
-- tsv, content_hash, doc_len, event_time, names_time), plus has_embedding.
CREATE OR REPLACE FUNCTION memdb.history_row(r memdb.memories)
RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT (to_jsonb(r) - 'embedding' - 'tsv' - 'content_hash' - 'doc_len'
            - 'event_time' - 'names_time')
           || jsonb_build_object('has_embedding', r.embedding IS NOT NULL)
$$;

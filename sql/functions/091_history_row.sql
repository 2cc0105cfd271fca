-- memdb.history_row(r memdb.memories) -> jsonb
-- A memory as it is kept in memory_history: every column but the derived ones (embedding,
-- tsv, content_hash, doc_len, event_time, names_time), plus has_embedding. The derived
-- columns are emptied before to_jsonb, so the vector and the tsvector are never rendered as
-- text only to be dropped (most of the cost of a history row, once per row a write changes).
CREATE OR REPLACE FUNCTION memdb.history_row(r memdb.memories)
RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
AS $$
DECLARE
    had_embedding boolean := r.embedding IS NOT NULL;
BEGIN
    r.embedding := NULL;
    r.tsv := NULL;
    r.content_hash := NULL;
    r.doc_len := NULL;
    r.event_time := NULL;
    r.names_time := NULL;
    RETURN (to_jsonb(r) - 'embedding' - 'tsv' - 'content_hash' - 'doc_len'
            - 'event_time' - 'names_time')
           || jsonb_build_object('has_embedding', had_embedding);
END
$$;

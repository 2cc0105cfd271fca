-- memdb.memories_before_write() -> trigger (BEFORE INSERT OR UPDATE ON memdb.memories, per row)
-- Keeps derived columns true however a row is written (DAL or raw SQL):
--   content_hash = memdb.content_hash(content); tsv = memdb.tokenize(content + search_context);
--   doc_len = memdb.doc_length(tsv) (the BM25 document length); an update that sets tsv
--   re-derives both (memdb.retokenize, after an analyzer change), so tsv is never forged;
--   event_time = memdb.time_range(content, valid_from) (the time the content names, NULL: none)
--   and names_time = event_time IS NOT NULL OR memdb.time_words(content) (the content carries
--   a time), read by the search option temporal (memdb.temporal_boost), derived on insert and
--   whenever content or valid_from changes; an update that sets either re-derives both, so
--   they are never forged (UPDATE memdb.memories SET names_time = NULL re-derives a row: how
--   revision 0017 filled them, and how to after a change to time_range's rules);
--   uri defaults to memdb.uri_for(subject, category, id);
--   the embedding must have its space's dimensions (MD001 otherwise);
--   on update: a changed content with an unchanged embedding drops the stale embedding, and a
--   change to any stored field (not access counters) increments version and sets updated_at.
CREATE OR REPLACE FUNCTION memdb.memories_before_write()
RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
    d integer;
    m text;
BEGIN
    IF TG_OP = 'INSERT' OR NEW.content IS DISTINCT FROM OLD.content
       OR NEW.search_context IS DISTINCT FROM OLD.search_context
       OR NEW.tsv IS DISTINCT FROM OLD.tsv THEN
        NEW.content_hash := memdb.content_hash(NEW.content);
        NEW.tsv := memdb.tokenize(NEW.content || ' ' || coalesce(NEW.search_context, ''));
        NEW.doc_len := memdb.doc_length(NEW.tsv);
    ELSE
        NEW.content_hash := OLD.content_hash;
        NEW.tsv := OLD.tsv;
        NEW.doc_len := OLD.doc_len;
    END IF;
    IF TG_OP = 'INSERT' OR NEW.content IS DISTINCT FROM OLD.content
       OR NEW.valid_from IS DISTINCT FROM OLD.valid_from
       OR NEW.event_time IS DISTINCT FROM OLD.event_time
       OR NEW.names_time IS DISTINCT FROM OLD.names_time THEN
        NEW.event_time := memdb.time_range(NEW.content, NEW.valid_from);
        NEW.names_time := NEW.event_time IS NOT NULL OR memdb.time_words(NEW.content);
    END IF;
    IF TG_OP = 'UPDATE' AND NEW.content IS DISTINCT FROM OLD.content
       AND NEW.embedding IS NOT DISTINCT FROM OLD.embedding THEN
        NEW.embedding := NULL;
        NEW.space_id := NULL;
    END IF;
    IF NEW.embedding IS NOT NULL
       AND (TG_OP = 'INSERT' OR NEW.embedding IS DISTINCT FROM OLD.embedding
            OR NEW.space_id IS DISTINCT FROM OLD.space_id) THEN
        SELECT dims, model INTO d, m FROM memdb.embedding_spaces WHERE id = NEW.space_id;
        IF d IS NULL THEN
            RAISE EXCEPTION 'a memory with an embedding needs an existing space_id (see memdb.ensure_embedding_space)'
                USING ERRCODE = 'MD001';
        END IF;
        IF vector_dims(NEW.embedding) <> d THEN
            RAISE EXCEPTION 'embedding has % dimensions but space "%" holds %', vector_dims(NEW.embedding), m, d
                USING ERRCODE = 'MD001';
        END IF;
    END IF;
    IF TG_OP = 'INSERT' THEN
        IF NEW.uri IS NULL THEN
            NEW.uri := memdb.uri_for(NEW.subject, NEW.category, NEW.id);
        END IF;
        RETURN NEW;
    END IF;
    IF NEW.uri IS NULL OR ((NEW.category IS DISTINCT FROM OLD.category OR NEW.subject IS DISTINCT FROM OLD.subject)
                           AND OLD.uri = memdb.uri_for(OLD.subject, OLD.category, OLD.id)) THEN
        NEW.uri := memdb.uri_for(NEW.subject, NEW.category, NEW.id);
    END IF;
    IF (NEW.content, NEW.search_context, NEW.kind, NEW.category, NEW.agent, NEW.scope,
        NEW.project_id, NEW.session_id, NEW.norm_key, NEW.importance, NEW.confidence,
        NEW.source_type, NEW.source_id, NEW.metadata, NEW.tags, NEW.expires_at,
        NEW.valid_to, NEW.superseded_by, NEW.uri)
       IS DISTINCT FROM
       (OLD.content, OLD.search_context, OLD.kind, OLD.category, OLD.agent, OLD.scope,
        OLD.project_id, OLD.session_id, OLD.norm_key, OLD.importance, OLD.confidence,
        OLD.source_type, OLD.source_id, OLD.metadata, OLD.tags, OLD.expires_at,
        OLD.valid_to, OLD.superseded_by, OLD.uri) THEN
        NEW.version := OLD.version + 1;
        NEW.updated_at := now();
    END IF;
    RETURN NEW;
END
$$;

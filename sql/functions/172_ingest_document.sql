-- memdb.ingest_document(p_tenant text, p_document jsonb, p_chunks jsonb,
--                       p_embeddings vector[] DEFAULT NULL, p_space_id integer DEFAULT NULL)
--   -> TABLE(document_id uuid, version integer, chunks integer, created integer,
--            reused integer, removed integer)
-- Writes one document and replaces its chunks, in the caller's transaction (so a search
-- sees the old chunks or the new ones, never a mix).
-- p_document: {uri, title, format, content_hash (hex), size, content, chunking, metadata,
--   subject, scope, project_id, session_id, category, tags, importance}; the row is unique
--   per (tenant, uri): an existing one is updated and its version grows by one.
-- p_chunks: a JSON array, in document order, of {content, search_context, heading_path,
--   char_start, char_end, parent_start, parent_end, tokens}; p_embeddings[i] is chunk i's
--   vector in space p_space_id, or NULL when the caller knows (memdb.known_chunks) that a
--   current memory with that text and context already exists in the document's scope.
-- Each chunk becomes a memory (kind semantic, source_type document, source_id
-- '<document id>#<position>', metadata memdb.chunk_provenance(...), owned by the document
-- through memories.document_id) — unless a current memory with the same normalized text
-- already exists in the scope (memories_dedup_key): then the chunk map points at that memory
-- (reused, as are the document's own unchanged chunks), and the text is stored and found
-- once. Memories the document owned before and no
-- longer uses are released (memdb.release_document_memories): removed, or passed to another
-- document that shares them.
-- Raises SQLSTATE 40001 (retry the transaction) when a concurrent writer made or removed a
-- memory of the same text after the caller checked (a chunk would lack its vector).
CREATE OR REPLACE FUNCTION memdb.ingest_document(p_tenant text, p_document jsonb, p_chunks jsonb,
                                                 p_embeddings vector[] DEFAULT NULL,
                                                 p_space_id integer DEFAULT NULL)
RETURNS TABLE (document_id uuid, version integer, chunks integer, created integer,
               reused integer, removed integer)
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
    v_doc memdb.documents;
    v_subject text := coalesce(p_document ->> 'subject', 'default');
    v_scope text := coalesce(p_document ->> 'scope', 'user');
    v_project text := p_document ->> 'project_id';
    v_session text := p_document ->> 'session_id';
    v_category text := coalesce(p_document ->> 'category', 'general');
    v_tags text[] := coalesce(memdb.jtext_array(p_document -> 'tags'), '{}'::text[]);
    v_importance real := coalesce((p_document ->> 'importance')::real, 0.5);
    v_keep uuid[];
    v_chunks integer;
    v_created integer;
    v_unresolved integer;
    v_unembedded integer;
    v_removed integer;
BEGIN
    INSERT INTO memdb.documents AS d (tenant, subject, scope, project_id, session_id, uri, title,
                                      format, content_hash, size, chunking, content, metadata)
    VALUES (p_tenant, v_subject, v_scope, v_project, v_session, p_document ->> 'uri',
            p_document ->> 'title', p_document ->> 'format',
            decode(p_document ->> 'content_hash', 'hex'), (p_document ->> 'size')::bigint,
            coalesce(p_document -> 'chunking', '{}'::jsonb), p_document ->> 'content',
            coalesce(p_document -> 'metadata', '{}'::jsonb))
    ON CONFLICT (tenant, uri) DO UPDATE
        SET subject = excluded.subject, scope = excluded.scope,
            project_id = excluded.project_id, session_id = excluded.session_id,
            title = excluded.title, format = excluded.format,
            content_hash = excluded.content_hash, size = excluded.size,
            chunking = excluded.chunking, content = excluded.content,
            metadata = excluded.metadata, version = d.version + 1, ingested_at = now()
    RETURNING d.* INTO v_doc;

    DELETE FROM memdb.document_chunks c WHERE c.document_id = v_doc.id;

    WITH input AS (
        SELECT r.ord::integer - 1 AS pos, r.item, gen_random_uuid() AS new_id,
               memdb.content_hash(r.item ->> 'content') AS h,
               memdb.jtext_array(r.item -> 'heading_path') AS heading_path,
               (r.item ->> 'char_start')::integer AS char_start,
               (r.item ->> 'char_end')::integer AS char_end,
               coalesce((r.item ->> 'parent_start')::integer, (r.item ->> 'char_start')::integer) AS parent_start,
               coalesce((r.item ->> 'parent_end')::integer, (r.item ->> 'char_end')::integer) AS parent_end,
               e.embedding
        FROM jsonb_array_elements(p_chunks) WITH ORDINALITY AS r(item, ord)
        LEFT JOIN unnest(p_embeddings) WITH ORDINALITY AS e(embedding, ord) ON e.ord = r.ord
    ),
    firsts AS (
        SELECT DISTINCT ON (i.h) * FROM input i ORDER BY i.h, i.pos
    ),
    ins AS (
        INSERT INTO memdb.memories AS m (
            id, tenant, subject, scope, project_id, session_id, kind, category, uri, content,
            search_context, content_hash, space_id, embedding, tsv, importance, source_type,
            source_id, metadata, tags, document_id)
        SELECT f.new_id, p_tenant, v_subject, v_scope, v_project, v_session, 'semantic',
               v_category, memdb.uri_for(v_subject, v_category, f.new_id), f.item ->> 'content',
               f.item ->> 'search_context', f.h,
               CASE WHEN f.embedding IS NULL THEN NULL ELSE p_space_id END, f.embedding,
               ''::tsvector, v_importance, 'document', v_doc.id::text || '#' || f.pos,
               memdb.chunk_provenance(v_doc, f.pos, f.heading_path, f.char_start, f.char_end,
                                      f.parent_start, f.parent_end),
               v_tags, v_doc.id
        FROM firsts f
        ORDER BY f.h  -- dedup keys locked in key order, as memdb.add_memories does
        ON CONFLICT (tenant, subject, scope, project_id, session_id, content_hash)
            WHERE valid_to IS NULL DO NOTHING
        RETURNING m.id, m.content_hash, (m.embedding IS NULL) AS no_vector
    ),
    resolved AS (
        -- a row this statement did not insert already existed (the statement's snapshot
        -- sees it; a concurrent one it cannot see stays NULL and makes the caller retry)
        SELECT i.*, coalesce(w.id, memdb.current_memory_id(p_tenant, v_subject, v_scope,
                                                           v_project, v_session, i.h)) AS memory_id,
               (w.id IS NOT NULL) AS inserted, coalesce(w.no_vector, false) AS no_vector
        FROM input i
        LEFT JOIN ins w ON w.content_hash = i.h
    ),
    own AS (  -- memories this document already owned: provenance (and vector) brought up to date
        UPDATE memdb.memories m
        SET source_id = v_doc.id::text || '#' || f.pos,
            metadata = memdb.chunk_provenance(v_doc, f.pos, f.heading_path, f.char_start,
                                              f.char_end, f.parent_start, f.parent_end),
            search_context = f.item ->> 'search_context', category = v_category, tags = v_tags,
            space_id = CASE WHEN f.embedding IS NULL THEN m.space_id ELSE p_space_id END,
            embedding = coalesce(f.embedding, m.embedding)
        FROM (SELECT DISTINCT ON (r.memory_id) * FROM resolved r
              WHERE NOT r.inserted ORDER BY r.memory_id, r.pos) f
        WHERE m.id = f.memory_id AND m.document_id = v_doc.id
          AND (f.embedding IS NOT NULL
               OR (m.source_id, m.metadata, m.search_context, m.category, m.tags)
                  IS DISTINCT FROM (v_doc.id::text || '#' || f.pos,
                                    memdb.chunk_provenance(v_doc, f.pos, f.heading_path,
                                                           f.char_start, f.char_end,
                                                           f.parent_start, f.parent_end),
                                    f.item ->> 'search_context', v_category, v_tags))
        RETURNING m.id
    ),
    links AS (
        INSERT INTO memdb.document_chunks (document_id, position, tenant, subject, memory_id,
                                           heading_path, char_start, char_end, parent_start,
                                           parent_end, tokens)
        SELECT v_doc.id, r.pos, p_tenant, v_subject, r.memory_id,
               coalesce(r.heading_path, '{}'::text[]), r.char_start, r.char_end, r.parent_start,
               r.parent_end, coalesce((r.item ->> 'tokens')::integer, 0)
        FROM resolved r
        WHERE r.memory_id IS NOT NULL
        RETURNING 1
    )
    SELECT ARRAY(SELECT DISTINCT r.memory_id FROM resolved r WHERE r.memory_id IS NOT NULL),
           (SELECT count(*) FROM resolved),
           (SELECT count(*) FROM ins),
           (SELECT count(*) FROM resolved r WHERE r.memory_id IS NULL),
           (SELECT count(*) FROM ins WHERE no_vector AND p_space_id IS NOT NULL)
    INTO v_keep, v_chunks, v_created, v_unresolved, v_unembedded;

    IF v_unresolved > 0 OR v_unembedded > 0 THEN
        RAISE EXCEPTION 'a memory with the text of a chunk of % was written or removed concurrently', v_doc.uri
            USING ERRCODE = '40001', HINT = 'retry the transaction';
    END IF;

    v_removed := memdb.release_document_memories(v_doc.id, v_keep);
    UPDATE memdb.documents d SET chunk_count = v_chunks WHERE d.id = v_doc.id;

    RETURN QUERY SELECT v_doc.id, v_doc.version, v_chunks,
                        v_created, v_chunks - v_created, v_removed;
END
$$;

-- memdb.ingest_documents(p_tenant text, p_documents jsonb, p_chunks jsonb,
--                        p_embeddings vector[] DEFAULT NULL, p_space_id integer DEFAULT NULL)
--   -> TABLE(ord integer, document_id uuid, version integer, chunks integer, created integer,
--            reused integer, removed integer)
-- Writes a batch of documents and replaces their chunks, set-based, in the caller's
-- transaction (so a search sees a document's old chunks or its new ones, never a mix).
-- p_documents: a JSON array of {uri, title, format, content_hash (hex), size, content,
--   chunking, metadata, subject, scope, project_id, session_id, category, tags, importance};
--   each row is unique per (tenant, uri): an existing one is updated and its version grows
--   by one. A URI may appear once per call.
-- p_chunks: a JSON array aligned with p_documents, each element the document's chunks in
--   document order: {content, search_context, heading_path, char_start, char_end,
--   parent_start, parent_end, tokens}.
-- p_embeddings: one vector (in space p_space_id) per chunk, in the order of p_chunks
--   flattened (the first document's chunks, then the second's, ...), or NULL for a chunk the
--   caller knows (memdb.known_chunks_batch) needs none: a current memory with that text and
--   context already exists in the document's scope.
-- Each chunk becomes a memory (kind semantic, source_type document, source_id
-- '<document id>#<position>', created_by the actor (setting memdb.actor, else session_user),
-- metadata memdb.chunk_provenance(...), owned by the document
-- through memories.document_id) — unless a current memory with the same normalized text
-- already exists in the scope (memories_dedup_key), or an earlier document of the batch (or
-- an earlier position) holds the same text: then the chunk map points at that memory
-- (reused, as are the document's own unchanged chunks), and the text is stored and found
-- once. Memories a document owned before and no longer uses are released
-- (memdb.release_documents_memories): removed, or passed to another document that uses them.
-- Documents, chunk maps and memories (owners, provenance) end as one memdb.ingest_document
-- call per document, in order, would leave them, in four statements for the whole batch
-- instead of four per document, so the history and BM25 statistics triggers run once per
-- batch. (One difference: a memory an earlier document of the batch lets go of and a later
-- one takes over keeps its search context, as any memory passed on does; one call per
-- document would have rewritten it.) All or nothing: if one document fails (its URI is
-- another subject's, a constraint), the call fails; callers that must keep the other
-- documents retry them one by one (memdb's ingest does, in savepoints).
-- Raises SQLSTATE 40001 (retry the transaction) when a concurrent writer made or removed a
-- memory of the same text after the caller checked (a chunk would lack its vector).
CREATE OR REPLACE FUNCTION memdb.ingest_documents(p_tenant text, p_documents jsonb,
                                                  p_chunks jsonb,
                                                  p_embeddings vector[] DEFAULT NULL,
                                                  p_space_id integer DEFAULT NULL)
RETURNS TABLE (ord integer, document_id uuid, version integer, chunks integer, created integer,
               reused integer, removed integer)
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
    v_ids uuid[];
    v_versions integer[];
    v_chunks integer[];
    v_created integer[];
    v_removed integer[];
    v_unresolved text;
    v_unembedded text;
    v_twice text;
BEGIN
    IF p_documents IS NULL OR jsonb_typeof(p_documents) <> 'array'
       OR p_chunks IS NULL OR jsonb_typeof(p_chunks) <> 'array'
       OR jsonb_array_length(p_documents) <> jsonb_array_length(p_chunks)
       OR EXISTS (SELECT 1 FROM jsonb_array_elements(p_chunks) c(x)
                  WHERE jsonb_typeof(c.x) <> 'array') THEN
        RAISE EXCEPTION 'documents must be a JSON array and chunks an array of one array of chunks per document'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_embeddings IS NOT NULL AND cardinality(p_embeddings) <> (
           SELECT coalesce(sum(jsonb_array_length(c.x)), 0) FROM jsonb_array_elements(p_chunks) c(x)) THEN
        RAISE EXCEPTION 'embeddings must hold one vector (or NULL) per chunk'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF jsonb_array_length(p_documents) = 0 THEN
        RETURN;
    END IF;
    SELECT x.d ->> 'uri' INTO v_twice FROM jsonb_array_elements(p_documents) x(d)
    GROUP BY 1 HAVING count(*) > 1 LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'document % appears more than once in one call', v_twice
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    -- 1. the document rows, locked in URI order (concurrent batches queue, not deadlock)
    WITH input AS (
        SELECT x.ord::integer AS ord, x.d, jsonb_array_length(c.x) AS n
        FROM jsonb_array_elements(p_documents) WITH ORDINALITY AS x(d, ord)
        JOIN jsonb_array_elements(p_chunks) WITH ORDINALITY AS c(x, ord) ON c.ord = x.ord
    ),
    up AS (
        INSERT INTO memdb.documents AS d (tenant, subject, scope, project_id, session_id, uri,
                                          title, format, content_hash, size, chunking, content,
                                          metadata, chunk_count)
        SELECT p_tenant, coalesce(i.d ->> 'subject', 'default'), coalesce(i.d ->> 'scope', 'user'),
               i.d ->> 'project_id', i.d ->> 'session_id', i.d ->> 'uri', i.d ->> 'title',
               i.d ->> 'format', decode(i.d ->> 'content_hash', 'hex'), (i.d ->> 'size')::bigint,
               coalesce(i.d -> 'chunking', '{}'::jsonb), i.d ->> 'content',
               coalesce(i.d -> 'metadata', '{}'::jsonb), i.n
        FROM input i
        ORDER BY i.d ->> 'uri'
        ON CONFLICT (tenant, uri) DO UPDATE
            SET subject = excluded.subject, scope = excluded.scope,
                project_id = excluded.project_id, session_id = excluded.session_id,
                title = excluded.title, format = excluded.format,
                content_hash = excluded.content_hash, size = excluded.size,
                chunking = excluded.chunking, content = excluded.content,
                metadata = excluded.metadata, chunk_count = excluded.chunk_count,
                version = d.version + 1, ingested_at = excluded.ingested_at
        RETURNING d.id, d.uri, d.version, d.chunk_count
    )
    SELECT array_agg(up.id ORDER BY i.ord), array_agg(up.version ORDER BY i.ord),
           array_agg(up.chunk_count ORDER BY i.ord)
    INTO v_ids, v_versions, v_chunks
    FROM up JOIN input i ON i.d ->> 'uri' = up.uri;

    -- 2. their old chunk maps
    DELETE FROM memdb.document_chunks c WHERE c.tenant = p_tenant AND c.document_id = ANY (v_ids);

    -- 3. new memories for new text, the new chunk maps, provenance of reused own memories
    WITH docs AS MATERIALIZED (  -- plain values: index probes by doc_id under RLS
        SELECT x.ord::integer AS dord, x.d, c.x AS items, v_ids[x.ord::integer] AS doc_id,
               coalesce(x.d ->> 'subject', 'default') AS subject,
               coalesce(x.d ->> 'scope', 'user') AS scope,
               x.d ->> 'project_id' AS project_id, x.d ->> 'session_id' AS session_id,
               coalesce(x.d ->> 'category', 'general') AS category,
               coalesce(memdb.jtext_array(x.d -> 'tags'), '{}'::text[]) AS tags,
               coalesce((x.d ->> 'importance')::real, 0.5) AS importance,
               coalesce(sum(jsonb_array_length(c.x)) OVER (ORDER BY x.ord ROWS BETWEEN
                        UNBOUNDED PRECEDING AND 1 PRECEDING), 0)::integer AS base
        FROM jsonb_array_elements(p_documents) WITH ORDINALITY AS x(d, ord)
        JOIN jsonb_array_elements(p_chunks) WITH ORDINALITY AS c(x, ord) ON c.ord = x.ord
    ),
    input AS (
        SELECT d.dord, d.doc_id, row_doc.r AS doc_row, d.subject, d.scope, d.project_id,
               d.session_id, d.category, d.tags, d.importance,
               r.ord::integer - 1 AS pos, r.item, memdb.new_memory_id() AS new_id,
               memdb.content_hash(r.item ->> 'content') AS h,
               memdb.jtext_array(r.item -> 'heading_path') AS heading_path,
               (r.item ->> 'char_start')::integer AS char_start,
               (r.item ->> 'char_end')::integer AS char_end,
               coalesce((r.item ->> 'parent_start')::integer, (r.item ->> 'char_start')::integer) AS parent_start,
               coalesce((r.item ->> 'parent_end')::integer, (r.item ->> 'char_end')::integer) AS parent_end,
               e.embedding
        FROM docs d
        CROSS JOIN LATERAL (SELECT o AS r FROM memdb.documents o
                            WHERE o.tenant = p_tenant AND o.id = d.doc_id LIMIT 1) row_doc
        CROSS JOIN LATERAL jsonb_array_elements(d.items) WITH ORDINALITY AS r(item, ord)
        LEFT JOIN unnest(p_embeddings) WITH ORDINALITY AS e(embedding, ord)
               ON e.ord = d.base + r.ord
    ),
    firsts AS (  -- the first chunk of the batch with each text, per scope
        SELECT DISTINCT ON (i.subject, i.scope, i.project_id, i.session_id, i.h) *
        FROM input i
        ORDER BY i.subject, i.scope, i.project_id, i.session_id, i.h, i.dord, i.pos
    ),
    ins AS (
        INSERT INTO memdb.memories AS m (
            id, tenant, subject, scope, project_id, session_id, kind, category, uri, content,
            search_context, content_hash, space_id, embedding, tsv, importance, source_type,
            source_id, metadata, tags, document_id, created_by)
        SELECT f.new_id, p_tenant, f.subject, f.scope, f.project_id, f.session_id, 'semantic',
               f.category, memdb.uri_for(f.subject, f.category, f.new_id), f.item ->> 'content',
               f.item ->> 'search_context', f.h,
               CASE WHEN f.embedding IS NULL THEN NULL ELSE p_space_id END, f.embedding,
               ''::tsvector, f.importance, 'document', f.doc_id::text || '#' || f.pos,
               memdb.chunk_provenance(f.doc_row, f.pos, f.heading_path, f.char_start,
                                      f.char_end, f.parent_start, f.parent_end),
               f.tags, f.doc_id,
               coalesce(nullif(current_setting('memdb.actor', true), ''), session_user)
        FROM firsts f
        ORDER BY f.subject, f.scope, f.project_id, f.session_id, f.h  -- dedup keys in key order
        ON CONFLICT (tenant, subject, scope, project_id, session_id, content_hash)
            WHERE valid_to IS NULL DO NOTHING
        RETURNING m.id, m.subject, m.scope, m.project_id, m.session_id, m.content_hash,
                  m.document_id, (m.embedding IS NULL) AS no_vector
    ),
    resolved AS (
        -- a row this statement did not insert already existed (the statement's snapshot
        -- sees it; a concurrent one it cannot see stays NULL and makes the caller retry)
        SELECT i.*, coalesce(w.id, memdb.current_memory_id(p_tenant, i.subject, i.scope,
                                                           i.project_id, i.session_id, i.h)) AS memory_id,
               (w.id IS NOT NULL) AS inserted
        FROM input i
        LEFT JOIN ins w ON w.content_hash = i.h AND w.subject = i.subject AND w.scope = i.scope
                       AND w.project_id IS NOT DISTINCT FROM i.project_id
                       AND w.session_id IS NOT DISTINCT FROM i.session_id
    ),
    own AS (  -- memories a document already owned: provenance (and vector) brought up to date
        UPDATE memdb.memories m
        SET source_id = f.doc_id::text || '#' || f.pos,
            metadata = memdb.chunk_provenance(f.doc_row, f.pos, f.heading_path, f.char_start,
                                              f.char_end, f.parent_start, f.parent_end),
            search_context = f.item ->> 'search_context', category = f.category, tags = f.tags,
            space_id = CASE WHEN f.embedding IS NULL THEN m.space_id ELSE p_space_id END,
            embedding = coalesce(f.embedding, m.embedding)
        FROM (SELECT DISTINCT ON (r.memory_id, r.doc_id) * FROM resolved r
              WHERE NOT r.inserted AND r.memory_id IS NOT NULL
              ORDER BY r.memory_id, r.doc_id, r.pos) f
        WHERE m.tenant = p_tenant
          AND m.id = ANY (ARRAY(SELECT r.memory_id FROM resolved r  -- primary-key probes
                                WHERE NOT r.inserted AND r.memory_id IS NOT NULL))
          AND m.id = f.memory_id AND m.document_id = f.doc_id
          AND (f.embedding IS NOT NULL
               OR (m.source_id, m.metadata, m.search_context, m.category, m.tags)
                  IS DISTINCT FROM (f.doc_id::text || '#' || f.pos,
                                    memdb.chunk_provenance(f.doc_row, f.pos, f.heading_path,
                                                           f.char_start, f.char_end,
                                                           f.parent_start, f.parent_end),
                                    f.item ->> 'search_context', f.category, f.tags))
        RETURNING m.id
    ),
    links AS (
        INSERT INTO memdb.document_chunks (document_id, position, tenant, subject, memory_id,
                                           heading_path, char_start, char_end, parent_start,
                                           parent_end, tokens)
        SELECT r.doc_id, r.pos, p_tenant, r.subject, r.memory_id,
               coalesce(r.heading_path, '{}'::text[]), r.char_start, r.char_end, r.parent_start,
               r.parent_end, coalesce((r.item ->> 'tokens')::integer, 0)
        FROM resolved r
        WHERE r.memory_id IS NOT NULL
        RETURNING 1
    )
    SELECT (SELECT min((r.doc_row).uri) FROM resolved r WHERE r.memory_id IS NULL),
           (SELECT min(d.uri) FROM ins w JOIN memdb.documents d
                                 ON d.tenant = p_tenant AND d.id = w.document_id
            WHERE w.no_vector AND p_space_id IS NOT NULL),
           ARRAY(SELECT count(w.id)::integer
                 FROM unnest(v_ids) WITH ORDINALITY AS u(id, n)
                 LEFT JOIN ins w ON w.document_id = u.id
                 GROUP BY u.n ORDER BY u.n)
    INTO v_unresolved, v_unembedded, v_created;

    IF v_unresolved IS NOT NULL OR v_unembedded IS NOT NULL THEN
        RAISE EXCEPTION 'a memory with the text of a chunk of % was written or removed concurrently',
                        coalesce(v_unresolved, v_unembedded)
            USING ERRCODE = '40001', HINT = 'retry the transaction';
    END IF;

    -- 4. what the documents no longer use: passed to a document that does, or deleted
    SELECT array_agg(r.removed ORDER BY u.n) INTO v_removed
    FROM memdb.release_documents_memories(p_tenant, v_ids) r
    JOIN unnest(v_ids) WITH ORDINALITY AS u(id, n) ON u.id = r.document_id;

    -- 5. the space's HNSW index, once the database holds enough memories to use it
    PERFORM memdb.ensure_vector_index(p_space_id);

    RETURN QUERY
        SELECT u.n::integer, u.id, v_versions[u.n], v_chunks[u.n], v_created[u.n],
               v_chunks[u.n] - v_created[u.n], v_removed[u.n]
        FROM unnest(v_ids) WITH ORDINALITY AS u(id, n)
        ORDER BY u.n;
END
$$;

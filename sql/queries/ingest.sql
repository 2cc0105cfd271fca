-- Named queries of memdb.write.ingest (loaded by memdb.core.sql).

-- name: document_state
SELECT d.uri, encode(d.content_hash, 'hex') AS content_hash, d.chunking, d.subject, d.scope,
       d.project_id, d.session_id, d.title, d.metadata, d.chunk_count, d.version
FROM memdb.documents d
WHERE d.tenant = %(tenant)s AND d.uri = ANY (%(uris)s);

-- name: known_chunks_batch
SELECT doc, chunk FROM memdb.known_chunks_batch(%(tenant)s, %(documents)s, %(space_id)s);

-- name: ingest_documents
SELECT ord, document_id, version, chunks, created, reused, removed
FROM memdb.ingest_documents(%(tenant)s, %(documents)s, %(chunks)s, %(embeddings)b, %(space_id)s);

-- name: remove_documents
SELECT document_id, uri, chunks FROM memdb.remove_documents(%(tenant)s, %(uris)s);

-- name: prune_documents
SELECT document_id, uri, chunks
FROM memdb.prune_documents(%(tenant)s, %(prefixes)s, %(keep)s, %(dry_run)s);

-- name: list_documents
SELECT d.id, d.uri, d.title, d.format, encode(d.content_hash, 'hex') AS content_hash, d.size,
       d.version, d.chunk_count, d.subject, d.scope, d.project_id, d.session_id, d.metadata,
       d.created_at, d.ingested_at
FROM memdb.documents d
WHERE d.tenant = %(tenant)s
  AND (%(subject)s::text IS NULL OR d.subject = %(subject)s)
  AND (%(prefix)s::text IS NULL OR starts_with(d.uri, %(prefix)s))
ORDER BY d.uri
LIMIT %(limit)s OFFSET %(offset)s;

-- name: citations
SELECT c.memory_id, c.document_id, d.uri, d.title, c.position, c.heading_path, c.char_start,
       c.char_end, c.parent_start, c.parent_end,
       CASE WHEN %(parents)s THEN substr(d.content, c.parent_start + 1, c.parent_end - c.parent_start) END AS parent_text
FROM memdb.document_chunks c
JOIN memdb.documents d ON d.tenant = c.tenant AND d.id = c.document_id
WHERE c.tenant = %(tenant)s AND c.memory_id = ANY (%(ids)s)
ORDER BY c.memory_id, d.created_at, c.document_id, c.position;

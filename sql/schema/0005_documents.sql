-- memdb schema, revision 0005 (frozen): knowledge ingestion (documents and their chunks).
--   * memdb.documents: one row per ingested document (a file's URI or a caller's id), unique
--     per (tenant, uri), with the content hash and chunking options that make re-ingesting an
--     unchanged document a no-op, and the extracted text (chunk and parent offsets point into
--     it);
--   * memories.document_id: the document that owns a chunk memory (kind semantic, source_type
--     document); deleting a document deletes the memories it owns;
--   * memdb.document_chunks: the document's chunk map, one row per chunk position, pointing
--     at the memory holding that text (its own, or an identical current memory of the same
--     scope that already existed: memories_dedup_key allows one), with heading path, character
--     offsets and the parent span as provenance.
-- Both new tables are per tenant and subject, under the same row-level security as memories.
-- Policies use only built-in functions: this file runs before sql/functions is applied.

CREATE TABLE memdb.documents (
    id           uuid        NOT NULL DEFAULT gen_random_uuid() PRIMARY KEY,
    tenant       text        NOT NULL,
    subject      text        NOT NULL DEFAULT 'default',
    scope        text        NOT NULL DEFAULT 'user'
                 CHECK (scope IN ('global', 'project', 'user', 'session')),
    project_id   text,
    session_id   text,
    -- file:///absolute/path for files, the caller's document id for raw text
    uri          text        NOT NULL CHECK (length(uri) BETWEEN 1 AND 4096),
    title        text,
    format       text        NOT NULL CHECK (format IN ('markdown', 'text', 'html', 'pdf')),
    -- sha256 of the source bytes (files) or of the text (raw text)
    content_hash bytea       NOT NULL,
    -- the source's size in bytes
    size         bigint      NOT NULL CHECK (size >= 0),
    -- +1 each time the document's chunks are replaced
    version      integer     NOT NULL DEFAULT 1,
    -- the chunking options the chunks were made with (a change re-chunks the document)
    chunking     jsonb       NOT NULL DEFAULT '{}'::jsonb,
    chunk_count  integer     NOT NULL DEFAULT 0,
    -- the extracted text (Markdown for HTML, page text for PDF); offsets point into it
    content      text        NOT NULL,
    metadata     jsonb       NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(metadata) = 'object'),
    created_at   timestamptz NOT NULL DEFAULT now(),
    ingested_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT documents_uri_key UNIQUE (tenant, uri)
);
CREATE INDEX documents_subject_idx ON memdb.documents (tenant, subject);

ALTER TABLE memdb.memories ADD COLUMN document_id uuid
    REFERENCES memdb.documents (id) ON DELETE CASCADE;
CREATE INDEX memories_document_idx ON memdb.memories (document_id) WHERE document_id IS NOT NULL;

CREATE TABLE memdb.document_chunks (
    document_id  uuid        NOT NULL REFERENCES memdb.documents (id) ON DELETE CASCADE,
    position     integer     NOT NULL CHECK (position >= 0),
    tenant       text        NOT NULL,
    subject      text        NOT NULL,
    memory_id    uuid        NOT NULL REFERENCES memdb.memories (id) ON DELETE CASCADE,
    heading_path text[]      NOT NULL DEFAULT '{}',
    char_start   integer     NOT NULL CHECK (char_start >= 0),
    char_end     integer     NOT NULL,
    parent_start integer     NOT NULL CHECK (parent_start >= 0),
    parent_end   integer     NOT NULL,
    tokens       integer     NOT NULL DEFAULT 0,
    PRIMARY KEY (document_id, position),
    CONSTRAINT document_chunks_span_check CHECK (char_end > char_start AND parent_end >= parent_start)
);
CREATE INDEX document_chunks_memory_idx ON memdb.document_chunks (memory_id);

GRANT SELECT, INSERT, UPDATE, DELETE ON memdb.documents, memdb.document_chunks TO memdb_app;

ALTER TABLE memdb.documents ENABLE ROW LEVEL SECURITY;
ALTER TABLE memdb.document_chunks ENABLE ROW LEVEL SECURITY;

CREATE POLICY documents_isolation ON memdb.documents TO memdb_app
    USING (tenant = current_setting('memdb.tenant', true)
           AND (coalesce(current_setting('memdb.subject', true), '') = ''
                OR subject = current_setting('memdb.subject', true)))
    WITH CHECK (tenant = current_setting('memdb.tenant', true)
                AND (coalesce(current_setting('memdb.subject', true), '') = ''
                     OR subject = current_setting('memdb.subject', true)));

CREATE POLICY document_chunks_isolation ON memdb.document_chunks TO memdb_app
    USING (tenant = current_setting('memdb.tenant', true)
           AND (coalesce(current_setting('memdb.subject', true), '') = ''
                OR subject = current_setting('memdb.subject', true)))
    WITH CHECK (tenant = current_setting('memdb.tenant', true)
                AND (coalesce(current_setting('memdb.subject', true), '') = ''
                     OR subject = current_setting('memdb.subject', true)));

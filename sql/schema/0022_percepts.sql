-- memdb schema, revision 0022 (frozen): perceptual memory.
--   * memories.kind admits 'perceptual': a memory made from an image (later audio, video),
--     whose content is the text found in it (OCR) and its caption, searched like any memory;
--   * memdb.percepts: one row per perceptual memory (its memory_id), holding what the text
--     was derived from: the modality (image | audio | video), the source's sha256, MIME type
--     (detected from its content, not its name), size in bytes, pixel dimensions, a reference
--     (a path or URI), optionally its bytes (under the store's size limit), a thumbnail (JPEG),
--     the state (ok, or not_transcribed: kept with its metadata, no text derived yet), the OCR
--     text and the caption apart from each other, the EXIF fields kept (JSON), the time taken
--     and the place (latitude, longitude) from EXIF;
--   * deleted with its memory (ON DELETE CASCADE), so forgetting a memory removes the bytes,
--     the derived text and the thumbnail; tenant and subject columns put it under the same
--     row-level security as memories, and memdb.forget_subject (memdb.subject_tables) erases it.
-- On a Citus coordinator alembic/versions/0022_percepts.py distributes the table by tenant,
-- co-located with memdb.memories, before the foreign key is made.
-- Policies use only built-in functions: this file runs before sql/functions is applied.

ALTER TABLE memdb.memories DROP CONSTRAINT memories_kind_check;
ALTER TABLE memdb.memories ADD CONSTRAINT memories_kind_check
    CHECK (kind IN ('working', 'episodic', 'semantic', 'procedural', 'perceptual'));

CREATE TABLE memdb.percepts (
    tenant      text        NOT NULL,
    memory_id   uuid        NOT NULL,
    subject     text        NOT NULL,
    modality    text        NOT NULL CHECK (modality IN ('image', 'audio', 'video')),
    state       text        NOT NULL DEFAULT 'ok' CHECK (state IN ('ok', 'not_transcribed')),
    sha256      bytea       NOT NULL CHECK (length(sha256) = 32),
    mime        text        NOT NULL CHECK (length(mime) BETWEEN 3 AND 100),
    size_bytes  bigint      NOT NULL CHECK (size_bytes >= 0),
    width       integer     CHECK (width > 0),
    height      integer     CHECK (height > 0),
    ref         text        CHECK (length(ref) <= 4096),
    data        bytea,
    thumbnail   bytea,
    ocr_text    text,
    caption     text,
    exif        jsonb       NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(exif) = 'object'),
    taken_at    timestamptz,
    latitude    double precision CHECK (latitude BETWEEN -90 AND 90),
    longitude   double precision CHECK (longitude BETWEEN -180 AND 180),
    created_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT percepts_pkey PRIMARY KEY (tenant, memory_id)
);
CREATE INDEX percepts_sha256_idx ON memdb.percepts (tenant, subject, sha256);

ALTER TABLE memdb.percepts ADD CONSTRAINT percepts_memory_id_fkey FOREIGN KEY (tenant, memory_id)
    REFERENCES memdb.memories (tenant, id) ON DELETE CASCADE;

GRANT SELECT, INSERT, UPDATE, DELETE ON memdb.percepts TO memdb_app;
ALTER TABLE memdb.percepts ENABLE ROW LEVEL SECURITY;
CREATE POLICY percepts_isolation ON memdb.percepts TO memdb_app
    USING (tenant = current_setting('memdb.tenant', true)
           AND (coalesce(current_setting('memdb.subject', true), '') = ''
                OR subject = current_setting('memdb.subject', true)))
    WITH CHECK (tenant = current_setting('memdb.tenant', true)
                AND (coalesce(current_setting('memdb.subject', true), '') = ''
                     OR subject = current_setting('memdb.subject', true)));

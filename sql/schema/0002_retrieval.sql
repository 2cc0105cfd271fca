-- memdb schema, revision 0002 (frozen): what the retrieval engine keeps besides the memories.
--   * BM25 statistics per tenant, maintained incrementally by triggers (sql/triggers/020_bm25.sql):
--     term document frequencies and the document count and total length of current memories;
--   * per-subject usage counts, grown only by memdb.mark_used(), for hotness;
--   * a trigram index for the exact-match route.

CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- BM25 document length (tokens in tsv), kept by the memories_before_write trigger.
ALTER TABLE memdb.memories ADD COLUMN doc_len integer NOT NULL DEFAULT 0;
UPDATE memdb.memories m
SET doc_len = (SELECT coalesce(sum(coalesce(array_length(u.positions, 1), 1)), 0) FROM unnest(m.tsv) u);

CREATE TABLE memdb.bm25_terms (
    tenant  text   NOT NULL,
    term    text   NOT NULL,
    df      bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant, term)
);

CREATE TABLE memdb.bm25_stats (
    tenant     text   NOT NULL PRIMARY KEY,
    doc_count  bigint NOT NULL DEFAULT 0,
    total_len  bigint NOT NULL DEFAULT 0
);

CREATE TABLE memdb.memory_usage (
    memory_id    uuid        NOT NULL REFERENCES memdb.memories (id) ON DELETE CASCADE,
    subject      text        NOT NULL,
    tenant       text        NOT NULL,
    use_count    integer     NOT NULL DEFAULT 0,
    last_used_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (memory_id, subject)
);
CREATE INDEX memory_usage_subject_idx ON memdb.memory_usage (tenant, subject);

CREATE INDEX memories_content_trgm_idx ON memdb.memories USING gin (lower(content) gin_trgm_ops);

-- Statistics for rows that existed before this revision.
INSERT INTO memdb.bm25_stats (tenant, doc_count, total_len)
SELECT m.tenant, count(*), coalesce(sum(m.doc_len), 0)
FROM memdb.memories m
WHERE m.valid_to IS NULL
GROUP BY m.tenant;

INSERT INTO memdb.bm25_terms (tenant, term, df)
SELECT m.tenant, u.lexeme, count(*)
FROM memdb.memories m CROSS JOIN LATERAL unnest(m.tsv) u
WHERE m.valid_to IS NULL
GROUP BY m.tenant, u.lexeme;

-- Keep vectors and tsvectors in the row (pgvector's default is out-of-line TOAST storage once
-- a row passes ~2 kB): an exact scan of 1,000 memories then reads half the pages.
ALTER TABLE memdb.memories ALTER COLUMN embedding SET STORAGE MAIN,
                           ALTER COLUMN tsv SET STORAGE MAIN;

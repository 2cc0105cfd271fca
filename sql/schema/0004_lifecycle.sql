-- memdb schema, revision 0004 (frozen): the memory lifecycle.
--   * memories.status: 'active', or 'hypothesis' (a model inference kept with low confidence
--     and a short TTL until a trusted source confirms it; its confidence decays meanwhile);
--   * memdb.review_queue: rules and system entries proposed by sedimentation, which only
--     become memories once approved;
--   * memdb.sediment_runs: one row per (tenant, subject, day, source hash), so re-running a
--     sedimentation over the same sources writes nothing new.
-- Both new tables are per tenant and subject, under the same row-level security as memories.
-- Policies use only built-in functions: this file runs before sql/functions is applied.

ALTER TABLE memdb.memories ADD COLUMN status text NOT NULL DEFAULT 'active'
    CONSTRAINT memories_status_check CHECK (status IN ('active', 'hypothesis'));
CREATE INDEX memories_hypothesis_idx ON memdb.memories (tenant, created_at)
    WHERE status = 'hypothesis';

CREATE TABLE memdb.review_queue (
    id           uuid        NOT NULL DEFAULT gen_random_uuid() PRIMARY KEY,
    tenant       text        NOT NULL,
    subject      text        NOT NULL,
    kind         text        NOT NULL DEFAULT 'procedural'
                 CHECK (kind IN ('working', 'episodic', 'semantic', 'procedural')),
    category     text        NOT NULL DEFAULT 'system'
                 CHECK (category IN ('preferences', 'entities', 'events', 'patterns',
                                     'tools', 'skills', 'system', 'general')),
    content      text        NOT NULL CHECK (length(btrim(content)) > 0 AND length(content) <= 65536),
    -- memdb.content_hash(content), set by the writer: one proposal per content per subject
    content_hash bytea       NOT NULL,
    -- why it was proposed (its class: rule, lesson, decision, preference, pattern)
    reason       text,
    -- the memories (session summaries) it was extracted from
    source_ids   uuid[]      NOT NULL DEFAULT '{}',
    status       text        NOT NULL DEFAULT 'pending'
                 CHECK (status IN ('pending', 'approved', 'rejected')),
    -- the memory an approval created
    memory_id    uuid        REFERENCES memdb.memories (id) ON DELETE SET NULL,
    decided_by   text,
    decided_at   timestamptz,
    created_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT review_queue_content_key UNIQUE (tenant, subject, content_hash)
);
CREATE INDEX review_queue_status_idx ON memdb.review_queue (tenant, status, created_at);

CREATE TABLE memdb.sediment_runs (
    tenant      text        NOT NULL,
    subject     text        NOT NULL,
    run_date    date        NOT NULL,
    -- sha256 over the ids and versions of the source memories the run read
    source_hash bytea       NOT NULL,
    -- what the run wrote: counts per class, ids
    written     jsonb       NOT NULL DEFAULT '{}'::jsonb,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant, subject, run_date, source_hash)
);

GRANT SELECT, INSERT, UPDATE, DELETE ON memdb.review_queue, memdb.sediment_runs TO memdb_app;

ALTER TABLE memdb.review_queue ENABLE ROW LEVEL SECURITY;
ALTER TABLE memdb.sediment_runs ENABLE ROW LEVEL SECURITY;

CREATE POLICY review_queue_isolation ON memdb.review_queue TO memdb_app
    USING (tenant = current_setting('memdb.tenant', true)
           AND (coalesce(current_setting('memdb.subject', true), '') = ''
                OR subject = current_setting('memdb.subject', true)))
    WITH CHECK (tenant = current_setting('memdb.tenant', true)
                AND (coalesce(current_setting('memdb.subject', true), '') = ''
                     OR subject = current_setting('memdb.subject', true)));

CREATE POLICY sediment_runs_isolation ON memdb.sediment_runs TO memdb_app
    USING (tenant = current_setting('memdb.tenant', true)
           AND (coalesce(current_setting('memdb.subject', true), '') = ''
                OR subject = current_setting('memdb.subject', true)))
    WITH CHECK (tenant = current_setting('memdb.tenant', true)
                AND (coalesce(current_setting('memdb.subject', true), '') = ''
                     OR subject = current_setting('memdb.subject', true)));

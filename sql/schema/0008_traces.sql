-- memdb schema, revision 0008 (frozen): directory-organized retrieval.
--   * memories.tag_version: the version of the keyword rules (memdb.classify.TAG_VERSION) that
--     chose the memory's category (or its metadata type mapping); NULL when the category was
--     given explicitly, or the row predates classification. The backfill re-classifies rows whose
--     rules are older than the current ones (and, on request, unclassified 'general' rows);
--   * memdb.retrieval_traces: one row per planned search (memdb.search_planned through
--     MemoryStore.recall): the redacted query, the plan, per-route candidates, the chosen ids,
--     the status and the latency. Per tenant and subject, under the same row-level security as
--     memories; purged after a retention period and erased with their subject.
-- Policies use only built-in functions: this file runs before sql/functions is applied.

ALTER TABLE memdb.memories ADD COLUMN tag_version integer;

CREATE TABLE memdb.retrieval_traces (
    id              uuid        NOT NULL DEFAULT gen_random_uuid() PRIMARY KEY,
    tenant          text        NOT NULL,
    -- whose memories were searched: the one subject of the search, or '*' (several or all)
    subject         text        NOT NULL,
    -- the query with secrets and contact details replaced by [REDACTED:kind], truncated
    query           text        NOT NULL,
    intent          text        NOT NULL,
    plan_source     text        NOT NULL CHECK (plan_source IN ('llm', 'heuristic', 'given')),
    fallback        boolean     NOT NULL DEFAULT false,
    status          text        NOT NULL
                    CHECK (status IN ('ok', 'no_relevant_memory', 'degraded')),
    reasons         text[]      NOT NULL DEFAULT '{}',
    categories      text[]      NOT NULL DEFAULT '{}',
    -- the QueryPlan as JSON (memdb.planner.QueryPlan.to_json)
    plan            jsonb       NOT NULL DEFAULT '{}'::jsonb,
    -- per candidate: id, score, and each typed query's ranks and raw scores per route
    candidates      jsonb       NOT NULL DEFAULT '[]'::jsonb,
    chosen_ids      uuid[]      NOT NULL DEFAULT '{}',
    -- subjects owning the chosen memories (erasure of a subject removes these traces too)
    result_subjects text[]      NOT NULL DEFAULT '{}',
    k               integer     NOT NULL,
    latency_ms      real        NOT NULL,
    -- {"plan_ms": .., "embed_ms": .., "db_ms": ..}
    timings         jsonb       NOT NULL DEFAULT '{}'::jsonb,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX retrieval_traces_created_idx ON memdb.retrieval_traces (tenant, created_at);
CREATE INDEX retrieval_traces_subject_idx ON memdb.retrieval_traces (tenant, subject);
CREATE INDEX retrieval_traces_result_subjects_idx ON memdb.retrieval_traces
    USING gin (result_subjects);

GRANT SELECT, INSERT, DELETE ON memdb.retrieval_traces TO memdb_app;

ALTER TABLE memdb.retrieval_traces ENABLE ROW LEVEL SECURITY;

CREATE POLICY retrieval_traces_isolation ON memdb.retrieval_traces TO memdb_app
    USING (tenant = current_setting('memdb.tenant', true)
           AND (coalesce(current_setting('memdb.subject', true), '') = ''
                OR subject = current_setting('memdb.subject', true)))
    WITH CHECK (tenant = current_setting('memdb.tenant', true)
                AND (coalesce(current_setting('memdb.subject', true), '') = ''
                     OR subject = current_setting('memdb.subject', true)));

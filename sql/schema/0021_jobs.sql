-- memdb schema, revision 0021 (frozen): a durable job queue, memdb.jobs.
--   * one row per job: a tenant's unit of work of some kind (its handler is chosen by kind)
--     with a JSON payload; state queued -> running -> done, or failed (an attempt failed,
--     retried after an exponential backoff in run_after), dead (max_attempts used up, or a
--     permanent failure; last_error kept) or cancelled. A running job's worker holds a lease
--     (locked_by, locked_until; run_after is set to the lease's end, so a job whose worker
--     died is claimable again once its lease has passed);
--   * idempotency_key: at most one job per (tenant, kind, key): enqueueing it again returns
--     the existing job;
--   * row-level security by tenant, like every tenant table; the application role reads,
--     enqueues and updates its tenant's jobs (memdb.enqueue_job, complete_job, fail_job...).
--     Workers claim across tenants only through memdb.claim_jobs (SECURITY DEFINER);
--   * on a Citus coordinator the table is distributed by tenant, co-located with the
--     memories: a tenant's jobs live on the shard of its memories.
-- Policies use only built-in functions: this file runs before sql/functions is applied.

CREATE TABLE memdb.jobs (
    tenant          text        NOT NULL,
    id              uuid        NOT NULL DEFAULT gen_random_uuid(),
    kind            text        NOT NULL CHECK (kind ~ '^[a-z][a-z0-9_.:-]{0,63}$'),
    payload         jsonb       NOT NULL DEFAULT '{}'::jsonb,
    state           text        NOT NULL DEFAULT 'queued'
                    CHECK (state IN ('queued', 'running', 'done', 'failed', 'dead',
                                     'cancelled')),
    attempts        integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    max_attempts    integer     NOT NULL DEFAULT 5 CHECK (max_attempts BETWEEN 1 AND 100),
    run_after       timestamptz NOT NULL DEFAULT now(),
    locked_by       text,
    locked_until    timestamptz,
    last_error      text,
    result          jsonb,
    idempotency_key text        CHECK (length(idempotency_key) BETWEEN 1 AND 256),
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    finished_at     timestamptz,
    PRIMARY KEY (tenant, id),
    CONSTRAINT jobs_idempotency_key UNIQUE (tenant, kind, idempotency_key)
);
-- what a worker claims: per tenant, the due jobs oldest first
CREATE INDEX jobs_claimable_idx ON memdb.jobs (tenant, run_after, id)
    WHERE state IN ('queued', 'failed', 'running');
-- listings, newest first
CREATE INDEX jobs_created_idx ON memdb.jobs (tenant, created_at);

GRANT SELECT, INSERT, UPDATE ON memdb.jobs TO memdb_app;

ALTER TABLE memdb.jobs ENABLE ROW LEVEL SECURITY;

CREATE POLICY jobs_isolation ON memdb.jobs TO memdb_app
    USING (tenant = current_setting('memdb.tenant', true))
    WITH CHECK (tenant = current_setting('memdb.tenant', true));

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
        PERFORM create_distributed_table('memdb.jobs', 'tenant',
                                         colocate_with => 'memdb.memories');
    END IF;
END
$$;

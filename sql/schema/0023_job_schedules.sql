-- memdb schema, revision 0023 (frozen): schedules of recurring jobs, memdb.job_schedules.
--   * one row per (tenant, kind): a job of that kind (with that payload) is due every
--     period_seconds; next_run is when it is due next, last_run when it was last enqueued and
--     last_job the job then enqueued;
--   * any worker enqueues the due schedules (memdb.enqueue_due_schedules): at most one job
--     per schedule and period, its idempotency key the kind and the period's start;
--   * row-level security by tenant, like every tenant table: a tenant reads and changes its
--     own schedules. Workers reach every tenant's due schedules only through
--     memdb.enqueue_due_schedules (SECURITY DEFINER);
--   * on a Citus coordinator the table is distributed by tenant, co-located with the
--     memories (and the jobs).
-- Policies use only built-in functions: this file runs before sql/functions is applied.

CREATE TABLE memdb.job_schedules (
    tenant          text        NOT NULL,
    kind            text        NOT NULL CHECK (kind ~ '^[a-z][a-z0-9_.:-]{0,63}$'),
    payload         jsonb       NOT NULL DEFAULT '{}'::jsonb,
    period_seconds  integer     NOT NULL CHECK (period_seconds BETWEEN 1 AND 31622400),
    next_run        timestamptz NOT NULL DEFAULT now(),
    last_run        timestamptz,
    last_job        uuid,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant, kind)
);
-- what a worker looks for: the due schedules
CREATE INDEX job_schedules_due_idx ON memdb.job_schedules (next_run, tenant);

GRANT SELECT, INSERT, UPDATE, DELETE ON memdb.job_schedules TO memdb_app;

ALTER TABLE memdb.job_schedules ENABLE ROW LEVEL SECURITY;

CREATE POLICY job_schedules_isolation ON memdb.job_schedules TO memdb_app
    USING (tenant = current_setting('memdb.tenant', true))
    WITH CHECK (tenant = current_setting('memdb.tenant', true));

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
        PERFORM create_distributed_table('memdb.job_schedules', 'tenant',
                                         colocate_with => 'memdb.memories');
    END IF;
END
$$;

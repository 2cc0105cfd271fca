-- memdb schema, revision 0024 (frozen): a job belongs to the subject its payload names, and
-- row-level security confines a caller with memdb.subject set to its subject's jobs.
--   * memdb.jobs.subject: generated from the payload, its "subject" or, for a document
--     ingestion, its "options"' subject; NULL for a job of the whole tenant. A payload holds
--     what was said (a remembered turn, a queued document), so a job is as private as the
--     subject's memories;
--   * the policy of revision 0021 admitted every job of the caller's tenant. Now a caller with
--     memdb.subject set reaches only the jobs of that subject (reads, enqueues, updates; a job
--     of the whole tenant is reachable tenant-wide only), like the memories; a caller with only
--     memdb.tenant set (a worker, a store of the whole tenant) reaches the tenant's jobs as
--     before. memdb.enqueue_job names the caller's subject in a payload that names none, and
--     counts the tenant's pending jobs (its bound) whatever the caller may see.
-- Policies use only built-in functions. alembic/versions/0024_job_subjects.py.

ALTER TABLE memdb.jobs
    ADD COLUMN subject text GENERATED ALWAYS AS
        (coalesce(payload ->> 'subject', payload #>> '{options,subject}')) STORED;

ALTER POLICY jobs_isolation ON memdb.jobs
    USING (tenant = current_setting('memdb.tenant', true)
           AND (coalesce(current_setting('memdb.subject', true), '') = ''
                OR subject = current_setting('memdb.subject', true)))
    WITH CHECK (tenant = current_setting('memdb.tenant', true)
                AND (coalesce(current_setting('memdb.subject', true), '') = ''
                     OR subject = current_setting('memdb.subject', true)));

-- memdb schema, revision 0019 (frozen): a tenant-wide retrieval trace is readable only by a
-- tenant-wide scope.
--   A trace of a search over several or all subjects is stored with subject '*' (a name memdb
--   reserves: memdb._validate refuses it as a tenant, subject or agent). The policy of 0008
--   admitted a row whose subject equals memdb.subject, so a login of memdb_app that set
--   memdb.subject = '*' read and deleted every tenant-wide trace of its tenant. Now a caller
--   confined to a subject never reaches a '*' row, whatever memdb.subject says; a caller with
--   only memdb.tenant set (tenant-wide) reaches them as before.
-- Policies use only built-in functions. alembic/versions/0019_reserved_subject.py.

ALTER POLICY retrieval_traces_isolation ON memdb.retrieval_traces
    USING (tenant = current_setting('memdb.tenant', true)
           AND (coalesce(current_setting('memdb.subject', true), '') = ''
                OR (subject = current_setting('memdb.subject', true) AND subject <> '*')))
    WITH CHECK (tenant = current_setting('memdb.tenant', true)
                AND (coalesce(current_setting('memdb.subject', true), '') = ''
                     OR (subject = current_setting('memdb.subject', true) AND subject <> '*')));

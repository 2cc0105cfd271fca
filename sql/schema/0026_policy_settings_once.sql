-- memdb schema, revision 0026 (frozen): every row-level-security policy reads memdb.tenant and
-- memdb.subject once per statement, not once per row.
--   * the policies of revisions 0003-0024 compared each row with current_setting(...): a
--     stable function call that PostgreSQL evaluates per row wherever it is not an index
--     condition (the subject test, an OR, is never one): a look-up of a setting by name or two
--     per row read. The vector route of a one-subject search reads about 1,000 rows at 100,000
--     memories: as the application role (memdb_app) it took ~0.4 ms more than as the admin
--     (docs/performance.md, "Row-level security, once per statement");
--   * each current_setting(...) is now a scalar sub-select, (SELECT current_setting(...)): an
--     init plan, run once when the statement first needs it, whose value every row is compared
--     with. Which rows a caller sees and may write is unchanged: the same settings, the same
--     tests (tests/test_isolation_matrix.py runs every door against every policy);
--   * api_keys_none (USING false) reads no setting and is left as it is;
--   * on a Citus coordinator the revision applies nothing: Citus refuses a sub-select in a
--     policy on a distributed table, so the policies keep the per-row form there.
-- Policies use only built-in functions. alembic/versions/0026_policy_settings_once.py.

ALTER POLICY bm25_stats_isolation ON memdb.bm25_stats
    USING (tenant = (SELECT current_setting('memdb.tenant', true)))
    WITH CHECK (tenant = (SELECT current_setting('memdb.tenant', true)));

ALTER POLICY bm25_terms_isolation ON memdb.bm25_terms
    USING (tenant = (SELECT current_setting('memdb.tenant', true)))
    WITH CHECK (tenant = (SELECT current_setting('memdb.tenant', true)));

ALTER POLICY job_schedules_isolation ON memdb.job_schedules
    USING (tenant = (SELECT current_setting('memdb.tenant', true)))
    WITH CHECK (tenant = (SELECT current_setting('memdb.tenant', true)));

ALTER POLICY document_chunks_isolation ON memdb.document_chunks
    USING (tenant = (SELECT current_setting('memdb.tenant', true))
           AND ((SELECT coalesce(current_setting('memdb.subject', true), '')) = ''
                OR subject = (SELECT current_setting('memdb.subject', true))))
    WITH CHECK (tenant = (SELECT current_setting('memdb.tenant', true))
                AND ((SELECT coalesce(current_setting('memdb.subject', true), '')) = ''
                     OR subject = (SELECT current_setting('memdb.subject', true))));

ALTER POLICY documents_isolation ON memdb.documents
    USING (tenant = (SELECT current_setting('memdb.tenant', true))
           AND ((SELECT coalesce(current_setting('memdb.subject', true), '')) = ''
                OR subject = (SELECT current_setting('memdb.subject', true))))
    WITH CHECK (tenant = (SELECT current_setting('memdb.tenant', true))
                AND ((SELECT coalesce(current_setting('memdb.subject', true), '')) = ''
                     OR subject = (SELECT current_setting('memdb.subject', true))));

ALTER POLICY entities_isolation ON memdb.entities
    USING (tenant = (SELECT current_setting('memdb.tenant', true))
           AND ((SELECT coalesce(current_setting('memdb.subject', true), '')) = ''
                OR subject = (SELECT current_setting('memdb.subject', true))))
    WITH CHECK (tenant = (SELECT current_setting('memdb.tenant', true))
                AND ((SELECT coalesce(current_setting('memdb.subject', true), '')) = ''
                     OR subject = (SELECT current_setting('memdb.subject', true))));

ALTER POLICY entity_mentions_isolation ON memdb.entity_mentions
    USING (tenant = (SELECT current_setting('memdb.tenant', true))
           AND ((SELECT coalesce(current_setting('memdb.subject', true), '')) = ''
                OR subject = (SELECT current_setting('memdb.subject', true))))
    WITH CHECK (tenant = (SELECT current_setting('memdb.tenant', true))
                AND ((SELECT coalesce(current_setting('memdb.subject', true), '')) = ''
                     OR subject = (SELECT current_setting('memdb.subject', true))));

ALTER POLICY entity_relations_isolation ON memdb.entity_relations
    USING (tenant = (SELECT current_setting('memdb.tenant', true))
           AND ((SELECT coalesce(current_setting('memdb.subject', true), '')) = ''
                OR subject = (SELECT current_setting('memdb.subject', true))))
    WITH CHECK (tenant = (SELECT current_setting('memdb.tenant', true))
                AND ((SELECT coalesce(current_setting('memdb.subject', true), '')) = ''
                     OR subject = (SELECT current_setting('memdb.subject', true))));

ALTER POLICY item_vectors_isolation ON memdb.item_vectors
    USING (tenant = (SELECT current_setting('memdb.tenant', true))
           AND ((SELECT coalesce(current_setting('memdb.subject', true), '')) = ''
                OR subject = (SELECT current_setting('memdb.subject', true))))
    WITH CHECK (tenant = (SELECT current_setting('memdb.tenant', true))
                AND ((SELECT coalesce(current_setting('memdb.subject', true), '')) = ''
                     OR subject = (SELECT current_setting('memdb.subject', true))));

ALTER POLICY jobs_isolation ON memdb.jobs
    USING (tenant = (SELECT current_setting('memdb.tenant', true))
           AND ((SELECT coalesce(current_setting('memdb.subject', true), '')) = ''
                OR subject = (SELECT current_setting('memdb.subject', true))))
    WITH CHECK (tenant = (SELECT current_setting('memdb.tenant', true))
                AND ((SELECT coalesce(current_setting('memdb.subject', true), '')) = ''
                     OR subject = (SELECT current_setting('memdb.subject', true))));

ALTER POLICY memories_isolation ON memdb.memories
    USING (tenant = (SELECT current_setting('memdb.tenant', true))
           AND ((SELECT coalesce(current_setting('memdb.subject', true), '')) = ''
                OR subject = (SELECT current_setting('memdb.subject', true))))
    WITH CHECK (tenant = (SELECT current_setting('memdb.tenant', true))
                AND ((SELECT coalesce(current_setting('memdb.subject', true), '')) = ''
                     OR subject = (SELECT current_setting('memdb.subject', true))));

ALTER POLICY memory_history_isolation ON memdb.memory_history
    USING (tenant = (SELECT current_setting('memdb.tenant', true))
           AND ((SELECT coalesce(current_setting('memdb.subject', true), '')) = ''
                OR subject = (SELECT current_setting('memdb.subject', true))))
    WITH CHECK (tenant = (SELECT current_setting('memdb.tenant', true))
                AND ((SELECT coalesce(current_setting('memdb.subject', true), '')) = ''
                     OR subject = (SELECT current_setting('memdb.subject', true))));

ALTER POLICY memory_usage_isolation ON memdb.memory_usage
    USING (tenant = (SELECT current_setting('memdb.tenant', true))
           AND ((SELECT coalesce(current_setting('memdb.subject', true), '')) = ''
                OR subject = (SELECT current_setting('memdb.subject', true))))
    WITH CHECK (tenant = (SELECT current_setting('memdb.tenant', true))
                AND ((SELECT coalesce(current_setting('memdb.subject', true), '')) = ''
                     OR subject = (SELECT current_setting('memdb.subject', true))));

ALTER POLICY percepts_isolation ON memdb.percepts
    USING (tenant = (SELECT current_setting('memdb.tenant', true))
           AND ((SELECT coalesce(current_setting('memdb.subject', true), '')) = ''
                OR subject = (SELECT current_setting('memdb.subject', true))))
    WITH CHECK (tenant = (SELECT current_setting('memdb.tenant', true))
                AND ((SELECT coalesce(current_setting('memdb.subject', true), '')) = ''
                     OR subject = (SELECT current_setting('memdb.subject', true))));

ALTER POLICY review_queue_isolation ON memdb.review_queue
    USING (tenant = (SELECT current_setting('memdb.tenant', true))
           AND ((SELECT coalesce(current_setting('memdb.subject', true), '')) = ''
                OR subject = (SELECT current_setting('memdb.subject', true))))
    WITH CHECK (tenant = (SELECT current_setting('memdb.tenant', true))
                AND ((SELECT coalesce(current_setting('memdb.subject', true), '')) = ''
                     OR subject = (SELECT current_setting('memdb.subject', true))));

ALTER POLICY sediment_runs_isolation ON memdb.sediment_runs
    USING (tenant = (SELECT current_setting('memdb.tenant', true))
           AND ((SELECT coalesce(current_setting('memdb.subject', true), '')) = ''
                OR subject = (SELECT current_setting('memdb.subject', true))))
    WITH CHECK (tenant = (SELECT current_setting('memdb.tenant', true))
                AND ((SELECT coalesce(current_setting('memdb.subject', true), '')) = ''
                     OR subject = (SELECT current_setting('memdb.subject', true))));

ALTER POLICY session_messages_isolation ON memdb.session_messages
    USING (tenant = (SELECT current_setting('memdb.tenant', true))
           AND ((SELECT coalesce(current_setting('memdb.subject', true), '')) = ''
                OR subject = (SELECT current_setting('memdb.subject', true))))
    WITH CHECK (tenant = (SELECT current_setting('memdb.tenant', true))
                AND ((SELECT coalesce(current_setting('memdb.subject', true), '')) = ''
                     OR subject = (SELECT current_setting('memdb.subject', true))));

ALTER POLICY sessions_isolation ON memdb.sessions
    USING (tenant = (SELECT current_setting('memdb.tenant', true))
           AND ((SELECT coalesce(current_setting('memdb.subject', true), '')) = ''
                OR subject = (SELECT current_setting('memdb.subject', true))))
    WITH CHECK (tenant = (SELECT current_setting('memdb.tenant', true))
                AND ((SELECT coalesce(current_setting('memdb.subject', true), '')) = ''
                     OR subject = (SELECT current_setting('memdb.subject', true))));

ALTER POLICY retrieval_traces_isolation ON memdb.retrieval_traces
    USING (tenant = (SELECT current_setting('memdb.tenant', true))
           AND ((SELECT coalesce(current_setting('memdb.subject', true), '')) = ''
                OR (subject = (SELECT current_setting('memdb.subject', true)) AND subject <> '*')))
    WITH CHECK (tenant = (SELECT current_setting('memdb.tenant', true))
                AND ((SELECT coalesce(current_setting('memdb.subject', true), '')) = ''
                     OR (subject = (SELECT current_setting('memdb.subject', true)) AND subject <> '*')));

-- memdb schema, revision 0007 (frozen): short-term and working memory per session.
--   * memdb.sessions: one row per (tenant, subject, session_id): the running summary of the
--     turns that scrolled out of the conversation window, and the working state of the current
--     task (a JSON document the program controls) with a version for optimistic concurrency;
--   * memdb.session_messages: the conversation buffer, one row per turn (role, content, token
--     count), in insertion order (id). Turns that scroll out of the window are folded into the
--     summary and deleted.
-- Both tables are per tenant and subject, under the same row-level security as memories, so
-- memdb.forget_subject (which finds tables by their tenant and subject columns) erases them.
-- Policies use only built-in functions: this file runs before sql/functions is applied.

CREATE TABLE memdb.sessions (
    tenant             text        NOT NULL,
    subject            text        NOT NULL,
    session_id         text        NOT NULL CHECK (length(session_id) BETWEEN 1 AND 256),
    summary            text        NOT NULL DEFAULT '' CHECK (length(summary) <= 65536),
    summary_tokens     integer     NOT NULL DEFAULT 0 CHECK (summary_tokens >= 0),
    -- how the summary was last made: 'llm' or 'extractive' (NULL before the first fold)
    summary_path       text        CHECK (summary_path IN ('llm', 'extractive')),
    -- the newest message id folded into the summary (0: none yet)
    summarized_through bigint      NOT NULL DEFAULT 0,
    state              jsonb       NOT NULL DEFAULT '{}'::jsonb
                       CHECK (jsonb_typeof(state) = 'object'),
    -- 0: no state written yet; +1 on every write of state
    state_version      integer     NOT NULL DEFAULT 0 CHECK (state_version >= 0),
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant, subject, session_id)
);

CREATE TABLE memdb.session_messages (
    id         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant     text        NOT NULL,
    subject    text        NOT NULL,
    session_id text        NOT NULL,
    role       text        NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
    content    text        NOT NULL CHECK (length(content) <= 65536),
    tokens     integer     NOT NULL CHECK (tokens >= 0),
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT session_messages_session_fkey FOREIGN KEY (tenant, subject, session_id)
        REFERENCES memdb.sessions (tenant, subject, session_id) ON DELETE CASCADE
);
CREATE INDEX session_messages_session_idx
    ON memdb.session_messages (tenant, subject, session_id, id);

GRANT SELECT, INSERT, UPDATE, DELETE ON memdb.sessions, memdb.session_messages TO memdb_app;

ALTER TABLE memdb.sessions ENABLE ROW LEVEL SECURITY;
ALTER TABLE memdb.session_messages ENABLE ROW LEVEL SECURITY;

CREATE POLICY sessions_isolation ON memdb.sessions TO memdb_app
    USING (tenant = current_setting('memdb.tenant', true)
           AND (coalesce(current_setting('memdb.subject', true), '') = ''
                OR subject = current_setting('memdb.subject', true)))
    WITH CHECK (tenant = current_setting('memdb.tenant', true)
                AND (coalesce(current_setting('memdb.subject', true), '') = ''
                     OR subject = current_setting('memdb.subject', true)));

CREATE POLICY session_messages_isolation ON memdb.session_messages TO memdb_app
    USING (tenant = current_setting('memdb.tenant', true)
           AND (coalesce(current_setting('memdb.subject', true), '') = ''
                OR subject = current_setting('memdb.subject', true)))
    WITH CHECK (tenant = current_setting('memdb.tenant', true)
                AND (coalesce(current_setting('memdb.subject', true), '') = ''
                     OR subject = current_setting('memdb.subject', true)));
